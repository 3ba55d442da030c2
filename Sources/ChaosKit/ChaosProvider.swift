/// The structure of a chaos provider: what a point does instead of (or around) its original.
///
/// You build these through the static members of ``ChaosProvider`` and
/// ``AsyncChaosProvider`` (`.constant(v)`, `.sequential([…])`, `.probability(0.2)` …);
/// the node is public so that tools can inspect and describe a provider.
/// `Body` is the block type: synchronous for ``InjectionPoint``, async for ``AsyncInjectionPoint``.
public indirect enum ChaosProviderNode<Arguments, Result: Sendable, Failure: Error, Body: Sendable>: Sendable {
    /// Call the real implementation (Dixie's NonChaos).
    case original
    /// Return this value.
    case constant(Result)
    /// Return a value drawn from the seeded source.
    case random(RandomGenerator<Result>)
    /// Throw this error.
    case throwing(Failure)
    /// Run this block; it may inspect the arguments and call the original.
    case block(Body)
    /// Call *i* uses provider *i*; the last one repeats. Never empty once applied.
    case sequential([ChaosProviderNode])
    /// The first case whose condition holds for the arguments wins; otherwise `otherwise`.
    case composite([ChaosCase<Arguments, ChaosProviderNode>], otherwise: ChaosProviderNode)
    /// With probability `p` (0…1) the provider, otherwise the original.
    case probability(Double, ChaosProviderNode)
    /// The first `n` calls (n ≥ 1) use the provider, later ones the original.
    case times(Int, ChaosProviderNode)
    /// Wait, then use the provider.
    case delayed(Duration, ChaosProviderNode)

    /// Why this provider cannot be applied, or nil when it can.
    func problem() -> String? {
        switch self {
        case .original, .constant, .random, .throwing, .block:
            return nil
        case .sequential(let nodes):
            if nodes.isEmpty { return "sequential([]) has no providers; give it at least one (the last one repeats)" }
            return nodes.lazy.compactMap { $0.problem() }.first
        case .composite(let cases, let otherwise):
            return cases.lazy.compactMap { $0.provider.problem() }.first ?? otherwise.problem()
        case .probability(let p, let node):
            if !(0...1).contains(p) { return "probability(\(p)) is outside 0…1; use a value such as 0.2 for 20%" }
            return node.problem()
        case .times(let n, let node):
            if n < 1 { return "times(\(n)) would never apply; use times(1) or more, or .original" }
            return node.problem()
        case .delayed(let delay, let node):
            if delay < .zero { return "delayed(by: \(delay)) is negative; use a duration of zero or more" }
            return node.problem()
        }
    }

    /// Calls `body` with every constant in the provider, nested ones included.
    func forEachConstant(_ body: (Result) throws(ChaosError) -> Void) throws(ChaosError) {
        switch self {
        case .constant(let value): try body(value)
        case .original, .random, .throwing, .block: break
        case .sequential(let nodes): for node in nodes { try node.forEachConstant(body) }
        case .composite(let cases, let otherwise):
            for branch in cases { try branch.provider.forEachConstant(body) }
            try otherwise.forEachConstant(body)
        case .probability(_, let node), .times(_, let node), .delayed(_, let node):
            try node.forEachConstant(body)
        }
    }

    /// A short, readable rendering (`"sequential[constant, original]"`), for logs and tools.
    public var summary: String {
        switch self {
        case .original: "original"
        case .constant(let value): "constant(\(value))"
        case .random: "random"
        case .throwing(let error): "throwing(\(error))"
        case .block: "block"
        case .sequential(let nodes): "sequential[\(nodes.map(\.summary).joined(separator: ", "))]"
        case .composite(let cases, let otherwise):
            "composite[\(cases.map { $0.provider.summary }.joined(separator: ", ")); otherwise \(otherwise.summary)]"
        case .probability(let p, let node): "\(node.summary) with probability \(p)"
        case .times(let n, let node): "\(node.summary) \(n) times"
        case .delayed(let delay, let node): "\(node.summary) after \(delay)"
        }
    }
}

/// One branch of a composite provider: a condition over the arguments and what to do when it holds.
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

    /// The provider's structure.
    var node: ChaosProviderNode<Arguments, Result, Failure, Body> { get }
    /// A provider with this structure.
    init(node: ChaosProviderNode<Arguments, Result, Failure, Body>)
}

extension ChaosProviderProtocol {
    /// Call the real implementation (Dixie's NonChaos).
    public static var original: Self { Self(node: .original) }

    /// Return `value`.
    public static func constant(_ value: Result) -> Self { Self(node: .constant(value)) }

    /// Return a random value from `generator`, drawn from the seeded source.
    public static func random(_ generator: RandomGenerator<Result>) -> Self { Self(node: .random(generator)) }

    /// Throw `error`. Only exists where the point can throw: with `Failure == Never` no
    /// error value can be made, so this is a compile-time error on non-throwing points.
    public static func throwing(_ error: Failure) -> Self { Self(node: .throwing(error)) }

    /// Call *i* uses `providers[i]`; once past the end, the last one repeats.
    public static func sequential(_ providers: [Self]) -> Self { Self(node: .sequential(providers.map(\.node))) }

    /// The first case whose condition holds for the arguments wins; otherwise `otherwise`
    /// (the original unless given).
    public static func composite(_ cases: [ChaosCase<Arguments, Self>], otherwise: Self = .original) -> Self {
        Self(node: .composite(
            cases.map { ChaosCase(condition: $0.condition, provider: $0.provider.node) },
            otherwise: otherwise.node
        ))
    }

    /// A branch for ``composite(_:otherwise:)``: use `provider` when `condition` holds.
    public static func when(
        _ condition: @escaping @Sendable (Arguments) -> Bool, _ provider: Self
    ) -> ChaosCase<Arguments, Self> {
        ChaosCase(condition: condition, provider: provider)
    }

    /// This provider with probability `p` (0…1, from the seeded source), otherwise the original.
    public func probability(_ p: Double) -> Self { Self(node: .probability(p, node)) }

    /// This provider for the first `n` calls, then the original.
    public func times(_ n: Int) -> Self { Self(node: .times(n, node)) }

    /// Wait `delay` before this provider answers.
    public func delayed(by delay: Duration) -> Self { Self(node: .delayed(delay, node)) }

    /// The same as ``ChaosProviderNode/summary``.
    public var summary: String { node.summary }
}

extension ChaosProviderProtocol where Result: ExpressibleByNilLiteral {
    /// Return nil.
    public static var `nil`: Self { Self(node: .constant(nil)) }
}

extension ChaosProviderProtocol where Result: RandomChaosValue {
    /// Return a random value of the result type (see ``RandomChaosValue``).
    public static func random() -> Self { Self(node: .random(.any)) }
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
        ChaosProvider(node: .block(body))
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
        AsyncChaosProvider(node: .block(body))
    }
}
