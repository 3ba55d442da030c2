import Foundation
import TestHelpers
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The `corrupt` item against programs that must notice: gzip's CRC, SQLite's page checks,
/// a checksum of what dd read, and a TLS handshake. Each runs plainly first (it passes), then under
/// a corrupt entry (it fails), under both deliveries where both carry the item.
@Suite(.serialized, .disabled(if: Sanitizers.thread, Sanitizers.preloadReason)) struct CorruptTests {
    /// A folder of its own, with a profile written into it.
    struct Workspace {
        let folder: String

        init() throws {
            folder =
                FileManager.default.temporaryDirectory.appendingPathComponent("chaos-corrupt-\(UUID().uuidString)").path
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        }

        func remove() { try? FileManager.default.removeItem(atPath: folder) }

        /// A profile of one `corrupt` entry on `point` with `parameters` (JSON members).
        func profile(on point: String = "system.files", _ parameters: String) throws -> String {
            let path = folder + "/profile-\(UUID().uuidString.prefix(6)).json"
            try
                #"{"entries": [{"point": "\#(point)", "provider": {"item": "corrupt", "parameters": {\#(parameters)}}}]}"#
                .write(toFile: path, atomically: true, encoding: .utf8)
            return path
        }

        /// `program` under `chaos run` with `profile`, from the folder.
        func run(_ profile: String, delivery: String, seed: Int = 1, _ program: [String]) throws
            -> ChaosToolTests.Outcome
        {
            try ReachTests.runIn(
                folder, ChaosToolTests.buildDirectory.appendingPathComponent("chaos").path,
                ["run", "--delivery", delivery, "--seed", String(seed), "--profile", profile, "--"] + program,
                environment: ["CHAOS_PRELOAD_LIBRARY": ChaosToolTests.preloadLibrary])
        }

        /// `program` plainly, from the folder.
        func plain(_ program: [String], input: String = "") throws -> ChaosToolTests.Outcome {
            try ReachTests.runIn(folder, program[0], Array(program.dropFirst()), environment: [:])
        }
    }

    @Test(.enabled(if: ReachTests.which("gzip") != nil, "no gzip"))
    func gzipsCheckFailsWhenWhatItReadsIsCorrupted() throws {
        let workspace = try Workspace()
        defer { workspace.remove() }
        try (1...20000).map(String.init).joined(separator: "\n").write(
            toFile: workspace.folder + "/data", atomically: true, encoding: .utf8)
        #expect(try workspace.plain(["/bin/gzip", "-k", "data"]).status == 0)
        #expect(try workspace.plain(["/bin/gzip", "-t", "data.gz"]).status == 0)
        let profile = try workspace.profile(#""path": "\#(workspace.folder)/data.gz", "operations": ["read"]"#)
        for delivery in ["preload", "seccomp"] {
            let checked = try workspace.run(profile, delivery: delivery, ["/bin/gzip", "-t", "data.gz"])
            #expect(checked.status == 1, "\(delivery): \(checked.errors)")
            #expect(checked.errors.contains("invalid compressed data"), "\(delivery): \(checked.errors)")
        }
    }

    @Test(.enabled(if: ReachTests.which("sqlite3") != nil, "no sqlite3"))
    func sqliteFindsThePagesItWroteCorrupted() throws {
        let workspace = try Workspace()
        defer { workspace.remove() }
        for delivery in ["preload", "seccomp"] {
            let database = "\(delivery).db"
            #expect(
                try workspace.plain(["/usr/bin/sqlite3", database, "CREATE TABLE t(x); INSERT INTO t VALUES (1);"])
                    .status == 0)
            // Every page SQLite writes has its first bytes (a page's header) flipped.
            let profile = try workspace.profile(
                #""path": "\#(workspace.folder)/\#(database)", "operations": ["write"], "offset": 0, "bytes": 8"#)
            let inserted = try workspace.run(
                profile, delivery: delivery,
                ["/usr/bin/sqlite3", database, "INSERT INTO t SELECT x + 1 FROM t; CREATE TABLE u(y);"])
            #expect(inserted.status == 0, "\(delivery): \(inserted.errors)")
            let checked = try workspace.plain(["/usr/bin/sqlite3", database, "PRAGMA integrity_check"])
            #expect(checked.output.trimmingCharacters(in: .whitespacesAndNewlines) != "ok", "\(delivery): \(checked)")
        }
        // The other half: the same inserts without chaos leave a sound database.
        #expect(
            try workspace.plain(["/usr/bin/sqlite3", "plain.db", "CREATE TABLE t(x); INSERT INTO t VALUES (1);"]).status
                == 0)
        #expect(
            try workspace.plain([
                "/usr/bin/sqlite3", "plain.db", "INSERT INTO t SELECT x + 1 FROM t; CREATE TABLE u(y);",
            ]).status == 0)
        #expect(try workspace.plain(["/usr/bin/sqlite3", "plain.db", "PRAGMA integrity_check"]).output == "ok\n")
    }

    /// git reads its objects through mmap, which no delivery sees; sha256sum reads through C
    /// stdio, whose reads the preload library counts but does not corrupt (libc makes them
    /// inside itself). dd reads with read(2): its copy's checksum is checked.
    @Test(.enabled(if: ReachTests.which("sha256sum") != nil && ReachTests.which("dd") != nil, "no sha256sum or dd"))
    func aChecksumOfWhatDdReadThroughCorruptionFails() throws {
        let workspace = try Workspace()
        defer { workspace.remove() }
        try Data((0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }).write(
            to: URL(fileURLWithPath: workspace.folder + "/blob"))
        let expected = try workspace.plain(["/usr/bin/sha256sum", "blob"]).output.prefix(64)
        let copy = ["/bin/sh", "-c", "dd if=blob bs=4096 status=none | sha256sum"]
        #expect(try workspace.plain(copy).output.prefix(64) == expected)
        let profile = try workspace.profile(#""path": "\#(workspace.folder)/blob", "operations": ["read"]"#)
        for delivery in ["preload", "seccomp"] {
            let checked = try workspace.run(profile, delivery: delivery, copy)
            #expect(checked.status == 0, "\(delivery): \(checked.errors)")
            #expect(
                checked.output.count >= 64 && checked.output.prefix(64) != expected, "\(delivery): \(checked.output)")
            #expect(!checked.errors.contains("NEVER ACTED"), "\(delivery): \(checked.errors)")
        }
    }

    @Test(.enabled(if: ReachTests.which("python3") != nil, "no python3"))
    func theSameSeedCorruptsTheSameBytesUnderBothDeliveries() throws {
        let workspace = try Workspace()
        defer { workspace.remove() }
        try Data(count: 65536).write(to: URL(fileURLWithPath: workspace.folder + "/zeros"))
        let reader = workspace.folder + "/reader.py"
        try """
        import sys
        with open(sys.argv[1], "rb", buffering=0) as f:
            while True:
                block = f.read(4096)
                if not block:
                    break
                print(",".join(f"{i}:{b}" for i, b in enumerate(block) if b))
        """.write(toFile: reader, atomically: true, encoding: .utf8)
        let profile = try workspace.profile(
            #""path": "\#(workspace.folder)/zeros", "operations": ["read"], "bytes": 3, "with": "random""#)
        func changed(_ delivery: String, seed: Int) throws -> [String] {
            let outcome = try workspace.run(
                profile, delivery: delivery, seed: seed, ["/usr/bin/python3", reader, "zeros"])
            #expect(outcome.status == 0, "\(outcome.errors)")
            return outcome.output.split(separator: "\n").map(String.init)
        }
        let first = try changed("preload", seed: 5)
        #expect(first.count == 16, "\(first)")
        // Three bytes changed in each read (a drawn position may repeat), never left zero.
        #expect(first.allSatisfy { (1...3).contains($0.split(separator: ",").count) }, "\(first)")
        #expect(try changed("preload", seed: 5) == first)
        #expect(try changed("seccomp", seed: 5) == first)
        #expect(try changed("preload", seed: 6) != first)
    }

    @Test(.enabled(if: ReachTests.which("openssl") != nil, "no openssl"))
    func aTLSHandshakeFailsWhenWhatTheClientSendsIsCorrupted() throws {
        let workspace = try Workspace()
        defer { workspace.remove() }
        let openssl = "/usr/bin/openssl"
        let made = try workspace.plain([
            openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "key.pem", "-out", "cert.pem",
            "-days", "1", "-subj", "/CN=localhost",
        ])
        #expect(made.status == 0, "\(made.errors)")
        // A port free a moment ago (the listener is closed again for s_server to take).
        let (probe, port) = try SeccompDeliveryTests.Workspace.listen()
        close(probe)
        let server = Process()
        server.executableURL = URL(fileURLWithPath: openssl)
        server.arguments = [
            "s_server", "-accept", "127.0.0.1:\(port)", "-cert", workspace.folder + "/cert.pem", "-key",
            workspace.folder + "/key.pem", "-quiet",
        ]
        server.standardOutput = FileHandle.nullDevice
        server.standardError = FileHandle.nullDevice
        try server.run()
        // SIGKILL: s_server outlived the SIGTERM of terminate() and stayed behind, orphaned.
        defer {
            kill(server.processIdentifier, SIGKILL)
            server.waitUntilExit()
        }
        // Ready once it accepts: under load s_server takes a while to listen.
        var ready = false
        for _ in 0..<200 where !ready {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            ready = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
                }
            }
            close(fd)
            if !ready { usleep(50_000) }
        }
        #expect(ready, "openssl s_server never listened on \(port)")
        let client = [openssl, "s_client", "-connect", "127.0.0.1:\(port)", "-brief"]
        let plain = try workspace.plain(["/bin/sh", "-c", "echo | " + client.joined(separator: " ")])
        #expect(plain.errors.contains("CONNECTION ESTABLISHED"), "\(plain.errors)")
        let profile = try workspace.profile(on: "system.send", #""bytes": 8"#)
        let corrupted = try workspace.run(
            profile, delivery: "preload", ["/bin/sh", "-c", "echo | " + client.joined(separator: " ")])
        #expect(corrupted.status != 0, "\(corrupted.errors)")
        #expect(!corrupted.errors.contains("CONNECTION ESTABLISHED"), "\(corrupted.errors)")
        #expect(!corrupted.errors.contains("Connection refused"), "the handshake failed, not the connect")
    }
}
