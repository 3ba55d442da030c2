import CSystemProbes
import ChaosHooks
import ChaosKit
import Foundation
import TestHelpers
import Testing

#if canImport(Glibc)
import Glibc
#endif

#if os(Linux)
/// What a program did.
struct Outcome: CustomStringConvertible {
    let status: Int32
    let output: String
    let errors: String
    var description: String {
        "status \(status), stdout: \(output.debugDescription), stderr: \(errors.debugDescription)"
    }
    /// The output without its final newline.
    var line: String { output.hasSuffix("\n") ? String(output.dropLast()) : output }
    var lines: [String] { output.split(separator: "\n").map(String.init) }
}

/// The built tools, the probe program, and the two deliveries.
enum Build {
    /// The folder `swift build --show-bin-path` names: the one holding this test bundle,
    /// `chaos`, `chaos-tool` and libChaosPreload.so.
    static var directory: URL {
        var url = Bundle.main.bundleURL
        if url.pathExtension == "xctest" { url = url.deletingLastPathComponent() }
        let candidates = [url, URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()]
        return candidates.first { FileManager.default.fileExists(atPath: $0.appendingPathComponent("chaos").path) }
            ?? url
    }

    static var chaos: String { directory.appendingPathComponent("chaos").path }

    /// The preload library `chaos run` finds beside itself. `swift build` builds it (CI
    /// runs that before `swift test`, which builds only what tests link).
    static func requirePreload(sourceLocation: SourceLocation = #_sourceLocation) throws {
        let library = directory.appendingPathComponent("libChaosPreload.so").path
        try #require(
            FileManager.default.fileExists(atPath: library),
            "libChaosPreload.so is not built at \(library); run `swift build` before `swift test`",
            sourceLocation: sourceLocation
        )
    }

    /// Where compiled plans are cached for this test process (never the user's cache).
    static let cache: String = {
        let folder = NSTemporaryDirectory() + "chaos-conformance-cache-\(getpid())"
        try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        return folder
    }()

    /// The probe program (probes.c and program/main.c, built by `cc` once per test process),
    /// or why it could not be built.
    static let probeProgram: Result<String, ProbeBuildError> = {
        let sources = packageRoot.appendingPathComponent("Tests/CSystemProbes")
        let folder = NSTemporaryDirectory() + "chaos-conformance-probe-\(getpid())"
        let binary = folder + "/probe"
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            let built = try Command.run([
                "cc", "-std=gnu11", "-O1", "-Wall", "-Wextra", "-U_FORTIFY_SOURCE",
                "-I", sources.appendingPathComponent("include").path, "-o", binary,
                sources.appendingPathComponent("probes.c").path, sources.appendingPathComponent("program/main.c").path,
                "-ldl",
            ])
            guard built.status == 0 else { return .failure(ProbeBuildError(message: "cc failed: \(built.errors)")) }
        } catch {
            return .failure(ProbeBuildError(message: "cannot run cc: \(error)"))
        }
        return .success(binary)
    }()

    struct ProbeBuildError: Error, CustomStringConvertible {
        let message: String
        var description: String { message }
    }
}

/// Runs programs with a clean environment: no chaos from the test's own environment.
enum Command {
    static func which(_ program: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for folder in path.split(separator: ":")
        where FileManager.default.isExecutableFile(atPath: "\(folder)/\(program)") {
            return "\(folder)/\(program)"
        }
        return nil
    }

    static func run(
        _ arguments: [String], environment: [String: String] = [:], in directory: String? = nil, input: String? = nil
    ) throws -> Outcome {
        let process = Process()
        let program = arguments[0].hasPrefix("/") ? arguments[0] : (which(arguments[0]) ?? arguments[0])
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = Array(arguments.dropFirst())
        var merged = ProcessInfo.processInfo.environment
        for name in merged.keys where name.hasPrefix("CHAOS_") || name == "LD_PRELOAD" { merged[name] = nil }
        merged["XDG_CACHE_HOME"] = Build.cache
        merged["LC_ALL"] = "C"
        merged.merge(environment) { $1 }
        process.environment = merged
        if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
        let output = Pipe()
        let errors = Pipe()
        let standardInput = Pipe()
        process.standardOutput = output
        process.standardError = errors
        process.standardInput = standardInput
        try process.runWithSignalsUnblocked()
        // No program may hang the suite: one still running after a minute is stopped (and fails).
        let watchdog = DispatchWorkItem { [process] in if process.isRunning { process.terminate() } }
        DispatchQueue.global().asyncAfter(deadline: .now() + 60, execute: watchdog)
        defer { watchdog.cancel() }
        if let input { standardInput.fileHandleForWriting.write(Data(input.utf8)) }
        try? standardInput.fileHandleForWriting.close()
        // Both pipes at once, so that a chatty program cannot fill one and block.
        let errorData = Locked(Data())
        let group = DispatchGroup()
        DispatchQueue.global().async(group: group) {
            let data = errors.fileHandleForReading.readDataToEndOfFile()
            errorData.withLock { $0 = data }
        }
        let outputData = output.fileHandleForReading.readDataToEndOfFile()
        group.wait()
        process.waitUntilExit()
        return Outcome(
            status: process.terminationStatus, output: String(decoding: outputData, as: UTF8.self),
            errors: String(decoding: errorData.withLock { $0 }, as: UTF8.self))
    }
}

/// Variables the getenv scenarios read: set in this process (for the in-process delivery)
/// and given to every program (for chaos run) with the same values.
enum ScenarioEnvironment {
    static let variables = [
        "CHAOS_CONFORMANCE_SET": "real", "CHAOS_CONFORMANCE_UNSET": "real", "CHAOS_CONFORMANCE_OTHER": "real",
    ]

    static let installed: Void = {
        for (name, value) in variables { setenv(name, value, 1) }
    }()
}

/// A fresh folder (its physical path) holding `folders` and `files` (each containing "x").
func workspace(_ label: String, folders: [String], files: [String] = []) throws -> String {
    // The label is a scenario's name: only its letters and digits, no glob characters.
    let slug = String(
        label.unicodeScalars.filter { CharacterSet.alphanumerics.contains($0) }.prefix(24).map(Character.init))
    let base = NSTemporaryDirectory() + "chaos-conformance-\(slug)-\(UUID().uuidString.prefix(8))"
    try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
    let physical =
        realpath(base, nil).map { pointer in
            defer { free(pointer) }
            return String(cString: pointer)
        } ?? base
    for folder in folders {
        try FileManager.default.createDirectory(atPath: physical + "/" + folder, withIntermediateDirectories: true)
    }
    for file in files {
        try "x".write(toFile: physical + "/" + file, atomically: false, encoding: .utf8)
    }
    return physical
}

func remove(_ path: String) { try? FileManager.default.removeItem(atPath: path) }

/// One question asked of both deliveries: a profile, a probe and the answer expected.
///
/// `$DIR` in the profile and the probe's arguments is a fresh workspace per run (holding
/// `folders` and `files`); other `$NAME`s are filled from the substitutions a test gives.
struct Scenario: Sendable, CustomTestStringConvertible {
    let name: String
    let profile: String
    let probe: [String]
    let expected: String
    var folders: [String] = ["io", "io2"]
    var files: [String] = []

    var testDescription: String { name }

    func filled(_ text: String, _ values: [String: String]) -> String {
        // Longest names first, so that $PORT does not eat $PORT_OPEN.
        values.keys.sorted { $0.count > $1.count }.reduce(text) {
            $0.replacingOccurrences(of: "$" + $1, with: values[$1]!)
        }
    }
}

/// The two ways a profile reaches a program's system calls.
enum Delivery {
    /// The probe program under `chaos run --profile` (and `--seed`, `--delivery`), in
    /// `directory` (else a fresh workspace).
    static func program(
        _ scenario: Scenario, in directory: String? = nil, seed: UInt64? = nil, values: [String: String] = [:],
        delivery: String? = nil
    ) throws -> Outcome {
        try Build.requirePreload()
        let probe = try Build.probeProgram.get()
        let folder = try directory ?? workspace(scenario.name, folders: scenario.folders, files: scenario.files)
        defer { if directory == nil { remove(folder) } }
        var values = values
        values["DIR"] = folder
        let profile = folder + ".json"
        try scenario.filled(scenario.profile, values).write(toFile: profile, atomically: true, encoding: .utf8)
        defer { remove(profile) }
        // --quiet: what the program printed is compared, not chaos run's report.
        var arguments = [Build.chaos, "run", "--quiet", "--profile", profile]
        if let seed { arguments += ["--seed", String(seed)] }
        if let delivery { arguments += ["--delivery", delivery] }
        arguments += ["--", probe] + scenario.probe.map { scenario.filled($0, values) }
        return try Command.run(arguments, environment: ScenarioEnvironment.variables)
    }

    /// The profile applied in this process (`apply(seed:)`), the probe called directly, and
    /// everything reverted before anything else happens; in `directory` (else a fresh
    /// workspace).
    static func inProcess(
        _ scenario: Scenario, in directory: String? = nil, seed: UInt64 = 1, values: [String: String] = [:]
    ) throws -> String {
        SystemPoints.register()
        ScenarioEnvironment.installed
        let folder = try directory ?? workspace(scenario.name, folders: scenario.folders, files: scenario.files)
        defer { if directory == nil { remove(folder) } }
        var values = values
        values["DIR"] = folder
        let profile = try ChaosProfile.decode(
            json: scenario.filled(scenario.profile, values), file: "\(scenario.name).json")
        let arguments = scenario.probe.map { scenario.filled($0, values) }
        let chaos = try profile.apply(seed: seed)
        let result = Probe.run(arguments)
        chaos.revertAll()
        return result.line
    }
}

/// The probes of CSystemProbes, called in this process.
enum Probe {
    struct Result {
        let status: Int32
        let line: String
    }

    /// Runs the probe `arguments[0]` with the rest (C from start to end: no Swift, and so no
    /// file or clock call of the runtime, between its calls).
    static func run(_ arguments: [String]) -> Result {
        var buffer = [CChar](repeating: 0, count: 65536)
        let copies = arguments.map { strdup($0) }
        defer { copies.forEach { free($0) } }
        let rest: [UnsafePointer<CChar>?] = copies.dropFirst().map { $0.map { UnsafePointer($0) } }
        let status = rest.withUnsafeBufferPointer { pointers in
            buffer.withUnsafeMutableBufferPointer { out in
                chaos_probe_run(copies[0], Int32(pointers.count), pointers.baseAddress, out.baseAddress, out.count)
            }
        }
        let line = buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        return Result(status: status, line: status == 0 ? line : "probe failed: \(line)")
    }
}

/// TCP listeners on 127.0.0.1 (ephemeral ports) that never accept: the kernel completes
/// the handshake from the backlog. Closed when the value is dropped.
final class Listeners: Sendable {
    let ports: [Int]
    private let descriptors: [Int32]

    init(count: Int) throws {
        var ports: [Int] = []
        var descriptors: [Int32] = []
        for _ in 0..<count {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            try #require(fd >= 0, "socket: \(errno)")
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafeMutablePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
                    bind(fd, raw, length) == 0 && getsockname(fd, raw, &length) == 0 && listen(fd, 16) == 0
                }
            }
            try #require(bound, "cannot listen on 127.0.0.1: \(errno)")
            ports.append(Int(UInt16(bigEndian: address.sin_port)))
            descriptors.append(fd)
        }
        self.ports = ports
        self.descriptors = descriptors
    }

    deinit { descriptors.forEach { close($0) } }
}

/// Conditions that skip a test with a named reason.
enum Needs {
    static func program(_ name: String) -> Bool { Command.which(name) != nil }
    static var cc: Bool { program("cc") }
    static var coreutils: Bool { ["cp", "dd", "tee", "sh"].allSatisfy(program) }
    static let sqliteLibrary: Bool = chaos_probe_sqlite_load() != 0
}
#endif
