/// What a `.block` provider of a synchronous point sees of the call it replaces
/// (Dixie's `DixieCallEnvironment`).
public struct CallEnvironment<Arguments, Result, Failure: Error> {
    /// The arguments the point was called with.
    public let arguments: Arguments
    /// Which call this is for the applied entry, from 0; exact under concurrency.
    public let callIndex: Int
    /// The point's stable name.
    public let pointName: String
    /// The applied entry's seed; the call's random seed derives from it when asked for.
    @usableFromInline let entrySeed: UInt64
    @usableFromInline let original: @Sendable (Arguments) throws(Failure) -> Result

    @inlinable init(
        arguments: Arguments, callIndex: Int, pointName: String, entrySeed: UInt64,
        original: @escaping @Sendable (Arguments) throws(Failure) -> Result
    ) {
        self.arguments = arguments
        self.callIndex = callIndex
        self.pointName = pointName
        self.entrySeed = entrySeed
        self.original = original
    }

    /// The seed of this call's random source (derived from the `Chaos` seed, the point and
    /// the call index); computed on demand, since most blocks never draw.
    public var randomSeed: UInt64 { SeededRandom.derive(entrySeed, UInt64(bitPattern: Int64(callIndex)), 0) }

    /// A generator seeded for this call: copy it into a `var` and draw from it. The same
    /// seed gives the same draws, so the chaos replays exactly.
    public var random: SeededRandom { SeededRandom(seed: randomSeed) }

    /// Calls the real implementation with the call's arguments.
    @inlinable public func callOriginal() throws(Failure) -> Result {
        try original(arguments)
    }

    /// Calls the real implementation with other arguments.
    @inlinable public func callOriginal(with arguments: Arguments) throws(Failure) -> Result {
        try original(arguments)
    }
}

/// What a `.block` provider of an async point sees of the call it replaces.
public struct AsyncCallEnvironment<Arguments, Result, Failure: Error> {
    /// The arguments the point was called with.
    public let arguments: Arguments
    /// Which call this is for the applied entry, from 0; exact under concurrency.
    public let callIndex: Int
    /// The point's stable name.
    public let pointName: String
    /// The applied entry's seed; the call's random seed derives from it when asked for.
    @usableFromInline let entrySeed: UInt64
    @usableFromInline let original: @Sendable (Arguments) async throws(Failure) -> Result

    @inlinable init(
        arguments: Arguments, callIndex: Int, pointName: String, entrySeed: UInt64,
        original: @escaping @Sendable (Arguments) async throws(Failure) -> Result
    ) {
        self.arguments = arguments
        self.callIndex = callIndex
        self.pointName = pointName
        self.entrySeed = entrySeed
        self.original = original
    }

    /// The seed of this call's random source (derived from the `Chaos` seed, the point and
    /// the call index); computed on demand, since most blocks never draw.
    public var randomSeed: UInt64 { SeededRandom.derive(entrySeed, UInt64(bitPattern: Int64(callIndex)), 0) }

    /// A generator seeded for this call: copy it into a `var` and draw from it.
    public var random: SeededRandom { SeededRandom(seed: randomSeed) }

    /// Calls the real implementation with the call's arguments.
    @inlinable public func callOriginal() async throws(Failure) -> Result {
        try await original(arguments)
    }

    /// Calls the real implementation with other arguments.
    @inlinable public func callOriginal(with arguments: Arguments) async throws(Failure) -> Result {
        try await original(arguments)
    }
}
