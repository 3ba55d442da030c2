/// What a `.block` provider of a synchronous point sees of the call it replaces
/// (Dixie's `DixieCallEnvironment`).
///
/// It describes one call: use it inside the block. Keeping it longer is allowed only while
/// its point is alive (it refers to the point without a reference count, so that making
/// one costs nothing on the call path). ``AsyncCallEnvironment`` has the same shape.
public struct CallEnvironment<Arguments, Result: Sendable, Failure: Error> {
    /// The arguments the point was called with.
    public let arguments: Arguments
    /// Which call this is for the applied entry, from 0; exact under concurrency.
    public let callIndex: Int
    /// The applied entry's seed; the call's random seed derives from it when asked for.
    @usableFromInline let entrySeed: UInt64
    // Unowned and unchecked: the point is running this call, so it is alive for as long as
    // the block runs; a retain here would cost two atomic operations per chaotic call.
    @usableFromInline unowned(unsafe) let point: InjectionPoint<Arguments, Result, Failure>

    @inlinable init(
        arguments: Arguments, callIndex: Int, entrySeed: UInt64,
        point: InjectionPoint<Arguments, Result, Failure>
    ) {
        self.arguments = arguments
        self.callIndex = callIndex
        self.entrySeed = entrySeed
        self.point = point
    }

    /// The point's stable name.
    public var pointName: String { point.name }

    /// The seed of this call's random source (derived from the `Chaos` seed, the point and
    /// the call index); computed on demand, since most blocks never draw.
    public var randomSeed: UInt64 { SeededRandom.derive(entrySeed, UInt64(bitPattern: Int64(callIndex)), 0) }

    /// A generator seeded for this call: copy it into a `var` and draw from it. The same
    /// seed gives the same draws, so the chaos replays exactly.
    public var random: SeededRandom { SeededRandom(seed: randomSeed) }

    /// Calls the real implementation with the call's arguments.
    @inlinable public func callOriginal() throws(Failure) -> Result {
        try callOriginal(with: arguments)
    }

    /// Calls the real implementation with other arguments.
    @inlinable public func callOriginal(with arguments: Arguments) throws(Failure) -> Result {
        do {
            // Borrowed, not retained: reading the closure through an unowned(unsafe)
            // reference would otherwise retain and release it on every call.
            return try Unmanaged.passUnretained(point)._withUnsafeGuaranteedRef { point in
                try point.original(arguments)
            }
        } catch {
            throw error as! Failure  // the closure only throws Failure
        }
    }
}

/// What a `.block` provider of an async point sees of the call it replaces: the same
/// shape as ``CallEnvironment``, with an async `callOriginal()`.
public struct AsyncCallEnvironment<Arguments, Result: Sendable, Failure: Error> {
    /// The arguments the point was called with.
    public let arguments: Arguments
    /// Which call this is for the applied entry, from 0; exact under concurrency.
    public let callIndex: Int
    /// The applied entry's seed; the call's random seed derives from it when asked for.
    @usableFromInline let entrySeed: UInt64
    // Unowned and unchecked, as in CallEnvironment: the point is running this call.
    @usableFromInline unowned(unsafe) let point: AsyncInjectionPoint<Arguments, Result, Failure>

    @inlinable init(
        arguments: Arguments, callIndex: Int, entrySeed: UInt64,
        point: AsyncInjectionPoint<Arguments, Result, Failure>
    ) {
        self.arguments = arguments
        self.callIndex = callIndex
        self.entrySeed = entrySeed
        self.point = point
    }

    /// The point's stable name.
    public var pointName: String { point.name }

    /// The seed of this call's random source (derived from the `Chaos` seed, the point and
    /// the call index); computed on demand, since most blocks never draw.
    public var randomSeed: UInt64 { SeededRandom.derive(entrySeed, UInt64(bitPattern: Int64(callIndex)), 0) }

    /// A generator seeded for this call: copy it into a `var` and draw from it.
    public var random: SeededRandom { SeededRandom(seed: randomSeed) }

    /// Calls the real implementation with the call's arguments.
    @inlinable public func callOriginal() async throws(Failure) -> Result {
        try await callOriginal(with: arguments)
    }

    /// Calls the real implementation with other arguments.
    @inlinable public func callOriginal(with arguments: Arguments) async throws(Failure) -> Result {
        // A strong reference across the suspension: the point is alive for the call anyway.
        let original = point.original
        return try await original(arguments)
    }
}
