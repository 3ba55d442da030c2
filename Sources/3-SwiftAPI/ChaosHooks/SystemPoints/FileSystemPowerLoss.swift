import CChaosFaults
import CChaosIntercept
public import ChaosKit
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Power loss for the files this process writes: a test writes through Foundation (or any
/// code that makes the system calls itself), loses power, and re-opens the files to check
/// that what it had made durable is there.
///
/// While it records, every change to a file under `path` — writes, truncations, creating
/// opens, renames, removals, `mkdir` — is kept in the fault engine's undo log before it is
/// made, and every `fsync`/`fdatasync` makes what it covers durable, under the strict
/// POSIX model `chaos run`'s `power-loss` item uses: a file's data once the file has been
/// synced, a name once its directory has. ``losePower(torn:seed:)`` rolls back everything
/// that was not durable and ends the recording.
///
/// ```swift
/// let power = try FileSystemPowerLoss(path: folder.path)
/// try Data("new".utf8).write(to: folder.appendingPathComponent("state"))  // never synced
/// let lost = power.losePower()
/// // "state" is gone again: its creation was never made durable.
/// ```
///
/// What it cannot see, it says (``Summary/failures``): writes through C stdio (`fwrite`,
/// `fprintf`), which libc makes inside itself. Shared writable mappings are not followed.
/// One recording at a time per process; the hooks are process-wide, so serialize the
/// tests that use it, as for other symbol hooks.
public final class FileSystemPowerLoss: Sendable {
    /// What a power loss rolled back.
    public struct Summary: Sendable, Hashable, CustomStringConvertible {
        /// Writes and truncations undone.
        public let writes: Int
        /// Files whose contents changed back.
        public let files: Int
        /// Names created that are gone again.
        public let creates: Int
        /// Names removed that are back.
        public let removes: Int
        /// Renames undone.
        public let renames: Int
        /// Files whose last write kept part of its sectors (`torn`).
        public let tornWrites: Int
        /// Changes that could not be undone, and the first of them said (nil when none):
        /// a power loss that missed them would lie about what survives.
        public let failures: Int
        /// Why the first change could not be undone.
        public let firstFailure: String?
        /// One sentence: "2 writes in 1 file and 1 rename rolled back".
        public let description: String
    }

    /// The recorded directory or file.
    public let path: String

    /// Starts recording the changes under `path` (a directory or a file, absolute or from
    /// the current directory). Throws when another recording runs in this process.
    public init(path: String) throws(ChaosError) {
        let absolute =
            path.hasPrefix("/")
            ? path : FileManager.default.currentDirectoryPath + "/" + path
        self.path = (absolute as NSString).standardizingPath
        let started = try InProcessDelivery.shared.startRecordingPowerLoss { [resolved = self.path] in
            chaos_in_power_start(resolved) == 0
        }
        guard started else {
            throw ChaosError(
                .invalidProvider, subject: "FileSystemPowerLoss",
                "another FileSystemPowerLoss records in this process; lose power there (or end it) first")
        }
    }

    /// Power is lost: every change under ``path`` that was not durable is rolled back,
    /// newest first, and the recording ends. With `torn`, the last unsynced write of each
    /// file keeps a prefix of its 512-byte sectors drawn from `seed`. Close the files the
    /// test still has open before it re-opens them: their descriptors see the rollback too.
    @discardableResult
    public func losePower(torn: Bool = false, seed: UInt64 = 0) -> Summary {
        var summary = chaos_power_summary()
        InProcessDelivery.shared.stopRecordingPowerLoss {
            chaos_in_power_stop(1, torn ? 1 : 0, seed, &summary)
        }
        return Summary(summary)
    }

    /// Ends the recording without losing power: everything stays as it is.
    public func stop() {
        InProcessDelivery.shared.stopRecordingPowerLoss {
            chaos_in_power_stop(0, 0, 0, nil)
        }
    }
}

extension FileSystemPowerLoss.Summary {
    init(_ summary: chaos_power_summary) {
        var copy = summary
        writes = Int(summary.writes)
        files = Int(summary.files)
        creates = Int(summary.creates)
        removes = Int(summary.removes)
        renames = Int(summary.renames)
        tornWrites = Int(summary.torn)
        failures = Int(summary.failures)
        firstFailure =
            summary.failures == 0
            ? nil : withUnsafeBytes(of: summary.first_failure) { CText.string(Array($0.bindMemory(to: CChar.self))) }
        var sentence = [CChar](repeating: 0, count: 512)
        chaos_power_summary_sentence(&copy, &sentence, sentence.count)
        description = CText.string(sentence)
    }
}
