import ArgumentParser
import ChaosHooks
@_spi(Hooks) import ChaosKit

/// `chaos validate [--for app|run] FILE…`: checks profiles as the delivery they are meant
/// for would; exit status 1 when any has an error.
struct Validate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check chaos profiles: errors give file, line, column and JSON path.",
        discussion: """
            --for app (the default) checks as a Swift program applies the profile (Chaos.bootstrap, \
            CHAOS_PROFILE, a session, the console): built-in and system points fully; a point \
            this tool does not know is an app's own and waits in the program until it is created, \
            so only its JSON shape is checked here (a note names the nearest known points).

            --for run checks exactly as chaos run does: system points only, compiled for the \
            preload library.
            """
    )

    @Option(
        name: .customLong("for"),
        help: "The delivery the profile is meant for: app (in a Swift program) or run (chaos run).")
    var delivery: Delivery = .app

    @Flag(
        name: .customLong("print-plan"),
        help: """
            With --for run and one profile: print the fault plan chaos run would execute (its seed \
            the profile's, else a fresh one), for a chaos run program's control endpoint, which \
            takes plans, not JSON (e.g. a Chaos Toolkit experiment's apply_profile).
            """)
    var printPlan = false

    @Argument(help: "Profile files (JSON); - reads one from standard input.")
    var files: [String]

    func validate() throws {
        if printPlan && (delivery != .run || files.count != 1) {
            throw ValidationError("--print-plan takes --for run and one profile")
        }
    }

    func run() throws {
        BuiltInPoints.register()
        if printPlan {
            do {
                let compiled = try SystemRunPlan.compile(try ChaosProfile.load(contentsOfFile: files[0]))
                print(compiled.text(seed: compiled.seed ?? UInt64.random(in: .min ... .max)), terminator: "")
            } catch {
                printError("\(error)")
                throw ExitCode(1)
            }
            return
        }
        var failed = false
        for file in files {
            do {
                let profile = try ChaosProfile.load(contentsOfFile: file)
                let report = try ProfileCheck.check(profile, for: delivery)
                print("\(file): ok for \(delivery.rawValue) (\(profile.entries.count) entries)")
                let known = Chaos.pointNames
                for entry in report.waiting {
                    print(
                        "\(entry.pointLocation ?? entry.location): note: no point '\(InputExcerpt.of(entry.pointName, limit: 200))' here; in the app the entry waits until the point is created, and its provider is checked then\(Suggestions.hint(for: entry.pointName, in: known))"
                    )
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
