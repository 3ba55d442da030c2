import ArgumentParser
import ChaosHooks
import ChaosKit

/// `chaos validate FILE…`: checks profiles; exit status 1 when any has an error.
struct Validate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check chaos profiles: errors give file, line, column and JSON path."
    )

    @Argument(help: "Profile files (JSON); - reads one from standard input.")
    var files: [String]

    func run() throws {
        BuiltInPoints.register()
        var failed = false
        for file in files {
            do {
                let profile = try ChaosProfile.load(contentsOfFile: file)
                let known = Set(Chaos.pointNames)
                let unknown = profile.entries.map(\.pointName).filter { !known.contains($0) }
                // Entries on the tool's own points are checked fully; an app's points only
                // exist in the app, so for those the structure is what can be checked here.
                let checkable = ChaosProfile(
                    seed: profile.seed, entries: profile.entries.filter { known.contains($0.pointName) })
                try checkable.validate()
                print("\(file): ok (\(profile.entries.count) entries)")
                for name in Set(unknown).sorted() {
                    print(
                        "\(file): note: '\(name)' is not a built-in point; its entries were checked for structure only")
                }
                // System entries also run under `chaos run`: say when one could not.
                let system = profile.entries.filter { SystemPointKind(pointName: $0.pointName) != nil }
                if !system.isEmpty {
                    do throws(ChaosError) {
                        _ = try SystemRunPlan.compile(ChaosProfile(seed: profile.seed, entries: system))
                    } catch {
                        print("\(file): note: chaos run would refuse it (in-process it applies): \(error)")
                    }
                }
            } catch {
                failed = true
                printError("\(error)")
            }
        }
        if failed { throw ExitCode(1) }
    }
}

/// `chaos list`: every point and provider, with the parameters each item declares.
struct List: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the built-in points, providers, catalogue items and their parameters.")

    func run() {
        BuiltInPoints.register()
        print("Providers (every point):")
        for (name, meaning) in [
            ("original", "call the real implementation"),
            ("nil", "return nil (Optional results)"),
            ("random", "a random value of the result type, from the seed"),
            ("{\"constant\": JSON}", "return this value"),
            ("{\"sequential\": [p0, p1, …]}", "call i uses p_i; the last repeats"),
            ("{\"item\": NAME, \"parameters\": {…}}", "a point's catalogue item (below)"),
            ("\"match\": {…} on an entry", "only calls whose arguments match (points that declare conditions)"),
        ] {
            print("  \(name.padding(toLength: 38, withPad: " ", startingAt: 0)) \(meaning)")
        }
        print("\nModifiers (on any provider object):")
        for (key, schema) in ProviderModifier.schemaProperties {
            if case .object(let members) = schema, case .string(let text)? = members["description"] {
                print("  \(key.padding(toLength: 38, withPad: " ", startingAt: 0)) \(text)")
            }
        }
        print("\nPoints:")
        for point in Chaos.catalogue {
            print("  \(point.name)  \(point.signature)")
            for item in point.items {
                print("    \(item.name)\(item.summary.isEmpty ? "" : " — \(item.summary)")")
                for parameter in item.declaredParameters {
                    print("        \(parameter.description)")
                }
            }
            if let conditions = point.matchConditions {
                print("    match:")
                for condition in conditions { print("        \(condition.description)") }
            }
        }
    }
}

/// `chaos schema`: the profile JSON Schema for the built-in points, from their declarations.
struct Schema: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "Print the JSON Schema of profiles, made from the built-in points' declarations (Docs/profile.schema.json)."
    )

    func run() {
        BuiltInPoints.register()
        // The demo's points are the tool's own; the schema describes the library's.
        let points = Chaos.catalogue.filter { !$0.name.hasPrefix("demo.") }
        print(ProfileSchema.document(points: points).prettyText, terminator: "")
    }
}

func printError(_ message: String) {
    var standardError = StandardError()
    print(message, to: &standardError)
}

struct StandardError: TextOutputStream {
    mutating func write(_ string: String) {
        FileHandleWriter.writeToStandardError(string)
    }
}
