import Foundation
import TestHelpers
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A `system.files` path reaches the file or directory it names, whatever name the profile
/// and the program use for it (Docs/Providers.md, "Which calls a path selects").
@Suite(.disabled(if: Sanitizers.thread, Sanitizers.preloadReason)) struct PathIdentityTests {
    /// Whether `script` (run by sh in `directory`) fails under `chaos run` with an enospc
    /// entry on opens and writes under `selected`.
    static func fails(_ selected: String, _ script: String, in directory: String) throws -> Bool {
        let profile = try ChaosToolTests.temporaryFile(
            """
            {"entries": [{"point": "system.files", "provider": {"item": "enospc",
              "parameters": {"path": "\(selected)", "operations": ["open", "write"]}}}]}
            """)
        defer { try? FileManager.default.removeItem(atPath: profile) }
        let outcome = try ChaosToolTests.chaos(
            "run", "--preload", ChaosToolTests.preloadLibrary, "--profile", profile, "--", "/bin/sh", "-c",
            "cd '\(directory)' && \(script)")
        return outcome.status != 0
    }

    /// A fresh folder with its physical path: real/sub, lnk -> real, deep -> real/sub.
    static func folder() throws -> String {
        let made = FileManager.default.temporaryDirectory.appendingPathComponent("chaos-paths-\(UUID().uuidString)")
            .path
        try FileManager.default.createDirectory(atPath: made + "/real/sub", withIntermediateDirectories: true)
        let resolved = try #require(realpath(made, nil))
        defer { free(resolved) }
        let folder = String(cString: resolved)
        try FileManager.default.createSymbolicLink(atPath: folder + "/lnk", withDestinationPath: "real")
        try FileManager.default.createSymbolicLink(atPath: folder + "/deep", withDestinationPath: folder + "/real/sub")
        return folder
    }

    @Test func aLinkOnEitherSideReachesTheSameDirectory() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        // The profile names the link, the program the real directory; then the reverse. The
        // files do not exist yet: the program creates them.
        #expect(try Self.fails(folder + "/lnk", "echo x > real/new1", in: folder))
        #expect(try Self.fails(folder + "/real", "echo x > lnk/new2", in: folder))
        #expect(try Self.fails(folder + "/real", "echo x > \(folder)/lnk/sub/new3", in: folder))
        // `..` after a link is the link target's parent, as the kernel walks it.
        #expect(try Self.fails(folder + "/real", "echo x > deep/../new4", in: folder))
        #expect(try Self.fails(folder + "/real", "echo x > ../new5", in: folder + "/deep"))
        // The profile's own `..` after a link: the link target's parent, real.
        #expect(try Self.fails(folder + "/deep/..", "echo x > lnk/new6", in: folder))
        #expect(try !Self.fails(folder + "/deep/..", "echo x > outside3", in: folder))
        // Outside the selected directory, whatever the name: the writes succeed.
        #expect(try !Self.fails(folder + "/real", "echo x > deep/../../outside1", in: folder))
        #expect(try !Self.fails(folder + "/lnk", "echo x > outside2 && echo y > lnk2", in: folder))
        #expect(FileManager.default.fileExists(atPath: folder + "/outside1"))
        #expect(!FileManager.default.fileExists(atPath: folder + "/real/new2"))
    }

    /// Debian links /var/run to /run; the test writes in /run/lock (world-writable there).
    static let varRunIsRun: Bool = {
        let link = try? FileManager.default.destinationOfSymbolicLink(atPath: "/var/run")
        return (link == "/run" || link == "../run") && access("/run/lock", W_OK) == 0
    }()

    @Test(.enabled(if: varRunIsRun, "/var/run is not a link to /run, or /run/lock is not writable, on this machine"))
    func debiansVarRunIsRun() throws {
        let name = "chaos-paths-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: "/run/lock/" + name, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(atPath: "/run/lock/" + name) }
        #expect(try Self.fails("/var/run/lock/" + name, "echo x > /run/lock/\(name)/a", in: "/"))
        #expect(try Self.fails("/run/lock/" + name, "echo x > /var/run/lock/\(name)/b", in: "/"))
        #expect(try Self.fails("/run/lock/" + name, "echo x > \(name)/c", in: "/var/run/lock"))
        #expect(
            try !Self.fails("/run/lock/" + name, "echo x > /var/run/lock/\(name)-d; rm -f /run/lock/\(name)-d", in: "/")
        )
    }
}
