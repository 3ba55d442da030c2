import Foundation
public import Synchronization

/// What every applied entry records of its calls, whatever its point's types: the proof
/// that chaos took effect. Counting is a few relaxed atomic operations on the entry's own
/// words; the time of the last act is read only while someone observes
/// (``Chaos/observe()``), so an unobserved call pays nothing for it.
@usableFromInline class InstalledEntry: @unchecked Sendable {
    // Unchecked: every stored property is immutable or atomic.

    @usableFromInline final let pointName: String
    @usableFromInline final let seed: UInt64
    /// The entry this installs (nil for an installation made outside an entry).
    @usableFromInline final let entryID: ProfileEntry.ID?
    /// The provider, rendered, for events and counters.
    final let summary: String
    /// Calls that reached the entry; a call's index is the count before it.
    @usableFromInline final let seen = Atomic<Int>(0)
    /// Calls it answered with anything but the original (not kept when every call acts).
    @usableFromInline final let acted = Atomic<Int>(0)
    /// Whether every call acts (a constant, an error, a block, a random value at the root):
    /// then `acted` is `seen`, and the call path saves an atomic operation.
    @usableFromInline final let actsOnEveryCall: Bool
    /// The index of the last call it acted on (-1: none yet; not kept when every call acts).
    @usableFromInline final let lastActedCall = Atomic<Int>(-1)
    /// When that was, in ns since 1970 by the real clock (0: not observed).
    final let lastActedTime = Atomic<Int64>(0)
    /// How long the entry lives once applied (its lease), and when a scoped one ends
    /// (real ns since 1970; 0: never).
    final let lease: Duration?
    @usableFromInline final let expiresAt: Int64
    /// Where to read counts kept elsewhere for an entry (a C engine that answers some of
    /// its calls), added to its own when counters are read. One table for every entry:
    /// few entries have one, and a lock of each entry's own would cost every apply an
    /// allocation.
    private static let externalCountSources = Locked<[ObjectIdentifier: @Sendable () -> ExternalCounts?]>([:])
    /// Whether this entry is in `externalCountSources` (so that only those leave it).
    private final let hasExternalCounts = Atomic<Bool>(false)

    /// What another engine counted for this entry, if anything.
    final var externalCounts: ExternalCounts? {
        guard hasExternalCounts.load(ordering: .acquiring) else { return nil }
        return Self.externalCountSources.withLock { $0[ObjectIdentifier(self)] }?()
    }

    /// Makes `counts` say what another engine counted for this entry.
    final func countAlso(_ counts: @escaping @Sendable () -> ExternalCounts?) {
        Self.externalCountSources.withLock { $0[ObjectIdentifier(self)] = counts }
        hasExternalCounts.store(true, ordering: .releasing)
    }

    deinit {
        if hasExternalCounts.load(ordering: .acquiring) {
            let id = ObjectIdentifier(self)
            _ = Self.externalCountSources.withLock { $0.removeValue(forKey: id) }
        }
    }

    init(
        pointName: String, seed: UInt64, entryID: ProfileEntry.ID?, summary: String, actsOnEveryCall: Bool,
        lease: Duration?
    ) {
        self.pointName = pointName
        self.seed = seed
        self.entryID = entryID
        self.summary = summary
        self.actsOnEveryCall = actsOnEveryCall
        self.lease = lease
        self.expiresAt = lease.map { ChaosObservation.realNanoseconds() &+ $0.wholeNanoseconds } ?? 0
    }

    /// Counts a call that reached the entry and returns its index.
    @inlinable @inline(__always) final func recordCall() -> Int {
        seen.wrappingAdd(1, ordering: .relaxed).oldValue
    }

    /// Records that call `callIndex` acted (`counted`: already counted in `acted`).
    @inlinable @inline(__always) final func recordAct(_ callIndex: Int, observed: Bool) {
        // An entry that acts on every call needs neither: its acts are its calls.
        if !actsOnEveryCall {
            acted.wrappingAdd(1, ordering: .relaxed)
            lastActedCall.store(callIndex, ordering: .relaxed)
        }
        if observed { recordObservedAct(callIndex) }
    }

    /// The observed part of an act: its time, and an event for those who follow them.
    @usableFromInline final func recordObservedAct(_ callIndex: Int) {
        let now = ChaosObservation.realNanoseconds()
        lastActedTime.store(now, ordering: .relaxed)
        guard ChaosObservation.hasSubscribers else { return }
        ChaosObservation.emit(
            ChaosEvent(
                entry: entryID, pointName: pointName, provider: summary, callIndex: callIndex, entrySeed: seed,
                date: Date(timeIntervalSince1970: Double(now) / 1e9)
            ))
    }

    /// Whether a lease has ended (only scoped entries check: global ones are reverted).
    @usableFromInline final var hasExpired: Bool {
        expiresAt != 0 && ChaosObservation.realNanoseconds() >= expiresAt
    }

    /// The calls the entry's placement (its outermost ``ProviderModifier/at(_:)``) was asked
    /// about: the calls it targets, which an exploration places faults among. Nil without
    /// a placement, and for an entry another engine runs (its own counts say it).
    var placementCalls: Int? { nil }

    /// Whether another engine answers some of the entry's calls (a C engine).
    final var isCountedElsewhere: Bool { hasExternalCounts.load(ordering: .acquiring) }

    /// A snapshot of the counters.
    final func counters(chaosSeed: UInt64?) -> EntryCounters {
        // Acts first: a call counts in `seen` before it acts, so a later load of `seen` covers
        // every act loaded. Read the other way round, calls made between the two loads showed
        // more acts than calls (a negative `passed`). Clamped too: the loads are relaxed.
        let actedSoFar = actsOnEveryCall ? 0 : self.acted.load(ordering: .relaxed)
        var seen = Swift.max(self.seen.load(ordering: .relaxed), actedSoFar)
        var acted = actsOnEveryCall ? seen : actedSoFar
        var lastCall = actsOnEveryCall ? seen - 1 : lastActedCall.load(ordering: .relaxed)
        var lastTime = lastActedTime.load(ordering: .relaxed)
        if let external = externalCounts {
            if external.lastActedTime >= lastTime || lastCall < 0, external.lastActedCall >= 0 {
                lastCall = external.lastActedCall
                lastTime = external.lastActedTime
            }
            seen += external.seen
            acted += external.acted
        }
        return EntryCounters(
            entry: entryID, pointName: pointName, provider: summary, seen: seen, acted: acted,
            lastAct: lastCall < 0
                ? nil
                : EntryCounters.LastAct(
                    callIndex: lastCall, entrySeed: seed, chaosSeed: chaosSeed,
                    date: lastTime == 0 ? nil : Date(timeIntervalSince1970: Double(lastTime) / 1e9)
                ),
            leaseEnds: expiresAt == 0 ? nil : Date(timeIntervalSince1970: Double(expiresAt) / 1e9)
        )
    }
}

/// Calls of an entry answered outside Swift (see ``InstalledEntryReference``).
@_spi(Hooks) public struct ExternalCounts: Sendable {
    /// Calls that reached the entry there.
    public var seen: Int
    /// Calls it acted on there.
    public var acted: Int
    /// The entry's index of the last call it acted on there (-1: none).
    public var lastActedCall: Int
    /// When, in real ns since 1970 (0: unknown).
    public var lastActedTime: Int64

    /// Counts kept by another engine.
    public init(seen: Int, acted: Int, lastActedCall: Int, lastActedTime: Int64) {
        self.seen = seen
        self.acted = acted
        self.lastActedCall = lastActedCall
        self.lastActedTime = lastActedTime
    }
}

/// An applied entry, as a point's activation may refer to it: to add the counts of calls
/// that another engine answered for it.
@_spi(Hooks) public struct InstalledEntryReference: Sendable, Hashable {
    let installed: InstalledEntry

    init(_ installed: InstalledEntry) { self.installed = installed }

    /// The entry's identity, for tables that must not keep it alive.
    public var id: ObjectIdentifier { ObjectIdentifier(installed) }

    /// Adds what `counts` reports to the entry's own counters whenever they are read.
    public func countAlso(_ counts: @escaping @Sendable () -> ExternalCounts?) {
        installed.countAlso(counts)
    }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.installed === rhs.installed }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(installed)) }
}

/// One applied entry on one point: its compiled provider, its seed and its counters.
@usableFromInline
final class Installation<Arguments, Result: Sendable, Failure: Error, Body: Sendable>: InstalledEntry,
    @unchecked Sendable
{
    // Unchecked: the compiled tree and fast-path fields are immutable and Sendable; the
    // counters are the base class's atomics.
    @usableFromInline let root: CompiledNode<Arguments, Result, Failure, Body>
    /// The provider as applied (without its lease), for activations that compile it.
    let tree: ChaosProviderNode<Arguments, Result, Failure, Body>
    /// The value when the whole provider is one `.constant`: the call path returns it
    /// without resolving anything.
    @usableFromInline let rootConstant: Result?
    /// The block when the whole provider is one `.block` (the usual C hook), so that the
    /// call path runs it without resolving the tree.
    @usableFromInline let rootBlock: Body?

    /// An installation of `tree`, whose outermost lease (if any) the caller has taken off
    /// and passes as `lease`. `resultsPassCallsOn`: whether `Result` is a
    /// `CallPassingResult` (its point looks it up once).
    init(
        pointName: String, seed: UInt64, entryID: ProfileEntry.ID?, summary: String,
        tree: ChaosProviderNode<Arguments, Result, Failure, Body>, lease: Duration?,
        resultsPassCallsOn passing: Bool
    ) {
        // Results that can hand a call on (system points') make selectors of constants too;
        // elsewhere only the `pass` leaf hands a call on.
        let passesOn: (ProviderLeaf<Result, Failure, Body>) -> Bool = passing ? { $0.passesCallOn } : { $0.isPass }
        // Both engines run this shape: Swift here, and the fault engine compiles `tree`.
        let tree = tree.selectorsOutermost(passesOn: passesOn)
        self.root = CompiledNode(tree, passesOn: passesOn)
        self.tree = tree
        if case .leaf(let leaf) = tree, case .constant(let value) = leaf, !passesOn(leaf) {
            rootConstant = value
        } else {
            rootConstant = nil
        }
        if case .leaf(.block(let body)) = tree { rootBlock = body } else { rootBlock = nil }
        let acts: Bool
        if case .leaf(let leaf) = tree, !leaf.isOriginal, !passesOn(leaf) { acts = true } else { acts = false }
        super.init(
            pointName: pointName, seed: seed, entryID: entryID, summary: summary, actsOnEveryCall: acts, lease: lease)
    }

    /// The constant of a plain `.constant` entry, counted as one act; nil for any other
    /// provider. Global entries with a lease are reverted when it ends, so they skip the check.
    @inlinable @inline(__always) func globalConstant(observed: borrowing Atomic<Bool>, noting note: inout CallNote)
        -> Result?
    {
        guard let value = rootConstant else { return nil }
        let callIndex = recordCall()
        recordAct(callIndex, observed: observed.load(ordering: .relaxed))
        note.decided(by: self, call: callIndex, acted: true)
        return value
    }

    /// ``globalConstant(observed:)`` for a scoped entry, which ends with its lease.
    @inlinable @inline(__always) func scopedConstant(observed: borrowing Atomic<Bool>, noting note: inout CallNote)
        -> Result?
    {
        guard let value = rootConstant, expiresAt == 0 || !hasExpired else { return nil }
        let callIndex = recordCall()
        recordAct(callIndex, observed: observed.load(ordering: .relaxed))
        note.decided(by: self, call: callIndex, acted: true)
        return value
    }

    override var placementCalls: Int? {
        root.placementCounter.map { $0.value.load(ordering: .relaxed) }
    }

    /// The seed of call `callIndex`'s random draws at the node salted `salt`.
    @inlinable func randomSeed(call callIndex: Int, salt: UInt64) -> UInt64 {
        SeededRandom.derive(seed, UInt64(bitPattern: Int64(callIndex)), salt)
    }
}
