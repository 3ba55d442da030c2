import Synchronization

/// One piece of chaos: a point and what it should do (Dixie's `DixieProfileEntry`).
///
/// Make one from a point and a typed provider — the compiler checks that they fit — or from
/// a point's name and a ``ProviderDescription``, checked when applied. An entry is inert
/// until a ``Chaos`` applies it or ``Chaos/with(_:seed:operation:)-([ProfileEntry],UInt64?,()->T)`` scopes it.
public struct ProfileEntry: Sendable, Identifiable, Hashable, CustomStringConvertible {
    /// Identifies one entry; copies of an entry share it.
    public struct ID: Hashable, Sendable, Codable, CustomStringConvertible {
        let raw: Int
        /// `#` and a number.
        public var description: String { "#\(raw)" }
        /// The number (unique in the process).
        public var number: Int { raw }

        /// The id numbered `number` (as ``description`` and tools show it): to name a live
        /// entry from outside, e.g. in a control request.
        public init(number: Int) { raw = number }

        init(raw: Int) { self.raw = raw }
    }

    /// The next id to hand out (ids are unique in the process, never reused once an entry
    /// holds one); atomic, so entries can be made on any thread.
    private static let nextID = Atomic<Int>(1)

    /// Takes `count` consecutive ids for the entries of one profile apply (or check).
    static func reserveIDs(_ count: Int) -> Range<Int> {
        let first = nextID.wrappingAdd(count, ordering: .relaxed).oldValue
        return first..<first + count
    }

    /// Gives back the ids ``reserveIDs(_:)`` took for an apply that was refused, so that a
    /// refused apply uses up no ids: the next entry gets the first of them. When ids were
    /// taken since (another thread made entries meanwhile) they stay used, as they must.
    static func returnIDs(_ ids: Range<Int>) {
        _ = nextID.compareExchange(expected: ids.upperBound, desired: ids.lowerBound, ordering: .relaxed)
    }

    /// This entry's identity (`revert` finds the entry by it).
    public let id: ID
    /// The name of the point the entry targets.
    public let pointName: String
    /// A readable rendering of the provider.
    public let providerSummary: String
    /// The provider as a profile describes it, for an entry made from a point's name
    /// (``init(point:_:)``, a profile, `CHAOS`, the console); nil for an entry made from a
    /// typed provider in code, which no profile can spell.
    public let providerDescription: ProviderDescription?
    /// The calls this entry is placed at (``placed(at:)-(Int)``), nil when it is not.
    public let placement: [Int]?
    let prepare:
        @Sendable (_ entrySeed: UInt64, _ id: ID, _ placement: [Int]?) throws(ChaosError) -> PreparedInstallation
    /// The point name's stable hash, which every apply mixes into the entry's seed.
    private let pointNameHash: UInt64

    private init(
        id: ID? = nil, pointName: String, providerSummary: String, providerDescription: ProviderDescription? = nil,
        placement: [Int]? = nil,
        prepare: @escaping @Sendable (UInt64, ID, [Int]?) throws(ChaosError) -> PreparedInstallation
    ) {
        self.id = id ?? ID(raw: Self.nextID.wrappingAdd(1, ordering: .relaxed).oldValue)
        self.pointName = pointName
        self.providerSummary = providerSummary
        self.providerDescription = providerDescription
        self.placement = placement
        self.prepare = prepare
        self.pointNameHash = SeededRandom.stableHash(pointName)
    }

    /// An entry that makes `point` behave as `provider` says.
    public init<Arguments, Result, Failure>(
        _ point: InjectionPoint<Arguments, Result, Failure>,
        _ provider: ChaosProvider<Arguments, Result, Failure>
    ) {
        let core = point.core
        let summary = provider.summary
        self.init(pointName: point.name, providerSummary: summary) { seed, id, placement throws(ChaosError) in
            guard let placement else { return try core.prepare(provider.node, seed: seed, entry: id, summary: summary) }
            let placed = provider.node.placed(at: placement) { $0.isOriginal }
            return try core.prepare(placed, seed: seed, entry: id, summary: placed.summary)
        }
    }

    /// An entry that makes the async `point` behave as `provider` says.
    public init<Arguments, Result, Failure>(
        _ point: AsyncInjectionPoint<Arguments, Result, Failure>,
        _ provider: AsyncChaosProvider<Arguments, Result, Failure>
    ) {
        let core = point.core
        let summary = provider.summary
        self.init(pointName: point.name, providerSummary: summary) { seed, id, placement throws(ChaosError) in
            guard let placement else { return try core.prepare(provider.node, seed: seed, entry: id, summary: summary) }
            let placed = provider.node.placed(at: placement) { $0.isOriginal }
            return try core.prepare(placed, seed: seed, entry: id, summary: placed.summary)
        }
    }

    /// An entry for the point named `pointName`, found when the entry is applied; a wrong
    /// name or a provider that does not fit the point's types is a ``ChaosError`` then.
    public init(point pointName: String, _ provider: ProviderDescription) {
        self.init(point: pointName, provider, id: nil)
    }

    /// An entry for the point named `pointName` with the id `id` (one of ``reserveIDs(_:)``),
    /// or the next free one when nil.
    init(point pointName: String, _ provider: ProviderDescription, id: ID?) {
        self.init(
            id: id, pointName: pointName, providerSummary: provider.summary, providerDescription: provider
        ) { seed, id, placement throws(ChaosError) in
            try PointRegistry.shared.point(named: pointName).prepare(
                placement.map { provider.placed(at: $0) } ?? provider, seed: seed, entry: id)
        }
    }

    /// This entry's fault placed at `calls` (counted from 1) of the calls it targets only;
    /// every other call passes to the point's next entry. A new entry, with an id of its
    /// own: how an exploration places a fault, and how its failures replay.
    public func placed(at calls: [Int]) -> ProfileEntry {
        let description = providerDescription?.placed(at: calls)
        return ProfileEntry(
            pointName: pointName,
            providerSummary: description?.summary ?? ProviderModifier.at(calls).summary(of: providerSummary),
            providerDescription: description, placement: calls, prepare: prepare)
    }

    /// ``placed(at:)-([Int])`` at one call.
    public func placed(at call: Int) -> ProfileEntry {
        placed(at: [call])
    }

    /// The point's name and the provider, e.g. `clock.now ← constant(2000-01-01 00:00:00 +0000)`.
    public var description: String { "\(pointName) ← \(providerSummary)" }

    /// ``description`` cut for a log line or an error message: the name may be input.
    var excerpt: String { InputExcerpt.of(description, limit: 200) }

    public static func == (lhs: ProfileEntry, rhs: ProfileEntry) -> Bool { lhs.id == rhs.id }
    public func hash(into hasher: inout Hasher) { hasher.combine(id) }

    /// Checks the entry and makes it ready for installing; errors name the entry.
    func prepared(chaosSeed: UInt64) throws(ChaosError) -> PreparedInstallation {
        let entrySeed = SeededRandom.derive(chaosSeed, pointNameHash)
        do {
            return try prepare(entrySeed, id, placement)
        } catch {
            throw attributed(error)
        }
    }

    /// `error`, said about this entry; a more precise inner subject (e.g. "clock.now
    /// offset", a symbol name) stays in the message, and so does where in a file it is.
    func attributed(_ error: ChaosError) -> ChaosError {
        let detail = error.subject.map { $0 == pointName ? error.message : "\($0): \(error.message)" } ?? error.message
        // A point name is code, not input, but a profile may spell a junk one: cut generously.
        var attributed = ChaosError(
            error.kind, subject: "entry \(id) (\(excerpt))", detail)
        attributed.sourceLocation = error.sourceLocation
        return attributed
    }
}
