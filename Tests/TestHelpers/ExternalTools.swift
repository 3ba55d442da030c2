import ChaosKit
public import Foundation
public import Logging

// Reference answers from other programs (Python libraries CI installs with
// .ci/install-test-deps), and a log handler that keeps what was logged.

/// The package's root directory (where Package.swift is).
public let packageRoot: URL = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

/// What a program printed and how it ended.
public struct ToolOutput: Sendable {
    public let status: Int32
    public let stdout: Data
    public let stderr: String
}

/// Runs `python3` with `arguments`, feeding it `input`; nil when python3 cannot be started.
public func runPython(_ arguments: [String], input: Data = Data()) -> ToolOutput? {
    runProgram("/usr/bin/env", ["python3"] + arguments, input: input)
}

/// Runs the program at `path` with `arguments` (and `environment` added to this process's),
/// feeding it `input`; nil when it cannot be started. See ``runToEnd(_:input:)``.
public func runProgram(_ path: String, _ arguments: [String], environment: [String: String] = [:], input: Data = Data())
    -> ToolOutput?
{
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    return try? runToEnd(process, input: input)
}

/// Starts `process` (no signal blocked), feeds it `input`, and collects what it prints
/// until it has ended. Programs it leaves running (daemons, a background job, a sleep a
/// failed test never ended) would hold its output pipes, and Foundation's own socket, open
/// for as long as they live, and the test would wait with them: once the process has ended
/// they get `leftoverGrace` to finish, then every process holding those pipes is killed.
/// A liveness bound of `bound` ends a process that does not end by itself (killed, with
/// its leftovers, and status 137).
public func runToEnd(
    _ process: Process, input: Data = Data(), leftoverGrace: Duration = .seconds(20), bound: Duration = .seconds(900)
) throws -> ToolOutput {
    let stdin = Pipe()
    let stdout = Pipe()
    let stderr = Pipe()
    process.standardInput = stdin
    process.standardOutput = stdout
    process.standardError = stderr
    try process.runWithSignalsUnblocked()
    let pid = process.processIdentifier
    // Read both pipes while the program runs, so that a large answer cannot block it.
    let output = Locked(Data())
    let errors = Locked(Data())
    let group = DispatchGroup()
    for (pipe, sink) in [(stdout, output), (stderr, errors)] {
        group.enter()
        Thread.detachNewThread {
            let data = pipe.fileHandleForReading.readDataToEndOfFile()
            sink.withLock { $0 = data }
            group.leave()
        }
    }
    feed(stdin, input)
    // The bound is counted in polls of 10 ms, not read from a clock: other suites in this
    // process move its clocks (virtual time advanced by hours, monotonic offsets), and a
    // clock read here once jumped past the bound at once and killed a healthy program.
    let polls = bound.components.seconds * 100 + bound.components.attoseconds / 10_000_000_000_000_000
    var polled: Int64 = 0
    // Both: once Foundation has reaped the process its pid may be another's (pid_max can be
    // 32768), and until it has, an ended process is a zombie, which is not running. But a
    // process that execs from a thread other than its first (chaos-tool, whose main is
    // async, execs the launcher) shows as a zombie for a while too (up to 43 ms seen under
    // load): it has ended once /proc has said so for 200 ms on end, and only a process that
    // outlived the bound is killed. Killing it as soon as a look after a "zombie" found it
    // running took a healthy `chaos run` with SIGKILL now and then.
    var endedFor = 0
    while process.isRunning && polled < polls && endedFor < 20 {
        endedFor = processIsRunning(pid) ? 0 : endedFor + 1
        usleep(10_000)
        polled += 1
    }
    if polled >= polls && process.isRunning && processIsRunning(pid) { kill(pid, SIGKILL) }
    let seconds = Double(leftoverGrace.components.seconds) + Double(leftoverGrace.components.attoseconds) / 1e18
    if group.wait(timeout: .now() + seconds) == .timedOut {
        killHolders(of: [stdout, stderr])
        group.wait()
    }
    process.waitUntilExit()
    return ToolOutput(
        status: process.terminationStatus, stdout: output.withLock { $0 },
        stderr: String(decoding: errors.withLock { $0 }, as: UTF8.self)
    )
}

/// Writes `input` to `pipe` and closes it. The program may have ended (a power loss at its
/// first change) before it read a byte: the write then fails with EPIPE, and the SIGPIPE
/// that comes with it would end this whole test process. It is blocked on this thread
/// while writing, and taken if it came; the write's failure is the program's business.
private func feed(_ pipe: Pipe, _ input: Data) {
    var pipeSignal = sigset_t()
    var previous = sigset_t()
    sigemptyset(&pipeSignal)
    sigaddset(&pipeSignal, SIGPIPE)
    pthread_sigmask(SIG_BLOCK, &pipeSignal, &previous)
    defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
    if !input.isEmpty { try? pipe.fileHandleForWriting.write(contentsOf: input) }
    try? pipe.fileHandleForWriting.close()
    var now = timespec(tv_sec: 0, tv_nsec: 0)
    while sigtimedwait(&pipeSignal, nil, &now) == SIGPIPE {}
}

/// Whether process `pid` exists and has not ended (a zombie has ended).
public func processIsRunning(_ pid: Int32) -> Bool {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
        let end = stat.lastIndex(of: ")")
    else { return false }
    let state = stat[stat.index(after: end)...].dropFirst().first
    return state != "Z" && state != "X"
}

/// The parent of process `pid` (field 4 of its /proc stat), or nil.
private func parent(of pid: Int32) -> Int32? {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
        let end = stat.lastIndex(of: ")")
    else { return nil }
    let fields = stat[stat.index(after: end)...].split(separator: " ")
    return fields.count > 1 ? Int32(fields[1]) : nil
}

/// Kills (SIGKILL) every orphaned process that holds one of `pipes`, found by the pipes'
/// inodes in /proc/*/fd; returns their pids.
@discardableResult public func killHolders(of pipes: [Pipe]) -> [Int32] {
    var inodes: Set<String> = []
    for pipe in pipes {
        var info = stat()
        if fstat(pipe.fileHandleForReading.fileDescriptor, &info) == 0 { inodes.insert("pipe:[\(info.st_ino)]") }
    }
    let processes = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
    var killed: [Int32] = []
    for entry in processes {
        // Only orphans: what a program leaves running outlives its parent and is adopted by
        // init. Any process with a living parent may be one in the moment between fork and
        // exec, holding a copy of every descriptor its parent has, ours included (a loaded
        // run, then ThreadSanitizer's, saw other tests' programs killed that way).
        guard let pid = Int32(entry), pid != getpid(), parent(of: pid) == 1 else { continue }
        let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []
        let holds = descriptors.contains { fd in
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(fd)")).map(inodes.contains)
                ?? false
        }
        if holds && kill(pid, SIGKILL) == 0 { killed.append(pid) }
    }
    return killed
}

/// The build folder holding this test bundle and the package's executables (`chaos`,
/// the examples, the probes): the first candidate that has `product`.
public func buildDirectory(holding product: String) -> URL {
    var url = Bundle.main.bundleURL
    if url.pathExtension == "xctest" { url = url.deletingLastPathComponent() }
    let candidates = [url, URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()]
    return candidates.first { FileManager.default.fileExists(atPath: $0.appendingPathComponent(product).path) } ?? url
}

/// Whether `python3` can import every one of `modules` (gates the tests that compare with them).
public func pythonCanImport(_ modules: String...) -> Bool {
    runPython(["-c", modules.map { "import \($0)" }.joined(separator: "; ")])?.status == 0
}

/// A log handler that keeps every message, for tests that check what was logged.
public struct RecordingLogHandler: LogHandler {
    /// One logged message.
    public struct Entry: Sendable {
        public let level: Logger.Level
        public let message: String
        public let metadata: Logger.Metadata
    }

    /// The messages, oldest first.
    public final class Store: Sendable {
        let entries = Locked<[Entry]>([])
        public init() {}
        public var all: [Entry] { entries.withLock { $0 } }
    }

    public let store: Store
    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level = .trace

    /// A logger whose messages go to a new store.
    public static func logger(label: String = "test") -> (Logger, Store) {
        let store = Store()
        return (Logger(label: label) { _ in RecordingLogHandler(store: store) }, store)
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        store.entries.withLock {
            $0.append(
                Entry(
                    level: event.level, message: "\(event.message)",
                    metadata: metadata.merging(event.metadata ?? [:]) { $1 }))
        }
    }
}

extension Process {
    /// Starts the process as a shell would: with no signal blocked. A test runs on a
    /// dispatch worker thread, which blocks nearly every signal, and a child inherits its
    /// starter's mask: a program left running by a failed test then kept SIGTERM pending
    /// for ever, and signals a test sends on purpose never reached their handlers.
    public func runWithSignalsUnblocked() throws {
        var none = sigset_t()
        var previous = sigset_t()
        sigemptyset(&none)
        // Only this thread, and only while it starts the child; a signal meant for the
        // process may land here meanwhile, as on any thread that does not block it.
        pthread_sigmask(SIG_SETMASK, &none, &previous)
        defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
        try run()
    }
}

/// Whether the file at `path` is a statically linked ELF program: one with no program
/// interpreter (`PT_INTERP`), which the preload library can never reach. Tests that need
/// such a program check what the file is, not where it is: Debian's `busybox` package
/// installs a dynamic /bin/busybox, `busybox-static` a static one.
public func isStaticExecutable(_ path: String) -> Bool {
    guard let file = FileHandle(forReadingAtPath: path) else { return false }
    defer { try? file.close() }
    guard let header = try? file.read(upToCount: 64), header.count == 64,
        header.starts(with: [0x7f, 0x45, 0x4c, 0x46]), header[4] == 2, header[5] == 1  // ELF64, little-endian
    else { return false }
    func integer(_ bytes: Data, _ offset: Int, _ size: Int) -> UInt64 {
        (0..<size).reduce(UInt64(0)) { $0 | UInt64(bytes[bytes.startIndex + offset + $1]) << (8 * $1) }
    }
    let tableOffset = integer(header, 32, 8)
    let entrySize = Int(integer(header, 54, 2))
    let count = Int(integer(header, 56, 2))
    guard entrySize >= 4, count > 0, (try? file.seek(toOffset: tableOffset)) != nil,
        let table = try? file.read(upToCount: entrySize * count), table.count == entrySize * count
    else { return false }
    let interpreter: UInt64 = 3  // PT_INTERP
    return !(0..<count).contains { integer(table, $0 * entrySize, 4) == interpreter }
}

/// /bin/busybox when it is a static program (Debian's busybox-static), else nil.
public let staticBusybox: String? = isStaticExecutable("/bin/busybox") ? "/bin/busybox" : nil
