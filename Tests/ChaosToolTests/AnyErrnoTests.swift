import Foundation
import TestHelpers
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `"errno": "any"`: each call fails with an errno drawn from the seed among those the call
/// can really return (libfiu's default, never an impossible one), the same under both
/// deliveries of `chaos run`.
@Suite(.serialized) struct AnyErrnoTests {
    /// What write(2) can return, as the engine's table has it (Docs/FaultPlan.md).
    static let writeErrnos: Set<String> = [
        "EAGAIN", "EBADF", "EDESTADDRREQ", "EDQUOT", "EFAULT", "EFBIG", "EINTR", "EINVAL", "EIO", "ENOSPC", "EPERM",
        "EPIPE",
    ]

    /// Python writes 40 times to a file and prints each outcome's errno name (or "ok").
    static let writer = """
        import errno, os, sys
        fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o644)
        for _ in range(40):
            try:
                os.write(fd, b"x")
                print("ok")
            except OSError as error:
                print(errno.errorcode.get(error.errno, str(error.errno)))
        """

    static func run(seed: Int, delivery: String, folder: String) throws -> [String] {
        let profile = folder + "/profile.json"
        try
            #"{"entries": [{"point": "system.files", "provider": {"item": "fail", "parameters": {"errno": "any", "path": "\#(folder)/out", "operations": ["write"]}}}]}"#
            .write(toFile: profile, atomically: true, encoding: .utf8)
        let script = folder + "/writer.py"
        try writer.write(toFile: script, atomically: true, encoding: .utf8)
        let outcome = try ChaosToolTests.chaos([
            "run", "--preload", ChaosToolTests.preloadLibrary, "--delivery", delivery, "--seed", String(seed),
            "--profile", profile, "--", "/usr/bin/python3", script, folder + "/out",
        ])
        #expect(outcome.status == 0, "\(outcome.errors)")
        return outcome.output.split(separator: "\n").map(String.init)
    }

    @Test(
        .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/python3"), "no /usr/bin/python3"),
        .disabled(if: Sanitizers.thread, Sanitizers.preloadReason))
    func eachWriteFailsWithAnErrnoItCanReturnDrawnFromTheSeedAlikeUnderBothDeliveries() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("chaos-any-\(UUID().uuidString)")
            .path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let preload = try Self.run(seed: 7, delivery: "preload", folder: folder)
        #expect(preload.count == 40, "\(preload)")
        #expect(Set(preload).isSubset(of: Self.writeErrnos), "an errno write cannot return: \(preload)")
        #expect(Set(preload).count >= 4, "the draws vary: \(preload)")
        // The same seed draws the same errnos, under the other delivery too.
        #expect(try Self.run(seed: 7, delivery: "preload", folder: folder) == preload)
        #expect(try Self.run(seed: 7, delivery: "seccomp", folder: folder) == preload)
        #expect(try Self.run(seed: 8, delivery: "preload", folder: folder) != preload)
    }

    @Test func anyIsRefusedWhereNoErrnoApplies() throws {
        let profile = try ChaosToolTests.temporaryFile(
            #"{"entries": [{"point": "system.getaddrinfo", "provider": {"item": "fail", "parameters": {"code": "any"}}}]}"#
        )
        let outcome = try ChaosToolTests.chaos("validate", "--for", "run", profile)
        #expect(outcome.status != 0, "\(outcome.output)")
        #expect(outcome.errors.contains("EAI"), "\(outcome.errors)")
    }
}
