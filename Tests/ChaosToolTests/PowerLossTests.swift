import Foundation
import TestHelpers
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Power loss (`system.files` item `power-loss`) against programs nobody here wrote: a
/// shell and coreutils replacing a file, the sqlite3 shell in four durability settings, a
/// checksummed log written by Python with torn writes, and redis-server's append-only file.
///
/// Each test is a pair: one half shows that what a program did not make durable is lost,
/// the other that a program which syncs what it must survives at every crash point. A
/// crash point is placed with `"at": [k]` for k = 1, 2, … until a run ends by itself
/// (the program finished before its k-th change).
@Suite(.serialized, .disabled(if: Sanitizers.thread, Sanitizers.sweepReason)) struct PowerLossTests {
    /// A folder under the temporary directory, removed at the end.
    struct Workspace {
        let folder: String

        init(_ name: String) throws {
            folder =
                FileManager.default.temporaryDirectory.appendingPathComponent(
                    "chaos-power-\(name)-\(UUID().uuidString)"
                )
                .path
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        }

        func remove() {
            try? FileManager.default.removeItem(atPath: folder)
        }

        /// A profile that loses power at the `at`-th change under `path`; its file.
        func profile(path: String, at crashPoint: Int, torn: Bool = false) throws -> String {
            let file = folder + "/power-loss.json"
            try #"""
            {"entries": [{"point": "system.files", "provider": {"item": "power-loss", "parameters": {"path": "\#(path)", "torn": \#(torn)}, "at": [\#(crashPoint)]}}]}
            """#
            .write(toFile: file, atomically: true, encoding: .utf8)
            return file
        }

        /// Makes `path` an empty folder (what was there is removed).
        func empty(_ path: String) throws {
            try? FileManager.default.removeItem(atPath: path)
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        }
    }

    /// `chaos run` of `program` under a power loss at the `at`-th change under `path`,
    /// fed `input` on its standard input.
    static func chaosRun(
        _ workspace: Workspace, path: String, at crashPoint: Int, torn: Bool = false, options: [String] = [],
        input: String = "", _ program: [String]
    ) throws -> ChaosToolTests.Outcome {
        let profile = try workspace.profile(path: path, at: crashPoint, torn: torn)
        let process = Process()
        process.executableURL = ChaosToolTests.buildDirectory.appendingPathComponent("chaos")
        process.arguments = ["run", "--quiet"] + options + ["--profile", profile, "--"] + program
        let ended = try runToEnd(process, input: Data(input.utf8), bound: .seconds(60))
        return ChaosToolTests.Outcome(
            status: ended.status, output: String(decoding: ended.stdout, as: UTF8.self), errors: ended.stderr)
    }

    /// Runs `attempt(k)` for the crash points k = 1, 2, … until a run exits 0 (the program
    /// finished before a k-th change), at most `bound` times; returns how many runs lost
    /// power. A run that neither lost power at its k-th change (exit 137, said on stderr)
    /// nor exited 0 ends the sweep as a failure, and so does reaching the bound.
    @discardableResult
    static func sweep(_ name: String, bound: Int = 60, _ attempt: (Int) throws -> ChaosToolTests.Outcome) rethrows
        -> Int
    {
        for crashPoint in 1...bound {
            let outcome = try attempt(crashPoint)
            if outcome.status == 0 { return crashPoint - 1 }
            guard outcome.status == 137, outcome.errors.contains("power lost at change \(crashPoint),") else {
                Issue.record(
                    "\(name), crash point \(crashPoint): neither a power loss there nor a finished run: \(outcome)")
                return crashPoint - 1
            }
        }
        Issue.record("\(name): power was still lost at crash point \(bound): the sweep never reached the program's end")
        return bound
    }

    /// Whether `numbers` are 1, 2, 3, … (or none): whole transactions, in order.
    static func countsUp(_ numbers: [Int]) -> Bool {
        numbers == (0..<numbers.count).map { $0 + 1 }
    }

    /// What a file holds, or nil when there is no such file.
    static func contents(_ path: String) -> String? {
        try? String(contentsOfFile: path, encoding: .utf8)
    }

    // MARK: - A file replaced through a temporary file and a rename

    /// `printf new > f.tmp && mv f.tmp f` replaces f as a whole only when f.tmp's data is
    /// synced before the rename, and the rename itself is synced (the directory) before what
    /// follows relies on it. Without the syncs, f is still "old" after the rename returned
    /// and a later change was under way; with only the directory synced, f exists but is
    /// empty. With both, every crash point leaves f wholly "old" or wholly "new".
    @Test func aFileReplacedByRenameIsWhollyOldOrNewOnlyWhenItsDataAndItsFolderAreSynced() throws {
        let workspace = try Workspace("rename")
        defer { workspace.remove() }
        let folder = workspace.folder + "/d"

        /// Runs `script` in `folder` (holding f = "old") at every crash point; what each left.
        func crashes(_ name: String, _ script: String) throws -> [(point: Int, lostAt: String, f: String?)] {
            var seen: [(point: Int, lostAt: String, f: String?)] = []
            let runs = try Self.sweep(name) { crashPoint in
                try workspace.empty(folder)
                try "old".write(toFile: folder + "/f", atomically: false, encoding: .utf8)
                let outcome = try Self.chaosRun(
                    workspace, path: folder, at: crashPoint, ["/bin/sh", "-c", "cd \"$0\" && " + script, folder])
                let f = Self.contents(folder + "/f")
                if outcome.status == 0 {
                    #expect(f == "new" && Self.contents(folder + "/after") == "x\n", "\(name) ran whole: \(outcome)")
                } else {
                    let line = outcome.errors.split(separator: "\n").first { $0.contains("power lost") } ?? ""
                    seen.append((crashPoint, String(line), f))
                }
                return outcome
            }
            #expect(runs >= 4, "\(name): only \(runs) crash points")
            return seen
        }

        /// The crash points where power was lost as `after` was made: the rename had returned.
        func afterTheRename(_ seen: [(point: Int, lostAt: String, f: String?)]) -> [(point: Int, f: String?)] {
            seen.filter { $0.lostAt.contains(" of \(folder)/after by ") }.map { ($0.point, $0.f) }
        }

        let unsafe = try crashes("no sync", "printf new > f.tmp && mv f.tmp f && echo x > after")
        #expect(unsafe.allSatisfy { $0.f == "old" || $0.f == "new" || $0.f == "" }, "\(unsafe)")
        let late = afterTheRename(unsafe)
        #expect(!late.isEmpty, "a crash point after the rename: \(unsafe)")
        #expect(
            late.contains { $0.f != "new" },
            "without syncs the rename that returned is not durable, f is not yet new: \(unsafe)")

        let folderOnly = try crashes("folder synced", "printf new > f.tmp && mv f.tmp f && sync . && echo x > after")
        #expect(
            afterTheRename(folderOnly).contains { $0.f == "" },
            "the rename is durable but f.tmp's data was never synced: f exists and is empty: \(folderOnly)")

        let safe = try crashes(
            "file and folder synced", "printf new > f.tmp && sync f.tmp && mv f.tmp f && sync . && echo x > after")
        #expect(safe.allSatisfy { $0.f == "old" || $0.f == "new" }, "f is wholly old or wholly new: \(safe)")
        #expect(afterTheRename(safe).allSatisfy { $0.f == "new" }, "once the rename is synced f is new: \(safe)")
        #expect(safe.contains { $0.f == "old" }, "the early crash points keep the old file: \(safe)")
    }

    // MARK: - SQLite

    /// How many rows the sqlite3 tests insert: one transaction each.
    static let rows = 5

    /// What the sqlite3 shell is fed: each insert, then a line saying it was committed.
    static var inserts: String {
        (1...rows).map { "INSERT INTO t VALUES (\($0), 'row \($0)'); SELECT 'ack \($0)';\n" }.joined()
    }

    /// The numbers in the lines "<word> N" of `output`.
    static func numbers(after word: String, in output: String) -> [Int] {
        output.split(separator: "\n").compactMap { line in
            let parts = line.split(separator: " ")
            return parts.count == 2 && parts[0] == word ? Int(parts[1]) : nil
        }
    }

    /// One crash point of a sqlite3 run: what it acknowledged, what survived.
    struct SQLiteCrash: CustomStringConvertible {
        let point: Int
        let acknowledged: [Int]
        let present: [Int]
        let integrity: String
        let lostAt: String
        var description: String {
            "k=\(point) acked \(acknowledged) present \(present) integrity \(integrity) (\(lostAt))"
        }
    }

    /// Sweeps the sqlite3 shell inserting `rows` rows, one commit each, in `journal` mode
    /// with `synchronous`; after each power loss, plain sqlite3 reads what is left.
    static func sqliteCrashes(journal: String, synchronous: String) throws -> [SQLiteCrash] {
        let workspace = try Workspace("sqlite-\(journal)-\(synchronous)")
        defer { workspace.remove() }
        let sqlite = try #require(ReachTests.which("sqlite3"))
        let folder = workspace.folder + "/db"
        let database = folder + "/test.db"
        let name = "journal_mode=\(journal) synchronous=\(synchronous)"
        var crashes: [SQLiteCrash] = []
        try sweep(name, bound: 100) { crashPoint in
            try workspace.empty(folder)
            let created = try ChaosToolTests.run(
                sqlite, [database, "PRAGMA journal_mode=\(journal); CREATE TABLE t (n INTEGER PRIMARY KEY, v TEXT);"])
            #expect(created.status == 0, "\(created)")
            let outcome = try chaosRun(
                workspace, path: folder, at: crashPoint, input: inserts,
                [sqlite, "-batch", "-cmd", "PRAGMA synchronous=\(synchronous)", database])
            let checked = try ChaosToolTests.run(
                sqlite, ["-batch", database, "PRAGMA integrity_check;", "SELECT 'row ' || n FROM t ORDER BY n;"])
            #expect(checked.status == 0, "\(name), k=\(crashPoint): the database opens after the crash: \(checked)")
            let crash = SQLiteCrash(
                point: crashPoint, acknowledged: numbers(after: "ack", in: outcome.output),
                present: numbers(after: "row", in: checked.output),
                integrity: checked.output.split(separator: "\n").first.map(String.init) ?? "",
                lostAt: outcome.errors.split(separator: "\n").first { $0.contains("power lost") }.map(String.init) ?? ""
            )
            #expect(crash.integrity == "ok", "\(name): \(crash) \(checked.output)")
            // Whatever the setting: committed transactions survive whole or not at all, in order.
            #expect(Self.countsUp(crash.present), "\(name): \(crash)")
            #expect(
                crash.present.count <= crash.acknowledged.count + 1,
                "at most the commit under way survives beyond what was acknowledged: \(name): \(crash)")
            if outcome.status == 0 {
                #expect(
                    crash.acknowledged == Array(1...rows) && crash.present == Array(1...rows),
                    "\(name) ran whole: \(crash) \(outcome)")
            } else {
                crashes.append(crash)
            }
            return outcome
        }
        #expect(crashes.count >= 4 * rows, "\(name): only \(crashes.count) crash points")
        return crashes
    }

    /// WAL with synchronous=FULL syncs the log at every commit, and the rollback journal with
    /// synchronous=EXTRA syncs the folder after deleting the journal: no acknowledged row is
    /// ever lost. The rollback journal with synchronous=FULL does not sync the folder after
    /// the delete, so the journal comes back and rolls the last commit back: it may lose the
    /// last acknowledged row, never more. With synchronous=OFF nothing is synced: acknowledged
    /// rows are lost.
    @Test(.enabled(if: ReachTests.which("sqlite3") != nil, "no sqlite3 (.ci/install-system-test-deps installs it)"))
    func sqliteLosesNoAcknowledgedCommitWhenItSyncsAndLosesThemWhenItDoesNot() throws {
        for (journal, synchronous) in [("WAL", "FULL"), ("DELETE", "EXTRA")] {
            let crashes = try Self.sqliteCrashes(journal: journal, synchronous: synchronous)
            for crash in crashes {
                #expect(
                    crash.present.count >= crash.acknowledged.count,
                    "\(journal) \(synchronous) keeps every acknowledged row: \(crash)")
            }
            #expect(
                crashes.contains { $0.acknowledged.count == Self.rows - 1 },
                "the sweep reached the last commit: \(crashes)")
        }

        let full = try Self.sqliteCrashes(journal: "DELETE", synchronous: "FULL")
        for crash in full {
            #expect(
                crash.present.count >= crash.acknowledged.count - 1,
                "the rollback journal with FULL loses at most the last acknowledged row: \(crash)")
        }
        #expect(
            full.contains { !$0.acknowledged.isEmpty && $0.present.count == $0.acknowledged.count - 1 },
            "the journal deleted without a folder sync comes back and takes the last commit: \(full)")

        let off = try Self.sqliteCrashes(journal: "DELETE", synchronous: "OFF")
        #expect(
            off.contains { $0.present.count < $0.acknowledged.count },
            "with synchronous=OFF acknowledged rows are lost: \(off)")
    }

    // MARK: - Torn writes

    /// Appends `count` records to the file argv[1], each as two writes: "REC1", its number
    /// and its length (little endian), the payload, and a CRC-32 of all that. With "fsync",
    /// the file is synced after each record; "ack N" follows each record.
    static let logWriter = """
        import os, struct, sys, zlib
        path, count, durable = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "fsync"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        for n in range(1, count + 1):
            payload = bytes((n * 7 + i) % 251 for i in range(700 + 331 * n % 1500))
            body = struct.pack("<4sII", b"REC1", n, len(payload)) + payload
            record = body + struct.pack("<I", zlib.crc32(body))
            half = len(record) // 2
            os.write(fd, record[:half])
            os.write(fd, record[half:])
            if durable:
                os.fsync(fd)
            print("ack", n, flush=True)
        """

    /// The writer's record `n`, byte for byte.
    static func record(_ n: Int) -> [UInt8] {
        func word(_ value: Int) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) } }
        let payload = (0..<(700 + 331 * n % 1500)).map { UInt8((n * 7 + $0) % 251) }
        let body = Array("REC1".utf8) + word(n) + word(payload.count) + payload
        return body + word(Int(crc32(body[...])))
    }

    static func crc32(_ bytes: ArraySlice<UInt8>) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return ~crc
    }

    /// The records of `data` that are whole, numbered from 1 and checksummed, up to the first
    /// that is not; and the bytes that follow them.
    static func readLog(_ data: [UInt8]) -> (intact: Int, tail: [UInt8]) {
        func word(_ at: Int) -> Int {
            (0..<4).reduce(0) { $0 | Int(data[at + $1]) << (8 * $1) }
        }
        var at = 0
        var intact = 0
        while at + 12 <= data.count, Array(data[at..<at + 4]) == Array("REC1".utf8), word(at + 4) == intact + 1 {
            let end = at + 12 + word(at + 8) + 4
            guard end <= data.count, UInt32(word(end - 4)) == crc32(data[at..<end - 4]) else { break }
            intact += 1
            at = end
        }
        return (intact, Array(data[at...]))
    }

    /// One crash point of the log writer: what it acknowledged, what a reader finds.
    struct LogCrash: CustomStringConvertible {
        let seed: Int
        let point: Int
        let acknowledged: Int
        let intact: Int
        let tail: [UInt8]
        let torn: Bool
        var description: String {
            "seed \(seed) k=\(point): acked \(acknowledged), intact \(intact), then \(tail.count) bytes\(torn ? " (torn)" : "")"
        }
    }

    /// A log whose records are synced one by one loses no acknowledged record to torn writes,
    /// and at most the record being written is damaged, at the end. Without the syncs, torn
    /// writes leave acknowledged records lost or damaged.
    @Test(.enabled(if: ReachTests.which("python3") != nil, "no python3 (.ci/install-system-test-deps installs it)"))
    func aLogSyncedRecordByRecordKeepsEveryAcknowledgedRecordThroughTornWrites() throws {
        let workspace = try Workspace("torn")
        defer { workspace.remove() }
        let python = try #require(
            FileManager.default.isExecutableFile(atPath: "/usr/bin/python3")
                ? "/usr/bin/python3" : ReachTests.which("python3"))
        let writer = workspace.folder + "/writer.py"
        try Self.logWriter.write(toFile: writer, atomically: true, encoding: .utf8)
        let log = workspace.folder + "/log"
        let count = 6

        func crashes(_ mode: String) throws -> [LogCrash] {
            var seen: [LogCrash] = []
            for seed in [1, 2, 3] {
                let runs = try Self.sweep("\(mode), seed \(seed)") { crashPoint in
                    // The log exists, empty, before the run: its name is durable.
                    try Data().write(to: URL(fileURLWithPath: log))
                    let outcome = try Self.chaosRun(
                        workspace, path: log, at: crashPoint, torn: true, options: ["--seed", String(seed)],
                        [python, writer, log, String(count), mode])
                    let acknowledged = Self.numbers(after: "ack", in: outcome.output).count
                    let read = Self.readLog([UInt8](try Data(contentsOf: URL(fileURLWithPath: log))))
                    if outcome.status == 0 {
                        #expect(
                            acknowledged == count && read.intact == count && read.tail.isEmpty,
                            "\(mode) ran whole: \(read) \(outcome)")
                    } else {
                        seen.append(
                            LogCrash(
                                seed: seed, point: crashPoint, acknowledged: acknowledged, intact: read.intact,
                                tail: read.tail, torn: outcome.errors.contains("last write")))
                    }
                    return outcome
                }
                #expect(runs >= 2 * count, "\(mode), seed \(seed): only \(runs) crash points")
            }
            return seen
        }

        let synced = try crashes("fsync")
        for crash in synced {
            #expect(crash.intact >= crash.acknowledged, "every acknowledged record is intact: \(crash)")
            #expect(crash.intact <= crash.acknowledged + 1, "\(crash)")
            // What follows the intact records is the start of the next one, cut short: the
            // sectors of its write that the torn write kept.
            let next = Self.record(crash.intact + 1)
            #expect(
                crash.tail.count < next.count && crash.tail == Array(next.prefix(crash.tail.count)),
                "at most one damaged record, the last: \(crash)")
        }
        #expect(
            synced.contains { $0.torn && !$0.tail.isEmpty },
            "some crash point tears the record being written, which the reader finds at the end: \(synced)")

        let unsynced = try crashes("none")
        #expect(
            unsynced.contains { $0.intact < $0.acknowledged },
            "without syncs acknowledged records are lost or torn: \(unsynced)")
        #expect(unsynced.contains { $0.torn && !$0.tail.isEmpty }, "torn writes keep part of a write: \(unsynced)")
    }

    // MARK: - redis

    /// A port on 127.0.0.1 nothing listens on now.
    static func freePort() throws -> Int {
        let (listener, port) = try SeccompDeliveryTests.Workspace.listen()
        close(listener)
        return port
    }

    /// A redis-server started in the background, with its output collected.
    final class Server {
        let process = Process()
        let output = Pipe()

        init(_ executable: String, _ arguments: [String]) throws {
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = arguments
            process.standardInput = FileHandle.nullDevice
            process.standardOutput = output
            process.standardError = output
            try process.runWithSignalsUnblocked()
        }

        /// Waits up to `seconds` for it to end; its status, or nil (it is then killed).
        func end(within seconds: Int = 20) -> Int32? {
            for _ in 0..<seconds * 100 where process.isRunning { usleep(10_000) }
            guard !process.isRunning else {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
                return nil
            }
            process.waitUntilExit()
            return process.terminationStatus
        }

        var said: String {
            String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        }

        deinit {
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        }
    }

    /// One crash point of redis-server: the SETs it acknowledged, the keys a restart finds.
    struct RedisCrash: CustomStringConvertible {
        let point: Int
        let acknowledged: Int
        let present: [Int]
        let lostAt: String
        var description: String { "k=\(point): acked \(acknowledged), present \(present) (\(lostAt))" }
    }

    /// Sweeps redis-server with `appendfsync` set to `policy` over a data folder that a
    /// plain run has set up, SETting keys one by one; after each power loss, a plain
    /// redis-server on the same folder says which keys it has.
    static func redisCrashes(policy: String) throws -> [RedisCrash] {
        let workspace = try Workspace("redis-\(policy)")
        defer { workspace.remove() }
        let server = try #require(ReachTests.which("redis-server"))
        let client = try #require(ReachTests.which("redis-cli"))
        let data = workspace.folder + "/data"
        let template = workspace.folder + "/template"
        let port = try freePort()
        let configuration = workspace.folder + "/redis.conf"
        try """
        bind 127.0.0.1
        port \(port)
        dir \(data)
        appendonly yes
        appendfsync \(policy)
        aof-load-truncated yes
        auto-aof-rewrite-percentage 0
        save ""
        daemonize no
        logfile ""
        loglevel warning

        """.write(toFile: configuration, atomically: true, encoding: .utf8)
        let keys = 6

        func cli(_ arguments: [String]) throws -> ChaosToolTests.Outcome {
            try ChaosToolTests.run(client, ["-h", "127.0.0.1", "-p", String(port)] + arguments)
        }
        /// Waits until the server answers, or `running` is false; whether it answered.
        func answers(while running: () -> Bool) throws -> Bool {
            for _ in 0..<1000 where running() {
                if try cli(["PING"]).output.hasPrefix("PONG") { return true }
                usleep(10_000)
            }
            return false
        }
        /// Starts redis-server plainly on `data`, runs `body` while it answers, shuts it down.
        func plainly<T>(_ body: () throws -> T) throws -> T? {
            let plain = try Server(server, [configuration])
            guard try answers(while: { plain.process.isRunning }) else {
                Issue.record(
                    "plain redis-server did not start on \(data): \(plain.end().map(String.init) ?? "") \(plain.said)")
                return nil
            }
            let result = try body()
            _ = try cli(["SHUTDOWN", "NOSAVE"])
            #expect(plain.end() == 0, "plain redis-server shut down: \(plain.said)")
            return result
        }

        // redis 7 sets up appendonlydir/ on its first start without ever syncing `dir`
        // (mkdir, then a rename into it): a plain first run makes that layout durable, so
        // that the sweep is about the SETs.
        try workspace.empty(data)
        _ = try plainly {}
        try FileManager.default.copyItem(atPath: data, toPath: template)

        var crashes: [RedisCrash] = []
        try sweep("appendfsync \(policy)") { crashPoint in
            try? FileManager.default.removeItem(atPath: data)
            try FileManager.default.copyItem(atPath: template, toPath: data)
            let profile = try workspace.profile(path: data, at: crashPoint)
            let running = try Server(
                ChaosToolTests.buildDirectory.appendingPathComponent("chaos").path,
                ["run", "--quiet", "--profile", profile, "--", server, configuration])
            var acknowledged = 0
            if try answers(while: { running.process.isRunning }) {
                for key in 1...keys {
                    guard try cli(["SET", "k\(key)", "v\(key)"]).output == "OK\n" else { break }
                    acknowledged = key
                }
                if acknowledged == keys && running.process.isRunning { _ = try cli(["SHUTDOWN"]) }
            }
            let status = running.end()
            let said = running.said
            let outcome = ChaosToolTests.Outcome(status: status ?? -1, output: "", errors: said)
            guard status != nil else {
                Issue.record(
                    "appendfsync \(policy), k=\(crashPoint): redis-server under chaos run did not end: \(said)")
                return outcome
            }
            let values = try plainly { try cli(["MGET"] + (1...keys).map { "k\($0)" }).output } ?? ""
            let present = values.split(separator: "\n").enumerated().compactMap { index, value in
                value == "v\(index + 1)" ? index + 1 : nil
            }
            let crash = RedisCrash(
                point: crashPoint, acknowledged: acknowledged, present: present,
                lostAt: said.split(separator: "\n").first { $0.contains("power lost") }.map(String.init) ?? "")
            #expect(countsUp(present), "\(crash)")
            #expect(present.count <= acknowledged + 1, "\(crash)")
            if status == 0 {
                #expect(acknowledged == keys && present.count == keys, "appendfsync \(policy) ran whole: \(crash)")
            } else {
                crashes.append(crash)
            }
            return outcome
        }
        #expect(crashes.count >= keys, "appendfsync \(policy): only \(crashes.count) crash points: \(crashes)")
        return crashes
    }

    /// With `appendfsync always` redis-server syncs its append-only file before it answers a
    /// SET: no acknowledged SET is lost. With `appendfsync no` it never syncs: they are.
    @Test(
        .enabled(
            if: ReachTests.which("redis-server") != nil && ReachTests.which("redis-cli") != nil,
            "no redis-server or redis-cli (.ci/install-system-test-deps installs redis-server)"))
    func redisLosesNoAcknowledgedSetWithAppendfsyncAlwaysAndLosesThemWithNo() throws {
        let always = try Self.redisCrashes(policy: "always")
        for crash in always {
            #expect(crash.present.count >= crash.acknowledged, "every acknowledged SET is kept: \(crash)")
        }
        #expect(always.contains { $0.acknowledged > 0 }, "crash points after acknowledged SETs: \(always)")

        let never = try Self.redisCrashes(policy: "no")
        #expect(
            never.contains { $0.present.count < $0.acknowledged },
            "with appendfsync no acknowledged SETs are lost: \(never)")
    }
}
