import ChaosKit
import Foundation
import TestHelpers
import Testing

@testable import ChaosHooks

#if canImport(Glibc)
import Glibc
#endif

#if os(Linux)
/// A folder of its own, removed at the end; what is in it before a recording is durable.
private struct Folder {
    let path: String

    init() throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("chaos-power-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    func file(_ name: String) -> String { path + "/" + name }

    func contents(_ name: String) -> String? {
        FileManager.default.contents(atPath: file(name)).map { String(decoding: $0, as: UTF8.self) }
    }

    /// fsync of the folder itself: its names become durable.
    func syncNames() {
        let fd = open(path, O_RDONLY | O_DIRECTORY)
        fsync(fd)
        close(fd)
    }

    func remove() { try? FileManager.default.removeItem(atPath: path) }
}

extension ProcessWideHookTests {
    /// FileSystemPowerLoss: writes made through Foundation in this process, rolled back
    /// as the strict POSIX model says at a power loss.
    @Suite(.serialized, .disabled(if: Sanitizers.thread, Sanitizers.threadReason))
    struct FileSystemPowerLossTests {
        /// Writes `text` to a new file `name` with the system calls, syncing it when asked.
        private func write(_ text: String, to name: String, in folder: Folder, sync: Bool) {
            let fd = open(folder.file(name), O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            _ = text.withCString { Glibc.write(fd, $0, strlen($0)) }
            if sync { fsync(fd) }
            close(fd)
        }

        @Test func aFileWhoseDataWasNeverSyncedIsEmptyAndASyncedOneStays() throws {
            let folder = try Folder()
            defer { folder.remove() }
            let power = try FileSystemPowerLoss(path: folder.path)
            write("lost", to: "unsynced", in: folder, sync: false)
            write("kept", to: "synced", in: folder, sync: true)
            folder.syncNames()
            let lost = power.losePower()
            // The folder's sync made both names durable; only one file's data was synced.
            #expect(folder.contents("unsynced") == "", "\(lost)")
            #expect(folder.contents("synced") == "kept", "\(lost)")
            #expect(lost.failures == 0, "\(lost.firstFailure ?? "")")
            #expect(lost.writes == 1 && lost.creates == 0, "\(lost)")
        }

        @Test func foundationsOwnSyncsAreDurable() throws {
            let folder = try Folder()
            defer { folder.remove() }
            let power = try FileSystemPowerLoss(path: folder.path)
            // Data.write syncs the file it writes; its name is durable once the folder is synced.
            try Data("synced by Foundation".utf8).write(to: URL(fileURLWithPath: folder.file("data")))
            folder.syncNames()
            let lost = power.losePower()
            #expect(folder.contents("data") == "synced by Foundation", "\(lost)")
        }

        @Test func aNewFileWhoseNameWasNeverSyncedIsGone() throws {
            let folder = try Folder()
            defer { folder.remove() }
            let power = try FileSystemPowerLoss(path: folder.path)
            write("synced data, unsynced name", to: "new", in: folder, sync: true)
            let lost = power.losePower()
            #expect(!FileManager.default.fileExists(atPath: folder.file("new")), "\(lost)")
            #expect(lost.creates >= 1, "\(lost)")
        }

        @Test func anOverwriteWithoutSyncGoesBackAndWithSyncStays() throws {
            let folder = try Folder()
            defer { folder.remove() }
            try Data("old contents".utf8).write(to: URL(fileURLWithPath: folder.file("a")))
            try Data("old contents".utf8).write(to: URL(fileURLWithPath: folder.file("b")))
            let power = try FileSystemPowerLoss(path: folder.path)
            for (name, sync) in [("a", false), ("b", true)] {
                let handle = try #require(FileHandle(forUpdatingAtPath: folder.file(name)))
                try handle.write(contentsOf: Data("NEW".utf8))
                try handle.seekToEnd()
                try handle.write(contentsOf: Data(" and more".utf8))
                if sync { try handle.synchronize() }
                try handle.close()
            }
            #expect(folder.contents("a") == "NEW contents and more")
            let lost = power.losePower()
            #expect(folder.contents("a") == "old contents", "\(lost)")
            #expect(folder.contents("b") == "NEW contents and more", "\(lost)")
            #expect(lost.files == 1, "\(lost)")
        }

        @Test func anAtomicWriteWhoseDirectoryWasNotSyncedLeavesTheOldFile() throws {
            let folder = try Folder()
            defer { folder.remove() }
            try Data("old".utf8).write(to: URL(fileURLWithPath: folder.file("state")))
            let power = try FileSystemPowerLoss(path: folder.path)
            // Foundation writes a temporary file and renames it over the old one.
            try Data("new".utf8).write(to: URL(fileURLWithPath: folder.file("state")), options: .atomic)
            #expect(folder.contents("state") == "new")
            let lost = power.losePower()
            #expect(folder.contents("state") == "old", "\(lost)")
            #expect(lost.renames == 1, "\(lost)")
            #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["state"], "\(lost)")
        }

        @Test func aTornWriteKeepsAPrefixOfItsSectorsDrawnFromTheSeed() throws {
            let folder = try Folder()
            defer { folder.remove() }
            let old = Data(repeating: UInt8(ascii: "o"), count: 4096)
            try old.write(to: URL(fileURLWithPath: folder.file("log")))
            var kept: Set<Int> = []
            for seed in UInt64(1)...8 {
                let power = try FileSystemPowerLoss(path: folder.path)
                let handle = try #require(FileHandle(forUpdatingAtPath: folder.file("log")))
                try handle.write(contentsOf: Data(repeating: UInt8(ascii: "n"), count: 4096))
                try handle.close()
                let lost = power.losePower(torn: true, seed: seed)
                let now = try #require(FileManager.default.contents(atPath: folder.file("log")))
                #expect(now.count == 4096, "\(lost)")
                let prefix = now.prefix { $0 == UInt8(ascii: "n") }.count
                // Whole sectors of the new bytes, then only old ones: never a mix within one.
                #expect(prefix % 512 == 0 && prefix < 4096, "seed \(seed): \(prefix) new bytes")
                #expect(now.dropFirst(prefix).allSatisfy { $0 == UInt8(ascii: "o") }, "seed \(seed)")
                #expect(lost.tornWrites == (prefix > 0 ? 1 : 0), "\(lost)")
                kept.insert(prefix)
                // The same seed tears the same way.
                try old.write(to: URL(fileURLWithPath: folder.file("log")))
            }
            #expect(kept.count > 1, "every seed kept \(kept)")
        }

        @Test func aWriteThroughStdioIsSaidAsOneThatCannotBeUndone() throws {
            let folder = try Folder()
            defer { folder.remove() }
            let power = try FileSystemPowerLoss(path: folder.path)
            let stream = try #require(fopen(folder.file("stdio"), "w"))
            fputs("through libc's buffer\n", stream)
            fclose(stream)
            let lost = power.losePower()
            #expect(lost.failures > 0, "\(lost)")
            #expect(lost.firstFailure?.contains("C stdio") == true, "\(lost.firstFailure ?? "")")
        }

        @Test func oneRecordingAtATime() throws {
            let folder = try Folder()
            defer { folder.remove() }
            let power = try FileSystemPowerLoss(path: folder.path)
            #expect(throws: ChaosError.self) { _ = try FileSystemPowerLoss(path: folder.path) }
            power.stop()
            // Ended: another may start, and nothing was rolled back.
            try Data("stays".utf8).write(to: URL(fileURLWithPath: folder.file("after")))
            let next = try FileSystemPowerLoss(path: folder.path)
            next.stop()
            #expect(folder.contents("after") == "stays")
        }
    }
}
#endif
