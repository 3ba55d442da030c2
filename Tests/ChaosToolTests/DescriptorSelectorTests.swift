import Foundation
import TestHelpers
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Files entries that name descriptors instead of paths (libfiu's faults by descriptor):
/// standard input from a pipe, a pipe by kind, a terminal by kind, under both deliveries.
@Suite(.serialized, .disabled(if: Sanitizers.thread, Sanitizers.preloadReason)) struct DescriptorSelectorTests {
    static func profile(_ item: String, _ parameters: String) throws -> String {
        try ChaosToolTests.temporaryFile(
            #"{"entries": [{"point": "system.files", "provider": {"item": "\#(item)", "parameters": {\#(parameters)}}}]}"#
        )
    }

    @Test func readsFromStandardInputFailWithEIOUnderBothDeliveries() throws {
        let profile = try Self.profile("eio", #""descriptor": 0, "operations": ["read"]"#)
        for delivery in ["preload", "seccomp"] {
            let outcome = try ChaosToolTests.chaos([
                "run", "--preload", ChaosToolTests.preloadLibrary, "--delivery", delivery, "--profile", profile, "--",
                "/bin/sh", "-c", "echo piped | cat",
            ])
            // The shell's own pipe is cat's standard input: its read fails.
            #expect(outcome.status == 1, "\(delivery): \(outcome.errors)")
            #expect(outcome.errors.contains("cat: -: Input/output error"), "\(delivery): \(outcome.errors)")
            #expect(!outcome.output.contains("piped"), "\(delivery): \(outcome.output)")
        }
        // Without the entry the same command passes the line on.
        let plain = try ChaosToolTests.run("/bin/sh", ["-c", "echo piped | cat"])
        #expect(plain.output == "piped\n")
    }

    @Test func writesToAPipeFailWhileWritesToAFileDoNot() throws {
        let profile = try Self.profile("fail", #""errno": "EPIPE", "kinds": ["pipe"], "operations": ["write"]"#)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("chaos-kind-\(UUID().uuidString)").path
        defer { unlink(file) }
        for delivery in ["preload", "seccomp"] {
            let outcome = try ChaosToolTests.chaos([
                "run", "--preload", ChaosToolTests.preloadLibrary, "--delivery", delivery, "--profile", profile, "--",
                "/bin/sh", "-c", "echo to-file > \(file); printf to-pipe | cat; echo",
            ])
            #expect(!outcome.output.contains("to-pipe"), "\(delivery): \(outcome.output)")
            #expect((try? String(contentsOfFile: file, encoding: .utf8)) == "to-file\n", "\(delivery)")
        }
    }

    /// A real terminal: python's pty gives cat a terminal as standard input.
    @Test(.enabled(if: ReachTests.which("python3") != nil, "no python3"))
    func readsFromATerminalFailWhenTerminalsAreNamed() throws {
        let profile = try Self.profile("eio", #""kinds": ["tty"], "operations": ["read"]"#)
        let chaos = ChaosToolTests.buildDirectory.appendingPathComponent("chaos").path
        let script = """
            import os, pty, subprocess, sys
            primary, secondary = pty.openpty()
            os.write(primary, b"typed\\n")
            ended = subprocess.run([sys.argv[1], "run", "--preload", sys.argv[2], "--delivery", sys.argv[3],
                                    "--profile", sys.argv[4], "--", "head", "-n", "1"],
                                   stdin=secondary, capture_output=True, timeout=60)
            print(ended.returncode, ended.stdout.decode().strip() or "-", "eio" if b"Input/output" in ended.stderr else "")
            """
        for delivery in ["preload", "seccomp"] {
            let outcome = try #require(
                runPython(["-c", script, chaos, ChaosToolTests.preloadLibrary, delivery, profile]))
            let said = String(decoding: outcome.stdout, as: UTF8.self)
            #expect(said == "1 - eio\n", "\(delivery): \(said) \(outcome.stderr)")
        }
    }
}
