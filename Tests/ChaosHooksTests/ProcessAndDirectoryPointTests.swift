import ChaosKit
import Foundation
import TestHelpers
import Testing

@testable import ChaosHooks

#if canImport(Glibc)
import Glibc
#endif

#if os(Linux)
/// Starts /bin/true with posix_spawn and waits for it: 0, or the error number.
private func spawnTrue() -> Int32 {
    var pid: pid_t = 0
    let arguments: [UnsafeMutablePointer<CChar>?] = [strdup("true"), nil]
    defer { free(arguments[0]) }
    let status = posix_spawn(&pid, "/bin/true", nil, nil, arguments, environ)
    if status == 0 { waitpid(pid, nil, 0) }
    return status
}

/// What `opendir`/`readdir` make of a directory.
private enum Listing: Equatable {
    /// The names listed, sorted (without . and ..).
    case names([String])
    /// The errno of the call that failed.
    case failed(Int32)
}

private func listed(_ path: String) -> Listing {
    guard let stream = opendir(path) else { return .failed(errno) }
    defer { closedir(stream) }
    var names: [String] = []
    errno = 0
    while let entry = readdir(stream) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        if name != ".", name != ".." { names.append(name) }
    }
    if errno != 0 { return .failed(errno) }
    return .names(names.sorted())
}

extension ProcessWideHookTests {
    @Suite(.serialized, .disabled(if: Sanitizers.thread, Sanitizers.threadReason))
    struct ProcessAndDirectoryPointTests {
        /// `system.process` in-process: posix_spawn and fork fail with EAGAIN while the entry
        /// is applied, `times` lets the calls after it through, and without it they succeed.
        @Test func processCreationFailsWhileTheEntryIsApplied() throws {
            SystemPoints.register()
            #expect(spawnTrue() == 0, "without the entry the spawn succeeds")
            try withApplied(ProfileEntry(point: "system.process", .catalogue("eagain"))) {
                #expect(spawnTrue() == EAGAIN)
                errno = 0
                let pid = fork()
                if pid == 0 { _exit(0) }
                if pid > 0 { waitpid(pid, nil, 0) }
                #expect(pid == -1 && errno == EAGAIN, "fork: \(pid), errno \(errno)")
                // Threads are never failed.
                let thread = Thread {}
                thread.start()
            }
            #expect(spawnTrue() == 0, "reverted: the spawn succeeds again")
            try withApplied(ProfileEntry(point: "system.process", .times(1, .catalogue("enomem")))) {
                #expect(spawnTrue() == ENOMEM)
                #expect(spawnTrue() == 0, "times 1: the second spawn goes on")
            }
        }

        /// `system.dir` in-process: an opendir under the path fails; reads leave out the names
        /// the glob matches; other directories are listed whole.
        @Test func directoriesFailAndLeaveEntriesOut() throws {
            SystemPoints.register()
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
                "chaoskit-dir-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
            let other = directory.appendingPathComponent("other")
            try FileManager.default.createDirectory(at: other, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            for name in ["a.txt", "b.tmp", "c.txt"] {
                _ = FileManager.default.createFile(atPath: directory.appendingPathComponent(name).path, contents: nil)
                _ = FileManager.default.createFile(atPath: other.appendingPathComponent(name).path, contents: nil)
            }
            let everything = ["a.txt", "b.tmp", "c.txt"]
            #expect(listed(directory.path) == .names(everything + ["other"]))
            let omit = ProfileEntry(
                point: "system.dir",
                .catalogue("omit", ProfileParameters(["name": .string("*.tmp"), "path": .string(other.path)])))
            try withApplied(omit) {
                #expect(listed(other.path) == .names(["a.txt", "c.txt"]))
                #expect(listed(directory.path) == .names(everything + ["other"]), "outside the path: whole")
            }
            #expect(listed(other.path) == .names(everything), "reverted: listed whole")
            let gone = ProfileEntry(
                point: "system.dir", .catalogue("enoent", ProfileParameters(["path": .string(other.path)])))
            try withApplied(gone) {
                #expect(listed(other.path) == .failed(ENOENT))
                #expect(listed(directory.path) == .names(everything + ["other"]))
            }
        }
    }
}
#endif
