import Foundation
import TestHelpers
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Power loss against PostgreSQL. The server runs under `chaos run` with a power-loss entry
/// on its data folder while the test inserts rows one transaction at a time (psql,
/// autocommit) and records every commit the server acknowledged. At the chosen change the
/// tree is killed and what was not durable is rolled back; PostgreSQL, started again
/// plainly on the same folder, replays its WAL. With the default settings (fsync,
/// synchronous_commit) every acknowledged row is there at every crash point; with
/// fsync=off some crash point loses one: the item finds what it is meant to find.
@Suite(.serialized, .disabled(if: Sanitizers.thread, Sanitizers.sweepReason)) struct PowerLossPostgresTests {
    /// The folder of the newest Debian PostgreSQL (/usr/lib/postgresql/VERSION/bin), or the
    /// one `postgres` on PATH lives in; nil when none has every program the test runs.
    static let programs: String? = {
        let root = "/usr/lib/postgresql"
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).sorted {
            (Int($0) ?? 0) > (Int($1) ?? 0)
        }
        let onPath = ReachTests.which("postgres").map {
            URL(fileURLWithPath: $0).resolvingSymlinksInPath().deletingLastPathComponent().path
        }
        return (versions.map { "\(root)/\($0)/bin" } + [onPath].compactMap { $0 }).first { folder in
            ["initdb", "postgres", "pg_ctl", "pg_isready", "psql"].allSatisfy {
                FileManager.default.isExecutableFile(atPath: "\(folder)/\($0)")
            }
        }
    }()

    /// What runs a program as the cluster's owner. PostgreSQL refuses to run as root, so a
    /// root test runs it as Debian's `postgres` user through setpriv, which is not setuid (the
    /// seccomp delivery's no_new_privs would take su's privileges away) and execs without
    /// staying as a parent; anyone else runs it as themselves. Nil: root, but no such user.
    static let asOwner: [String]? = {
        guard getuid() == 0 else { return [] }
        guard getpwnam("postgres") != nil, let setpriv = ReachTests.which("setpriv") else { return nil }
        return [setpriv, "--reuid=postgres", "--regid=postgres", "--init-groups", "--"]
    }()

    /// Rows each run inserts: enough for the crash points to fall among them, few enough
    /// for the script to run in about a second.
    static let rows = 200

    /// A cluster in a temporary folder: `template` made once by initdb, with the table and the
    /// settings, and `data` copied from it for each run, so every run starts from the same
    /// durable state.
    final class Cluster {
        let folder: String
        /// Names the socket only: the server listens on no TCP address.
        let port = 5432

        var data: String { folder + "/data" }
        var template: String { folder + "/template" }
        var sockets: String { folder + "/sockets" }

        /// initdb with `settings` (postgresql.conf lines) and the table, as the owner.
        init(settings: [String]) throws {
            // Short: the socket's path must fit in sun_path.
            folder = "/tmp/chaos-pg-" + UUID().uuidString.prefix(8).lowercased()
            try FileManager.default.createDirectory(atPath: sockets, withIntermediateDirectories: true)
            if getuid() == 0, let owner = getpwnam("postgres") {
                for path in [folder, sockets] { chown(path, owner.pointee.pw_uid, owner.pointee.pw_gid) }
            }
            let initialized = try runAsOwner(
                "initdb", ["-D", template, "-A", "trust", "-U", "postgres", "--no-locale", "-E", "UTF8", "--no-sync"])
            guard initialized.status == 0 else { throw Failure("initdb failed: \(initialized.errors)") }
            let configuration = template + "/postgresql.conf"
            let written = try String(contentsOfFile: configuration, encoding: .utf8)
            try (written + (["", "listen_addresses = ''"] + settings).joined(separator: "\n") + "\n")
                .write(toFile: configuration, atomically: false, encoding: .utf8)
            // Single-user mode: no socket, no server left running; it ends with a checkpoint.
            let single =
                PowerLossPostgresTests.asOwner! + [program("postgres"), "--single", "-D", template, "postgres"]
            let table = runProgram(
                single[0], Array(single.dropFirst()),
                input: Data("CREATE TABLE inserts (i integer PRIMARY KEY);\n".utf8))
            guard table?.status == 0 else { throw Failure("creating the table failed: \(table?.stderr ?? "")") }
        }

        func program(_ name: String) -> String { PowerLossPostgresTests.programs! + "/" + name }

        /// Runs PostgreSQL's program `name` as the cluster's owner, to its end.
        func runAsOwner(_ name: String, _ arguments: [String]) throws -> ChaosToolTests.Outcome {
            let command = PowerLossPostgresTests.asOwner! + [program(name)] + arguments
            return try ChaosToolTests.run(command[0], Array(command.dropFirst()))
        }

        /// Kills what is left and removes the folder.
        func remove() {
            PowerLossPostgresTests.killProcesses(in: folder)
            try? FileManager.default.removeItem(atPath: folder)
        }

        /// A fresh `data`: the template's copy, owner and modes kept.
        func resetData() throws {
            try? FileManager.default.removeItem(atPath: data)
            let copied = try ChaosToolTests.run("/bin/cp", ["-a", template, data])
            guard copied.status == 0 else { throw Failure("cp -a failed: \(copied.errors)") }
        }

        /// Starts `command` in the background, its output into the file `log`.
        func start(_ command: [String], log: String) throws -> Process {
            _ = FileManager.default.createFile(atPath: log, contents: nil)
            let output = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
            defer { try? output.close() }
            let process = Process()
            process.executableURL = URL(fileURLWithPath: command[0])
            process.arguments = Array(command.dropFirst())
            process.standardInput = FileHandle.nullDevice
            process.standardOutput = output
            process.standardError = output
            try process.runWithSignalsUnblocked()
            return process
        }

        /// The server's command line on `data`.
        var server: [String] {
            PowerLossPostgresTests.asOwner! + [program("postgres"), "-D", data, "-k", sockets, "-p", String(port)]
        }

        /// Whether the server accepts connections within 30 s, asked until `process` ends.
        func ready(_ process: Process) throws -> Bool {
            for _ in 0..<600 where process.isRunning {
                let asked = try ChaosToolTests.run(
                    program("pg_isready"),
                    ["-q", "-h", sockets, "-p", String(port), "-U", "postgres", "-d", "postgres"])
                if asked.status == 0 { return true }
                usleep(50_000)
            }
            return false
        }

        /// psql on the server, with `arguments`.
        func psql(_ arguments: [String]) throws -> ChaosToolTests.Outcome {
            try ChaosToolTests.run(
                program("psql"),
                ["-X", "-q", "-h", sockets, "-p", String(port), "-U", "postgres", "-d", "postgres"] + arguments)
        }

        /// Stops the server on `data` (`mode`: fast or immediate) and waits for `process`;
        /// kills what is left either way.
        func stop(_ process: Process, mode: String) throws {
            defer { PowerLossPostgresTests.killProcesses(in: folder) }
            if process.isRunning { _ = try runAsOwner("pg_ctl", ["stop", "-D", data, "-m", mode, "-w", "-t", "30"]) }
            if !PowerLossPostgresTests.wait(process, polls: 3000) { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
        }
    }

    /// A run of the server under a power-loss entry.
    struct Crash {
        /// `chaos run`'s exit status (137 once power was lost).
        let status: Int32
        /// What `chaos run` and the server printed.
        let log: String
        /// The changes under the data folder the entry saw.
        let seen: Int
        /// The rows whose commit the server acknowledged, in order.
        let acknowledged: [Int]
    }

    /// Runs the server on a fresh copy of the template under `chaos run` with power lost at
    /// the `change`-th change to its data folder (`torn`: the last writes keep part of their
    /// sectors), and inserts `rows` rows, one transaction each, until the server is gone. A
    /// server still running after them (the change never came) is stopped at once
    /// (`-m immediate`: no shutdown checkpoint to count).
    static func crash(_ cluster: Cluster, at change: Int, torn: Bool = false, rows: Int = rows) throws -> Crash {
        try cluster.resetData()
        let profile = cluster.folder + "/power-loss.json"
        try #"""
        {"entries": [{"point": "system.files", "provider": {"item": "power-loss", "parameters": {"path": "\#(cluster.data)", "torn": \#(torn)}, "at": [\#(change)]}}]}
        """#.write(toFile: profile, atomically: true, encoding: .utf8)
        let report = cluster.folder + "/report.json"
        try? FileManager.default.removeItem(atPath: report)
        let chaos = ChaosToolTests.buildDirectory.appendingPathComponent("chaos").path
        let log = cluster.folder + "/chaos.log"
        let process = try cluster.start(
            [chaos, "run", "--report", report, "--profile", profile, "--"] + cluster.server, log: log)
        defer {
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            killProcesses(in: cluster.folder)
        }
        guard try cluster.ready(process) else {
            try cluster.stop(process, mode: "immediate")
            throw Failure("the server under chaos run never accepted connections: \(Self.read(log))")
        }
        var acknowledged: [Int] = []
        if rows > 0 {
            let script = cluster.folder + "/inserts.sql"
            try (1...rows).map { "INSERT INTO inserts VALUES (\($0));\n\\echo acknowledged \($0)\n" }.joined()
                .write(toFile: script, atomically: true, encoding: .utf8)
            let inserted = try cluster.psql(["-v", "ON_ERROR_STOP=1", "-f", script])
            acknowledged = inserted.output.split(separator: "\n").compactMap {
                $0.hasPrefix("acknowledged ") ? Int($0.dropFirst("acknowledged ".count)) : nil
            }
        }
        // A commit left unacknowledged: power was lost, and chaos run ends once it has rolled back.
        if acknowledged.count == rows || !wait(process, polls: 3000) { try cluster.stop(process, mode: "immediate") }
        process.waitUntilExit()
        let json =
            (try? JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: report))))
            as? [String: Any]
        let entries = json?["entries"] as? [[String: Any]]
        return Crash(
            status: process.terminationStatus, log: Self.read(log), seen: entries?.first?["seen"] as? Int ?? -1,
            acknowledged: acknowledged)
    }

    /// What a plain server finds in the table once it has recovered, and its log; no rows
    /// when it did not start or the query failed.
    static func recover(_ cluster: Cluster) throws -> (rows: Set<Int>?, log: String) {
        let log = cluster.folder + "/recovery.log"
        let process = try cluster.start(cluster.server, log: log)
        var rows: Set<Int>?
        if try cluster.ready(process) {
            let selected = try cluster.psql(["-A", "-t", "-c", "SELECT i FROM inserts ORDER BY i"])
            if selected.status == 0 { rows = Set(selected.output.split(separator: "\n").compactMap { Int($0) }) }
        }
        try cluster.stop(process, mode: "fast")
        return (rows, read(log))
    }

    /// The targeted changes a run with `rows` inserts makes: a run whose crash point never comes.
    static func changes(_ cluster: Cluster, rows: Int) throws -> Int {
        let counted = try crash(cluster, at: 1_000_000_000, rows: rows)
        #expect(!counted.log.contains("power lost"), "\(counted.log)")
        #expect(counted.acknowledged.count == rows, "without power loss every insert is acknowledged: \(counted.log)")
        return counted.seen
    }

    /// `count` crash points spread evenly over the changes the inserts make (those after the
    /// server's start), from counting runs.
    static func crashPoints(_ cluster: Cluster, count: Int) throws -> [Int] {
        let started = try changes(cluster, rows: 0)
        let inserted = try changes(cluster, rows: rows)
        // Each commit writes the WAL at least once.
        #expect(started > 0 && inserted - started >= rows, "changes at start \(started), with the inserts \(inserted)")
        return (1...count).map { started + (inserted - started) * $0 / (count + 1) }
    }

    @Test(
        .enabled(if: programs != nil, "PostgreSQL is not installed (apt install postgresql)"),
        .enabled(if: asOwner != nil, "running as root with no postgres user (or setpriv) to run the server as"))
    func everyAcknowledgedCommitSurvivesPowerLossUnderDefaultSettings() throws {
        let cluster = try Cluster(settings: [])
        defer { cluster.remove() }
        for (index, change) in try Self.crashPoints(cluster, count: 5).enumerated() {
            let torn = index % 2 == 1
            let crash = try Self.crash(cluster, at: change, torn: torn)
            let name = "change \(change)\(torn ? " (torn)" : "")"
            #expect(
                crash.status == 137 && crash.log.contains("power lost at change \(change),"),
                "\(name): power was lost there: \(crash.log)")
            #expect(!crash.acknowledged.isEmpty, "\(name): the crash fell among the inserts")
            let recovered = try Self.recover(cluster)
            guard let rows = recovered.rows else {
                Issue.record("\(name): PostgreSQL did not recover: \(recovered.log)\nunder chaos: \(crash.log)")
                continue
            }
            #expect(
                recovered.log.contains("automatic recovery in progress"),
                "\(name): the restart replayed the WAL: \(recovered.log)")
            let lost = Set(crash.acknowledged).subtracting(rows)
            #expect(lost.isEmpty, "\(name): acknowledged rows lost: \(lost.sorted()); \(crash.log)")
            // Inserts go one after another: only the one in flight may be there unacknowledged.
            let inFlight = (crash.acknowledged.last ?? 0) + 1
            let unexplained = rows.subtracting(crash.acknowledged).subtracting([inFlight])
            #expect(unexplained.isEmpty, "\(name): rows never inserted: \(unexplained.sorted())")
        }
    }

    @Test(
        .enabled(if: programs != nil, "PostgreSQL is not installed (apt install postgresql)"),
        .enabled(if: asOwner != nil, "running as root with no postgres user (or setpriv) to run the server as"))
    func withFsyncOffSomeCrashPointLosesAnAcknowledgedCommit() throws {
        let cluster = try Cluster(settings: ["fsync = off"])
        defer { cluster.remove() }
        var losses: [String] = []
        for change in try Self.crashPoints(cluster, count: 3) {
            let crash = try Self.crash(cluster, at: change)
            #expect(
                crash.status == 137 && crash.log.contains("power lost at change \(change),"),
                "change \(change): power was lost there: \(crash.log)")
            let recovered = try Self.recover(cluster)
            if let rows = recovered.rows {
                let lost = Set(crash.acknowledged).subtracting(rows)
                if !lost.isEmpty { losses.append("change \(change): \(lost.count) of \(crash.acknowledged.count)") }
            } else {
                losses.append("change \(change): no recovery")
            }
        }
        #expect(!losses.isEmpty, "with fsync=off power loss must cost some acknowledged commit")
    }

    // MARK: - Helpers

    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    static func read(_ path: String) -> String { (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }

    /// Waits up to `polls` times 10 ms for `process` to end (polls, not a clock: other
    /// suites in this process move clocks); whether it has.
    static func wait(_ process: Process, polls: Int) -> Bool {
        for _ in 0..<polls where process.isRunning { usleep(10_000) }
        return !process.isRunning
    }

    /// Kills (SIGKILL) every process working in `folder`: a postmaster and all its children
    /// live in their data folder. Then waits (up to 5 s) for them to be gone.
    static func killProcesses(in folder: String) {
        func working() -> [Int32] {
            ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).compactMap { entry in
                guard let pid = Int32(entry), pid != getpid(),
                    let cwd = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/cwd"),
                    cwd == folder || cwd.hasPrefix(folder + "/"), processIsRunning(pid)
                else { return nil }
                return pid
            }
        }
        for _ in 0..<500 {
            let pids = working()
            if pids.isEmpty { return }
            for pid in pids { kill(pid, SIGKILL) }
            usleep(10_000)
        }
    }
}
