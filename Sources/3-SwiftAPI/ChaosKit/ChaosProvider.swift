/// What sync and async providers share: every provider except the block is built the same way.
public protocol ChaosProviderProtocol: Sendable {
    /// The arguments the point is called with (a tuple for several).
    associatedtype Arguments
    /// What the point returns.
    associatedtype Result: Sendable
    /// What the point can throw; `Never` when it cannot, and then `.throwing` cannot be built.
    associatedtype Failure: Error
    /// The block type (sync or async).
    associatedtype Body: Sendable

    /// The provider's structure: the one ``ProviderTree`` every front end builds.
    var node: ChaosProviderNode<Arguments, Result, Failure, Body> { get }
    /// A provider with this structure.
    init(node: ChaosProviderNode<Arguments, Result, Failure, Body>)
}

/// One branch of a composite provider, as code writes it: a condition over the arguments
/// and what to do when it holds (`.when({ $0 > 3 }, .constant(0))`).
public struct ChaosCase<Arguments, Provider: Sendable>: Sendable {
    /// Decides, from the call's arguments, whether this branch applies.
    public let condition: @Sendable (Arguments) -> Bool
    /// What the point does when the condition holds.
    public let provider: Provider
}

extension ChaosCase where Provider: ChaosProviderProtocol, Provider.Arguments == Arguments {
    /// A branch for `composite`: use `provider` when `condition` holds, written
    /// `.composite([.when({ $0 > 3 }, .constant(0))])`.
    public static func when(_ condition: @escaping @Sendable (Arguments) -> Bool, _ provider: Provider) -> ChaosCase {
        ChaosCase(condition: condition, provider: provider)
    }
}

extension ChaosProviderProtocol {
    /// Call the real implementation (Dixie's NonChaos).
    public static var original: Self { Self(node: .leaf(.original)) }

    /// Not this entry's call: hand it to the point's next entry (the task's next scoped
    /// entry, else the newest older global one), or to the original when there is none.
    public static var pass: Self { Self(node: .leaf(.pass)) }

    /// Return `value`.
    public static func constant(_ value: Result) -> Self { Self(node: .leaf(.constant(value))) }

    /// Return a random value from `generator`, drawn from the seeded source.
    public static func random(_ generator: RandomGenerator<Result>) -> Self { Self(node: .leaf(.random(generator))) }

    /// Throw `error`. Only exists where the point can throw: with `Failure == Never` no
    /// error value can be made, so this is a compile-time error on non-throwing points.
    public static func throwing(_ error: Failure) -> Self { Self(node: .leaf(.throwing(error))) }

    /// Call *i* uses `providers[i]`; once past the end, the last one repeats.
    public static func sequential(_ providers: [Self]) -> Self { Self(node: .sequential(providers.map(\.node))) }

    /// The first case whose condition holds for the arguments wins; otherwise `otherwise`
    /// (the original unless given).
    public static func composite(_ cases: [ChaosCase<Arguments, Self>], otherwise: Self = .original) -> Self {
        Self(
            node: .composite(
                cases.map {
                    ProviderBranch(
                        condition: ArgumentCondition("a condition", $0.condition), provider: $0.provider.node)
                },
                otherwise: otherwise.node
            ))
    }

    /// A branch for ``composite(_:otherwise:)``: use `provider` when `condition` holds.
    public static func when(
        _ condition: @escaping @Sendable (Arguments) -> Bool, _ provider: Self
    ) -> ChaosCase<Arguments, Self> {
        ChaosCase(condition: condition, provider: provider)
    }

    /// This provider wrapped in `modifier` (see ``ProviderModifier``).
    public func modified(by modifier: ProviderModifier) -> Self { Self(node: .modified(modifier, node)) }

    /// This provider with probability `p` (0…1, from the seeded source), otherwise the original.
    public func probability(_ p: Double) -> Self { modified(by: .probability(p)) }

    /// This provider for the first `n` calls, then the original.
    public func times(_ n: Int) -> Self { modified(by: .times(n)) }

    /// This provider at the `call`-th call the entry targets (counted from 1) only; every
    /// other call passes to the point's next entry, as ``pass`` does. How one fault is
    /// placed at one call (what an exploration replays).
    public func at(call: Int) -> Self { modified(by: .at([call])) }

    /// This provider at the listed calls the entry targets (counted from 1) only; every
    /// other call passes to the point's next entry.
    public func at(calls: [Int]) -> Self { modified(by: .at(calls)) }

    /// Wait `delay` before this provider answers (a sync point blocks its thread; an async
    /// point suspends).
    public func delayed(by delay: Duration) -> Self { modified(by: .delay(delay)) }

    /// This provider for `lease` after the entry is applied; then a global entry reverts
    /// itself and a scoped one stops acting.
    public func lease(_ lease: Duration) -> Self { modified(by: .lease(lease)) }

    /// A short, readable rendering (`"sequential[constant(1), original]"`), for logs and tools.
    public var summary: String { node.summary }
}

extension ChaosProviderProtocol where Result: ExpressibleByNilLiteral {
    /// Return nil.
    public static var `nil`: Self { Self(node: .leaf(.constant(nil))) }
}

extension ChaosProviderProtocol where Result: RandomChaosValue {
    /// Return a random value of the result type (see ``RandomChaosValue``).
    public static func random() -> Self { Self(node: .leaf(.random(.any))) }
}

/// A chaos provider for a synchronous ``InjectionPoint``.
public struct ChaosProvider<Arguments, Result: Sendable, Failure: Error>: ChaosProviderProtocol {
    /// A synchronous block; it receives the call's environment.
    public typealias Body = @Sendable (CallEnvironment<Arguments, Result, Failure>) throws(Failure) -> Result

    /// The provider's structure.
    public let node: ChaosProviderNode<Arguments, Result, Failure, Body>

    /// A provider with this structure.
    public init(node: ChaosProviderNode<Arguments, Result, Failure, Body>) {
        self.node = node
    }

    /// Any behaviour: inspect `env.arguments`, call `env.callOriginal()`, or return something else.
    public static func block(_ body: @escaping Body) -> ChaosProvider {
        ChaosProvider(node: .leaf(.block(body)))
    }
}

/// A chaos provider for an ``AsyncInjectionPoint``.
public struct AsyncChaosProvider<Arguments, Result: Sendable, Failure: Error>: ChaosProviderProtocol {
    /// An async block; it receives the call's environment.
    public typealias Body = @Sendable (AsyncCallEnvironment<Arguments, Result, Failure>) async throws(Failure) -> Result

    /// The provider's structure.
    public let node: ChaosProviderNode<Arguments, Result, Failure, Body>

    /// A provider with this structure.
    public init(node: ChaosProviderNode<Arguments, Result, Failure, Body>) {
        self.node = node
    }

    /// Any behaviour: inspect `env.arguments`, `await env.callOriginal()`, or return something else.
    public static func block(_ body: @escaping Body) -> AsyncChaosProvider {
        AsyncChaosProvider(node: .leaf(.block(body)))
    }
}
