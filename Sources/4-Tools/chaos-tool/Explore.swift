import ArgumentParser
import ChaosHooks
@_spi(Hooks) import ChaosKit
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// `chaos explore --profile SPACE.json [options] -- PROGRAM ARGS…`: runs the program once
/// without faults to count the calls each entry of the space targets, then once per
/// placement of each entry at each of those calls, and reports the placements that break
/// it, each with a profile that replays it under `chaos run`.
struct Explore: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Find the faults that break a program: try each entry of a space at each call it targets.",
        discussion: """
            Each enabled entry of the space (a profile of system entries) is a candidate fault. \
            A baseline run without faults must pass; it counts the calls each entry targets. Then \
            each entry acts at its K-th targeted call only, for every K (--depth 2 adds pairs), in \
            runs of their own: a fresh scratch directory each (CHAOS_EXPLORE_DIR, the working \
            directory of --setup, the program and --check), --jobs at a time.

            A placement fails when the program exits non-zero, dies by a signal, runs past \
            --timeout (default: 10 times the baseline, at least 10 s) or --check fails afterwards. \
            A failure is run again once: if it then passes, it is reported as flaky. Each failure \
            gets a replay profile under --out, run by chaos run exactly as explore ran it.

            --every POINT adds the point's typical faults to the space (system.files: enospc and \
            eio; system.connect: refused and reset; system.send and system.recv: reset; \
            system.accept: aborted; system.getaddrinfo: dns-failure), at every call the program \
            makes: the space can then be left out.

            Exit status: 0 when no placement fails, 1 when some do, 125 when explore itself \
            cannot go on (a bad space, a baseline that fails, a --setup that fails).

            Example: chaos explore --profile space.json --check 'sqlite3 db "PRAGMA integrity_check"' -- ./writer db
            """
    )

    @Option(help: "The space: a JSON profile whose enabled system entries are the faults to try.")
    var profile: String?

    @Option(
        help: ArgumentHelp(
            "Also try the typical faults of this system point (repeatable), e.g. system.files: ENOSPC and EIO.",
            valueName: "point"))
    var every: [String] = []

    @Option(help: "A shell command run before each run, in its scratch directory (e.g. to copy fixtures in).")
    var setup: String?

    @Option(help: "A shell command run after each run that passed, in its scratch directory; non-zero fails the run.")
    var check: String?

    @Option(help: "Runs at a time (default: the number of cores).")
    var jobs: Int?

    @Option(help: "At most this many placements (spread over the space, not the first ones).")
    var budget: Int?

    @Option(help: "1: each fault alone; 2: pairs of faults too, after the singles.")
    var depth: Int = 1

    @Option(help: "Give up on a run after this long, e.g. 30s (default: 10 times the baseline, at least 10 s).")
    var timeout: String?

    @Option(help: "The seed of every run and of the sampling (default: the space's, else a fresh one, printed).")
    var seed: UInt64?

    @Option(help: "Also write the results as JSON to this file.")
    var report: String?

    @Option(help: "Where to write a replay profile per failure.")
    var out: String = "chaos-explore"

    @Argument(parsing: .captureForPassthrough, help: "The program and its arguments (after --).")
    var command: [String]

    /// Pairs tried at depth 2 without a --budget.
    static let defaultPairBudget = 1_000

    func validate() throws {
        if profile == nil, every.isEmpty {
            throw ValidationError(
                "give the faults to try: --profile SPACE.json, --every POINT (e.g. system.files), or both")
        }
        if let jobs, jobs < 1 { throw ValidationError("--jobs \(jobs): give 1 or more") }
        if let seed, seed > 1 << 53 {
            throw ValidationError("--seed \(seed): give a seed up to 2^53, which a replay profile can carry exactly")
        }
        if let budget, budget < 1 { throw ValidationError("--budget \(budget): give 1 or more") }
        guard depth == 1 || depth == 2 else { throw ValidationError("--depth \(depth): give 1 or 2") }
        if let timeout {
            guard let parsed = DurationText.parse(timeout), parsed > .zero else {
                throw ValidationError("--timeout \(timeout): give a duration such as 30s or 2m")
            }
        }
    }

    func run() throws {
        let program = command.first == "--" ? Array(command.dropFirst()) : command
        guard !program.isEmpty else {
            throw ValidationError(
                "name the program to explore after --, e.g. chaos explore --profile space.json -- ./app")
        }
        var template = Array("/tmp/chaos-explore-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else {
            printError("chaos explore: cannot make a working directory in /tmp: \(String(cString: strerror(errno)))")
            throw ExitCode(125)
        }
        let root = String(cString: made)
        defer { try? FileManager.default.removeItem(atPath: root) }
        let space: ExploreSpace
        do {
            let scratchTemplate = root + "/scratch"
            try? FileManager.default.createDirectory(atPath: scratchTemplate, withIntermediateDirectories: true)
            var given =
                try profile.map { (path: String) throws(ChaosError) in try ChaosProfile.load(contentsOfFile: path) }
                ?? ChaosProfile(entries: [])
            given.entries += try Self.typicalEntries(every)
            space = try ExploreSpace(given, scratchTemplate: scratchTemplate)
            // The launcher wants a profile named; it runs the plan it is given.
            try given.jsonText().write(toFile: root + "/space.json", atomically: false, encoding: .utf8)
        } catch {
            printError("chaos explore: \(error)")
            throw ExitCode(125)
        }
        if space.losesPower, check == nil {
            printError(
                "chaos explore: a power-loss entry kills the program at every crash point, so only a check can tell a crash point that loses data; give --check with the program's recovery and an integrity check, e.g. --check 'sqlite3 db \"PRAGMA integrity_check\" | grep -qx ok'"
            )
            throw ExitCode(125)
        }
        let seed = self.seed ?? space.seed ?? UInt64.random(in: 0..<(1 << 53))
        if self.seed == nil, space.seed == nil {
            printError("chaos explore: seed \(seed) (replay the exploration with --seed \(seed))")
        }
        let runner = ExploreRunner(
            launcher: try Launcher.path(for: "chaos explore"), profilePath: root + "/space.json",
            program: [Self.resolvedProgram(program[0])] + program.dropFirst(), setup: setup, check: check, seed: seed,
            root: root)
        let exploration = Exploration(
            space: space, runner: runner, jobs: jobs ?? ProcessInfo.processInfo.activeProcessorCount,
            timeout: timeout.flatMap(DurationText.parse).map(Self.seconds), seed: seed)
        let results: Exploration.Results
        do {
            results = try exploration.explore(budget: budget, depth: depth)
        } catch {
            printError("chaos explore: \(error)")
            throw ExitCode(125)
        }
        let output = ExploreOutput(
            space: space, program: program, seed: seed, setup: setup, outDirectory: out, results: results)
        do {
            try output.writeReplays()
            if let report { try output.writeReport(to: report) }
        } catch {
            printError("chaos explore: \(error)")
            throw ExitCode(125)
        }
        print(output.table(), terminator: "")
        if !results.failures.isEmpty { throw ExitCode(1) }
    }

    /// An entry per typical fault of each point in `points` (`--every`).
    static func typicalEntries(_ points: [String]) throws(ChaosError) -> [ChaosProfile.Entry] {
        SystemPoints.register()
        var entries: [ChaosProfile.Entry] = []
        let known = Chaos.catalogue.filter { SystemPointKind(pointName: $0.name) != nil }
        for name in points {
            guard let point = known.first(where: { $0.name == name }) else {
                throw ChaosError(
                    .unknownPoint, subject: "--every \(name.prefix(80))",
                    "no system point is named so\(Suggestions.hint(for: name, in: known.map(\.name))); explore takes \(known.map(\.name).joined(separator: ", "))"
                )
            }
            guard !point.typicalFaults.isEmpty else {
                throw ChaosError(
                    .invalidProvider, subject: "--every \(name)",
                    "\(name) has no typical faults to place; name the faults to try in --profile")
            }
            entries += point.typicalFaults.map {
                ChaosProfile.Entry(pointName: name, provider: .catalogue($0), location: "--every \(name)")
            }
        }
        return entries
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) * 1e-18
    }

    static func absolute(_ path: String) -> String {
        ((path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path) as NSString)
            .standardizingPath
    }

    /// A program named by a relative path (`./app`) from where explore was started: runs
    /// happen in scratch directories. A bare name is looked up on PATH, as chaos run does.
    static func resolvedProgram(_ name: String) -> String {
        name.contains("/") ? absolute(name) : name
    }
}

/// The runs of one exploration: the baseline, the placements (in parallel), and a second
/// run of each failure.
struct Exploration: Sendable {
    let space: ExploreSpace
    let runner: ExploreRunner
    let jobs: Int
    /// --timeout in seconds (nil: from the baseline).
    let timeout: Double?
    let seed: UInt64

    /// A placement that failed.
    struct Failure: Sendable {
        let placement: Placement
        let result: ExploreRunResult
        /// The second run passed.
        let flaky: Bool
    }

    struct Results: Sendable {
        let baseline: ExploreRunResult
        /// Calls each candidate targeted in the baseline.
        let counts: [Int]
        let placements: Int
        let runs: Int
        let failures: [Failure]
        /// Placements whose fault never acted: the run ended (or went another way) before its call.
        let notReached: Int
        /// Pairs left out at depth 2 because one of their faults fails alone.
        let pairsSkipped: Int
        let timeout: Double
        let seconds: Double
    }

    func explore(budget: Int?, depth: Int) throws(ExploreRunnerError) -> Results {
        let start = ContinuousClock.now
        let baseline = try runner.run(
            plan: space.planFile(placements: [:], scratch: runner.scratch(slot: 0)), slot: 0, timeout: timeout ?? 600)
        guard !baseline.failed else {
            throw ExploreRunnerError(
                description:
                    "the program fails without chaos (\(baseline.outcome(timeout: timeout ?? 600))); make the baseline pass first"
            )
        }
        let counts = space.candidates.map { baseline.seen[$0.number] ?? 0 }
        for (candidate, count) in zip(space.candidates, counts) where count == 0 {
            printError(
                "chaos explore: entry #\(candidate.number) (\(candidate.entry.pointName) \(candidate.entry.provider.summary.prefix(80))) targets no call of the baseline: nothing to place"
            )
        }
        guard counts.contains(where: { $0 > 0 }) else {
            throw ExploreRunnerError(
                description: "no entry of the space targets a call the program makes; nothing to explore")
        }
        let runTimeout = timeout ?? max(10, 10 * baseline.seconds)
        // Power loss is also tried once the program has ended: one change past its last.
        let placeable = zip(space.candidates, counts).map { $0.losesPower && $1 > 0 ? $1 + 1 : $1 }
        let singles = ExplorePlacements.spread(
            ExplorePlacements.singles(counts: placeable), budget: budget ?? .max, seed: seed)
        var placements = singles.map { Placement(faults: [$0]) }
        var outcomes = try runAll(placements, timeout: runTimeout, label: "placements")
        var pairsSkipped = 0
        if depth == 2 {
            let failing = Set(zip(placements, outcomes).filter { $0.1.failed }.map { $0.0.faults[0] })
            let usable = singles.filter { !failing.contains($0) }
            pairsSkipped = singles.count * (singles.count - 1) / 2 - usable.count * (usable.count - 1) / 2
            let pairBudget = budget.map { max(0, $0 - singles.count) } ?? Exploration.defaultPairBudget
            let pairs = ExplorePlacements.pairs(usable, budget: pairBudget, seed: seed)
            outcomes += try runAll(pairs, timeout: runTimeout, label: "pairs")
            placements += pairs
        }
        var failures: [Failure] = []
        var runs = 1 + placements.count
        var notReached = 0
        for (placement, result) in zip(placements, outcomes) {
            // Power lost once the program had ended acted too, though no call was its own.
            let acted =
                result.powerLoss != nil
                || placement.faults.allSatisfy { (result.acted[space.candidates[$0.candidate].number] ?? 0) > 0 }
            if !acted { notReached += 1 }
            guard result.failed else { continue }
            runs += 1
            let again = try runner.run(
                plan: space.planFile(placements: placement.callsByCandidate, scratch: runner.scratch(slot: 0)),
                slot: 0, timeout: runTimeout)
            failures.append(Failure(placement: placement, result: result, flaky: !again.failed))
        }
        return Results(
            baseline: baseline, counts: counts, placements: placements.count, runs: runs, failures: failures,
            notReached: notReached, pairsSkipped: pairsSkipped, timeout: runTimeout,
            seconds: ExploreRunner.secondsSince(start))
    }

    static let defaultPairBudget = Explore.defaultPairBudget

    /// Runs `placements`, `jobs` at a time, with a progress line on standard error.
    private func runAll(_ placements: [Placement], timeout: Double, label: String) throws(ExploreRunnerError)
        -> [ExploreRunResult]
    {
        let shared = RunQueue(count: placements.count)
        let progress = ExploreProgress(total: placements.count, label: label)
        let workers = max(1, min(jobs, placements.count))
        DispatchQueue.concurrentPerform(iterations: workers) { slot in
            let template = space.template(scratch: runner.scratch(slot: slot))
            while true {
                let index: Int? = shared.withLock { state in
                    guard state.error == nil, state.next < placements.count else { return nil }
                    state.next += 1
                    return state.next - 1
                }
                guard let index else { return }
                let plan = template.text(placements: placements[index].callsByCandidate)
                do throws(ExploreRunnerError) {
                    let result = try runner.run(plan: plan, slot: slot, timeout: timeout)
                    let (done, failing) = shared.withLock { state in
                        state.results[index] = result
                        state.done += 1
                        if result.failed { state.failing += 1 }
                        return (state.done, state.failing)
                    }
                    progress.update(done: done, failing: failing)
                } catch {
                    shared.withLock { state in
                        if state.error == nil { state.error = error }
                    }
                    return
                }
            }
        }
        progress.finish()
        let (results, error) = shared.withLock { ($0.results, $0.error) }
        if let error { throw error }
        return results.map { $0! }
    }
}

/// The state the workers of one batch of runs share: the next placement to take, what
/// came of each, and the first error that stops them.
private final class RunQueue: Sendable {
    struct State {
        var next = 0
        var done = 0
        var failing = 0
        var results: [ExploreRunResult?]
        var error: ExploreRunnerError?
    }

    /// Locked, not Mutex: ThreadSanitizer cannot see Mutex's futex on Linux.
    private let state: Locked<State>

    init(count: Int) {
        state = Locked(State(results: Array(repeating: nil, count: count)))
    }

    func withLock<T: Sendable>(_ body: (inout State) -> T) -> T {
        state.withLock { body(&$0) }
    }
}

/// The progress line on standard error: rewritten in place on a terminal, else a line
/// every tenth of the way.
final class ExploreProgress: Sendable {
    private let total: Int
    private let label: String
    private let start = ContinuousClock.now
    private let terminal = isatty(STDERR_FILENO) != 0
    /// The last tenth printed (off a terminal); guarded by itself.
    private let printedTenth = Locked(0)

    init(total: Int, label: String) {
        self.total = total
        self.label = label
    }

    func update(done: Int, failing: Int) {
        let elapsed = ExploreRunner.secondsSince(start)
        let left = done == 0 ? 0 : elapsed / Double(done) * Double(total - done)
        let line =
            "chaos explore: \(done)/\(total) \(label), \(failing) failing, about \(ExploreRunner.seconds(left)) left"
        if terminal {
            FileHandle.standardError.write(Data(("\r\u{1B}[K" + line).utf8))
            return
        }
        let tenth = done * 10 / max(total, 1)
        let due = printedTenth.withLock { printed in
            guard tenth > printed else { return false }
            printed = tenth
            return true
        }
        if due { printError(line) }
    }

    func finish() {
        if terminal { FileHandle.standardError.write(Data("\n".utf8)) }
    }
}
