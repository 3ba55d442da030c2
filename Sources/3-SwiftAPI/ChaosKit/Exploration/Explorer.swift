import Foundation
import Synchronization

/// The steps of an in-process exploration, whatever runs the body (sync, async, or a test
/// trait): check the entries, read the baseline's counts, choose the placements, run them
/// (in parallel when every entry is task-scoped), and run each failure again.
package struct Explorer: Sendable {
    package let entries: [ProfileEntry]
    package let budget: Int?
    package let seed: UInt64
    /// Whether placements may run at once: every entry's point is task-scoped (no
    /// activation patches the process) and virtual time does not run.
    package let parallel: Bool
    /// Its progress, for tools that show it (``Chaos/explorations``).
    let record: ExplorationRecord

    /// Checks every entry against its point (a ``ChaosError`` names the one that does not fit).
    package init(_ entries: [ProfileEntry], budget: Int?, seed: UInt64?) throws(ChaosError) {
        guard !entries.isEmpty else {
            throw ChaosError(.invalidProvider, subject: "explore", "give at least one entry to place")
        }
        if let budget, budget < 1 {
            throw ChaosError(
                .invalidProvider, subject: "explore", "budget \(budget) allows no placement; give 1 or more")
        }
        var processWide = false
        for entry in entries {
            if entry.placement != nil {
                throw ChaosError(
                    .invalidProvider, subject: "entry \(entry.id) (\(entry.excerpt))",
                    "explore places each entry at each call itself; give the entry without placed(at:)")
            }
            let prepared = try entry.prepared(chaosSeed: 0)
            if prepared.core.activation != nil { processWide = true }
        }
        self.entries = entries
        self.budget = budget
        self.seed = seed ?? UInt64.random(in: 0..<(1 << 53))
        self.parallel = !processWide && Chaos.virtualClock?.reading() == nil
        self.record = ExplorationRecord(seed: self.seed)
    }

    /// The entries of the baseline: each placed at a call no body reaches, so it counts the
    /// calls it targets and never acts.
    package var baselineEntries: [ProfileEntry] { entries.map { $0.placed(at: [Int.max]) } }

    /// Called inside the baseline's scope after the body: the calls each of its entries
    /// targeted (the innermost scope's last entries are the baseline's).
    package static func placementCalls() -> [Int] {
        (ScopeFrame.current?.installedEntries ?? []).map { installed in
            installed.isCountedElsewhere
                ? installed.counters(chaosSeed: nil).seen
                : installed.placementCalls ?? installed.counters(chaosSeed: nil).seen
        }
    }

    /// Called inside a placement's scope after the body passed: nil when the placed fault
    /// acted, else a marker that the placement was not reached.
    package static func neverActed() -> (any Error)? {
        let acted = ScopeFrame.current?.installedEntries.last?.counters(chaosSeed: nil).acted ?? 0
        return acted > 0 ? nil : PlacementNeverActed()
    }

    /// The calls of each entry, from what the baseline's scope read, or the error saying
    /// the body fails without chaos.
    private func counts(_ read: Result<[Int], any Error>) throws(ChaosError) -> [Int] {
        let refused: ChaosError
        switch read {
        case .success(let all):
            let counts = Array(all.suffix(entries.count))
            record.baselineCounted(
                zip(entries, counts).map { ChaosExploration.Candidate(entry: $0, calls: $1) },
                placements: placements(counts: counts).count)
            return counts
        case .failure(let error as ChaosError) where error.kind != .explorationBaselineFailed:
            refused = error
        case .failure(let error):
            refused = ChaosError(
                .explorationBaselineFailed, subject: "explore",
                "the body fails with no fault placed (\(error)); make it pass first")
        }
        record.fail(refused)
        throw refused
    }

    package func baseline(_ run: @Sendable ([ProfileEntry], UInt64) async throws -> [Int]) async throws(ChaosError)
        -> [Int]
    {
        let read: Result<[Int], any Error>
        do { read = .success(try await run(baselineEntries, seed)) } catch { read = .failure(error) }
        return try counts(read)
    }

    package func baselineSync(_ run: ([ProfileEntry], UInt64) throws -> [Int]) throws(ChaosError) -> [Int] {
        let read: Result<[Int], any Error>
        do { read = .success(try run(baselineEntries, seed)) } catch { read = .failure(error) }
        return try counts(read)
    }

    /// The placements to run: every call of every entry, or a spread of them within the budget.
    package func placements(counts: [Int]) -> [PlacedFault] {
        ExplorePlacements.spread(ExplorePlacements.singles(counts: counts), budget: budget ?? .max, seed: seed)
    }

    /// The entry of `placement`.
    package func entry(for placement: PlacedFault) -> ProfileEntry {
        entries[placement.candidate].placed(at: placement.call)
    }

    /// Runs every placement with `run` (which returns what the body threw, a
    /// ``PlacementNeverActed`` marker, or nil), at once when ``parallel``; then each
    /// failure again.
    package func explore(
        counts: [Int], _ run: @escaping @Sendable (ProfileEntry, UInt64) async -> (any Error)?
    ) async -> ChaosExploration {
        let placements = placements(counts: counts)
        var outcomes = [(any Error)?](repeating: nil, count: placements.count)
        if parallel {
            let width = max(2, ProcessInfo.processInfo.activeProcessorCount)
            await withTaskGroup(of: (Int, (any Error)?).self) { group in
                var next = 0
                func start() {
                    guard next < placements.count else { return }
                    let index = next
                    let entry = entry(for: placements[index])
                    group.addTask { (index, await run(entry, seed)) }
                    next += 1
                }
                for _ in 0..<width { start() }
                while let (index, outcome) = await group.next() {
                    outcomes[index] = outcome
                    record.placementRan(placements[index], failure: failure(placements[index], outcome))
                    start()
                }
            }
        } else {
            for (index, placement) in placements.enumerated() {
                outcomes[index] = await run(entry(for: placement), seed)
                record.placementRan(placement, failure: failure(placement, outcomes[index]))
            }
        }
        var again: [Int: Bool] = [:]
        for (index, outcome) in outcomes.enumerated() where Self.failed(outcome) {
            again[index] = Self.failed(await run(entry(for: placements[index]), seed))
        }
        return result(counts: counts, placements: placements, outcomes: outcomes, failedAgain: again)
    }

    package func exploreSync(counts: [Int], _ run: @escaping @Sendable (ProfileEntry, UInt64) -> (any Error)?)
        -> ChaosExploration
    {
        let placements = placements(counts: counts)
        let outcomes = Locked([(any Error)?](repeating: nil, count: placements.count))
        if parallel {
            let next = Atomic<Int>(0)
            let width = max(2, ProcessInfo.processInfo.activeProcessorCount)
            DispatchQueue.concurrentPerform(iterations: min(width, placements.count)) { _ in
                while true {
                    let index = next.wrappingAdd(1, ordering: .relaxed).oldValue
                    guard index < placements.count else { return }
                    let outcome = run(entry(for: placements[index]), seed)
                    outcomes.withLock { $0[index] = outcome }
                    record.placementRan(placements[index], failure: failure(placements[index], outcome))
                }
            }
        } else {
            for (index, placement) in placements.enumerated() {
                let outcome = run(entry(for: placement), seed)
                outcomes.withLock { $0[index] = outcome }
                record.placementRan(placement, failure: failure(placement, outcome))
            }
        }
        let all = outcomes.withLock { $0 }
        var again: [Int: Bool] = [:]
        for (index, outcome) in all.enumerated() where Self.failed(outcome) {
            again[index] = Self.failed(run(entry(for: placements[index]), seed))
        }
        return result(counts: counts, placements: placements, outcomes: all, failedAgain: again)
    }

    private static func failed(_ outcome: (any Error)?) -> Bool {
        guard let outcome else { return false }
        return !(outcome is PlacementNeverActed)
    }

    /// The failure `outcome` of `placement` is, if it is one.
    private func failure(_ placement: PlacedFault, _ outcome: (any Error)?, flaky: Bool = false)
        -> ChaosExploration.Failure?
    {
        guard let outcome, !(outcome is PlacementNeverActed) else { return nil }
        let entry = entries[placement.candidate]
        return ChaosExploration.Failure(
            point: entry.pointName, provider: entry.providerSummary, call: placement.call, of: placement.of,
            error: outcome, replay: record.listedFailure(placement)?.replay ?? entry.placed(at: placement.call),
            seed: seed, flaky: flaky)
    }

    private func result(
        counts: [Int], placements: [PlacedFault], outcomes: [(any Error)?], failedAgain: [Int: Bool]
    ) -> ChaosExploration {
        let failing = outcomes.indices.filter { failure(placements[$0], outcomes[$0]) != nil }
        let failures = failing.compactMap { index in
            failure(placements[index], outcomes[index], flaky: failedAgain[index] == false)
        }
        let result = ChaosExploration(
            seed: seed,
            candidates: zip(entries, counts).map { ChaosExploration.Candidate(entry: $0, calls: $1) },
            placements: placements.count, notReached: outcomes.filter { $0 is PlacementNeverActed }.count,
            ranInParallel: parallel, failures: failures)
        record.finish(result, placements: failing.map { placements[$0] })
        return result
    }
}
