/// A typed provider tree made ready to run: every counting node (a sequence, `times`) has
/// its own counter and every drawing node (a random leaf, `probability`) its own salt, so
/// nested providers count and draw independently. The shape is the ``ProviderTree``'s;
/// what a modifier does is its ``ModifierRuntime``'s.
@usableFromInline indirect enum CompiledNode<Arguments, Result: Sendable, Failure: Error, Body: Sendable>: Sendable {
    case leaf(ProviderLeaf<Result, Failure, Body>, salt: UInt64)
    case sequential([CompiledNode], CallCounter)
    case composite([(condition: ArgumentCondition<Arguments>, node: CompiledNode)], otherwise: CompiledNode)
    case modified(ModifierRuntime, CompiledNode)

    typealias Tree = ChaosProviderNode<Arguments, Result, Failure, Body>

    init(_ tree: Tree) {
        var salt: UInt64 = 0
        self.init(tree, salt: &salt)
    }

    /// Salts are the nodes' positions in a depth-first walk, so a provider's draws depend
    /// only on its shape and the seed.
    private init(_ tree: Tree, salt: inout UInt64) {
        salt &+= 1
        switch tree {
        case .leaf(let leaf):
            self = .leaf(leaf, salt: salt)
        case .sequential(let children):
            self = .sequential(children.map { CompiledNode($0, salt: &salt) }, CallCounter())
        case .composite(let branches, let otherwise):
            let compiled = branches.map { (condition: $0.condition, node: CompiledNode($0.provider, salt: &salt)) }
            self = .composite(compiled, otherwise: CompiledNode(otherwise, salt: &salt))
        case .modified(let modifier, let child):
            let runtime = modifier.compiled(salt: salt)
            self = .modified(runtime, CompiledNode(child, salt: &salt))
        }
    }

    var usesCallIndex: Bool {
        switch self {
        case .leaf(let leaf, _): leaf.usesCallIndex
        case .sequential(let children, _): children.contains { $0.usesCallIndex }
        case .composite(let branches, let otherwise): otherwise.usesCallIndex || branches.contains { $0.node.usesCallIndex }
        case .modified(let runtime, let child): runtime.modifier.usesCallIndex || child.usesCallIndex
        }
    }

    /// What call `callIndex` does, without doing it: the leaf that answers, its salt, and
    /// the waits of the delays on the way there (added to `delay`). Counters advance;
    /// nothing else happens.
    @inlinable func resolve(
        _ arguments: Arguments, entrySeed: UInt64, callIndex: Int, delay: inout Duration
    ) -> (leaf: ProviderLeaf<Result, Failure, Body>, salt: UInt64) {
        switch self {
        case .leaf(let leaf, let salt):
            return (leaf, salt)
        case .sequential(let children, let counter):
            let step = Swift.min(counter.next(), children.count - 1)
            return children[step].resolve(arguments, entrySeed: entrySeed, callIndex: callIndex, delay: &delay)
        case .composite(let branches, let otherwise):
            for branch in branches where branch.condition.test(arguments) {
                return branch.node.resolve(arguments, entrySeed: entrySeed, callIndex: callIndex, delay: &delay)
            }
            return otherwise.resolve(arguments, entrySeed: entrySeed, callIndex: callIndex, delay: &delay)
        case .modified(let runtime, let child):
            switch runtime.decide(entrySeed: entrySeed, callIndex: callIndex) {
            case .proceed:
                break
            case .wait(let wait):
                delay += wait
            case .original:
                return (.original, 0)
            }
            return child.resolve(arguments, entrySeed: entrySeed, callIndex: callIndex, delay: &delay)
        }
    }
}

/// One applied entry on one point: its compiled provider, its seed and its call counter.
@usableFromInline final class Installation<Arguments, Result: Sendable, Failure: Error, Body: Sendable>: Sendable {
    @usableFromInline let pointName: String
    @usableFromInline let seed: UInt64
    @usableFromInline let calls = CallCounter()
    @usableFromInline let root: CompiledNode<Arguments, Result, Failure, Body>
    /// Whether any node reads the call index (blocks, random draws); when none does, the
    /// shared call counter is not touched, which keeps `.constant` off a contended cache line.
    @usableFromInline let usesCallIndex: Bool
    /// The value when the whole provider is one `.constant`: the call path returns it
    /// without resolving anything.
    @usableFromInline let rootConstant: Result?
    /// The block when the whole provider is one `.block` (the usual C hook), so that the
    /// call path runs it without resolving the tree.
    @usableFromInline let rootBlock: Body?

    init(pointName: String, seed: UInt64, tree: ChaosProviderNode<Arguments, Result, Failure, Body>) {
        self.pointName = pointName
        self.seed = seed
        self.root = CompiledNode(tree)
        self.usesCallIndex = root.usesCallIndex
        if case .leaf(.constant(let value)) = tree { rootConstant = value } else { rootConstant = nil }
        if case .leaf(.block(let body)) = tree { rootBlock = body } else { rootBlock = nil }
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
