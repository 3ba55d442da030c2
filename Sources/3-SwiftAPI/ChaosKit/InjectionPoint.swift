import Foundation
public import Synchronization

/// A named, replaceable synchronous function: the place where chaos can take over.
///
/// Declare one where your code would call a dependency, and call it like a function:
/// ```swift
/// enum Points {
///     static let now = InjectionPoint("app.now") { Date() }   // InjectionPoint<Void, Date, Never>
/// }
/// let today = Points.now()
/// ```
/// With nothing applied, a call costs one atomic load and a branch on top of the original.
/// A point that cannot throw (`Failure == Never`) cannot be given a `.throwing` provider:
/// that is a compile-time error. The name is how profiles find the point: keep it stable,
/// and do not create two live points with one name (applying to either then fails with
/// ``ChaosError/Kind/duplicatePointName``).
///
/// ``AsyncInjectionPoint`` is its async twin; both are thin drivers over one point core,
/// with the same features.
public final class InjectionPoint<Arguments, Result: Sendable, Failure: Error>: Sendable {
    /// The chaos providers this point accepts.
    public typealias Provider = ChaosProvider<Arguments, Result, Failure>
    @usableFromInline typealias Installed = PointCore<Provider>.Installed

    @usableFromInline let original: @Sendable (Arguments) throws(Failure) -> Result
    @usableFromInline let core: PointCore<Provider>

    /// A point called `name` whose real implementation is `original`.
    ///
    /// - Parameters:
    ///   - name: the stable name profiles use; keep it unique among live points.
    ///   - catalogue: the named providers profiles may ask for, how a profile's `match`
    ///     reads the arguments, and which constants the point can return.
    ///   - activation: for points that must be prepared before use (C hooks patch their
    ///     slots): it runs before the first entry or scope involving the point takes
    ///     effect (and may refuse it), and is undone after the last one has gone (see
    ///     ``PointActivation``). Calls cost the same either way.
    ///   - original: the real implementation, which calls run when no chaos applies.
    public init(
        _ name: String, catalogue: PointCatalogue<Provider> = [], activation: (any PointActivation)? = nil,
        _ original: @escaping @Sendable (Arguments) throws(Failure) -> Result
    ) {
        self.original = original
        let signature = PointInfo.signature(
            arguments: Arguments.self, result: Result.self, failure: Failure.self, isAsync: false)
        self.core = PointCore(name: name, signature: signature, catalogue: catalogue, activation: activation)
    }

    /// A point that takes no arguments: `InjectionPoint("app.now") { Date() }`.
    public convenience init(
        _ name: String, catalogue: PointCatalogue<Provider> = [], activation: (any PointActivation)? = nil,
        _ original: @escaping @Sendable () throws(Failure) -> Result
    ) where Arguments == Void {
        self.init(name, catalogue: catalogue, activation: activation) { (_: Void) throws(Failure) -> Result in
            try original()
        }
    }

    /// The stable name profiles use for this point.
    public var name: String { core.name }

    /// The named providers profiles may ask for on this point.
    public var catalogue: PointCatalogue<Provider> { core.catalogue }

    /// An entry that makes this point behave as `provider` says.
    public func entry(_ provider: Provider) -> ProfileEntry {
        ProfileEntry(self, provider)
    }

    /// The typed provider `description` stands for on this point (catalogue items made,
    /// parameters checked, `match` read), as applying it would make it; for tools that
    /// compile providers for another delivery (`chaos run`).
    @_spi(Hooks) public func provider(for description: ProviderDescription) throws(ChaosError) -> Provider {
        Provider(node: try core.typed(description))
    }

    /// The newest global entry's provider tree and seed, when one is applied: for points
    /// whose activation mirrors them into another engine.
    @_spi(Hooks) public var globalTop:
        (
            tree: ChaosProviderNode<Arguments, Result, Failure, Provider.Body>, seed: UInt64,
            entry: InstalledEntryReference
        )?
    {
        guard let top = core.top() else { return nil }
        return (top.tree, top.seed, InstalledEntryReference(top))
    }

    /// Every global entry, oldest first (the newest decides): for points whose activation
    /// compiles the whole stack into another engine.
    @_spi(Hooks) public var globalEntries:
        [(
            tree: ChaosProviderNode<Arguments, Result, Failure, Provider.Body>, seed: UInt64,
            entry: InstalledEntryReference
        )]
    {
        core.globalInstallations().map { ($0.tree, $0.seed, InstalledEntryReference($0)) }
    }

    /// Whether a task scope involves this point somewhere in the process right now.
    @_spi(Hooks) public var hasLiveScopes: Bool {
        core.scopes.load(ordering: .acquiring) != 0
    }

    /// What the point does right now for calls outside any task scope, when that is known
    /// without calling it: for C fast paths that mirror a point instead of calling it.
    /// The answer can change at any time; an activation's ``PointActivation/changed()``
    /// says when.
    public var currentBehaviour: PointBehaviour<Result> {
        core.currentBehaviour
    }

    /// Calls the point: the applied chaos if there is any for this task, else the original.
    @inlinable public func callAsFunction(_ arguments: Arguments) throws(Failure) -> Result {
        if core.activity.load(ordering: .relaxed) == 0 {
            return try original(arguments)
        }
        // A global constant (the common debug-session case) is answered here, inline, without
        // the call into `dispatch` and its frame.
        if let value = core.globalConstantOutsideScopes() { return value }
        return try dispatch(arguments)
    }

    /// Calls the real implementation, bypassing any chaos.
    @inlinable public func callOriginal(_ arguments: Arguments) throws(Failure) -> Result {
        try original(arguments)
    }

    @inlinable func dispatch(_ arguments: Arguments) throws(Failure) -> Result {
        if core.journaled.load(ordering: .relaxed) { return try dispatchJournaled(arguments) }
        var note = CallNote()
        return try decide(arguments, note: &note)
    }

    /// The applied chaos for this call (the task's scoped entry, else the newest global one)
    /// or the original, noting in `note` which entry decided it, and as which call.
    @inlinable @inline(__always) func decide(_ arguments: Arguments, note: inout CallNote) throws(Failure) -> Result {
        if let scoped = core.scopedEntry() {
            return try runGuaranteed(scoped, arguments, note: &note)
        }
        switch core.readTop(noting: &note) {
        case .none: return try original(arguments)
        case .constant(let value): return value
        case .entry(let installed): return try run(installed, arguments, note: &note)
        }
    }

    /// Runs an entry that something else keeps alive (a scope, a hook section) without
    /// taking a reference to it.
    @inlinable @inline(__always) func runGuaranteed(_ installed: Unmanaged<Installed>, _ arguments: Arguments)
        throws(Failure) -> Result
    {
        var note = CallNote()
        return try runGuaranteed(installed, arguments, note: &note)
    }

    /// ``runGuaranteed(_:_:)``, noting which call of the entry it was.
    @inlinable @inline(__always) func runGuaranteed(
        _ installed: Unmanaged<Installed>, _ arguments: Arguments, note: inout CallNote
    ) throws(Failure) -> Result {
        do {
            return try installed._withUnsafeGuaranteedRef { installed in
                if let value = installed.scopedConstant(observed: core.observed, noting: &note) { return value }
                return try run(installed, arguments, note: &note)
            }
        } catch {
            // `_withUnsafeGuaranteedRef` rethrows untyped; only `Failure` can come out.
            throw error as! Failure
        }
    }

    /// What one call of `installed` does: resolve the provider, wait, then answer.
    @inlinable func run(_ installed: Installed, _ arguments: Arguments) throws(Failure) -> Result {
        var note = CallNote()
        return try run(installed, arguments, note: &note)
    }

    /// A call through the journal: decided as any other, then recorded with what it returned.
    @inlinable func dispatchJournaled(_ arguments: Arguments) throws(Failure) -> Result {
        var note = CallNote()
        let outcome: Swift.Result<Result, Failure>
        do throws(Failure) {
            outcome = .success(try decide(arguments, note: &note))
        } catch {
            outcome = .failure(error)
        }
        CallJournal.shared.record(core, arguments, outcome, note: note)
        return try outcome.get()
    }

    /// What one call of `installed` does, noting its call index and whether it acted.
    @inlinable func run(_ installed: Installed, _ arguments: Arguments, note: inout CallNote) throws(Failure)
        -> Result
    {
        if installed.expiresAt != 0, installed.hasExpired { return try original(arguments) }
        let callIndex = installed.recordCall()
        if let value = installed.rootConstant {
            installed.recordAct(callIndex, observed: core.observed.load(ordering: .relaxed))
            note.decided(by: installed, call: callIndex, acted: true)
            return value
        }
        var waits: Duration?
        let (leaf, salt, acts) = installed.root.resolve(arguments, entrySeed: installed.seed, delay: &waits)
        note.decided(by: installed, call: callIndex, acted: acts)
        if acts { installed.recordAct(callIndex, observed: core.observed.load(ordering: .relaxed)) }
        if let delay = waits, delay > .zero { sleepBlocking(for: delay) }
        switch leaf {
        case .original:
            return try original(arguments)
        case .pass:
            guard let next = core.entry(after: installed) else { return try original(arguments) }
            return try run(next, arguments, note: &note)
        case .constant(let value):
            return value
        case .random(let generator):
            var source = SeededRandom(seed: installed.randomSeed(call: callIndex, salt: salt))
            return generator.generate(using: &source)
        case .throwing(let error):
            throw error
        case .block(let body):
            return try body(
                CallEnvironment(arguments: arguments, callIndex: callIndex, entrySeed: installed.seed, point: self))
        }
    }

    /// Calls the point like `callAsFunction`, but reads its newest global entry without the
    /// point's lock and without taking a reference to it: the hot path of C hooks.
    ///
    /// Only for callers inside a hook section (CChaosGrace): a reverted entry of a point
    /// whose activation ``PointActivation/readsEntriesInHookSections`` stays alive until
    /// every hook section that may have read it has ended.
    @_spi(Hooks) @inlinable @inline(__always)
    public func callWithoutRetaining(_ arguments: Arguments) throws(Failure) -> Result {
        // No `activity` check first: with no scope, the top entry alone decides.
        if let scoped = core.scopedEntry() {
            return try runGuaranteed(scoped, arguments)
        }
        guard let top = UnsafeRawPointer(bitPattern: core.topAddress.load(ordering: .acquiring)) else {
            return try original(arguments)
        }
        let installed = Unmanaged<Installed>.fromOpaque(top)
        do {
            return try installed._withUnsafeGuaranteedRef { installed in
                // Called through optional chaining: unlike `if let`, that does not retain the block.
                if installed.rootBlock != nil {
                    let callIndex = installed.recordCall()
                    installed.recordAct(callIndex, observed: core.observed.load(ordering: .relaxed))
                    if let result = try installed.rootBlock?(
                        CallEnvironment(
                            arguments: arguments, callIndex: callIndex, entrySeed: installed.seed, point: self
                        ))
                    {
                        return result
                    }
                }
                return try run(installed, arguments)
            }
        } catch {
            throw error as! Failure
        }
    }
}

extension InjectionPoint where Arguments == Void {
    /// Calls a point that takes no arguments.
    @inlinable public func callAsFunction() throws(Failure) -> Result {
        try self(())
    }
}

/// Blocks the calling thread for `duration` (the sync points' `.delayed(by:)`).
@usableFromInline func sleepBlocking(for duration: Duration) {
    let (seconds, attoseconds) = duration.components
    Thread.sleep(forTimeInterval: Double(seconds) + Double(attoseconds) * 1e-18)
}

extension PointCore {
    /// What the point does right now for calls outside any task scope (see
    /// ``InjectionPoint/currentBehaviour``).
    var currentBehaviour: PointBehaviour<Provider.Result> {
        if activity.load(ordering: .acquiring) == 0 { return .original }
        if scopes.load(ordering: .acquiring) != 0 { return .varying }
        guard let top = top() else { return .original }
        if let value = top.rootConstant { return .constant(value) }
        if case .leaf(.original, _, _) = top.root { return .original }
        return .varying
    }
}
