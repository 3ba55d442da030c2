public import Synchronization
import Foundation

/// A named, replaceable synchronous function: the place where chaos can take over.
///
/// Declare one where your code would call a dependency, and call it like a function:
/// ```swift
/// enum Points {
///     static let now = InjectionPoint<Void, Date, Never>("clock.now") { Date() }
/// }
/// let today = Points.now()
/// ```
/// With nothing applied, a call costs one atomic load and a branch on top of the original.
/// A point that cannot throw (`Failure == Never`) cannot be given a `.throwing` provider:
/// that is a compile-time error. The name is how profiles find the point: keep it stable,
/// and do not create two live points with one name (applying to either then fails with
/// ``ChaosError/Kind/duplicatePointName``).
public final class InjectionPoint<Arguments, Result: Sendable, Failure: Error>: Sendable {
    /// The chaos providers this point accepts.
    public typealias Provider = ChaosProvider<Arguments, Result, Failure>
    @usableFromInline typealias Installed = Installation<Arguments, Result, Failure, Provider.Body>

    /// The stable name profiles use for this point.
    public let name: String
    @usableFromInline let original: @Sendable (Arguments) throws(Failure) -> Result
    @usableFromInline let state: PointState<Installed>
    let catalogue = Catalogue<Provider>()

    /// A point called `name` whose real implementation is `original`.
    public init(_ name: String, _ original: @escaping @Sendable (Arguments) throws(Failure) -> Result) {
        self.name = name
        self.original = original
        self.state = PointState(name: name)
        PointRegistry.shared.register(self)
    }

    /// A point called `name` whose real implementation is `original`, and which must be
    /// activated before use: `activation` runs before the first entry or scope involving
    /// the point takes effect (and may refuse it), and is undone after the last one has
    /// gone (see ``PointActivation``). Calls cost the same as on any other point.
    public init(
        _ name: String, activation: some PointActivation,
        _ original: @escaping @Sendable (Arguments) throws(Failure) -> Result
    ) {
        self.name = name
        self.original = original
        self.state = PointState(name: name, activation: activation)
        PointRegistry.shared.register(self)
    }

    /// What the point does right now for calls outside any task scope, when that is known
    /// without calling it: for C fast paths that mirror a point instead of calling it.
    /// The answer can change at any time; an activation's ``PointActivation/changed()``
    /// says when.
    public var currentBehaviour: PointBehaviour<Result> {
        if state.activity.load(ordering: .acquiring) == 0 { return .original }
        if state.scopes.load(ordering: .acquiring) != 0 { return .varying }
        guard let top = state.top() else { return .original }
        switch top.root {
        case .constant(let value): return .constant(value)
        case .original: return .original
        default: return .varying
        }
    }

    /// Lets the point refuse constants it cannot return (a C hook: a value that does not
    /// fit the C return type): `check` runs on every constant of a provider when the entry
    /// is applied, and its error makes the apply fail with nothing changed.
    public func setResultValidator(_ check: @escaping @Sendable (Result) throws(ChaosError) -> Void) {
        catalogue.setResultValidator(check)
    }

    deinit {
        PointRegistry.shared.unregister(ObjectIdentifier(self))
    }

    /// Calls the point: the applied chaos if there is any for this task, else the original.
    @inlinable public func callAsFunction(_ arguments: Arguments) throws(Failure) -> Result {
        if state.activity.load(ordering: .relaxed) == 0 {
            return try original(arguments)
        }
        return try dispatch(arguments)
    }

    /// Calls the real implementation, bypassing any chaos.
    @inlinable public func callOriginal(_ arguments: Arguments) throws(Failure) -> Result {
        try original(arguments)
    }

    /// Names a provider so that profiles can ask for it (`"offset"`, `"double-length"` …);
    /// `parameters` describes what it takes, for `chaos list` (e.g. `"days: number"`).
    public func addCatalogueItem(
        _ itemName: String,
        parameters: String = "",
        _ make: @escaping @Sendable (ProfileParameters) throws(ChaosError) -> Provider
    ) {
        catalogue.add(itemName, parameters: parameters, make)
    }

    /// Lets profiles narrow an entry to some calls (`"match": {"host": "api.example.com"}`):
    /// `make` turns the conditions into a test over the arguments, or throws when they make no sense.
    public func setArgumentMatcher(
        _ make: @escaping @Sendable (ProfileParameters) throws(ChaosError) -> @Sendable (Arguments) -> Bool
    ) {
        catalogue.setMatcher(make)
    }

    @inlinable func dispatch(_ arguments: Arguments) throws(Failure) -> Result {
        if state.scopes.load(ordering: .relaxed) != 0, let scoped = ScopeFrame.installation(for: state) {
            return try run(unsafeDowncast(scoped, to: Installed.self), arguments)
        }
        if let installed = state.top() {
            return try run(installed, arguments)
        }
        return try original(arguments)
    }

    @inlinable func run(_ installed: Installed, _ arguments: Arguments) throws(Failure) -> Result {
        try evaluate(installed.root, installed, installed.nextCallIndex(), arguments)
    }

    /// Calls the point like `callAsFunction`, but reads its newest global entry without the
    /// point's lock and without taking a reference to it: the hot path of C hooks.
    ///
    /// Only for callers that guarantee a reverted entry outlives every such call that may
    /// have read it: the point's ``PointActivation`` must keep what it is handed in
    /// ``PointActivation/retire(_:)`` alive until those calls have returned (ChaosHooks does
    /// this with hook sections and grace periods).
    @_spi(Hooks) @inlinable @inline(__always)
    public func callWithoutRetaining(_ arguments: Arguments) throws(Failure) -> Result {
        // No `activity` check first: with no scope, the top entry alone decides.
        if state.scopes.load(ordering: .relaxed) != 0, let scoped = ScopeFrame.installation(for: state) {
            return try run(unsafeDowncast(scoped, to: Installed.self), arguments)
        }
        guard let top = UnsafeRawPointer(bitPattern: state.topAddress.load(ordering: .acquiring)) else {
            return try original(arguments)
        }
        let installed = Unmanaged<Installed>.fromOpaque(top)
        return try runUnretained(installed, arguments)
    }

    @inlinable @inline(__always) func runUnretained(_ installed: Unmanaged<Installed>, _ arguments: Arguments) throws(Failure) -> Result {
        do {
            return try installed._withUnsafeGuaranteedRef { installed in
                // Called through optional chaining: unlike `if let`, that does not retain the block.
                if let result = try installed.rootBlock?(CallEnvironment(
                    arguments: arguments, callIndex: installed.calls.next(), entrySeed: installed.seed, point: self
                )) {
                    return result
                }
                return try evaluate(installed.root, installed, installed.nextCallIndex(), arguments)
            }
        } catch {
            // `_withUnsafeGuaranteedRef` rethrows untyped; only `Failure` can come out.
            throw error as! Failure
        }
    }

    @inlinable func evaluate(
        _ node: RuntimeNode<Arguments, Result, Failure, Provider.Body>,
        _ installed: Installed, _ callIndex: Int, _ arguments: Arguments
    ) throws(Failure) -> Result {
        switch node {
        case .original:
            return try original(arguments)
        case .constant(let value):
            return value
        case .random(let generator, let salt):
            var source = SeededRandom(seed: installed.randomSeed(call: callIndex, salt: salt))
            return generator.generate(using: &source)
        case .throwing(let error):
            throw error
        case .block(let body):
            return try body(CallEnvironment(
                arguments: arguments, callIndex: callIndex, entrySeed: installed.seed, point: self
            ))
        case .sequential(let nodes, let counter):
            let step = Swift.min(counter.next(), nodes.count - 1)
            return try evaluate(nodes[step], installed, callIndex, arguments)
        case .composite(let cases, let otherwise):
            for branch in cases where branch.condition(arguments) {
                return try evaluate(branch.node, installed, callIndex, arguments)
            }
            return try evaluate(otherwise, installed, callIndex, arguments)
        case .probability(let p, let inner, let salt):
            var source = SeededRandom(seed: installed.randomSeed(call: callIndex, salt: salt))
            if source.nextUnitInterval() < p {
                return try evaluate(inner, installed, callIndex, arguments)
            }
            return try original(arguments)
        case .times(let limit, let inner, let counter):
            if counter.next() < limit {
                return try evaluate(inner, installed, callIndex, arguments)
            }
            return try original(arguments)
        case .delayed(let delay, let inner):
            sleepBlocking(for: delay)
            return try evaluate(inner, installed, callIndex, arguments)
        }
    }
}

extension InjectionPoint where Arguments == Void {
    /// Calls a point that takes no arguments.
    @inlinable public func callAsFunction() throws(Failure) -> Result {
        try self(())
    }
}

/// A named, replaceable async function: the place where chaos can take over.
///
/// The async twin of ``InjectionPoint``; its `.block` providers are async and can
/// `await env.callOriginal()`, and `.delayed(by:)` suspends instead of blocking a thread.
public final class AsyncInjectionPoint<Arguments, Result: Sendable, Failure: Error>: Sendable {
    /// The chaos providers this point accepts.
    public typealias Provider = AsyncChaosProvider<Arguments, Result, Failure>
    @usableFromInline typealias Installed = Installation<Arguments, Result, Failure, Provider.Body>

    /// The stable name profiles use for this point.
    public let name: String
    @usableFromInline let original: @Sendable (Arguments) async throws(Failure) -> Result
    @usableFromInline let state: PointState<Installed>
    let catalogue = Catalogue<Provider>()

    /// A point called `name` whose real implementation is `original`.
    public init(_ name: String, _ original: @escaping @Sendable (Arguments) async throws(Failure) -> Result) {
        self.name = name
        self.original = original
        self.state = PointState(name: name)
        PointRegistry.shared.register(self)
    }

    deinit {
        PointRegistry.shared.unregister(ObjectIdentifier(self))
    }

    /// Calls the point: the applied chaos if there is any for this task, else the original.
    @inlinable public func callAsFunction(_ arguments: Arguments) async throws(Failure) -> Result {
        if state.activity.load(ordering: .relaxed) == 0 {
            return try await original(arguments)
        }
        return try await dispatch(arguments)
    }

    /// True while no chaos involves this point — none applied globally, no live scope
    /// anywhere — so that a call goes straight to the original. One atomic load; lets a
    /// caller take a faster path that skips the point (the answer can change at any time).
    @inlinable public var isPassingThrough: Bool {
        state.activity.load(ordering: .relaxed) == 0
    }

    /// Calls the real implementation, bypassing any chaos.
    @inlinable public func callOriginal(_ arguments: Arguments) async throws(Failure) -> Result {
        try await original(arguments)
    }

    /// Names a provider so that profiles can ask for it (`"offline"`, `"status"` …);
    /// `parameters` describes what it takes, for `chaos list` (e.g. `"days: number"`).
    public func addCatalogueItem(
        _ itemName: String,
        parameters: String = "",
        _ make: @escaping @Sendable (ProfileParameters) throws(ChaosError) -> Provider
    ) {
        catalogue.add(itemName, parameters: parameters, make)
    }

    /// Lets profiles narrow an entry to some calls (`"match": {"path": "/users"}`):
    /// `make` turns the conditions into a test over the arguments, or throws when they make no sense.
    public func setArgumentMatcher(
        _ make: @escaping @Sendable (ProfileParameters) throws(ChaosError) -> @Sendable (Arguments) -> Bool
    ) {
        catalogue.setMatcher(make)
    }

    @inlinable func dispatch(_ arguments: Arguments) async throws(Failure) -> Result {
        if state.scopes.load(ordering: .relaxed) != 0, let scoped = ScopeFrame.installation(for: state) {
            return try await run(unsafeDowncast(scoped, to: Installed.self), arguments)
        }
        if let installed = state.top() {
            return try await run(installed, arguments)
        }
        return try await original(arguments)
    }

    @inlinable func run(_ installed: Installed, _ arguments: Arguments) async throws(Failure) -> Result {
        try await evaluate(installed.root, installed, installed.nextCallIndex(), arguments)
    }

    @inlinable func evaluate(
        _ node: RuntimeNode<Arguments, Result, Failure, Provider.Body>,
        _ installed: Installed, _ callIndex: Int, _ arguments: Arguments
    ) async throws(Failure) -> Result {
        switch node {
        case .original:
            return try await original(arguments)
        case .constant(let value):
            return value
        case .random(let generator, let salt):
            var source = SeededRandom(seed: installed.randomSeed(call: callIndex, salt: salt))
            return generator.generate(using: &source)
        case .throwing(let error):
            throw error
        case .block(let body):
            return try await body(AsyncCallEnvironment(
                arguments: arguments, callIndex: callIndex, pointName: name,
                entrySeed: installed.seed, original: original
            ))
        case .sequential(let nodes, let counter):
            let step = Swift.min(counter.next(), nodes.count - 1)
            return try await evaluate(nodes[step], installed, callIndex, arguments)
        case .composite(let cases, let otherwise):
            for branch in cases where branch.condition(arguments) {
                return try await evaluate(branch.node, installed, callIndex, arguments)
            }
            return try await evaluate(otherwise, installed, callIndex, arguments)
        case .probability(let p, let inner, let salt):
            var source = SeededRandom(seed: installed.randomSeed(call: callIndex, salt: salt))
            if source.nextUnitInterval() < p {
                return try await evaluate(inner, installed, callIndex, arguments)
            }
            return try await original(arguments)
        case .times(let limit, let inner, let counter):
            if counter.next() < limit {
                return try await evaluate(inner, installed, callIndex, arguments)
            }
            return try await original(arguments)
        case .delayed(let delay, let inner):
            // A cancelled sleep still answers: chaos must not turn into a CancellationError
            // the point's Failure type may not be able to express.
            try? await Task.sleep(for: delay)
            return try await evaluate(inner, installed, callIndex, arguments)
        }
    }
}

extension AsyncInjectionPoint where Arguments == Void {
    /// Calls a point that takes no arguments.
    @inlinable public func callAsFunction() async throws(Failure) -> Result {
        try await self(())
    }
}

/// Blocks the calling thread for `duration` (the sync points' `.delayed(by:)`).
@usableFromInline func sleepBlocking(for duration: Duration) {
    let (seconds, attoseconds) = duration.components
    Thread.sleep(forTimeInterval: Double(seconds) + Double(attoseconds) * 1e-18)
}

/// A catalogue item as tools list it.
public struct CatalogueItemInfo: Sendable, Hashable {
    /// The name profiles use.
    public let name: String
    /// What parameters it takes, e.g. `"days: number"`; empty when none.
    public let parameters: String
}

/// The named providers a point offers to profiles, and how profiles' `match` conditions
/// read the point's arguments.
final class Catalogue<Provider: ChaosProviderProtocol>: Sendable {
    typealias Maker = @Sendable (ProfileParameters) throws(ChaosError) -> Provider
    typealias Matcher = @Sendable (ProfileParameters) throws(ChaosError) -> @Sendable (Provider.Arguments) -> Bool
    private let items = Locked<[String: (make: Maker, parameters: String)]>([:])
    private let argumentMatcher = Locked<Matcher?>(nil)
    private let resultCheck = Locked<(@Sendable (Provider.Result) throws(ChaosError) -> Void)?>(nil)

    func setResultValidator(_ check: @escaping @Sendable (Provider.Result) throws(ChaosError) -> Void) {
        resultCheck.withLock { $0 = check }
    }

    /// Runs the point's result validator, if any, on every constant of `node`.
    func validateConstants<Body>(
        _ node: ChaosProviderNode<Provider.Arguments, Provider.Result, Provider.Failure, Body>
    ) throws(ChaosError) {
        guard let check = resultCheck.withLock({ $0 }) else { return }
        try node.forEachConstant(check)
    }

    func has(_ name: String) -> Bool {
        items.withLock { $0[name] != nil }
    }

    func setMatcher(_ matcher: @escaping Matcher) {
        argumentMatcher.withLock { $0 = matcher }
    }

    func matcher(_ conditions: ProfileParameters, pointName: String) throws(ChaosError) -> @Sendable (Provider.Arguments) -> Bool {
        guard let make = argumentMatcher.withLock({ $0 }) else {
            throw ChaosError(.invalidProvider, subject: pointName, "this point takes no match conditions; remove \"match\" from the entry")
        }
        return try make(conditions)
    }

    func add(_ name: String, parameters: String, _ make: @escaping Maker) {
        items.withLock { $0[name] = (make, parameters) }
    }

    func make(_ name: String, _ parameters: ProfileParameters, pointName: String) throws(ChaosError) -> Provider {
        let (maker, known) = items.withLock { ($0[name]?.make, $0.keys.sorted()) }
        guard let maker else {
            let choices = known.isEmpty ? "this point has no catalogue items" : "choose one of: \(known.joined(separator: ", "))"
            throw ChaosError(.invalidProvider, subject: pointName, "no catalogue item named '\(name)'; \(choices)")
        }
        return try maker(parameters)
    }

    /// Each item's name and what parameters it takes, sorted by name.
    var descriptions: [CatalogueItemInfo] {
        items.withLock { $0.map { CatalogueItemInfo(name: $0.key, parameters: $0.value.parameters) }.sorted { $0.name < $1.name } }
    }
}
