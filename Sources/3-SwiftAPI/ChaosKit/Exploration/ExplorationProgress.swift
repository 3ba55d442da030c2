public import Foundation
import Synchronization

/// An exploration of this process as it runs (or ran), for tools that show it live: the
/// web console's exploration panel reads ``Chaos/explorations``.
public struct ExplorationProgress: Sendable, Identifiable {
    /// Numbers explorations in the order they started, from 1.
    public let id: Int
    /// When it started (real time).
    public let started: Date
    /// Every random choice of its runs derives from it.
    public let seed: UInt64
    /// The entries explored, with the calls each targeted in the baseline (empty until the
    /// baseline has run).
    public let candidates: [ChaosExploration.Candidate]
    /// How many placements it runs (0 until the baseline has run).
    public let placements: Int
    /// How many of them have run.
    public let done: Int
    /// The placements that broke the body so far (whether they are flaky is known once it
    /// has finished).
    public let failures: [ChaosExploration.Failure]
    /// Whether it has ended; then `failures` is the result's.
    public let finished: Bool
    /// Why it ended without exploring (the baseline failed, an entry was refused), if it did.
    public let error: String?
}

extension Chaos {
    /// The explorations of this process: those running and the last few finished (oldest
    /// first), for tools that show them.
    public static var explorations: [ExplorationProgress] {
        ExplorationRecord.all.withLock { $0.map(\.snapshot) }
    }
}

/// One exploration's progress, updated as its placements run; listed in `all` from its
/// start, and kept there for a while after it ends.
final class ExplorationRecord: Sendable {
    private struct State {
        var candidates: [ChaosExploration.Candidate] = []
        var placements = 0
        var done = 0
        /// In placement order (candidate, then call), whatever order they ran in: a tool
        /// names a failure by its position, which must not change while it runs or at its end.
        var failures: [(placement: PlacedFault, failure: ChaosExploration.Failure)] = []
        var finished = false
        var error: String?
    }

    /// How many finished explorations stay listed.
    static let kept = 10
    /// Every listed record, oldest first. `Locked` guards it.
    static let all = Locked<[ExplorationRecord]>([])
    /// The next id. Atomic.
    private static let nextID = Atomic<Int>(1)

    let id: Int
    let started = Date()
    let seed: UInt64
    private let state = Locked(State())

    init(seed: UInt64) {
        self.id = Self.nextID.wrappingAdd(1, ordering: .relaxed).oldValue
        self.seed = seed
        Self.all.withLock { records in
            records.append(self)
            let finished = records.filter(\.isFinished)
            if finished.count > Self.kept {
                let dropped = Set(finished.prefix(finished.count - Self.kept).map { ObjectIdentifier($0) })
                records.removeAll { dropped.contains(ObjectIdentifier($0)) }
            }
        }
    }

    var isFinished: Bool { state.withLock { $0.finished } }

    func baselineCounted(_ candidates: [ChaosExploration.Candidate], placements: Int) {
        state.withLock {
            $0.candidates = candidates
            $0.placements = placements
        }
    }

    func placementRan(_ placement: PlacedFault, failure: ChaosExploration.Failure?) {
        state.withLock { state in
            state.done += 1
            guard let failure else { return }
            let position = state.failures.firstIndex { placement < $0.placement } ?? state.failures.count
            state.failures.insert((placement, failure), at: position)
        }
    }

    /// The failure listed for `placement` while the exploration ran: its replay entry is
    /// the one the result keeps too, so that the entry a tool applied is the result's.
    func listedFailure(_ placement: PlacedFault) -> ChaosExploration.Failure? {
        state.withLock { $0.failures.first { $0.placement == placement }?.failure }
    }

    func finish(_ result: ChaosExploration, placements: [PlacedFault]) {
        state.withLock {
            $0.failures = Array(zip(placements, result.failures))
            $0.finished = true
        }
    }

    func fail(_ error: ChaosError) {
        state.withLock {
            $0.error = "\(error)"
            $0.finished = true
        }
    }

    var snapshot: ExplorationProgress {
        state.withLock { state in
            ExplorationProgress(
                id: id, started: started, seed: seed, candidates: state.candidates, placements: state.placements,
                done: state.done, failures: state.failures.map(\.failure), finished: state.finished,
                error: state.error)
        }
    }
}
