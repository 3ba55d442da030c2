import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// What one run of `chaos explore` saw: the program's end, the check's, and each
/// entry's counts (by profile number) from the launcher's report.
struct ExploreRunResult: Sendable {
    var exitStatus: Int32?
    var signal: Int32?
    var timedOut = false
    /// The check's exit status (nil: no check, or the program already failed).
    var checkStatus: Int32?
    var checkTimedOut = false
    /// The last line the program (or the failing check) wrote to standard error.
    var lastLine = ""
    var seen: [Int: Int] = [:]
    /// What each entry's last act was (`write ./state.tmp`), where the engine noted it.
    var lastActs: [Int: String] = [:]
    var acted: [Int: Int] = [:]
    var seconds = 0.0
    /// Where power was lost and what was rolled back, when a power-loss entry acted: the
    /// program was killed on purpose, and only the check (its recovery) judges the run.
    var powerLoss: String?

    /// Whether the run fails the program: a non-zero exit, a signal, a timeout, or a check
    /// that fails afterwards. After a power loss, only the check counts.
    var failed: Bool {
        let ended = powerLoss != nil ? false : timedOut || signal != nil || exitStatus != 0
        return ended || checkTimedOut || (checkStatus ?? 0) != 0
    }

    /// What went wrong, in one line: how it ended and the last line of standard error.
    func outcome(timeout: Double) -> String {
        var what: String
        if let powerLoss {
            what =
                checkTimedOut
                ? "the check timed out" : (checkStatus ?? 0) != 0 ? "the check failed (exit \(checkStatus!))" : "passed"
            what = "\(powerLoss); then \(what)"
        } else if timedOut {
            what = "timed out after \(ExploreRunner.seconds(timeout))"
        } else if let signal {
            what = "killed by \(ExploreRunner.signalName(signal))"
        } else if let exitStatus, exitStatus != 0 {
            what = "exit \(exitStatus)"
        } else if checkTimedOut {
            what = "the check timed out"
        } else if let checkStatus, checkStatus != 0 {
            what = "the check failed (exit \(checkStatus))"
        } else {
            what = "passed"
        }
        if !lastLine.isEmpty { what += ": \(lastLine)" }
        return what
    }
}

/// Why a run could not be made at all (explore's own failure, exit 125).
struct ExploreRunnerError: Error, CustomStringConvertible {
    let description: String
}

/// Runs the program under the launcher with one plan, in a fresh scratch directory, with
/// `--setup` before and `--check` after; each worker has a folder of its own under `root`.
struct ExploreRunner: Sendable {
    let launcher: String
    /// The space's profile (the launcher wants one named; the plan it runs is the one given).
    let profilePath: String
    let program: [String]
    let setup: String?
    let check: String?
    let seed: UInt64
    let root: String

    /// The scratch directory of worker `slot`.
    func scratch(slot: Int) -> String { "\(root)/worker-\(slot)/scratch" }

    /// Runs `plan` (a launcher plan file for ``scratch(slot:)``) as worker `slot`, giving
    /// up after `timeout` seconds.
    func run(plan: String, slot: Int, timeout: Double) throws(ExploreRunnerError) -> ExploreRunResult {
        let folder = "\(root)/worker-\(slot)"
        let scratch = self.scratch(slot: slot)
        let planPath = "\(folder)/run.plan"
        let reportPath = "\(folder)/report.json"
        let stderrPath = "\(folder)/stderr"
        try freshDirectory(scratch)
        unlink(reportPath)
        let start = ContinuousClock.now
        var result = ExploreRunResult()
        let environment = Self.environment(scratch: scratch)
        if let setup {
            let ended = try Self.spawnAndWait(
                ["/bin/sh", "-c", setup], directory: scratch, environment: environment,
                stderr: stderrPath, timeout: timeout)
            guard !ended.timedOut, ended.exitStatus == 0 else {
                throw ExploreRunnerError(
                    description:
                        "--setup \(ended.timedOut ? "timed out" : "failed (\(Self.describe(ended)))") in \(scratch): \(Self.lastLine(of: stderrPath))"
                )
            }
        }
        // Written with the system calls: Foundation's writer syncs the file to disk, which
        // cost every placement a tenth of a millisecond for a file the launcher deletes.
        guard Self.write(plan, to: planPath) else {
            throw ExploreRunnerError(
                description: "cannot write the run's plan to \(planPath): \(String(cString: strerror(errno)))")
        }
        let arguments =
            [
                launcher, "run", "--profile", profilePath, "--quiet", "--report", reportPath, "--seed", String(seed),
                "--",
            ]
            + program
        let ended = try Self.spawnAndWait(
            arguments, directory: scratch,
            environment: environment + ["CHAOS_RUN_COMPILED=\(planPath)", "CHAOS_RUN_COMPILED_ONCE=1"],
            stderr: stderrPath, timeout: timeout)
        result.exitStatus = ended.exitStatus
        result.signal = ended.signal
        result.timedOut = ended.timedOut
        result.lastLine = Self.lastLine(of: stderrPath)
        if !ended.timedOut, ended.exitStatus == 125, access(reportPath, F_OK) != 0 {
            // The launcher itself refused (a program it cannot reach, a damaged plan).
            throw ExploreRunnerError(description: "chaos run refused to start the program: \(result.lastLine)")
        }
        try readCounts(reportPath, into: &result)
        if let check, !result.failed {
            let checked = try Self.spawnAndWait(
                ["/bin/sh", "-c", check], directory: scratch, environment: environment,
                stderr: stderrPath, timeout: timeout)
            result.checkStatus = checked.exitStatus ?? 128 + (checked.signal ?? 0)
            result.checkTimedOut = checked.timedOut
            if result.failed { result.lastLine = Self.lastLine(of: stderrPath) }
        }
        // Not in a defer: a defer runs after the returned copy is made, and the baseline's
        // time (which sets the default timeout) was always 0.
        result.seconds = Self.secondsSince(start)
        return result
    }

    /// An empty directory at `path`: what a run left there removed. With the system calls
    /// themselves, not FileManager: this runs once per placement, and a placement must
    /// cost a run, not a run and a file manager's walk.
    private func freshDirectory(_ path: String) throws(ExploreRunnerError) {
        if mkdir(path, 0o755) == 0 { return }
        if errno == ENOENT {  // the worker's first run: its folder too
            mkdir((path as NSString).deletingLastPathComponent, 0o755)
            if mkdir(path, 0o755) == 0 { return }
        }
        guard errno == EEXIST else {
            throw ExploreRunnerError(
                description: "cannot make the scratch directory \(path): \(String(cString: strerror(errno)))")
        }
        let directory = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard directory >= 0, Self.empty(directory) else {
            if directory >= 0 { close(directory) }
            throw ExploreRunnerError(description: "cannot empty the scratch directory \(path) for the next run")
        }
        close(directory)
    }

    /// Removes everything inside the open directory `directory` (closing nothing).
    private static func empty(_ directory: Int32) -> Bool {
        let copy = dup(directory)
        guard copy >= 0, let stream = fdopendir(copy) else { return false }
        defer { closedir(stream) }
        var names: [String] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) {
                String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        for name in names where unlinkat(directory, name, 0) != 0 {
            guard errno == EISDIR || errno == EPERM else { return false }
            let child = openat(directory, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            guard child >= 0 else { return false }
            let emptied = empty(child)
            close(child)
            guard emptied, unlinkat(directory, name, AT_REMOVEDIR) == 0 else { return false }
        }
        return true
    }

    /// The counts of the launcher's report (`Sources/2-Deliveries/chaos/report.c` writes it): each
    /// entry's `"entry"`, `"seen"` and `"acted"`. Read by hand: a JSON parser per
    /// placement cost more than the scan. A quote inside a JSON string is escaped, so
    /// `"seen":` can only be the member.
    private func readCounts(_ path: String, into result: inout ExploreRunResult) throws(ExploreRunnerError) {
        guard let bytes = Self.contents(of: path), let text = String(validating: bytes, as: UTF8.self),
            text.hasPrefix("{"), text.contains("\"entries\":[")
        else {
            // No report: the run was killed before the launcher wrote one (a timeout).
            if result.timedOut { return }
            throw ExploreRunnerError(description: "chaos run wrote no report to \(path); \(result.lastLine)")
        }
        result.powerLoss = Self.string(after: "\"powerLoss\":", in: text).map { sentence in
            // Paths as the run saw them: ./name in its scratch directory.
            sentence.replacingOccurrences(
                of: #"\#(root)/worker-[0-9]+/scratch/"#, with: "./", options: .regularExpression)
        }
        for object in text.components(separatedBy: "{\"entry\":").dropFirst() {
            guard let number = Self.integer(in: object, at: object.startIndex),
                let seen = Self.member("\"seen\":", in: object),
                let acted = Self.member("\"acted\":", in: object)
            else { continue }
            result.seen[number] = seen
            result.acted[number] = acted
            if let function = Self.string(after: "\"lastAct\":{\"function\":", in: object) {
                let target = Self.string(after: "\"target\":", in: object) ?? ""
                result.lastActs[number] = target.isEmpty ? function : "\(function) \(shortened(target))"
            }
        }
    }

    /// A path of this exploration's scratch directories as the run saw it: `./name`.
    private func shortened(_ target: String) -> String {
        guard target.hasPrefix(root + "/"), let scratch = target.range(of: "/scratch/") else { return target }
        return "./" + target[scratch.upperBound...]
    }

    /// The JSON string right after `key` in `text`, unescaped (`\"`, `\\`, `\uXXXX`).
    private static func string(after key: String, in text: String) -> String? {
        guard let found = text.range(of: key), text[found.upperBound...].first == "\"" else { return nil }
        var result = ""
        var characters = text[text.index(after: found.upperBound)...].makeIterator()
        while let character = characters.next() {
            switch character {
            case "\"": return result
            case "\\":
                guard let escaped = characters.next() else { return nil }
                if escaped == "u" {
                    let hex = String(
                        [characters.next(), characters.next(), characters.next(), characters.next()].compactMap { $0 })
                    guard let value = UInt32(hex, radix: 16), let scalar = Unicode.Scalar(value) else { return nil }
                    result.unicodeScalars.append(scalar)
                } else {
                    result.append(escaped == "n" ? "\n" : escaped == "t" ? "\t" : escaped)
                }
            default: result.append(character)
            }
        }
        return nil
    }

    private static func member(_ key: String, in text: String) -> Int? {
        guard let found = text.range(of: key) else { return nil }
        return integer(in: text, at: found.upperBound)
    }

    private static func integer(in text: String, at start: String.Index) -> Int? {
        Int(text[start...].prefix { $0.isASCII && $0.isNumber })
    }

    /// Writes `text` to a new file at `path`; false (with errno) when it cannot.
    private static func write(_ text: String, to path: String) -> Bool {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let wrote = bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            if wrote < 0, errno == EINTR { continue }
            guard wrote > 0 else { return false }
            bytes = bytes.dropFirst(wrote)
        }
        return true
    }

    /// The bytes of the file at `path` (at most 1 MiB), or nil.
    private static func contents(of path: String) -> [UInt8]? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while bytes.count < 1 << 20 {
            let got = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if got < 0, errno == EINTR { continue }
            if got <= 0 { break }
            bytes += buffer[0..<got]
        }
        return bytes
    }

    // MARK: Processes

    /// How a process ended.
    struct Ended {
        var exitStatus: Int32?
        var signal: Int32?
        var timedOut = false
    }

    /// The environment of every process of a run: this one's, without the variables that
    /// pass a plan between the tool and the launcher, with `CHAOS_EXPLORE_DIR`.
    private static func environment(scratch: String) -> [String] {
        let dropped: Set<String> = [
            "CHAOS_RUN_COMPILED", "CHAOS_RUN_COMPILED_ONCE", "CHAOS_RUN_CACHE", "CHAOS_RUN_SIGNALS",
            "CHAOS_EXPLORE_DIR",
        ]
        var result = ProcessInfo.processInfo.environment.filter { !dropped.contains($0.key) }.map {
            "\($0.key)=\($0.value)"
        }
        result.append("CHAOS_EXPLORE_DIR=\(scratch)")
        return result
    }

    /// Starts `arguments` in `directory` as the leader of a process group of its own, with
    /// standard input from /dev/null and its output in `stderr` (both streams), default
    /// signal dispositions and no blocked signal (this tool's runtime blocks some); waits
    /// at most `timeout` seconds, then kills the group. Whatever the program left running
    /// in its group is killed too, before its leader is reaped (so the group's number
    /// cannot have been reused).
    static func spawnAndWait(
        _ arguments: [String], directory: String, environment: [String], stderr: String, timeout: Double
    ) throws(ExploreRunnerError) -> Ended {
        var actions = posix_spawn_file_actions_t()
        var attributes = posix_spawnattr_t()
        posix_spawn_file_actions_init(&actions)
        posix_spawnattr_init(&attributes)
        defer {
            posix_spawn_file_actions_destroy(&actions)
            posix_spawnattr_destroy(&attributes)
        }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, stderr, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        guard let addChdir = LibC.addChdir, addChdir(&actions, directory) == 0 else {
            throw ExploreRunnerError(
                description:
                    "this C library cannot start a program in another directory (posix_spawn_file_actions_addchdir_np)")
        }
        var none = sigset_t()
        sigemptyset(&none)
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(
            &attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        var envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup($0) } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var pid: pid_t = 0
        let spawned = posix_spawnp(&pid, arguments[0], &actions, &attributes, &argv, &envp)
        guard spawned == 0 else {
            throw ExploreRunnerError(description: "cannot start \(arguments[0]): \(String(cString: strerror(spawned)))")
        }
        var ended = Ended()
        ended.timedOut = !waitForExit(pid, timeout: timeout)
        // The leader is a zombie (or still running): its number is still the group's.
        kill(-pid, SIGKILL)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        if status & 0x7f == 0 {
            ended.exitStatus = (status >> 8) & 0xff
        } else {
            ended.signal = status & 0x7f
        }
        return ended
    }

    /// Waits until `pid` has exited (without reaping it): true, or false after `timeout`.
    private static func waitForExit(_ pid: pid_t, timeout: Double) -> Bool {
        let deadline = ContinuousClock.now + .milliseconds(Int64(timeout * 1000))
        let descriptor = LibC.pidfdOpen?(pid, 0) ?? -1
        defer { if descriptor >= 0 { close(descriptor) } }
        while true {
            var info = siginfo_t()
            if waitid(P_PID, id_t(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0, info._sifields._kill.si_pid == pid {
                return true
            }
            let left = deadline - ContinuousClock.now
            if left <= .zero { return false }
            let milliseconds = Int32(
                clamping: left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000 + 1)
            if descriptor >= 0 {
                var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
                _ = poll(&poller, 1, milliseconds)
            } else {
                usleep(UInt32(min(milliseconds, 5)) * 1000)
            }
        }
    }

    /// C library functions Swift's Glibc module does not show, looked up once.
    private enum LibC {
        typealias AddChdir =
            @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32
        typealias PidfdOpen = @convention(c) (pid_t, UInt32) -> Int32

        static let addChdir: AddChdir? = dlsym(
            UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addchdir_np"
        )
        .map { unsafeBitCast($0, to: AddChdir.self) }
        /// Without it (glibc before 2.36), exits are polled.
        static let pidfdOpen: PidfdOpen? = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "pidfd_open")
            .map { unsafeBitCast($0, to: PidfdOpen.self) }
    }

    static func describe(_ ended: Ended) -> String {
        if let signal = ended.signal { return "killed by \(signalName(signal))" }
        return "exit \(ended.exitStatus ?? 0)"
    }

    /// The last non-empty line of the file at `path` (at most its last 4 KiB read).
    static func lastLine(of path: String) -> String {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return "" }
        defer { close(descriptor) }
        let size = lseek(descriptor, 0, SEEK_END)
        let start = max(0, size - 4096)
        var buffer = [UInt8](repeating: 0, count: Int(size - start))
        let got = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, start) }
        let text = String(decoding: buffer.prefix(max(0, got)), as: UTF8.self)
        let line = text.split(whereSeparator: \.isNewline).last.map(String.init) ?? ""
        return String(line.trimmingCharacters(in: .whitespaces).prefix(300))
    }

    static func signalName(_ signal: Int32) -> String {
        let names: [Int32: String] = [
            SIGABRT: "SIGABRT", SIGSEGV: "SIGSEGV", SIGKILL: "SIGKILL", SIGTERM: "SIGTERM", SIGBUS: "SIGBUS",
            SIGFPE: "SIGFPE", SIGILL: "SIGILL", SIGPIPE: "SIGPIPE", SIGINT: "SIGINT", SIGTRAP: "SIGTRAP",
        ]
        return names[signal] ?? "signal \(signal)"
    }

    static func seconds(_ value: Double) -> String {
        value >= 10 ? "\(Int(value.rounded())) s" : String(format: "%.1f s", value)
    }

    static func secondsSince(_ start: ContinuousClock.Instant) -> Double {
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
    }
}
