public import Synchronization

/// A named, replaceable async function: the place where chaos can take over.
///
/// The async twin of ``InjectionPoint``, over the same point core and with the same
/// features; its `.block` providers are async and can `await env.callOriginal()`, and
/// `.delayed(by:)` suspends instead of blocking a thread.
public final class AsyncInjectionPoint<Arguments, Result: Sendable, Failure: Error>: Sendable {
    /// The chaos providers this point accepts.
    public typealias Provider = AsyncChaosProvider<Arguments, Result, Failure>
    @usableFromInline typealias Installed = PointCore<Provider>.Installed

    @usableFromInline let original: @Sendable (Arguments) async throws(Failure) -> Result
    @usableFromInline let core: PointCore<Provider>

    /// A point called `name` whose real implementation is `original`; `catalogue` and
    /// `activation` mean what they mean for ``InjectionPoint``.
    public init(
        _ name: String, catalogue: PointCatalogue<Provider> = [], activation: (any PointActivation)? = nil,
        _ original: @escaping @Sendable (Arguments) async throws(Failure) -> Result
    ) {
        self.original = original
        let signature = PointInfo.signature(
            arguments: Arguments.self, result: Result.self, failure: Failure.self, isAsync: true)
        self.core = PointCore(name: name, signature: signature, catalogue: catalogue, activation: activation)
    }

    /// A point that takes no arguments: `AsyncInjectionPoint("app.fetch") { try await fetch() }`.
    public convenience init(
        _ name: String, catalogue: PointCatalogue<Provider> = [], activation: (any PointActivation)? = nil,
        _ original: @escaping @Sendable () async throws(Failure) -> Result
    ) where Arguments == Void {
        self.init(name, catalogue: catalogue, activation: activation) { (_: Void) async throws(Failure) -> Result in
            try await original()
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

    /// What the point does right now for calls outside any task scope, when that is known
    /// without calling it (see ``InjectionPoint/currentBehaviour``).
    public var currentBehaviour: PointBehaviour<Result> {
        core.currentBehaviour
    }

    /// True while no chaos involves this point — none applied globally, no live scope
    /// anywhere — so that a call goes straight to the original. One atomic load; lets a
    /// caller take a faster path that skips the point (the answer can change at any time).
    @inlinable public var isPassingThrough: Bool {
        core.activity.load(ordering: .relaxed) == 0
    }

    /// Calls the point: the applied chaos if there is any for this task, else the original.
    @inlinable public func callAsFunction(_ arguments: Arguments) async throws(Failure) -> Result {
        if core.activity.load(ordering: .relaxed) == 0 {
            return try await original(arguments)
        }
        return try await dispatch(arguments)
    }

    /// Calls the real implementation, bypassing any chaos.
    @inlinable public func callOriginal(_ arguments: Arguments) async throws(Failure) -> Result {
        try await original(arguments)
    }

    @inlinable func dispatch(_ arguments: Arguments) async throws(Failure) -> Result {
        if core.journaled.load(ordering: .relaxed) { return try await dispatchJournaled(arguments) }
        var note = CallNote()
        return try await decide(arguments, note: &note)
    }

    /// The applied chaos for this call (the task's scoped entry, else the newest global one)
    /// or the original, noting in `note` which entry decided it, and as which call.
    @inlinable func decide(_ arguments: Arguments, note: inout CallNote) async throws(Failure) -> Result {
        // The scope keeps its entry alive while the task runs; a reference costs nothing
        // next to a suspension.
        if let scoped = core.scopedEntry() {
            if let value = scoped._withUnsafeGuaranteedRef({ $0.scopedConstant(observed: core.observed, noting: &note) }
            ) {
                return value
            }
            return try await run(scoped.takeUnretainedValue(), arguments, note: &note)
        }
        switch core.readTop(noting: &note) {
        case .none: return try await original(arguments)
        case .constant(let value): return value
        case .entry(let installed): return try await run(installed, arguments, note: &note)
        }
    }

    /// A call through the journal: decided as any other, then recorded with what it returned.
    @inlinable func dispatchJournaled(_ arguments: Arguments) async throws(Failure) -> Result {
        var note = CallNote()
        let outcome: Swift.Result<Result, Failure>
        do throws(Failure) {
            outcome = .success(try await decide(arguments, note: &note))
        } catch {
            outcome = .failure(error)
        }
        CallJournal.shared.record(core, arguments, outcome, note: note)
        return try outcome.get()
    }

    /// What one call of `installed` does, noting its call index and whether it acted.
    @inlinable func run(_ installed: Installed, _ arguments: Arguments, note: inout CallNote) async throws(Failure)
        -> Result
    {
        if installed.expiresAt != 0, installed.hasExpired { return try await original(arguments) }
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
        if let delay = waits, delay > .zero {
            // A cancelled sleep still answers: chaos must not turn into a CancellationError
            // the point's Failure type may not be able to express.
            try? await Task.sleep(for: delay)
        }
        switch leaf {
        case .original:
            return try await original(arguments)
        case .pass:
            guard let next = core.entry(after: installed) else { return try await original(arguments) }
            return try await run(next, arguments, note: &note)
        case .constant(let value):
            return value
        case .random(let generator):
            var source = SeededRandom(seed: installed.randomSeed(call: callIndex, salt: salt))
            return generator.generate(using: &source)
        case .throwing(let error):
            throw error
        case .block(let body):
            return try await body(
                AsyncCallEnvironment(arguments: arguments, callIndex: callIndex, entrySeed: installed.seed, point: self)
            )
        }
    }
}

extension AsyncInjectionPoint where Arguments == Void {
    /// Calls a point that takes no arguments.
    @inlinable public func callAsFunction() async throws(Failure) -> Result {
        try await self(())
    }
}
