import Foundation
import Logging

/// Applies and reverts chaos (Dixie's `Dixie` builder).
///
/// ```swift
/// let chaos = Chaos(seed: 42)
/// try chaos.profile(ProfileEntry(Points.now, .constant(.distantPast))).apply()
/// // … the app now lives in the distant past …
/// chaos.revertAll()
/// ```
/// Global chaos is process-wide: it reaches every task and thread. For chaos that only the
/// current task tree sees — what parallel tests need — use ``Chaos/with(_:seed:operation:)-([ProfileEntry],UInt64?,()->T)``.
///
/// Two entries on one point form a stack: the later one wins, and reverting it brings the
/// earlier one back (whichever `Chaos` applied them).
public final class Chaos: Sendable {
    /// Every random choice this `Chaos` makes derives from this seed, so a run replays exactly.
    public let seed: UInt64
    /// What ``apply()`` does with a name-based entry whose point does not exist yet.
    public let missingPoints: MissingPoints

    /// What ``apply()`` does with an entry that names a point nobody has created yet.
    public enum MissingPoints: Sendable {
        /// Refuse the apply (``ChaosError/Kind/unknownPoint``): code holds the points it names.
        case refuse
        /// Let the entry wait, and apply it the moment its point is created — an app's
        /// `static let` point exists only once something touches it. For profiles from
        /// outside the code (`CHAOS`, `CHAOS_PROFILE`, the control endpoint).
        ///
        /// A waiting entry is listed as pending (``LiveEntry/isPending``). When its point
        /// appears, its provider is checked against the point: if it does not fit, the
        /// entry never acts, the located error is logged and kept (``LiveEntry/problem``).
        /// Names whose prefix a lazy point source owns (`system.`) never wait: those
        /// points all exist at once, so a missing one is a typo and refused as before.
        case wait
        /// As ``wait``, except that an entry whose point name is at most two edits from a
        /// live point's is refused (``ChaosError/Kind/unknownPoint``, with "did you mean"):
        /// for profiles a person sends to a running program (the control endpoint's
        /// default), where `demo.greting` beside a live `demo.greeting` is a typo far more
        /// often than a point still to come. Nothing of a refused profile applies.
        case waitUnlessMisspelt
    }

    /// An entry this `Chaos` applied: enabled ones are on their point's stack.
    private struct Applied {
        let entry: ProfileEntry
        let prepared: PreparedInstallation
        var enabled = true
    }

    /// An entry applied while its point did not exist yet (``MissingPoints/wait``).
    private struct Waiting {
        let entry: ProfileEntry
        var enabled = true
        /// Why the entry could not apply when its point appeared; it then never acts.
        var problem: ChaosError?
    }

    private struct State {
        var pending: [ProfileEntry] = []
        var applied: [Applied] = []
        var waiting: [Waiting] = []
        /// Where entries were written (profiles), to locate errors found after `apply()`.
        var sources: [ProfileEntry.ID: ChaosProfile.Entry] = [:]
        var registered = false
    }

    private let state = Locked(State())
    static let logger = Logger(label: "ChaosKit")

    /// A builder whose random choices derive from `seed`; without one, a seed is drawn
    /// (and logged, so that the run can be replayed).
    ///
    /// `missingPoints` says what ``apply()`` does with an entry whose point does not exist
    /// yet: refuse it (the default), or let it wait for the point.
    public init(seed: UInt64? = nil, missingPoints: MissingPoints = .refuse) {
        self.seed = seed ?? UInt64.random(in: .min ... .max)
        self.missingPoints = missingPoints
    }

    /// Remembers where profile entries were written, so that an error found when a waiting
    /// entry's point appears says where to fix it.
    func locate(_ sources: [(entry: ProfileEntry, source: ChaosProfile.Entry)]) {
        state.withLock { state in
            for item in sources { state.sources[item.entry.id] = item.source }
        }
    }

    /// Adds entries to apply with the next ``apply()``.
    @discardableResult
    public func profile(_ entries: ProfileEntry...) -> Chaos {
        profile(entries)
    }

    /// Adds entries to apply with the next ``apply()``.
    @discardableResult
    public func profile(_ entries: [ProfileEntry]) -> Chaos {
        state.withLock { $0.pending.append(contentsOf: entries) }
        return self
    }

    /// Applies every profiled entry, all or nothing: when one entry is invalid nothing
    /// changes and the error names that entry. Either way the profiled list is emptied.
    ///
    /// Points with a ``PointActivation`` (C hooks) that nothing used yet are activated
    /// first, before any entry takes effect; if one activation fails, those already made
    /// are undone and nothing is applied. ``revert(_:)`` and ``revertAll()`` deactivate a
    /// point once its last global entry and task scope are gone.
    public func apply() throws(ChaosError) {
        let result = state.withLock { state -> ChaosError? in
            let pending = state.pending
            state.pending = []
            var prepared: [PreparedEntry] = []
            prepared.reserveCapacity(pending.count)
            var missing: [ProfileEntry] = []
            for entry in pending {
                // A linear scan: a builder applies a handful of entries, where hashing costs more.
                let id = entry.id
                guard !state.applied.contains(where: { $0.entry.id == id }),
                    !state.waiting.contains(where: { $0.entry.id == id }),
                    !prepared.contains(where: { $0.entry.id == id }), !missing.contains(where: { $0.id == id })
                else {
                    return ChaosError(
                        .alreadyApplied, subject: "entry \(entry.id) (\(entry.excerpt))",
                        "this entry is already applied by this Chaos; revert it first or make a new entry"
                    )
                }
                do throws(ChaosError) {
                    prepared.append(PreparedEntry(entry: entry, prepared: try entry.prepared(chaosSeed: seed)))
                } catch {
                    let waits: Bool
                    do throws(ChaosError) {
                        waits = try PointRegistry.shared.waits(entry, after: error, missingPoints)
                    } catch let refused {
                        return refused
                    }
                    guard waits else { return error }
                    missing.append(entry)
                }
            }
            // Waiters are listed before anything takes effect, and withdrawn if the apply
            // fails: one that binds meanwhile waits for this lock, then finds nothing to bind.
            var waiting: [ProfileEntry] = []
            func withdrawWaiters() {
                for entry in waiting { PointRegistry.shared.withdraw(entry.id, name: entry.pointName) }
            }
            for entry in missing {
                if PointRegistry.shared.wait(for: entry.pointName, waiter(for: entry)) {
                    waiting.append(entry)
                    continue
                }
                do throws(ChaosError) {
                    // Its point was created since the look-up: resolve it as any other.
                    prepared.append(PreparedEntry(entry: entry, prepared: try entry.prepared(chaosSeed: seed)))
                } catch {
                    withdrawWaiters()
                    return error
                }
            }
            do throws(ChaosError) {
                try Self.activateAll(prepared)
            } catch {
                withdrawWaiters()
                return error
            }
            state.waiting += waiting.map { Waiting(entry: $0) }
            for entry in waiting {
                Self.logger.info(
                    "chaos entry waits for its point to be created",
                    metadata: ["entry": "\(entry.excerpt)", "at": "\(state.sources[entry.id]?.location ?? "")"])
            }
            if !waiting.isEmpty { Self.reportAtExit }
            if !prepared.isEmpty || !waiting.isEmpty, !state.registered {
                state.registered = true
                Self.live.withLock { $0[ObjectIdentifier(self)] = WeakChaos(chaos: self) }
            }
            for item in prepared {
                item.prepared.core.pushGlobal(item.prepared.installation)
                state.applied.append(Applied(entry: item.entry, prepared: item.prepared))
                Self.logger.debug("chaos applied", metadata: ["entry": "\(item.entry.excerpt)", "seed": "\(seed)"])
            }
            for item in prepared { item.prepared.core.notifyChanged() }
            for item in prepared {
                if let lease = item.prepared.installation.lease {
                    scheduleLeaseEnd(item.entry, item.prepared.installation, after: lease)
                }
            }
            return nil
        }
        if let result { throw result }
    }

    private func waiter(for entry: ProfileEntry) -> PointRegistry.Waiter {
        let id = entry.id
        return PointRegistry.Waiter(id: id) { [weak self] in self?.bindWaiting(id) }
    }

    /// Applies the waiting entry `id` now that its point exists (on the thread creating
    /// the point). A provider that does not fit the point is a located error, logged and
    /// kept on the entry, which then never acts: the rest of the profile stays applied.
    private func bindWaiting(_ id: ProfileEntry.ID) {
        let outcome = state.withLock { state -> (entry: ProfileEntry, error: ChaosError?)? in
            guard let index = state.waiting.firstIndex(where: { $0.entry.id == id }) else { return nil }
            let waiting = state.waiting[index]
            let entry = waiting.entry
            do throws(ChaosError) {
                let prepared = try entry.prepared(chaosSeed: seed)
                if waiting.enabled {
                    do throws(ChaosError) {
                        try prepared.core.retainActivation()
                    } catch {
                        throw entry.attributed(error)
                    }
                }
                state.waiting.remove(at: index)
                state.applied.append(Applied(entry: entry, prepared: prepared, enabled: waiting.enabled))
                if waiting.enabled {
                    prepared.core.pushGlobal(prepared.installation)
                    prepared.core.notifyChanged()
                }
                if let lease = prepared.installation.lease {
                    scheduleLeaseEnd(entry, prepared.installation, after: lease)
                }
                return (entry, nil)
            } catch {
                let located = state.sources[id]?.located(error) ?? error
                state.waiting[index].problem = located
                return (entry, located)
            }
        }
        guard let outcome else { return }
        if let error = outcome.error {
            Self.logger.error(
                "chaos entry not applied: its point appeared, and the provider does not fit it",
                metadata: ["entry": "\(outcome.entry.excerpt)", "error": "\(error)"])
        } else {
            Self.logger.info(
                "chaos entry applied: its point was created", metadata: ["entry": "\(outcome.entry.excerpt)"])
        }
    }

    /// The entries that still wait for their point (not those whose point appeared and did
    /// not fit), each with where it was written.
    private var stillWaiting: [(entry: ProfileEntry, location: String)] {
        state.withLock { state in
            state.waiting.filter { $0.problem == nil }.map { ($0.entry, state.sources[$0.entry.id]?.location ?? "") }
        }
    }

    /// Logs a warning for every entry still waiting for a point, with the nearest names:
    /// an entry that never became live is most often a misspelt name.
    func reportWaiting(_ when: String, logger: Logger = Chaos.logger) {
        let never = stillWaiting
        guard !never.isEmpty else { return }
        let known = PointRegistry.shared.names
        for (entry, location) in never {
            logger.warning(
                "chaos entry never applied: no point named '\(InputExcerpt.of(entry.pointName, limit: 200))' was created before \(when)\(Suggestions.hint(for: entry.pointName, in: known))",
                metadata: ["entry": "\(entry.excerpt)", "at": "\(location)"])
        }
    }

    /// Logs a warning now for every entry waiting for a point whose name is at most two
    /// edits from a live point's: most likely a misspelling, which should not wait for the
    /// exit report to be seen.
    func warnMisspeltWaiting(logger: Logger = Chaos.logger) {
        for (entry, location) in stillWaiting {
            let near = PointRegistry.shared.nearMisses(of: entry.pointName)
            guard !near.isEmpty else { continue }
            logger.warning(
                "chaos entry waits for a point nothing has created: '\(InputExcerpt.of(entry.pointName, limit: 200))'\(Suggestions.hint(for: entry.pointName, in: near)) It acts only once a point of exactly this name is created",
                metadata: ["entry": "\(entry.excerpt)", "at": "\(location)"])
        }
    }

    /// Reports, when the process exits, the entries that waited in vain (once installed).
    private static let reportAtExit: Void = {
        atexit {
            let builders = Chaos.live.withLock { $0.values.compactMap(\.chaos) }
            for chaos in builders { chaos.reportWaiting("the process exited") }
        }
    }()

    /// The entries applied while their point did not exist, that wait for it (or whose
    /// provider did not fit it when it appeared: see ``LiveEntry/problem``).
    public var waitingEntries: [ProfileEntry] {
        state.withLock { $0.waiting.map(\.entry) }
    }

    /// The problem of each waiting entry whose point appeared but did not fit, by id.
    var waitingProblems: [ProfileEntry.ID: ChaosError] {
        state.withLock { state in
            Dictionary(state.waiting.compactMap { item in item.problem.map { (item.entry.id, $0) } }) { first, _ in
                first
            }
        }
    }

    /// Reverts `entry` when its lease ends, if this very installation of it is still applied
    /// (it may have been reverted, or reverted and applied again, meanwhile).
    private func scheduleLeaseEnd(_ entry: ProfileEntry, _ installation: InstalledEntry, after lease: Duration) {
        let nanoseconds = Int(clamping: lease.wholeNanoseconds)
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(nanoseconds)) { [self] in
            let ended = state.withLock { state -> Bool in
                guard let index = state.applied.firstIndex(where: { $0.prepared.installation === installation }) else {
                    return false
                }
                Self.uninstall(state.applied.remove(at: index))
                return true
            }
            if ended {
                Self.logger.info(
                    "chaos lease ended; entry reverted",
                    metadata: ["entry": "\(entry.excerpt)", "lease": "\(DurationText.format(lease))"])
            }
        }
    }

    /// Reverts one applied entry; an entry this `Chaos` did not apply is an error.
    public func revert(_ entry: ProfileEntry) throws(ChaosError) {
        let found = state.withLock { state -> Bool in
            if let index = state.waiting.firstIndex(where: { $0.entry.id == entry.id }) {
                PointRegistry.shared.withdraw(entry.id, name: entry.pointName)
                state.waiting.remove(at: index)
                return true
            }
            guard let index = state.applied.firstIndex(where: { $0.entry.id == entry.id }) else { return false }
            Self.uninstall(state.applied.remove(at: index))
            return true
        }
        guard found else {
            throw ChaosError(
                .notApplied, subject: "entry \(entry.id) (\(entry.excerpt))",
                "this Chaos has not applied this entry (or already reverted it); revert it with the Chaos that applied it"
            )
        }
        Self.logger.debug("chaos reverted", metadata: ["entry": "\(entry.excerpt)"])
    }

    /// Reverts every entry this `Chaos` applied, newest first.
    public func revertAll() {
        state.withLock { state in
            for item in state.waiting { PointRegistry.shared.withdraw(item.entry.id, name: item.entry.pointName) }
            state.waiting = []
            for item in state.applied.reversed() {
                Self.uninstall(item)
            }
            state.applied = []
        }
    }

    /// Activates the points that need it (C hooks) before any entry takes effect; when one
    /// refuses, the activations already made are undone and its entry's error is thrown.
    private static func activateAll(_ prepared: [PreparedEntry])
        throws(ChaosError)
    {
        // By index: a copy of each element would retain its point (a slow retain: points
        // are weakly referenced, so theirs go through a side table).
        for index in prepared.indices {
            do throws(ChaosError) {
                try prepared[index].prepared.core.retainActivation()
            } catch {
                for done in prepared[..<index].reversed() { done.prepared.core.releaseActivation() }
                throw prepared[index].entry.attributed(error)
            }
        }
    }

    /// Takes one applied installation off its point; the last user deactivates the point.
    private static func uninstall(_ item: Applied) {
        let prepared = item.prepared
        guard item.enabled else {
            // Off the stack since it was disabled; calls may still have read it before that.
            RetiredObjects.shared.retire(prepared.installation, readers: prepared.core.retiredReaders)
            return
        }
        guard prepared.core.removeGlobal(prepared.installation) else { return }
        prepared.core.notifyChanged()
        prepared.core.releaseActivation()
    }

    /// Switches an applied entry off (it stays applied, keeps its counters, and is listed)
    /// or back on. Enabling may fail as applying can (a C hook that cannot be patched now).
    public func setEnabled(_ enabled: Bool, _ entry: ProfileEntry) throws(ChaosError) {
        try state.withLock { (state: inout State) throws(ChaosError) in
            if let index = state.waiting.firstIndex(where: { $0.entry.id == entry.id }) {
                // Takes effect when the point appears.
                state.waiting[index].enabled = enabled
                return
            }
            guard let index = state.applied.firstIndex(where: { $0.entry.id == entry.id }) else {
                throw ChaosError(
                    .notApplied, subject: "entry \(entry.id) (\(entry.excerpt))",
                    "this Chaos has not applied this entry (or already reverted it); apply it first"
                )
            }
            let item = state.applied[index]
            guard item.enabled != enabled else { return }
            let core = item.prepared.core
            if enabled {
                do throws(ChaosError) {
                    try core.retainActivation()
                } catch {
                    throw entry.attributed(error)
                }
                core.pushGlobal(item.prepared.installation)
            } else {
                // Kept alive by this Chaos, so it is not retired until it is reverted.
                _ = core.removeGlobal(item.prepared.installation, retiring: false)
            }
            core.notifyChanged()
            if !enabled { core.releaseActivation() }
            state.applied[index].enabled = enabled
        }
        Self.logger.info("chaos entry \(enabled ? "enabled" : "disabled")", metadata: ["entry": "\(entry.excerpt)"])
    }

    /// What each entry this `Chaos` has applied (and not reverted) did, oldest first: calls
    /// seen, calls acted on, calls passed to the original, and the last act with the seed
    /// and call index that replay it. Reading them costs the call path nothing.
    public var counters: [EntryCounters] {
        state.withLock { $0.applied.map { $0.prepared.installation.counters(chaosSeed: seed) } }
    }

    /// What every entry this `Chaos` has applied (and not reverted) did, with the entries
    /// that never acted flagged: ``counters`` as `chaos run` reports them at exit. Entries
    /// that wait for their point (see ``MissingPoints/wait``) are in it, never having acted.
    public var report: ChaosReport {
        let counters = state.withLock { state in
            state.applied.map { $0.prepared.installation.counters(chaosSeed: seed) }
                + state.waiting.map { EntryCounters(waiting: $0.entry) }
        }
        return ChaosReport(seed: seed, counters: counters)
    }

    /// The entries this `Chaos` applied and that are switched on.
    public var enabledEntries: [ProfileEntry] {
        state.withLock { $0.applied.filter(\.enabled).map(\.entry) }
    }

    deinit {
        Self.live.withLock { _ = $0.removeValue(forKey: ObjectIdentifier(self)) }
    }

    // MARK: Every Chaos in the process

    private struct WeakChaos {
        weak var chaos: Chaos?
    }

    /// Every `Chaos` that applied entries and is still alive (sessions' included).
    private static let live = Locked<[ObjectIdentifier: WeakChaos]>([:])

    /// Every entry applied right now by any `Chaos` in the process (sessions and the
    /// control endpoint included), enabled or not, with its counters: what a console or
    /// `chaos ctl` lists. Oldest `Chaos` first is not guaranteed; entries are ordered by id.
    public static var liveEntries: [LiveEntry] {
        let builders = live.withLock { $0.values.compactMap(\.chaos) }
        return builders.flatMap { chaos in
            chaos.state.withLock { state in
                state.applied.map {
                    LiveEntry(
                        entry: $0.entry, isEnabled: $0.enabled,
                        counters: $0.prepared.installation.counters(chaosSeed: chaos.seed), chaosSeed: chaos.seed,
                        isPending: false, problem: nil)
                }
                    + state.waiting.map {
                        LiveEntry(
                            entry: $0.entry, isEnabled: $0.enabled, counters: EntryCounters(waiting: $0.entry),
                            chaosSeed: chaos.seed, isPending: $0.problem == nil, problem: $0.problem)
                    }
            }
        }.sorted { $0.entry.id.number < $1.entry.id.number }
    }

    /// Reverts the live entry with this id, whichever `Chaos` applied it.
    public static func revert(entryID: ProfileEntry.ID) throws(ChaosError) {
        try owner(of: entryID).chaos.revert(owner(of: entryID).entry)
    }

    /// Switches the live entry with this id off or on, whichever `Chaos` applied it.
    public static func setEnabled(_ enabled: Bool, entryID: ProfileEntry.ID) throws(ChaosError) {
        let (chaos, entry) = try owner(of: entryID)
        try chaos.setEnabled(enabled, entry)
    }

    private static func owner(of id: ProfileEntry.ID) throws(ChaosError) -> (chaos: Chaos, entry: ProfileEntry) {
        let builders = live.withLock { $0.values.compactMap(\.chaos) }
        for chaos in builders {
            let found = chaos.state.withLock { state in
                state.applied.first { $0.entry.id == id }?.entry ?? state.waiting.first { $0.entry.id == id }?.entry
            }
            if let entry = found {
                return (chaos, entry)
            }
        }
        throw ChaosError(
            .notApplied, subject: "entry \(id)", "no live entry has this id; list them (Chaos.liveEntries) and pick one"
        )
    }

    /// Turns on observation for the whole process: from now on every act also records its
    /// real time (in ``EntryCounters/LastAct/date``). Until someone observes, the call path
    /// records counts only.
    public static func observe() {
        ChaosObservation.start()
    }

    /// Every act of every applied entry from now on, as it happens: what fired, where, and
    /// the seed and call index that replay it. Subscribing turns observation on; a slow
    /// reader keeps the newest `limit` events. The stream ends when the task reading it is
    /// cancelled.
    public static func events(bufferingNewest limit: Int = 1_024) -> AsyncStream<ChaosEvent> {
        ChaosObservation.subscribe(bufferingNewest: limit)
    }

    /// The entries this `Chaos` has applied and not reverted, oldest first.
    public var appliedEntries: [ProfileEntry] {
        state.withLock { $0.applied.map(\.entry) }
    }

    /// The names of every live injection point, sorted.
    public static var pointNames: [String] { PointRegistry.shared.names }

    /// Every live point with its signature and catalogue items, for tools and docs.
    public static var catalogue: [PointInfo] { PointRegistry.shared.catalogue }
}

/// What the current task's scoped chaos is, for reports (e.g. a failing test's seed).
public struct ChaosScopeInfo: Sendable {
    /// The seed of the innermost scope.
    public let seed: UInt64
    /// Every entry in force in the scope, outermost first.
    public let entries: [ProfileEntry]
    /// What each of those entries did so far, in the same order.
    public let counters: [EntryCounters]

    /// What every entry in force in the scope did, with those that never acted flagged.
    public var report: ChaosReport { ChaosReport(seed: seed, counters: counters) }
}

extension Chaos {
    /// The scoped chaos the current task sees, or nil outside `Chaos.with`.
    public static var currentScope: ChaosScopeInfo? {
        ScopeFrame.current.map { frame in
            ChaosScopeInfo(
                seed: frame.seed, entries: frame.profileEntries,
                counters: frame.installedEntries.map { $0.counters(chaosSeed: frame.seed) })
        }
    }

    private static func enterScope(
        _ entries: [ProfileEntry], seed: UInt64?
    ) throws(ChaosError) -> (frame: ScopeFrame, cores: [PointState]) {
        let seed = seed ?? ScopeFrame.current?.seed ?? UInt64.random(in: .min ... .max)
        var prepared: [PreparedEntry] = []
        for entry in entries {
            prepared.append(PreparedEntry(entry: entry, prepared: try entry.prepared(chaosSeed: seed)))
        }
        try activateAll(prepared)
        let cores = prepared.map(\.prepared.core)
        for core in cores { core.scopeEntered() }
        for core in cores { core.notifyChanged() }
        return (ScopeFrame(parent: ScopeFrame.current, prepared: prepared, seed: seed), cores)
    }

    private static func leaveScope(_ cores: [PointState]) {
        for core in cores { core.scopeLeft() }
        for core in cores { core.notifyChanged() }
        for core in cores.reversed() { core.releaseActivation() }
    }

    /// Runs `operation` with `entries` applied for the current task tree only: they win over
    /// global chaos, nest (the innermost wins), and tasks outside never see them.
    /// Invalid entries throw a ``ChaosError`` before `operation` runs. Points with a
    /// ``PointActivation`` that nothing used yet are activated on entry (all or nothing)
    /// and deactivated on exit when nothing else uses them.
    ///
    /// Unstructured `Task {}`s started inside inherit the scope, but only while it lasts;
    /// `Task.detached` does not inherit it.
    public static func with<T>(
        _ entries: [ProfileEntry], seed: UInt64? = nil, operation: () throws -> T
    ) throws -> T {
        let (frame, cores) = try enterScope(entries, seed: seed)
        defer { leaveScope(cores) }
        return try ScopeFrame.$current.withValue(frame, operation: operation)
    }

    /// The async form of ``with(_:seed:operation:)-([ProfileEntry],UInt64?,()->T)``.
    public static func with<T>(
        _ entries: [ProfileEntry], seed: UInt64? = nil,
        isolation: isolated (any Actor)? = #isolation,
        operation: () async throws -> T
    ) async throws -> T {
        let (frame, cores) = try enterScope(entries, seed: seed)
        defer { leaveScope(cores) }
        return try await ScopeFrame.$current.withValue(frame, operation: operation)
    }

    /// Variadic form of ``with(_:seed:operation:)-([ProfileEntry],UInt64?,()->T)``.
    public static func with<T>(
        _ entries: ProfileEntry..., seed: UInt64? = nil, operation: () throws -> T
    ) throws -> T {
        try with(entries, seed: seed, operation: operation)
    }

    /// Variadic form of the async `with`.
    public static func with<T>(
        _ entries: ProfileEntry..., seed: UInt64? = nil,
        isolation: isolated (any Actor)? = #isolation,
        operation: () async throws -> T
    ) async throws -> T {
        try await with(entries, seed: seed, isolation: isolation, operation: operation)
    }
}
