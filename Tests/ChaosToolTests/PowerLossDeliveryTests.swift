import Foundation
import TestHelpers
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Where power loss runs and where it is refused: the seccomp delivery carries it (it sees
/// every write, stdio flushes too, and keeps its log outside the program), the preload
/// library refuses it with the reason, and the whole tree ends with the power.
@Suite(.serialized) struct PowerLossDeliveryTests {
    /// A folder with `d/` whose changes lose power at change `at`, and the profile.
    struct Workspace {
        let folder: String
        let profile: String

        init(at call: Int) throws {
            folder =
                FileManager.default.temporaryDirectory.appendingPathComponent("chaos-power-\(UUID().uuidString)").path
            try FileManager.default.createDirectory(atPath: folder + "/d", withIntermediateDirectories: true)
            profile = folder + "/profile.json"
            try
                #"{"entries": [{"point": "system.files", "provider": {"item": "power-loss", "parameters": {"path": "\#(folder)/d"}, "at": [\#(call)]}}]}"#
                .write(toFile: profile, atomically: true, encoding: .utf8)
        }

        func remove() { try? FileManager.default.removeItem(atPath: folder) }

        func run(_ script: String, options: [String] = []) throws -> ChaosToolTests.Outcome {
            try ChaosToolTests.chaos(
                ["run", "--preload", ChaosToolTests.preloadLibrary] + options + ["--profile", profile, "--"]
                    + ["/bin/sh", "-c", script])
        }
    }

    @Test func thePreloadDeliveryIsRefusedWithTheReason() throws {
        let workspace = try Workspace(at: 1)
        defer { workspace.remove() }
        let refused = try workspace.run("echo x > \(workspace.folder)/d/f", options: ["--delivery", "preload"])
        #expect(refused.status == 125, "\(refused.errors)")
        #expect(refused.errors.contains("stdio flushes"), "\(refused.errors)")
        #expect(!FileManager.default.fileExists(atPath: workspace.folder + "/d/f"), "the program never ran")
    }

    @Test(.disabled(if: Sanitizers.thread, Sanitizers.preloadReason))
    func powerLossEndsTheWholeTreeAndSaysWhatItRolledBack() throws {
        let workspace = try Workspace(at: 3)
        defer { workspace.remove() }
        let seconds = 6000 + Int(getpid() % 3000)  // names this test's sleeper
        // A stdio write (printf's buffer, flushed by the shell at exit of the builtin), a
        // background process that outlives nothing, and the third change loses power.
        let outcome = try workspace.run(
            "cd \(workspace.folder)/d && printf one > a && (sleep \(seconds) &) && printf two > b && printf three > c"
        )
        #expect(outcome.status == 137, "\(outcome.errors)")
        #expect(outcome.errors.contains("power lost at change 3"), "\(outcome.errors)")
        #expect(outcome.errors.contains("rolled back"), "\(outcome.errors)")
        // Nothing was synced: every file and name is gone again.
        let left = try FileManager.default.contentsOfDirectory(atPath: workspace.folder + "/d")
        #expect(left.isEmpty, "\(left)")
        // The sleeper was part of the tree: it died with the power.
        let sleepers = try FileManager.default.contentsOfDirectory(atPath: "/proc").filter { entry in
            guard Int32(entry) != nil else { return false }
            let command = (try? String(contentsOfFile: "/proc/\(entry)/cmdline", encoding: .utf8)) ?? ""
            return command == "sleep\u{0}\(seconds)\u{0}"
        }
        #expect(sleepers.isEmpty, "still running: \(sleepers)")
    }
}
