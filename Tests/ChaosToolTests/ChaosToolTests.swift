import Foundation
import TestHelpers
import Testing

/// Runs the built `chaos` tool as a user would, and the programs it starts.
@Suite struct ChaosToolTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The build folder holding this test bundle, and so the `chaos` tool.
    static var buildDirectory: URL { TestHelpers.buildDirectory(holding: "chaos") }

    struct Outcome {
        let status: Int32
        let output: String
        let errors: String
    }

    static func run(_ executable: String, _ arguments: [String], environment: [String: String] = [:]) throws -> Outcome
    {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let ended = try runToEnd(process)
        return Outcome(
            status: ended.status, output: String(decoding: ended.stdout, as: UTF8.self), errors: ended.stderr)
    }

    static func chaos(_ arguments: String...) throws -> Outcome {
        try chaos(arguments)
    }

    static func chaos(_ arguments: [String]) throws -> Outcome {
        try run(buildDirectory.appendingPathComponent("chaos").path, arguments)
    }

    /// The preload library built from its source by the C compiler, so the test does not
    /// depend on which products `swift test` happened to build. Its folders are the
    /// launcher's list (`preload_sources`), which LauncherSourcesTests holds to Package.swift.
    static let preloadLibrary: String = {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("chaos-preload-\(getpid()).so").path
        let folders = ((try? LauncherSourcesTests.launcherList("preload_sources")) ?? []).sorted()
        let sources = folders.flatMap { folder in
            let directory = root.appendingPathComponent(folder)
            return ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).filter {
                $0.hasSuffix(".c")
            }
            .sorted()
            .map { directory.appendingPathComponent($0).path }
        }
        let includes = folders.flatMap { [$0, $0 + "/include"] }
            .flatMap { ["-I", root.appendingPathComponent($0).path] }
        let built = try? run(
            "/usr/bin/env",
            ["cc", "-shared", "-fPIC", "-O2", "-Wl,-z,defs"] + includes + ["-o", output] + sources + [
                "-ldl", "-lpthread",
                "-Wl,--version-script="
                    + root.appendingPathComponent("Sources/2-Deliveries/CChaosPreload/exports.map").path,
            ])
        // The tests that use it then fail on a library that cannot be read; this says why.
        if built?.status != 0 {
            FileHandle.standardError.write(
                Data(
                    "cc could not build the preload library from its sources: \(built?.errors ?? "cc did not run")\n"
                        .utf8))
        }
        return output
    }()

    static func temporaryFile(_ text: String, suffix: String = ".json") throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(
            "chaos-tool-\(UUID().uuidString)\(suffix)"
        ).path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test func validateAcceptsTheExamplesAndExitsZero() throws {
        let folder = Self.root.appendingPathComponent("Examples/Profiles")
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".json") }
            .map { folder.appendingPathComponent($0).path }
        #expect(!files.isEmpty)
        // Each as the delivery it is for: power loss exists only under `chaos run`, and a
        // Swift program refuses it when applied, as `validate --for app` says.
        let forRun = try files.filter { try String(contentsOfFile: $0, encoding: .utf8).contains(#""power-loss""#) }
        let forApp = files.filter { !forRun.contains($0) }
        #expect(!forApp.isEmpty)
        for (delivery, group) in [("app", forApp), ("run", forRun)] where !group.isEmpty {
            let outcome = try Self.run(
                Self.buildDirectory.appendingPathComponent("chaos").path, ["validate", "--for", delivery] + group)
            #expect(outcome.status == 0, "\(delivery): \(outcome.errors)")
            #expect(outcome.output.components(separatedBy: ": ok for \(delivery)").count - 1 == group.count)
        }
    }

    @Test func validateReportsLineColumnAndPathAndExitsOne() throws {
        let bad = try Self.temporaryFile(
            "{\n  \"entries\": [\n    {\"point\": \"demo.today\", \"provider\": {\"times\": 0, \"constant\": \"2000-01-01T00:00:00Z\"}}\n  ]\n}"
        )
        defer { try? FileManager.default.removeItem(atPath: bad) }
        let outcome = try Self.chaos("validate", bad)
        #expect(outcome.status == 1)
        #expect(outcome.errors.contains("\(bad):3:"))
        #expect(outcome.errors.contains("$.entries[0].provider.times"))
    }

    /// A profile over the engine's entry limit is refused at the entry that crosses it, in
    /// profile order, for both deliveries and by `chaos run` itself; a disabled entry does
    /// not count.
    @Test func theEntryPastTheEnginesLimitIsTheOneNamed() throws {
        func files(_ number: Int) -> String {
            #"{"point": "system.files", "provider": {"item": "enospc", "parameters": {"path": "/nonexistent/\#(number)"}}}"#
        }
        let entries = [#"{"point": "system.clock", "provider": "frozen", "enabled": false}"#] + (0...256).map(files)
        let bad = try Self.temporaryFile(#"{"entries": [\#(entries.joined(separator: ",\n"))]}"#)
        defer { try? FileManager.default.removeItem(atPath: bad) }
        for arguments in [
            ["validate", bad], ["validate", "--for", "run", bad], ["run", "--profile", bad, "--", "true"],
        ] {
            let outcome = try Self.chaos(arguments)
            #expect(outcome.status == (arguments[0] == "run" ? 125 : 1), "\(arguments): \(outcome.errors)")
            #expect(outcome.errors.contains("at $.entries[257]:"), "\(arguments): \(outcome.errors)")
            #expect(outcome.errors.contains("at most 256 system entries"), "\(arguments): \(outcome.errors)")
        }
        let fits = try Self.temporaryFile(#"{"entries": [\#(entries.dropLast().joined(separator: ",\n"))]}"#)
        defer { try? FileManager.default.removeItem(atPath: fits) }
        #expect(try Self.chaos("validate", fits).status == 0)
    }

    @Test func validateChecksBuiltInPointsTypes() throws {
        let bad = try Self.temporaryFile(#"{"entries": [{"point": "demo.today", "provider": {"constant": 12}}]}"#)
        defer { try? FileManager.default.removeItem(atPath: bad) }
        let outcome = try Self.chaos("validate", bad)
        #expect(outcome.status == 1)
        #expect(outcome.errors.contains("is not a Date"))
    }

    @Test func listShowsProvidersAndPoints() throws {
        let outcome = try Self.chaos("list")
        #expect(outcome.status == 0)
        #expect(outcome.output.contains("sequential"))
        #expect(outcome.output.contains("demo.today"))
        // Every system point and item, with its declared parameters.
        #expect(outcome.output.contains("system.files"))
        #expect(outcome.output.contains("system.accept"))
        #expect(
            outcome.output.contains("operations: [string] = [\"write\",\"sync\",\"truncate\"] — which operations"),
            "\(outcome.output)")
        #expect(outcome.output.contains("delay: duration — how long to wait before the real call"))
        #expect(outcome.output.contains("probability"))
    }

    /// Docs/profile.schema.json is what `chaos schema` makes from the declarations: adding
    /// an item or a parameter without regenerating it fails here.
    @Test func thePublishedSchemaIsGeneratedFromTheDeclarations() throws {
        let outcome = try Self.chaos("schema")
        #expect(outcome.status == 0, "\(outcome.errors)")
        let committed = try String(
            contentsOf: Self.root.appendingPathComponent("Docs/profile.schema.json"), encoding: .utf8)
        #expect(outcome.output == committed, "regenerate it: swift run chaos schema > Docs/profile.schema.json")
    }

    @Test func validateKnowsEverySystemPointAndSuggestsNames() throws {
        let bad = try Self.temporaryFile(#"{"entries": [{"point": "system.clock", "provider": "ofset"}]}"#)
        defer { try? FileManager.default.removeItem(atPath: bad) }
        let outcome = try Self.chaos("validate", bad)
        #expect(outcome.status == 1)
        #expect(outcome.errors.contains("did you mean 'offset'?"), "\(outcome.errors)")
        let port = try Self.temporaryFile(
            #"{"entries": [{"point": "system.connect", "provider": {"item": "refused", "parameters": {"prot": 8080}}}]}"#
        )
        defer { try? FileManager.default.removeItem(atPath: port) }
        let refused = try Self.chaos("validate", port)
        #expect(refused.status == 1)
        #expect(refused.errors.contains("unknown parameter 'prot'; did you mean 'port'?"), "\(refused.errors)")
        #expect(refused.errors.contains("$.entries[0].provider.parameters.prot"), "\(refused.errors)")
    }

    @Test func demoRunsAndRestoresEverything() throws {
        let outcome = try Self.chaos("demo", "--seed", "7")
        #expect(outcome.status == 0, "\(outcome.errors)")
        #expect(outcome.output.contains("apply() threw"))
        // The refused entry is shown with its real constant, not a placeholder.
        #expect(outcome.output.contains("demo.greeting ← constant(never greeted) with probability 1.5"))
        #expect(!outcome.output.contains("(?)"), "\(outcome.output)")
        #expect(outcome.output.contains("Done: every point is back to its original."))
    }

    /// Every ```swift block of README.md and Docs/ type-checks against the built modules.
    @Test func everyDocumentationSnippetCompiles() throws {
        let outcome = try Self.run(
            "/usr/bin/env",
            [
                "python3", Self.root.appendingPathComponent("Scripts/check-doc-snippets.py").path,
                Self.buildDirectory.path,
            ])
        #expect(outcome.status == 0, "\(outcome.output)\(outcome.errors)")
        #expect(outcome.output.contains(" 0 did not"), "\(outcome.output)")
    }

    #if os(Linux)
    @Test(.disabled(if: Sanitizers.thread, Sanitizers.preloadReason)) func runMovesTheSystemDateProgram() throws {
        let outcome = try Self.run(
            Self.buildDirectory.appendingPathComponent("chaos").path,
            [
                "run", "--preload", Self.preloadLibrary, "--profile",
                Self.root.appendingPathComponent("Examples/Profiles/thirty-years-ago.json").path, "--", "date", "+%Y",
            ]
        )
        #expect(outcome.status == 0, "\(outcome.errors)")
        let year = Calendar(identifier: .gregorian).component(.year, from: Date())
        #expect(Int(outcome.output.trimmingCharacters(in: .whitespacesAndNewlines)) == year - 30)
        let plain = try Self.run("/usr/bin/env", ["date", "+%Y"])
        #expect(Int(plain.output.trimmingCharacters(in: .whitespacesAndNewlines)) == year)
    }

    /// `--profile <(…)` and `--profile -`, as bash and a pipe give them: read once, by the tool.
    @Test(.disabled(if: Sanitizers.thread, Sanitizers.preloadReason)) func runReadsAProfileFromAPipeOrStandardInput()
        throws
    {
        let chaos = Self.buildDirectory.appendingPathComponent("chaos").path
        let profile = Self.root.appendingPathComponent("Examples/Profiles/thirty-years-ago.json").path
        let year = Calendar(identifier: .gregorian).component(.year, from: Date())
        let substituted = try Self.run(
            "/bin/bash",
            [
                "-c", "\"$0\" run --preload \"$1\" --profile <(cat \"$2\") -- date +%Y", chaos, Self.preloadLibrary,
                profile,
            ])
        #expect(substituted.status == 0, "\(substituted.errors)")
        #expect(Int(substituted.output.trimmingCharacters(in: .whitespacesAndNewlines)) == year - 30)
        let piped = try Self.run(
            "/bin/bash",
            [
                "-c", "cat \"$2\" | \"$0\" run --preload \"$1\" --profile - -- date +%Y", chaos, Self.preloadLibrary,
                profile,
            ])
        #expect(piped.status == 0, "\(piped.errors)")
        #expect(Int(piped.output.trimmingCharacters(in: .whitespacesAndNewlines)) == year - 30)
        let validated = try Self.run("/bin/bash", ["-c", "\"$0\" validate - < \"$1\"", chaos, profile])
        #expect(validated.status == 0 && validated.output.contains("-: ok"), "\(validated.output)\(validated.errors)")
        let broken = try Self.run("/bin/bash", ["-c", "echo '{\"entries\": [' | \"$0\" validate -", chaos])
        #expect(
            broken.status == 1 && (broken.output + broken.errors).contains("<stdin>:2:1"),
            "\(broken.output)\(broken.errors)")
    }

    /// A launcher outside the build folder of the checkout it was built from never builds: it
    /// says what is missing and how to get it.
    @Test func aLauncherOutsideItsBuildFolderRefusesWithoutBuilding() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "chaos-launcher-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let copy = folder.appendingPathComponent("chaos").path
        try FileManager.default.copyItem(atPath: Self.buildDirectory.appendingPathComponent("chaos").path, toPath: copy)
        // A child this process starts meanwhile holds a copy of the copy's write descriptor
        // until it execs: the exec then fails with ETXTBSY for a moment (seen in a loaded run).
        var started: ChaosToolTests.Outcome?
        for _ in 0..<100 where started == nil {
            do {
                started = try Self.run(copy, ["demo"], environment: ["CHAOS_TOOL": ""])
            } catch let error as NSError
                where (error.userInfo[NSUnderlyingErrorKey] as? NSError).map({
                    $0.domain == NSPOSIXErrorDomain && $0.code == Int(ETXTBSY)
                }) == true
            {
                usleep(50_000)
            }
        }
        let outcome = try #require(started, "the copy stayed busy for 5 s")
        #expect(outcome.status == 127)
        #expect(outcome.errors.contains("chaos-tool") && outcome.errors.contains("swift build"), "\(outcome.errors)")
        #expect(!outcome.errors.contains("building it"), "\(outcome.errors)")
        #expect((try FileManager.default.contentsOfDirectory(atPath: folder.path)) == ["chaos"])
    }

    /// A profile compiled on this run (`--no-cache`) goes through the Swift tool, whose
    /// runtime blocks and ignores signals; the program must still get the signal mask and
    /// dispositions `chaos run` was started with, or it would ignore `kill` and `timeout`.
    @Test(.disabled(if: Sanitizers.thread, Sanitizers.preloadReason)) func runPassesTheCallersSignalStateToTheProgram()
        throws
    {
        let show = ["sh", "-c", "grep -E '^Sig(Blk|Ign)' /proc/self/status"]
        // The standard signals 1…31 (bits 0…30); glibc keeps 32 and 33 for itself.
        func standard(_ output: String) -> [UInt64] {
            output.split(separator: "\n").compactMap { UInt64($0.split(separator: "\t").last ?? "", radix: 16) }.map {
                $0 & 0x7FFF_FFFF
            }
        }
        let plain = try Self.run("/usr/bin/env", show)
        #expect(standard(plain.output).count == 2, "\(plain.output)")
        let profile = Self.root.appendingPathComponent("Examples/Profiles/thirty-years-ago.json").path
        for cache in [["--no-cache"], []] {
            let outcome = try Self.chaos(
                ["run", "--preload", Self.preloadLibrary] + cache + ["--profile", profile, "--"] + show)
            #expect(outcome.status == 0, "\(outcome.errors)")
            #expect(
                standard(outcome.output) == standard(plain.output),
                "\(cache): \(outcome.output) against \(plain.output)")
        }
    }

    @Test(.disabled(if: Sanitizers.thread, Sanitizers.preloadReason)) func runAppliesToASwiftProgramBuiltByTheTest()
        throws
    {
        let source = try Self.temporaryFile(
            """
            import Foundation
            let year = Calendar(identifier: .gregorian).component(.year, from: Date())
            let written = FileManager.default.createFile(atPath: CommandLine.arguments[1], contents: Data("x".utf8))
            print(year, written)
            """, suffix: ".swift")
        let binary = source.replacingOccurrences(of: ".swift", with: "")
        defer { for path in [source, binary] { try? FileManager.default.removeItem(atPath: path) } }
        let compiled = try Self.run("/usr/bin/env", ["swiftc", "-O", source, "-o", binary])
        #expect(compiled.status == 0, "\(compiled.errors)")
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("chaos-full-\(UUID().uuidString)")
            .path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let profile = try Self.temporaryFile(
            """
            {"entries": [
              {"point": "system.clock", "provider": {"item": "frozen", "parameters": {"date": "1999-12-31T23:59:59Z"}}},
              {"point": "system.files", "provider": {"item": "enospc", "parameters": {"path": "\(folder)", "operations": ["open", "write"]}}}
            ]}
            """)
        defer { try? FileManager.default.removeItem(atPath: profile) }
        let outcome = try Self.run(
            Self.buildDirectory.appendingPathComponent("chaos").path,
            ["run", "--preload", Self.preloadLibrary, "--profile", profile, "--", binary, folder + "/file"]
        )
        #expect(outcome.status == 0, "\(outcome.errors)")
        #expect(outcome.output.trimmingCharacters(in: .whitespacesAndNewlines) == "1999 false")
        let plain = try Self.run(binary, [folder + "/other"])
        #expect(plain.output.hasSuffix("true\n"))
    }

    /// Short reads and writes, a clock jump and connect/send chaos reach a C program.
    @Test(.disabled(if: Sanitizers.thread, Sanitizers.preloadReason))
    func runAppliesShortIOClockJumpsAndSocketChaosToACProgram() throws {
        let source = try Self.temporaryFile(
            #"""
            #include <stdio.h>
            #include <fcntl.h>
            #include <unistd.h>
            #include <errno.h>
            #include <time.h>
            #include <netinet/in.h>
            #include <sys/socket.h>
            int main(int argc, char **argv) {
                int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
                ssize_t written = write(fd, "0123456789", 10);
                close(fd);
                char buffer[16];
                fd = open(argv[1], O_RDONLY);
                ssize_t read_bytes = read(fd, buffer, 10);
                close(fd);
                time_t first = time(NULL), second = time(NULL);
                int s = socket(AF_INET, SOCK_STREAM, 0);
                struct sockaddr_in address = { .sin_family = AF_INET, .sin_port = htons(9), .sin_addr = { htonl(0x7f000001) } };
                errno = 0;
                int connected = connect(s, (struct sockaddr *)&address, sizeof address);
                printf("%zd %zd %ld %d %d\n", written, read_bytes, (long)(second - first), connected, errno);
                return 0;
            }
            """#, suffix: ".c")
        let binary = source.replacingOccurrences(of: ".c", with: "")
        defer { for path in [source, binary] { try? FileManager.default.removeItem(atPath: path) } }
        let compiled = try Self.run("/usr/bin/env", ["cc", "-O1", "-o", binary, source])
        #expect(compiled.status == 0, "\(compiled.errors)")
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("chaos-io-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let profile = try Self.temporaryFile(
            """
            {"seed": 3, "entries": [
              {"point": "system.files", "provider": {"item": "short-write", "parameters": {"path": "\(folder)", "operations": ["write", "read"]}}},
              {"point": "system.clock", "provider": {"item": "jump", "parameters": {"by": "+1d", "after": 1}}},
              {"point": "system.connect", "provider": {"item": "timeout", "parameters": {"after": "50ms"}}}
            ]}
            """)
        defer { try? FileManager.default.removeItem(atPath: profile) }
        let outcome = try Self.run(
            Self.buildDirectory.appendingPathComponent("chaos").path,
            ["run", "--preload", Self.preloadLibrary, "--profile", profile, "--", binary, folder + "/data"]
        )
        #expect(outcome.status == 0, "\(outcome.errors)")
        #expect(outcome.output.trimmingCharacters(in: .whitespacesAndNewlines) == "5 5 86400 -1 \(ETIMEDOUT)")
        let plain = try Self.run(binary, [folder + "/plain"])
        #expect(plain.output.hasPrefix("10 10 0 -1 \(ECONNREFUSED)"), "\(plain.output)")
    }

    @Test func runRefusesEntriesThatCannotReachAnotherProgram() throws {
        let profile = try Self.temporaryFile(
            #"{"entries": [{"point": "demo.today", "provider": {"constant": "2000-01-01T00:00:00Z"}}]}"#)
        defer { try? FileManager.default.removeItem(atPath: profile) }
        let outcome = try Self.chaos("run", "--preload", Self.preloadLibrary, "--profile", profile, "--", "date")
        #expect(outcome.status != 0)
        #expect(outcome.status == 125)
        #expect(outcome.errors.contains("demo.today lives in a Swift program"), "\(outcome.errors)")
    }

    /// `chaos validate --for run` is `chaos run`'s own check: the same refusal, word for
    /// word, located at the value to fix, with "did you mean". The default (app) delivery
    /// refuses a `system.` typo too, since system points all exist at once.
    @Test func validateAndRunAgreeOnTyposAndLocateTheWrongValue() throws {
        let point = try Self.temporaryFile(
            "{\"entries\": [\n  {\"point\": \"system.file\", \"provider\": \"enospc\"}\n]}")
        let item = try Self.temporaryFile(
            "{\"entries\": [\n  {\"point\": \"system.files\",\n   \"provider\": {\"item\": \"enospcc\", \"parameters\": {\"paths\": [\"/tmp\"]}}}\n]}"
        )
        defer { for file in [point, item] { try? FileManager.default.removeItem(atPath: file) } }
        for (file, place, suggestion) in [
            (point, "\(point):2:13 at $.entries[0].point", "did you mean 'system.files'"),
            (item, "\(item):3:25 at $.entries[0].provider.item", "did you mean 'enospc'?"),
        ] {
            let app = try Self.chaos("validate", file)
            #expect(app.status == 1, "\(app.output)")
            #expect(app.errors.hasPrefix(place), "\(app.errors)")
            #expect(app.errors.contains(suggestion), "\(app.errors)")
            let validated = try Self.chaos("validate", "--for", "run", file)
            #expect(validated.status == 1, "\(validated.output)")
            #expect(validated.errors.hasPrefix(place), "\(validated.errors)")
            #expect(validated.errors.contains(suggestion), "\(validated.errors)")
            let ran = try Self.chaos("run", "--preload", Self.preloadLibrary, "--profile", file, "--", "true")
            #expect(ran.status == 125)
            #expect(ran.errors == "chaos run: \(validated.errors)")
        }
    }

    /// An app's own point is unknown to the tool: for the app it waits, with a note that
    /// offers the nearest names; for `chaos run` it is refused.
    @Test func validateForTheAppLetsAnAppsPointWaitAndRunRefusesIt() throws {
        let profile = try Self.temporaryFile(#"{"entries": [{"point": "demo.todya", "provider": "original"}]}"#)
        defer { try? FileManager.default.removeItem(atPath: profile) }
        let app = try Self.chaos("validate", "--for", "app", profile)
        #expect(app.status == 0, "\(app.errors)")
        #expect(app.output.contains("at $.entries[0].point: note: no point 'demo.todya'"), "\(app.output)")
        #expect(app.output.contains("did you mean 'demo.today'?"), "\(app.output)")
        let run = try Self.chaos("validate", "--for", "run", profile)
        #expect(run.status == 1)
        #expect(run.errors.contains("demo.todya lives in a Swift program"), "\(run.errors)")
    }
    #endif
}
