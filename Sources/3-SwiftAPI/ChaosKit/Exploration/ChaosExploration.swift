import Foundation

/// What `Chaos.explore` found: the calls each
/// candidate fault targets when none acts, and the placements that broke the body, each
/// with an entry that replays it.
public struct ChaosExploration: Sendable, CustomStringConvertible {
    /// A candidate fault and how many calls it targeted in the baseline run.
    public struct Candidate: Sendable {
        /// The entry as given.
        public let entry: ProfileEntry
        /// The calls it targeted with no fault placed: its placements are calls 1…`calls`.
        public let calls: Int
    }

    /// A placement that broke the body.
    public struct Failure: Sendable, CustomStringConvertible {
        /// The point the fault was placed on.
        public let point: String
        /// The fault (the entry's provider, rendered).
        public let provider: String
        /// Which of the calls the entry targets it acted at, from 1.
        public let call: Int
        /// How many calls the entry targeted in the baseline.
        public let of: Int
        /// What the body threw (or, under the `.exploringChaos` trait, the issue it recorded).
        public let error: any Error
        /// The placed entry: `Chaos.with(replay, seed: seed) { … }` runs the body as the
        /// placement did.
        public let replay: ProfileEntry
        /// The seed every placement ran with.
        public let seed: UInt64
        /// The body failed once, then passed when run again.
        public let flaky: Bool

        /// `app.fetch ← throwing(offline) at call 3 of 10: offline` and how to replay it.
        public var description: String {
            "\(point) ← \(provider) at call \(call) of \(of)\(flaky ? " (flaky: passed when run again)" : ""): \(error). "
                + "Replay: \(replayLine)"
        }

        /// Swift that replays the failure, to paste into a test: the trait `.chaos(seed:…)`
        /// with the original entry placed at the failing call.
        public var replayLine: String {
            ".chaos(seed: \(seed), ENTRY.placed(at: \(call))) where ENTRY is the entry \(point) ← \(provider)"
        }
    }

    /// Every random choice of the baseline and the placements derives from it.
    public let seed: UInt64
    /// The entries explored, with their calls in the baseline.
    public let candidates: [Candidate]
    /// How many placements ran (at most the budget).
    public let placements: Int
    /// Placements whose fault never acted: the body made fewer targeted calls that time.
    public let notReached: Int
    /// Whether placements ran in parallel task scopes (all entries task-scoped, no virtual time).
    public let ranInParallel: Bool
    /// The placements that broke the body, candidate by candidate, call by call.
    public let failures: [Failure]

    /// A summary, then one line per failure.
    public var description: String {
        let calls = candidates.map { "\($0.entry.pointName): \($0.calls)" }.joined(separator: ", ")
        var lines = [
            "explored \(placements) placements (calls targeted: \(calls)), seed \(seed): \(failures.count) failing"
        ]
        if notReached > 0 { lines.append("\(notReached) placements never acted (the body made fewer calls)") }
        lines += failures.map { "  \($0)" }
        return lines.joined(separator: "\n")
    }
}

extension Chaos {
    /// Runs `body` once with `entries` applied but never acting, to count the calls each
    /// one targets; then once per placement of each entry at each of those calls, with the
    /// entry acting at that call only (``ProfileEntry/placed(at:)-(Int)``); and returns the
    /// placements after which `body` threw.
    ///
    /// ```swift
    /// let result = try await Chaos.explore(
    ///     ProfileEntry(Points.fetch, .throwing(FetchError.offline)),
    ///     budget: 1_000
    /// ) {
    ///     try await syncScores()
    /// }
    /// for failure in result.failures { print(failure) }
    /// ```
    ///
    /// Placements of task-scoped entries run in task scopes, in parallel. When an entry's
    /// point is process-wide (a C hook's, a system point's) or virtual time runs, they run
    /// one at a time. A failing placement is run again once: if it then passes, it is
    /// reported as flaky. With a `budget` smaller than the placements, they are spread over
    /// the candidates (each one's first and last call, then seeded samples), never just the
    /// first ones.
    ///
    /// - Throws: a ``ChaosError`` when an entry cannot be applied, or when `body` throws
    ///   in the baseline (nothing can be learned from it then).
    public static func explore(
        _ entries: ProfileEntry..., budget: Int? = nil, seed: UInt64? = nil,
        _ body: @escaping @Sendable () async throws -> Void
    ) async throws(ChaosError) -> ChaosExploration {
        try await explore(entries, budget: budget, seed: seed, body)
    }

    /// `explore` with the entries as an array.
    public static func explore(
        _ entries: [ProfileEntry], budget: Int? = nil, seed: UInt64? = nil,
        _ body: @escaping @Sendable () async throws -> Void
    ) async throws(ChaosError) -> ChaosExploration {
        let explorer = try Explorer(entries, budget: budget, seed: seed)
        let counts = try await explorer.baseline { (entries, seed) async throws -> [Int] in
            try await Chaos.with(entries, seed: seed) {
                try await body()
                return Explorer.placementCalls()
            }
        }
        return await explorer.explore(counts: counts) { (entry, seed) async -> (any Error)? in
            do {
                return try await Chaos.with(entry, seed: seed) { () async -> (any Error)? in
                    do {
                        try await body()
                        return Explorer.neverActed()
                    } catch {
                        return error
                    }
                }
            } catch {
                return error
            }
        }
    }

    /// The synchronous form of `explore`.
    public static func explore(
        _ entries: ProfileEntry..., budget: Int? = nil, seed: UInt64? = nil,
        _ body: @escaping @Sendable () throws -> Void
    ) throws(ChaosError) -> ChaosExploration {
        try explore(entries, budget: budget, seed: seed, body)
    }

    /// The synchronous form, with the entries as an array.
    public static func explore(
        _ entries: [ProfileEntry], budget: Int? = nil, seed: UInt64? = nil,
        _ body: @escaping @Sendable () throws -> Void
    ) throws(ChaosError) -> ChaosExploration {
        let explorer = try Explorer(entries, budget: budget, seed: seed)
        let counts = try explorer.baselineSync { (entries, seed) throws -> [Int] in
            try Chaos.with(entries, seed: seed) {
                try body()
                return Explorer.placementCalls()
            }
        }
        return explorer.exploreSync(counts: counts) { (entry, seed) -> (any Error)? in
            do {
                return try Chaos.with(entry, seed: seed) { () -> (any Error)? in
                    do {
                        try body()
                        return Explorer.neverActed()
                    } catch {
                        return error
                    }
                }
            } catch {
                return error
            }
        }
    }
}

/// Which faults an exploration of every point places (`Chaos.explore(everyPoint:)`).
public enum ExplorationFaults: Sendable {
    /// The typical faults of every point the body touches (``PointCatalogue/typicalFaults``).
    case typical
    /// The typical faults of the points that can throw, only.
    case throwing
}

extension Chaos {
    /// Explores the body with the typical faults of every live point it touches (see
    /// ``PointCatalogue/typicalFaults``), as if each were an entry given to `explore`:
    /// the points the baseline did not call are left out of the result.
    ///
    /// Points whose chaos is process-wide (system points, C hooks) are included only when
    /// `prefix` names them (e.g. `"system.files"`); the others, whatever their name, when it
    /// starts with `prefix` (every one for `""`).
    public static func explore(
        everyPoint faults: ExplorationFaults, named prefix: String = "", budget: Int? = nil, seed: UInt64? = nil,
        _ body: @escaping @Sendable () async throws -> Void
    ) async throws(ChaosError) -> ChaosExploration {
        let entries = try typicalEntries(faults, named: prefix)
        return try await explore(entries, budget: budget, seed: seed, body).touchedOnly
    }

    /// The synchronous form of `explore(everyPoint:)`.
    public static func explore(
        everyPoint faults: ExplorationFaults, named prefix: String = "", budget: Int? = nil, seed: UInt64? = nil,
        _ body: @escaping @Sendable () throws -> Void
    ) throws(ChaosError) -> ChaosExploration {
        let entries = try typicalEntries(faults, named: prefix)
        return try explore(entries, budget: budget, seed: seed, body).touchedOnly
    }

    /// An entry per typical fault of every live point `faults` and `prefix` select.
    private static func typicalEntries(_ faults: ExplorationFaults, named prefix: String) throws(ChaosError)
        -> [ProfileEntry]
    {
        var entries: [ProfileEntry] = []
        for name in PointRegistry.shared.names where name.hasPrefix(prefix) {
            guard let point = try? PointRegistry.shared.point(named: name), !point.typicalFaults.isEmpty,
                faults == .typical || point.canThrow,
                point.activation == nil || !prefix.isEmpty
            else { continue }
            entries += point.typicalFaults.map { ProfileEntry(point: name, .catalogue($0)) }
        }
        guard !entries.isEmpty else {
            throw ChaosError(
                .invalidProvider, subject: "explore",
                "no live point\(prefix.isEmpty ? "" : " named \(prefix)…") declares typical faults\(faults == .throwing ? " and can throw" : ""); declare them in its catalogue (typicalFaults:) or give the entries to explore"
            )
        }
        return entries
    }
}

extension ChaosExploration {
    /// This exploration without the candidates the baseline never called.
    var touchedOnly: ChaosExploration {
        ChaosExploration(
            seed: seed, candidates: candidates.filter { $0.calls > 0 }, placements: placements,
            notReached: notReached, ranInParallel: ranInParallel, failures: failures)
    }
}

/// A placement whose fault never acted and whose body passed: not a failure, but counted.
struct PlacementNeverActed: Error {}
