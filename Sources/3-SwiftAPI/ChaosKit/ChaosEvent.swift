public import Foundation

/// One act of an applied entry, as ``Chaos/events(bufferingNewest:)`` streams them: what
/// fired, where, and what replays it.
public struct ChaosEvent: Sendable, CustomStringConvertible {
    /// The entry that acted (nil for chaos applied outside an entry).
    public let entry: ProfileEntry.ID?
    /// The point it acted on.
    public let pointName: String
    /// The entry's provider, rendered.
    public let provider: String
    /// The entry's call index of the call (0-based).
    public let callIndex: Int
    /// The entry's seed: with the call index, what every draw of the call derives from.
    public let entrySeed: UInt64
    /// When it acted (the real clock, whatever chaos says the time is).
    public let date: Date

    /// `#3 clock.now ← constant(…) acted on call 7 (seed 123)`.
    public var description: String {
        "\(entry.map { "\($0) " } ?? "")\(pointName) ← \(provider) acted on call \(callIndex) (entry seed \(entrySeed))"
    }
}

/// What an applied entry did: the proof that chaos took effect (or did not).
public struct EntryCounters: Sendable, CustomStringConvertible {
    /// The act that replays: the entry's call index, its seed and the `Chaos` seed it
    /// derives from, and when it happened (nil when nobody observed at the time; see
    /// ``Chaos/observe()``).
    public struct LastAct: Sendable {
        /// The entry's call index of the last call it acted on.
        public let callIndex: Int
        /// The entry's seed (derived from the `Chaos` seed and the point's name).
        public let entrySeed: UInt64
        /// The seed of the `Chaos` (or scope) that applied the entry, when known.
        public let chaosSeed: UInt64?
        /// When it acted, if someone was observing then.
        public let date: Date?
    }

    /// The entry.
    public let entry: ProfileEntry.ID?
    /// The point it is applied to.
    public let pointName: String
    /// Its provider, rendered.
    public let provider: String
    /// Calls that reached the entry.
    public let seen: Int
    /// Calls it acted on (answered with anything but the original).
    public let acted: Int
    /// The last call it acted on; nil when it never fired.
    public let lastAct: LastAct?
    /// When its lease ends and it reverts itself; nil without a lease.
    public let leaseEnds: Date?

    /// Calls it passed to the original.
    public var passed: Int { seen - acted }

    /// Whether it acted at least once.
    public var hasFired: Bool { acted > 0 }

    /// `#3 clock.now ← offset(…): 12 seen, 12 acted, 0 passed`.
    public var description: String {
        "\(entry.map { "\($0) " } ?? "")\(pointName) ← \(provider): \(seen) seen, \(acted) acted, \(passed) passed"
    }
}

extension EntryCounters {
    /// The counters of an entry that waits for its point: nothing reached it yet.
    init(waiting entry: ProfileEntry) {
        self.init(
            entry: entry.id, pointName: entry.pointName, provider: entry.providerSummary, seen: 0, acted: 0,
            lastAct: nil, leaseEnds: nil)
    }
}

/// An entry applied right now somewhere in the process (see ``Chaos/liveEntries``).
public struct LiveEntry: Sendable {
    /// The entry.
    public let entry: ProfileEntry
    /// Whether it is switched on (``Chaos/setEnabled(_:_:)``).
    public let isEnabled: Bool
    /// What it did so far.
    public let counters: EntryCounters
    /// The seed of the `Chaos` that applied it.
    public let chaosSeed: UInt64
    /// Whether it waits for its point to be created (see ``Chaos/MissingPoints/wait``):
    /// it has not acted and cannot yet.
    public let isPending: Bool
    /// Why it will never act: its point appeared, and the provider did not fit it (the
    /// error is located where the entry was written). Nil for every other entry.
    public let problem: ChaosError?
}
