import Foundation
import TestHelpers
import Testing

/// `chaos run` knows before it starts a program whether its preload library reaches it;
/// a program it does not reach goes to the seccomp delivery, and one no delivery reaches
/// is refused: a profile that silently does nothing is worse than no chaos tool.
@Suite struct ReachTests {
    static func which(_ name: String) -> String? {
        for directory in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
            let path = "\(directory)/\(name)"
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return nil
    }

    /// A workspace with a profile that fails every write under it with ENOSPC.
    struct Workspace {
        let folder: String
        let profile: String

        init() throws {
            folder =
                FileManager.default.temporaryDirectory.appendingPathComponent("chaos-reach-\(UUID().uuidString)")
                .path
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            profile = folder + "/enospc.json"
            try
                #"{"entries": [{"point": "system.files", "provider": {"item": "enospc", "parameters": {"path": "\#(folder)/out"}}}]}"#
                .write(toFile: profile, atomically: true, encoding: .utf8)
        }

        /// A workspace in `folder`, which exists, for compiling only.
        init(folder: String) {
            self.folder = folder
            profile = folder + "/enospc.json"
        }

        func remove() { try? FileManager.default.removeItem(atPath: folder) }

        /// `chaos run` of `program` with `arguments`, and whether the program got to write
        /// its marker file.
        func run(_ program: String, _ arguments: [String] = [], options: [String] = []) throws -> (
            ChaosToolTests.Outcome, ran: Bool
        ) {
            let marker = folder + "/ran"
            try? FileManager.default.removeItem(atPath: marker)
            let outcome = try ChaosToolTests.chaos(
                ["run", "--preload", ChaosToolTests.preloadLibrary] + options + ["--profile", profile, "--", program]
                    + arguments + [marker])
            return (outcome, FileManager.default.fileExists(atPath: marker))
        }

        /// Builds `source` (C) into `name` with the extra compiler `flags`.
        func compile(_ name: String, _ source: String, flags: [String] = []) throws -> String? {
            let sourcePath = folder + "/\(name).c"
            try source.write(toFile: sourcePath, atomically: true, encoding: .utf8)
            let output = folder + "/" + name
            let built = try ChaosToolTests.run("/usr/bin/env", ["cc", "-O1"] + flags + ["-o", output, sourcePath])
            return built.status == 0 ? output : nil
        }
    }

    /// Creates the file named by its last argument: proof that the program ran.
    static let marking = """
        #include <fcntl.h>
        #include <unistd.h>
        int main(int argc, char **argv) { int fd = open(argv[argc - 1], O_WRONLY | O_CREAT, 0644); return fd < 0; }
        """

    @Test(.enabled(if: which("cc") != nil, "no C compiler (cc)"))
    func aStaticProgramGetsTheSeccompDeliveryAndThePreloadAloneRefusesIt() throws {
        let workspace = try Workspace()
        defer { workspace.remove() }
        guard let program = try workspace.compile("static-marker", Self.marking, flags: ["-static"]) else {
            Issue.record("cc -static failed: is libc6-dev's libc.a installed?")
            return
        }
        let supervised = try workspace.run(program)
        #expect(supervised.0.status == 0 && supervised.ran, "\(supervised.0)")
        #expect(supervised.0.errors.contains("seccomp delivery"), "\(supervised.0.errors)")
        let refused = try workspace.run(program, options: ["--delivery", "preload"])
        #expect(refused.0.status == 125, "\(refused.0)")
        #expect(refused.0.errors.contains("statically linked") && refused.0.errors.contains("--allow-unreached"))
        #expect(!refused.ran, "a refused program must not start")
        let allowed = try workspace.run(program, options: ["--delivery", "preload", "--allow-unreached"])
        #expect(allowed.0.status == 0 && allowed.ran, "\(allowed.0)")
        #expect(allowed.0.errors.contains("warning"), "running it anyway still says chaos cannot reach it")
    }

    @Test(.enabled(if: which("cc") != nil, "no C compiler (cc)"))
    func aDynamicProgramAndAScriptRunningOneStart() throws {
        let workspace = try Workspace()
        defer { workspace.remove() }
        let program = try #require(try workspace.compile("dynamic-marker", Self.marking))
        let direct = try workspace.run(program)
        #expect(direct.0.status == 0 && direct.ran, "\(direct.0)")
        #expect(direct.0.errors.contains("preload delivery"), "only the report: \(direct.0.errors)")
        let script = workspace.folder + "/mark.sh"
        try "#!/bin/sh\nexec \"\(program)\" \"$@\"\n".write(toFile: script, atomically: true, encoding: .utf8)
        chmod(script, 0o755)
        let throughShell = try workspace.run(script)
        #expect(throughShell.0.status == 0 && throughShell.ran, "\(throughShell.0)")
    }

    @Test(.enabled(if: which("cc") != nil, "no C compiler (cc)"))
    func aScriptWhoseInterpreterIsStaticIsSupervisedOrRefusedByThePreload() throws {
        let workspace = try Workspace()
        defer { workspace.remove() }
        guard let interpreter = try workspace.compile("static-interpreter", Self.marking, flags: ["-static"]) else {
            Issue.record("cc -static failed: is libc6-dev's libc.a installed?")
            return
        }
        let script = workspace.folder + "/run.script"
        try "#!\(interpreter)\n".write(toFile: script, atomically: true, encoding: .utf8)
        chmod(script, 0o755)
        let refused = try workspace.run(script, options: ["--delivery", "preload"])
        #expect(refused.0.status == 125 && !refused.ran, "\(refused.0)")
        #expect(refused.0.errors.contains(interpreter), "the refusal names the interpreter it is about")
        let supervised = try workspace.run(script)
        #expect(supervised.0.status == 0 && supervised.ran, "the seccomp delivery reaches it: \(supervised.0)")
    }

    @Test(.enabled(if: which("cc") != nil, "no C compiler (cc)"))
    func anELFOfAnotherClassIsRefused() throws {
        let workspace = try Workspace()
        defer { workspace.remove() }
        let program = try #require(try workspace.compile("other-class", Self.marking))
        // The same program marked 32-bit: the dynamic loader of a 64-bit library would
        // skip the library for it.
        var bytes = try Data(contentsOf: URL(fileURLWithPath: program))
        bytes[4] = 1  // EI_CLASS = ELFCLASS32
        try bytes.write(to: URL(fileURLWithPath: program))
        let refused = try workspace.run(program)
        #expect(refused.0.status == 125 && !refused.ran, "\(refused.0)")
        #expect(refused.0.errors.contains("another class"), "\(refused.0.errors)")
    }

    @Test func aMissingPreloadLibraryIsAnErrorNotALoop() throws {
        let workspace = try Workspace()
        defer { workspace.remove() }
        // The launcher and the tool once handed such a run to each other for ever: a
        // timeout turns that into a failure instead of a hang.
        let chaos = ChaosToolTests.buildDirectory.appendingPathComponent("chaos").path
        // The plan compiled for the run is deleted on this path too: it once stayed behind.
        let temporary = workspace.folder + "/tmp"
        try FileManager.default.createDirectory(atPath: temporary, withIntermediateDirectories: true)
        for cache in [[], ["--no-cache"]] {
            let outcome = try ChaosToolTests.run(
                "/usr/bin/timeout",
                ["60", chaos, "run", "--preload", workspace.folder + "/missing.so"] + cache
                    + ["--profile", workspace.profile, "--", "/bin/true"], environment: ["TMPDIR": temporary])
            #expect(outcome.status == 125, "\(cache): \(outcome)")
            #expect(outcome.errors.contains("missing.so"), "\(cache): \(outcome.errors)")
            #expect(try FileManager.default.contentsOfDirectory(atPath: temporary) == [], "\(cache)")
        }
    }

    /// Runs `executable` in `directory` (go builds the module it finds there).
    static func runIn(_ directory: String, _ executable: String, _ arguments: [String], environment: [String: String])
        throws -> ChaosToolTests.Outcome
    {
        try ChaosToolTests.run(
            "/bin/sh", ["-c", "cd \"$0\" && exec \"$@\"", directory, executable] + arguments, environment: environment)
    }
}
