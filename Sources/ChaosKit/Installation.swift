public import Synchronization

/// A thread-safe counter; `next()` hands out 0, 1, 2 … exactly once each under concurrency.
@usableFromInline final class CallCounter: Sendable {
    @usableFromInline let value = Atomic<Int>(0)

    @usableFromInline init() {}

    @inlinable func next() -> Int {
        value.wrappingAdd(1, ordering: .relaxed).oldValue
    }
}

/// A provider as it runs once applied: every counting node has its own counter and every
/// random node its own salt, so nested providers count and draw independently.
@usableFromInline indirect enum RuntimeNode<Arguments, Result: Sendable, Failure: Error, Body: Sendable>: Sendable {
    case original
    case constant(Result)
    case random(RandomGenerator<Result>, salt: UInt64)
    case throwing(Failure)
    case block(Body)
    case sequential([RuntimeNode], CallCounter)
    case composite([(condition: @Sendable (Arguments) -> Bool, node: RuntimeNode)], otherwise: RuntimeNode)
    case probability(Double, RuntimeNode, salt: UInt64)
    case times(Int, RuntimeNode, CallCounter)
    case delayed(Duration, RuntimeNode)

    typealias Node = ChaosProviderNode<Arguments, Result, Failure, Body>

    var usesCallIndex: Bool {
        switch self {
        case .original, .constant, .throwing: false
        case .random, .block, .probability: true
        case .sequential(let nodes, _): nodes.contains { $0.usesCallIndex }
        case .composite(let cases, let otherwise): otherwise.usesCallIndex || cases.contains { $0.node.usesCallIndex }
        case .times(_, let inner, _), .delayed(_, let inner): inner.usesCallIndex
        }
    }

    init(_ node: Node) {
        var salt: UInt64 = 0
        self.init(node, salt: &salt)
    }

    private init(_ node: Node, salt: inout UInt64) {
        salt &+= 1
        switch node {
        case .original: self = .original
        case .constant(let value): self = .constant(value)
        case .random(let generator): self = .random(generator, salt: salt)
        case .throwing(let error): self = .throwing(error)
        case .block(let body): self = .block(body)
        case .sequential(let nodes):
            self = .sequential(nodes.map { RuntimeNode($0, salt: &salt) }, CallCounter())
        case .composite(let cases, let otherwise):
            let compiled = cases.map { (condition: $0.condition, node: RuntimeNode($0.provider, salt: &salt)) }
            self = .composite(compiled, otherwise: RuntimeNode(otherwise, salt: &salt))
        case .probability(let p, let inner):
            let mySalt = salt
            self = .probability(p, RuntimeNode(inner, salt: &salt), salt: mySalt)
        case .times(let n, let inner): self = .times(n, RuntimeNode(inner, salt: &salt), CallCounter())
        case .delayed(let delay, let inner): self = .delayed(delay, RuntimeNode(inner, salt: &salt))
        }
    }
}

/// One applied entry on one point: its provider, its seed and its call counter.
@usableFromInline final class Installation<Arguments, Result: Sendable, Failure: Error, Body: Sendable>: Sendable {
    @usableFromInline let pointName: String
    @usableFromInline let seed: UInt64
    @usableFromInline let calls = CallCounter()
    @usableFromInline let root: RuntimeNode<Arguments, Result, Failure, Body>
    /// Whether any node reads the call index (blocks, random draws); when none does, the
    /// shared call counter is not touched, which keeps `.constant` off a contended cache line.
    @usableFromInline let usesCallIndex: Bool
    /// The block when the whole provider is one `.block` (the usual C hook), so that the
    /// call path runs it without walking the node tree.
    @usableFromInline let rootBlock: Body?

    init(pointName: String, seed: UInt64, node: ChaosProviderNode<Arguments, Result, Failure, Body>) {
        self.pointName = pointName
        self.seed = seed
        self.root = RuntimeNode(node)
        self.usesCallIndex = root.usesCallIndex
        if case .block(let body) = node { rootBlock = body } else { rootBlock = nil }
    }

    /// The index of a new call (0 when no node reads it).
    @inlinable func nextCallIndex() -> Int {
        usesCallIndex ? calls.next() : 0
    }

    /// The seed of call `callIndex`'s random draws at the node salted `salt`.
    @inlinable func randomSeed(call callIndex: Int, salt: UInt64) -> UInt64 {
        SeededRandom.derive(seed, UInt64(bitPattern: Int64(callIndex)), salt)
    }
}

/// What a point's state must offer to code that does not know the point's types.
protocol AnyPointState: AnyObject, Sendable {
    var name: String { get }
    func pushGlobal(_ installation: AnyObject)
    func removeGlobal(_ installation: AnyObject) -> Bool
    func scopeEntered()
    func scopeLeft()
    func retainActivation() throws(ChaosError)
    func releaseActivation()
    func notifyChanged()
}

/// The mutable side of a point: the global stack of applied entries, and the one atomic
/// word the hot path reads.
@usableFromInline final class PointState<Installed: AnyObject & Sendable>: AnyPointState, Sendable {
    /// Global entries plus live scopes that involve this point. Zero means "call the original".
    @usableFromInline let activity = Atomic<Int>(0)
    /// Live scopes that involve this point (a task-local lookup is only worth it then).
    @usableFromInline let scopes = Atomic<Int>(0)
    @usableFromInline let stack = Locked<[Installed]>([])
    /// The newest global entry as an unretained object address (0: none), for callers that
    /// read it without the lock or a reference: C hooks, inside a hook section. It is only
    /// written under `stack`'s lock, and a removed entry is handed to the activation's
    /// ``PointActivation/retire(_:)``, which keeps it alive until such readers are done.
    @usableFromInline let topAddress = Atomic<UInt>(0)
    let name: String
    /// What to do when the point starts and stops being used (C hooks patch their slots).
    let activation: (any PointActivation)?
    /// Users of the activation: global entries plus live scopes. Only touched off the
    /// call path, and only for points that have an activation.
    private let users = Locked<Int>(0)

    init(name: String, activation: (any PointActivation)? = nil) {
        self.name = name
        self.activation = activation
    }

    /// Counts one more user; the first one activates the point. On error nothing changed.
    func retainActivation() throws(ChaosError) {
        guard let activation else { return }
        try users.withLock { (count: inout Int) throws(ChaosError) in
            if count == 0 { try activation.activate() }
            count += 1
        }
    }

    /// Counts one user less; the last one deactivates the point.
    func releaseActivation() {
        guard let activation else { return }
        users.withLock { count in
            count -= 1
            if count == 0 { activation.deactivate() }
        }
    }

    /// Tells an active point's activation that its entries or scopes changed.
    func notifyChanged() {
        guard let activation else { return }
        users.withLock { count in
            if count > 0 { activation.changed() }
        }
    }

    /// The entry that wins globally: the last one applied.
    @inlinable func top() -> Installed? {
        stack.withLock { $0.last }
    }

    func pushGlobal(_ installation: AnyObject) {
        let typed = unsafeDowncast(installation, to: Installed.self)
        stack.withLock { stack in
            stack.append(typed)
            publishTop(stack)
        }
        activity.wrappingAdd(1, ordering: .releasing)
    }

    /// Removes exactly this installation (by identity: one entry may be applied by
    /// several `Chaos` builders, each with its own installation).
    func removeGlobal(_ installation: AnyObject) -> Bool {
        let removed = stack.withLock { stack -> Bool in
            guard let index = stack.lastIndex(where: { $0 === installation }) else { return false }
            stack.remove(at: index)
            publishTop(stack)
            return true
        }
        if removed {
            activity.wrappingSubtract(1, ordering: .releasing)
            activation?.retire(installation)
        }
        return removed
    }

    /// Keeps `topAddress` equal to the stack's last element; called under the stack's lock.
    private func publishTop(_ stack: [Installed]) {
        let address = stack.last.map { UInt(bitPattern: Unmanaged.passUnretained($0).toOpaque()) } ?? 0
        topAddress.store(address, ordering: .releasing)
    }

    func scopeEntered() {
        scopes.wrappingAdd(1, ordering: .releasing)
        activity.wrappingAdd(1, ordering: .releasing)
    }

    func scopeLeft() {
        activity.wrappingSubtract(1, ordering: .releasing)
        scopes.wrappingSubtract(1, ordering: .releasing)
    }
}
