/// What answers a call of a typed point: the leaves of a ``ChaosProvider``'s tree.
///
/// `Body` is the block type: synchronous for ``InjectionPoint``, async for
/// ``AsyncInjectionPoint``.
public enum ProviderLeaf<Result: Sendable, Failure: Error, Body: Sendable>: Sendable, ProviderSummarizable {
    /// Call the real implementation (Dixie's NonChaos).
    case original
    /// Not this entry's call: hand it to the point's next entry (the task's next scoped
    /// entry, else the newest older global one), or to the original when there is none.
    /// Never counts as an act.
    case pass
    /// Return this value.
    case constant(Result)
    /// Return a value drawn from the seeded source.
    case random(RandomGenerator<Result>)
    /// Throw this error.
    case throwing(Failure)
    /// Run this block; it may inspect the arguments and call the original.
    case block(Body)

    /// `original`, `constant(…)`, `random`, `throwing(…)` or `block`.
    public var summary: String {
        switch self {
        case .original: "original"
        case .pass: "pass"
        case .constant(let value): "constant(\(value))"
        case .random: "random"
        case .throwing(let error): "throwing(\(error))"
        case .block: "block"
        }
    }

    /// Whether this leaf calls the real implementation (and so does not count as an act).
    @inlinable var isOriginal: Bool {
        if case .original = self { return true }
        return false
    }

    /// Whether this leaf is ``pass``.
    @inlinable var isPass: Bool {
        if case .pass = self { return true }
        return false
    }
}

/// The typed tree of a provider: leaves that return, throw or run blocks, and conditions
/// over the arguments. ``ChaosProvider`` and ``AsyncChaosProvider`` wrap one.
public typealias ChaosProviderNode<Arguments, Result: Sendable, Failure: Error, Body: Sendable> =
    ProviderTree<ProviderLeaf<Result, Failure, Body>, ArgumentCondition<Arguments>>
