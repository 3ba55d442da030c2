import ArgumentParser
import ChaosHooks
@_spi(Hooks) import ChaosKit

/// `chaos export --chaos-mesh --selector app=api profile.json`: a profile's system entries as
/// Chaos Mesh manifests; exit status 1 when an entry cannot be expressed (named, with why).
struct Export: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write a profile's system entries as Chaos Mesh manifests (TimeChaos, IOChaos, NetworkChaos).",
        discussion: """
            system.clock offsets become TimeChaos, system.files errnos and latencies IOChaos \
            (which needs --volume-path), system.connect latencies NetworkChaos. Chaos Mesh \
            applies a fault to every matching call while an experiment runs, so an entry it \
            cannot express (a sequence, times, at, a seeded probability, a frozen or sped-up \
            clock, a refused connection, a point it has no kind for) is named on standard \
            error with the reason, and the exit status is 1 unless --allow-partial is given. \
            The manifests go to standard output as one YAML stream, for kubectl apply -f -.
            """
    )

    @Flag(name: .customLong("chaos-mesh"), help: "Write Chaos Mesh manifests (the one format so far).")
    var chaosMesh = false

    @Option(help: "The pods' labels, e.g. app=api or app=api,tier=web.")
    var selector: String

    @Option(help: "The namespace of the manifests and of the pods they select.")
    var namespace: String?

    @Option(
        name: .customLong("volume-path"),
        help: "IOChaos's volumePath: the mount point of the volume the system.files entries act on.")
    var volumePath: String?

    @Flag(
        name: .customLong("allow-partial"),
        help: "Exit 0 when some entries are refused (they are still named on standard error).")
    var allowPartial = false

    @Argument(help: "The profile (JSON); - reads it from standard input.")
    var file: String

    func validate() throws {
        guard chaosMesh else { throw ValidationError("name the format: --chaos-mesh") }
    }

    func run() throws {
        BuiltInPoints.register()
        let options: ChaosMeshExport.Options
        let profile: ChaosProfile
        do {
            options = ChaosMeshExport.Options(
                labels: try ChaosMeshExport.Options.labels(selector), namespace: namespace, volumePath: volumePath)
            profile = try ChaosProfile.load(contentsOfFile: file)
        } catch {
            printError("\(error)")
            throw ExitCode(1)
        }
        let export = ChaosMeshExport(profile, options: options)
        print(export.yaml, terminator: "")
        for refusal in export.refusals {
            printError("\(file): \(refusal): not exported")
        }
        if export.manifests.isEmpty && export.refusals.isEmpty {
            printError("\(file): no enabled entries: nothing to export")
            throw ExitCode(1)
        }
        if !export.refusals.isEmpty && !allowPartial { throw ExitCode(1) }
    }
}
