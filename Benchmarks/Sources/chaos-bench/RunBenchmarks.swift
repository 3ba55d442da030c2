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
    let write = [dd, "if=/dev/zero", "of=\(folder)/out", "bs=64", "count=200000", "status=none"]

    func wholeProcess(_ name: String, _ arguments: [String]) -> Metric {
        Metric(name: name, unit: .milliseconds, iterations: 1) { n in
            var total: UInt64 = 0
            for _ in 0..<n {
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
    var metrics: [Metric] = []
    if let faketime = programOnPath("faketime") {
        metrics.append(wholeProcess("faketime_date_ms", [faketime, "-f", "-30y", date]))
    }
    metrics += [
        wholeProcess("chaos_run_date_ms", [chaos, "run", "--profile", clockProfile, "--", date]),
        wholeProcess("plain_write_ms", write),
        wholeProcess("chaos_run_write_ms", [chaos, "run", "--profile", filesProfile, "--"] + write),
    ]
    // Whole-process figures are medians of at least 15 alternating runs (the contract).
    return Group(name: "run", metrics: metrics, minimumRepetitions: 15)
}
