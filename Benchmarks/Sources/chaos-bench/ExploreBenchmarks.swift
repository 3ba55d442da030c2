import ChaosKit
import Foundation

#if canImport(Glibc)
import Glibc
#endif

// The `explore` group: placements tried per second in-process, and what `chaos explore`
// adds to each run of a program over a plain `chaos run` of it.

/// A point a body calls ten times, and the entry explored on it (which never breaks the
/// body, so no placement is run twice).
private let explorePoint = InjectionPoint<Int, Int, Never>("bench.explore.fetch") { $0 }

func exploreGroup() throws -> Group? {
    let entry = ProfileEntry(explorePoint, .constant(-1))
    var metrics = [
        Metric(name: "explore_inprocess_placements_per_s", unit: .perSecond, iterations: 2_000) { n in
            let explorations = max(1, n / 10)
            let start = now()
            for _ in 0..<explorations {
                let result = try? Chaos.explore(entry, seed: 1) {
                    for page in 0..<10 { blackHole(explorePoint(page)) }
                }
                guard result?.placements == 10, result?.failures.isEmpty == true else {
                    FileHandle.standardError.write(Data("chaos-bench: explore: unexpected exploration\n".utf8))
                    exit(1)
                }
            }
            // Scaled to `n` placements (warm-up asks for fewer than one exploration).
            return (now() - start) * UInt64(n) / UInt64(explorations * 10)
        }
    ]
    guard let chaos = releasedChaosLauncher(), let cc = programOnPath("cc") else {
        FileHandle.standardError.write(
            Data(
                "chaos-bench: explore: the chaos explore figures need a release build of chaos (swift build -c release) and cc\n"
                    .utf8))
        return Group(name: "explore", metrics: metrics)
    }
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("chaos-bench-explore-\(getpid())").path
    try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    // A program that writes `argv[1]` bytes, one write each, to `argv[2]` (default: a file of
    // its working directory, a placement's scratch directory).
    try Data(
        """
        #include <fcntl.h>
        #include <stdlib.h>
        #include <unistd.h>
        int main(int argc, char **argv) {
            int fd = open(argc > 2 ? argv[2] : "out", O_WRONLY | O_CREAT | O_TRUNC, 0644);
            for (int i = 0, n = atoi(argv[1]); i < n; i++) if (write(fd, "x", 1) < 0) return 0;
            return 0;
        }
        """.utf8
    ).write(to: URL(fileURLWithPath: folder + "/writer.c"))
    let writer = folder + "/writer"
    guard wholeProcessNanoseconds([cc, "-O1", "-o", writer, folder + "/writer.c"]) != nil else { return nil }
    let space = folder + "/space.json"
    try Data(
        #"{"entries": [{"point": "system.files", "provider": {"item": "enospc", "parameters": {"path": ".", "operations": ["write"]}}}]}"#
            .utf8
    ).write(to: URL(fileURLWithPath: space))
    // The same entry under chaos run, placed past the program's last call: every write is
    // looked up and counted as in a placement, and none fails.
    let placed = folder + "/placed-out-of-reach.json"
    try Data(
        #"{"entries": [{"point": "system.files", "provider": {"item": "enospc", "parameters": {"path": "\#(folder)", "operations": ["write"]}, "at": 100000}}]}"#
            .utf8
    ).write(to: URL(fileURLWithPath: placed))
    let out = folder + "/replays"
    /// `chaos explore --jobs J` over `writes` placements (and the baseline): whole process.
    func explore(_ jobs: Int, writes: Int) -> [String] {
        [
            chaos, "explore", "--jobs", String(jobs), "--seed", "1", "--out", out, "--profile", space, "--", writer,
            String(writes),
        ]
    }
    /// One placement of `chaos explore`: an exploration of 60 placements less one of 20,
    /// over the 40 placements between them, so the tool's start and the baseline (once per
    /// exploration, not per placement) cancel out.
    let placement = Metric(name: "explore_run_ms", unit: .milliseconds, iterations: 40) { n in
        let invocations = max(1, n / 40)
        var total: UInt64 = 0
        for _ in 0..<invocations {
            guard let long = wholeProcessNanoseconds(explore(1, writes: 60)),
                let short = wholeProcessNanoseconds(explore(1, writes: 20))
            else {
                FileHandle.standardError.write(Data("chaos-bench: explore_run_ms: chaos explore failed\n".utf8))
                exit(1)
            }
            total += long > short ? long - short : 0
        }
        return total * UInt64(n) / UInt64(invocations * 40)
    }
    metrics += [
        placement,
        wholeProcess(
            "chaos_run_ms", [chaos, "run", "--quiet", "--profile", placed, "--", writer, "40", folder + "/out"]),
        wholeProcess("explore_jobs1_ms", explore(1, writes: 120)),
        wholeProcess("explore_jobs2_ms", explore(2, writes: 120)),
    ]
    return Group(name: "explore", metrics: metrics, minimumRepetitions: 15)
}
