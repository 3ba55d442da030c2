import ArgumentParser
import ChaosKit

/// `chaos validate FILE…`: checks profiles; exit status 1 when any has an error.
struct Validate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check chaos profiles: errors give file, line, column and JSON path."
    )

    @Argument(help: "Profile files (JSON).")
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
                let checkable = ChaosProfile(seed: profile.seed, entries: profile.entries.filter { known.contains($0.pointName) })
                try checkable.validate()
                print("\(file): ok (\(profile.entries.count) entries)")
                for name in Set(unknown).sorted() {
                    print("\(file): note: '\(name)' is not a built-in point; its entries were checked for structure only")
                }
            } catch {
                failed = true
                printError("\(error)")
            }
        }
        if failed { throw ExitCode(1) }
    }
}

/// `chaos list`: every point and provider, with parameters.
struct List: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List the built-in points, providers and catalogue items.")

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
            ("modifiers", "\"probability\": 0…1, \"times\": n ≥ 1, \"delay\": \"250ms\""),
            ("\"match\": {…} on an entry", "only calls whose arguments match (points that support it)"),
        ] {
            print("  \(name.padding(toLength: 38, withPad: " ", startingAt: 0)) \(meaning)")
        }
        print("\nPoints:")
        for point in Chaos.catalogue {
            print("  \(point.name)  \(point.signature)")
            for item in point.items {
                print("      \(item.name)\(item.parameters.isEmpty ? "" : "(\(item.parameters))")")
            }
        }
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
