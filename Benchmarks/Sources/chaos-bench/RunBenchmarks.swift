import Foundation

#if canImport(Glibc)
import Glibc
#endif

// The `run` group: whole programs under `chaos run`, against the same programs plain or
// under Debian's faketime, started alternately so machine noise hits both alike.

/// The `chaos` launcher of a release build of the main package, with `libChaosPreload.so`
/// beside it: `$CHAOS_BENCH_CHAOS`, else `.build/release/chaos` under the current
/// directory or its parent (the repository, when run from there or from `Benchmarks/`).
func releasedChaosLauncher() -> String? {
    var candidates: [String] = []
    if let given = ProcessInfo.processInfo.environment["CHAOS_BENCH_CHAOS"] { candidates.append(given) }
    let here = FileManager.default.currentDirectoryPath
    candidates += [here + "/.build/release/chaos", here + "/../.build/release/chaos"]
    return candidates.first { path in
        let folder = (path as NSString).deletingLastPathComponent
        return FileManager.default.isExecutableFile(atPath: path)
            && FileManager.default.fileExists(atPath: folder + "/libChaosPreload.so")
            && FileManager.default.isExecutableFile(atPath: folder + "/chaos-tool")
    }
}

/// The first of `names` found on `PATH`.
func programOnPath(_ name: String) -> String? {
    let folders = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
    return folders.map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
}

/// Starts `arguments` with output discarded and waits; the elapsed wall time in ns, or nil
/// when it could not start or failed (the metric is then omitted, never faked).
func wholeProcessNanoseconds(_ arguments: [String]) -> UInt64? {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
    let argv = arguments.map { strdup($0) } + [nil]
    defer { for pointer in argv { free(pointer) } }
    var pid: pid_t = 0
    let start = now()
    guard posix_spawn(&pid, arguments[0], &actions, nil, argv, environ) == 0 else { return nil }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    let elapsed = now() - start
    // Exited normally with status 0 (WIFEXITED && WEXITSTATUS == 0).
    return status == 0 ? elapsed : nil
}

/// A whole-process figure: `arguments` run to the end, each repetition, after `prepare`
/// (untimed); a run that fails ends the benchmark (its figure would measure the wrong thing).
func wholeProcess(_ name: String, _ arguments: [String], prepare: @escaping () -> Void = {}) -> Metric {
    Metric(name: name, unit: .milliseconds, iterations: 1) { n in
        var total: UInt64 = 0
        for _ in 0..<n {
            prepare()
            guard let elapsed = wholeProcessNanoseconds(arguments) else {
                // A figure for a run that failed would measure the wrong thing.
                FileHandle.standardError.write(
                    Data("chaos-bench: \(name): \(arguments.joined(separator: " ")) failed\n".utf8))
                exit(1)
            }
            total += elapsed
        }
        return total
    }
}

func runGroup() throws -> Group? {
    guard let chaos = releasedChaosLauncher() else {
        FileHandle.standardError.write(
            Data(
                "chaos-bench: run group skipped: no release build of chaos with libChaosPreload.so (swift build -c release in the repository, or set CHAOS_BENCH_CHAOS)\n"
                    .utf8))
        return nil
    }
    guard let date = programOnPath("date"), let dd = programOnPath("dd") else { return nil }
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("chaos-bench-run-\(getpid())").path
    try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    let clockProfile = folder + "/thirty-years-ago.json"
    try Data(
        #"{"entries": [{"point": "system.clock", "provider": {"item": "offset", "parameters": {"by": "-30y"}}}]}"#.utf8
    )
    .write(to: URL(fileURLWithPath: clockProfile))
    // A fault whose path matches nothing the command touches: every write is intercepted,
    // looked up and passed on, which is the cost being measured.
    let filesProfile = folder + "/elsewhere-disk-full.json"
    try Data(
        #"{"entries": [{"point": "system.files", "provider": {"item": "enospc", "parameters": {"path": "/nonexistent/chaos-bench", "operations": ["write"]}}}]}"#
            .utf8
    )
    .write(to: URL(fileURLWithPath: filesProfile))
    // 200,000 reads and writes of 64 bytes (~0.4 s): a write-heavy command whose cost is
    // its system calls, long enough that what is measured is the cost per call, not the
    // few milliseconds `chaos run` adds at start (chaos_run_date_ms measures those).
    // Each metric writes a file of its own: dd truncates the file it writes, and freeing
    // the 12.8 MB another metric just wrote there cost the one after it several ms.
    func write(_ file: String, count: Int = 200_000) -> [String] {
        [dd, "if=/dev/zero", "of=\(folder)/\(file)", "bs=64", "count=\(count)", "status=none"]
    }

    var metrics: [Metric] = []
    if let faketime = programOnPath("faketime") {
        metrics.append(wholeProcess("faketime_date_ms", [faketime, "-f", "-30y", date]))
    }
    metrics += [
        wholeProcess("chaos_run_date_ms", [chaos, "run", "--profile", clockProfile, "--", date]),
        wholeProcess("plain_write_ms", write("plain")),
        wholeProcess("chaos_run_write_ms", [chaos, "run", "--profile", filesProfile, "--"] + write("preload")),
    ]
    // Every write a trap, against strace's fault injection on the same writes. strace is
    // given `-e trace=write` as well, its fastest form: without it, it traces every call.
    // Both deliveries pay a round trip to another process per write, so a quarter of the
    // command (50,000 writes) is enough to measure them.
    if let strace = programOnPath("strace") {
        metrics.append(
            wholeProcess(
                "strace_inject_write_ms",
                [
                    strace, "-f", "-o", "/dev/null", "--seccomp-bpf", "-e", "trace=write", "-e",
                    "inject=write:error=ENOSPC",
                    "-P", "/nonexistent/chaos-bench",
                ] + write("strace", count: 50_000)))
    }
    metrics.append(
        wholeProcess(
            "seccomp_write_ms",
            [chaos, "run", "--quiet", "--delivery", "seccomp", "--profile", filesProfile, "--"]
                + write("seccomp", count: 50_000)))
    metrics += try powerLossMetrics(chaos: chaos, dd: dd, folder: folder)
    if let goClock = try goClockProgram(folder) {
        metrics += try goTimeNowMetrics(chaos: chaos, program: goClock, folder: folder)
    }
    if let python = programOnPath("python3") {
        metrics.append(try bandwidthTransfer(chaos: chaos, python: python, folder: folder))
    }
    // Whole-process figures are medians of at least 15 alternating runs (the contract).
    return Group(name: "run", metrics: metrics, minimumRepetitions: 15)
}

/// The power-loss figures: `dd` of 50,000 blocks of 64 bytes (as `seccomp_write_ms`) under a
/// `power-loss` entry on its output directory placed past its last change (`at` a call it
/// never reaches: power is never lost, the run exits 0, and the log is kept throughout),
/// against the same `dd` under a `power-loss` entry on a path it never touches. Both runs
/// trap the same calls through the same filter, so the ratio is the log's cost alone
/// (main.swift derives `power_loss_append_ratio` and `power_loss_overwrite_ratio`).
func powerLossMetrics(chaos: String, dd: String, folder: String) throws -> [Metric] {
    let output = folder + "/power-loss"
    try FileManager.default.createDirectory(atPath: output, withIntermediateDirectories: true)
    func profile(_ name: String, path: String) throws -> String {
        let file = folder + "/" + name
        try Data(
            #"{"entries": [{"point": "system.files", "provider": {"item": "power-loss", "parameters": {"path": "\#(path)"}, "at": [1000000]}}]}"#
                .utf8
        ).write(to: URL(fileURLWithPath: file))
        return file
    }
    let here = try profile("power-loss-here.json", path: output)
    let elsewhere = try profile("power-loss-elsewhere.json", path: "/nonexistent/chaos-bench")
    let blocks = 50_000
    func run(_ profile: String, _ ddArguments: [String]) -> [String] {
        [chaos, "run", "--quiet", "--delivery", "seccomp", "--profile", profile, "--", dd, "if=/dev/zero"]
            + ddArguments + ["bs=64", "count=\(blocks)", "status=none"]
    }
    // Appends: dd creates its file afresh each run (removed untimed before), so every write
    // lands past the end. The log keeps the file's old size once; later appends cost no read
    // of the file, only naming the write (its descriptor's position, the file's identity).
    let appended = [output + "/append-here", output + "/append-elsewhere"]
    func append(_ file: String) -> () -> Void { { unlink(file) } }
    // Overwrites: dd writes over a file of the same size in place (conv=notrunc), so every
    // write replaces bytes that exist. The log reads and keeps the 64 old bytes of each write
    // (a pread and an allocation) until a sync makes it durable, which dd never asks for:
    // 50,000 records, 3.2 MB of old bytes, held to the end. Information, no budget.
    let overwritten = [output + "/overwrite-here", output + "/overwrite-elsewhere"]
    for file in overwritten {
        try Data(count: 64 * blocks).write(to: URL(fileURLWithPath: file))
    }
    return [
        wholeProcess(
            "power_loss_append_ms", run(here, ["of=\(appended[0])"]), prepare: append(appended[0])),
        wholeProcess(
            "power_loss_append_elsewhere_ms", run(elsewhere, ["of=\(appended[1])"]), prepare: append(appended[1])),
        wholeProcess("power_loss_overwrite_ms", run(here, ["of=\(overwritten[0])", "conv=notrunc"])),
        wholeProcess("power_loss_overwrite_elsewhere_ms", run(elsewhere, ["of=\(overwritten[1])", "conv=notrunc"])),
    ]
}

/// A static Go program that reads `time.Now()` N times (its argument) and prints how long
/// that took in nanoseconds by its monotonic clock, then by the process's CPU clock (which
/// no clock fault touches: virtual time stops the monotonic one), then the year it read.
/// Built with Debian's golang-go; nil (the metrics are left out) without it.
func goClockProgram(_ folder: String) throws -> String? {
    guard let go = programOnPath("go") else { return nil }
    let module = folder + "/go-clock"
    try FileManager.default.createDirectory(atPath: module, withIntermediateDirectories: true)
    try Data("module goclock\n\ngo 1.19\n".utf8).write(to: URL(fileURLWithPath: module + "/go.mod"))
    try Data(
        """
        package main

        import (
            "fmt"
            "os"
            "strconv"
            "syscall"
            "time"
            "unsafe"
        )

        // The process's CPU time, by the system call (CLOCK_PROCESS_CPUTIME_ID).
        func cpu() int64 {
            var t syscall.Timespec
            syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 2, uintptr(unsafe.Pointer(&t)), 0)
            return t.Nano()
        }

        func main() {
            n, _ := strconv.Atoi(os.Args[1])
            startCPU := cpu()
            start := time.Now()
            var last time.Time
            for i := 0; i < n; i++ {
                last = time.Now()
            }
            elapsed := time.Since(start).Nanoseconds()
            fmt.Println(elapsed, cpu()-startCPU, last.Year())
        }
        """.utf8
    ).write(to: URL(fileURLWithPath: module + "/main.go"))
    let output = folder + "/go-clock-program"
    let build = Process()
    build.executableURL = URL(fileURLWithPath: go)
    build.arguments = ["build", "-o", output, "."]
    build.currentDirectoryURL = URL(fileURLWithPath: module)
    build.environment = ProcessInfo.processInfo.environment.merging([
        "CGO_ENABLED": "0", "GOCACHE": folder + "/go-cache", "GOFLAGS": "-mod=mod",
    ]) { $1 }
    try build.run()
    build.waitUntilExit()
    return build.terminationStatus == 0 ? output : nil
}

/// The `time.Now()` figures of a static Go program, all measured in one run, interleaved:
/// plain; under `chaos run` (the seccomp delivery) with an offset, a frozen clock and
/// virtual time, read inside the program through its patched vDSO; and with the offset
/// again through the fallback (CHAOS_VDSO=hide: the vDSO hidden, every reading a trapped
/// system call). Per call. main.swift derives the ratios to plain.
func goTimeNowMetrics(chaos: String, program: String, folder: String) throws -> [Metric] {
    func profile(_ name: String, _ provider: String) throws -> String {
        let path = folder + "/go-\(name).json"
        try Data(#"{"entries": [{"point": "system.clock", "provider": \#(provider)}]}"#.utf8)
            .write(to: URL(fileURLWithPath: path))
        return path
    }
    let thisYear = Calendar(identifier: .gregorian).component(.year, from: Date())
    let offset = try profile("offset", #"{"item": "offset", "parameters": {"by": "-30y"}}"#)
    let frozen = try profile("frozen", #"{"item": "frozen", "parameters": {"date": "2001-02-03T04:05:06Z"}}"#)
    let virtual = try profile("virtual", #"{"item": "virtual", "parameters": {"start": "2030-01-01T00:00:00Z"}}"#)
    /// One metric: the program under `prefix` (nothing: plain), its monotonic or CPU figure,
    /// checked to have read `year` (a figure for readings chaos missed would measure the
    /// wrong thing).
    func metric(
        _ name: String, _ prefix: [String], cpu: Bool = false, hide: Bool = false, iterations: Int = 1_000_000,
        year: @escaping (Int) -> Bool
    ) -> Metric {
        Metric(name: name, unit: .nanoseconds, iterations: iterations) { n in
            let process = Process()
            process.executableURL = URL(fileURLWithPath: prefix.first ?? program)
            process.arguments = Array(prefix.dropFirst()) + (prefix.isEmpty ? [] : [program]) + [String(n)]
            process.environment = ProcessInfo.processInfo.environment.merging(["CHAOS_VDSO": hide ? "hide" : ""]) {
                $1
            }
            let output = Pipe()
            process.standardOutput = output
            process.standardError = FileHandle.nullDevice  // the fallback's warning, said on every run
            guard (try? process.run()) != nil else { exit(1) }
            let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            let fields = text.split(separator: " ").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
            guard process.terminationStatus == 0, fields.count == 3, let wall = UInt64(fields[0]),
                let processor = UInt64(fields[1]), let read = Int(fields[2]), year(read)
            else {
                FileHandle.standardError.write(Data("chaos-bench: \(name): unexpected output '\(text)'\n".utf8))
                exit(1)
            }
            return cpu ? processor : wall
        }
    }
    func run(_ profile: String) -> [String] { [chaos, "run", "--quiet", "--profile", profile, "--"] }
    return [
        metric("go_time_now_plain_ns", [], year: { $0 == thisYear }),
        metric("go_time_now_offset_ns", run(offset), year: { $0 < thisYear - 20 }),
        metric("go_time_now_frozen_ns", run(frozen), year: { $0 == 2001 }),
        metric("go_time_now_plain_cpu_ns", [], cpu: true, year: { $0 == thisYear }),
        metric("go_time_now_virtual_ns", run(virtual), cpu: true, year: { $0 == 2030 }),
        metric("go_time_now_seccomp_ns", run(offset), hide: true, iterations: 20_000, year: { $0 < thisYear - 20 }),
    ]
}

/// A 2 MB transfer on 127.0.0.1 under a `bandwidth` of 1 MB/s on the sender, timed by the
/// program itself from its first send to the receiver's end of stream: 2,000 ms is exact
/// (main.swift derives `bandwidth_accuracy` from it).
func bandwidthTransfer(chaos: String, python: String, folder: String) throws -> Metric {
    let profile = folder + "/bandwidth.json"
    try Data(
        #"{"entries": [{"point": "system.send", "provider": {"item": "bandwidth", "parameters": {"rate": 1000000, "roles": ["client"]}}}]}"#
            .utf8
    )
    .write(to: URL(fileURLWithPath: profile))
    let script = """
        import socket, threading, time
        listener = socket.socket(); listener.bind(("127.0.0.1", 0)); listener.listen(1)
        received = []
        def receive():
            peer, _ = listener.accept(); total = 0
            while True:
                data = peer.recv(1 << 20)
                if not data: break
                total += len(data)
            received.append((total, time.monotonic_ns()))
        receiver = threading.Thread(target=receive); receiver.start()
        sender = socket.create_connection(listener.getsockname())
        started = time.monotonic_ns()
        sender.sendall(b"x" * 2000000); sender.close(); receiver.join()
        print(received[0][0], received[0][1] - started)
        """
    return Metric(name: "bandwidth_2mb_at_1mbps_ms", unit: .milliseconds, iterations: 1) { _ in
        let process = Process()
        process.executableURL = URL(fileURLWithPath: chaos)
        process.arguments = ["run", "--quiet", "--profile", profile, "--", python, "-c", script]
        let output = Pipe()
        process.standardOutput = output
        guard (try? process.run()) != nil else { exit(1) }
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        let fields = text.split(whereSeparator: \.isWhitespace)
        // Every byte must arrive: a transfer cut short would time the wrong thing.
        guard process.terminationStatus == 0, fields.count == 2, fields[0] == "2000000", let elapsed = UInt64(fields[1])
        else {
            FileHandle.standardError.write(
                Data("chaos-bench: bandwidth_2mb_at_1mbps_ms: unexpected output '\(text)'\n".utf8))
            exit(1)
        }
        return elapsed
    }
}
