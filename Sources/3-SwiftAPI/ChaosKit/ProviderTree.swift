/// The one shape of every chaos provider, whoever builds it.
///
/// Code builds it through ``ChaosProvider`` and ``AsyncChaosProvider`` (`.constant(v)`,
/// `.sequential([…])`, `.probability(0.2)` …); JSON profiles and the `CHAOS` grammar build
/// it as a ``ProviderDescription``, whose leaves name catalogue items and whose conditions
/// are `match` objects. Applying an entry turns the description into the typed tree of its
/// point, so both are checked, summarised and run by the same code.
///
/// - `leaf`: what answers a call (see ``ProviderLeaf`` and ``DescribedLeaf``);
/// - `sequential`: call *i* uses child *i*; once past the end, the last one repeats;
/// - `composite`: the first branch whose condition holds wins, else `otherwise`;
/// - `modified`: a ``ProviderModifier`` (probability, times, delay) around a child.
public indirect enum ProviderTree<Leaf: Sendable, Condition: Sendable>: Sendable {
    /// What answers the call.
    case leaf(Leaf)
    /// Call *i* uses child *i*; the last one repeats. Never empty once applied.
    case sequential([ProviderTree])
    /// The first branch whose condition holds wins; otherwise `otherwise`.
    case composite([ProviderBranch<Condition, ProviderTree>], otherwise: ProviderTree)
    /// A modifier around a child.
    case modified(ProviderModifier, ProviderTree)
}

/// One branch of a composite provider: a condition and what to do when it holds.
public struct ProviderBranch<Condition: Sendable, Subtree: Sendable>: Sendable {
    /// When the branch applies.
    public let condition: Condition
    /// What the point does when it does.
    public let provider: Subtree

    /// A branch that uses `provider` when `condition` holds.
    public init(condition: Condition, provider: Subtree) {
        self.condition = condition
        self.provider = provider
    }
}

/// What a leaf or a condition says about itself in summaries.
public protocol ProviderSummarizable {
    /// A short rendering for logs and tools (`"constant(3)"`, `"offset(by: -1d)"`).
    var summary: String { get }
}

extension ProviderTree where Leaf: ProviderSummarizable, Condition: ProviderSummarizable {
    /// A short, readable rendering (`"sequential[constant(1), original] with probability 0.2"`),
    /// for logs and tools.
    public var summary: String {
        switch self {
        case .leaf(let leaf):
            return leaf.summary
        case .sequential(let children):
            return "sequential[\(children.map(\.summary).joined(separator: ", "))]"
        case .composite(let branches, let otherwise):
            let cases = branches.map { "\($0.provider.summary) when \($0.condition.summary)" }
            if case .leaf(let leaf) = otherwise, leaf.summary == "original" {
                return cases.count == 1 ? cases[0] : "composite[\(cases.joined(separator: "; "))]"
            }
            return "composite[\(cases.joined(separator: "; ")); otherwise \(otherwise.summary)]"
        case .modified(let modifier, let child):
            return modifier.summary(of: child.summary)
        }
    }
}

extension ProviderTree {
    /// Why this provider cannot be applied, or nil when it can: the structure's own rules
    /// and every modifier's check.
    public var problem: String? {
        switch self {
        case .leaf:
            return nil
        case .sequential(let children):
            if children.isEmpty {
                return "sequential([]) has no providers; give it at least one (the last one repeats)"
            }
            return children.lazy.compactMap(\.problem).first
        case .composite(let branches, let otherwise):
            return branches.lazy.compactMap(\.provider.problem).first ?? otherwise.problem
        case .modified(let modifier, let child):
            return modifier.problem ?? child.problem
        }
    }

    /// Calls `body` with every leaf, in order.
    public func forEachLeaf<Failure: Error>(_ body: (Leaf) throws(Failure) -> Void) throws(Failure) {
        switch self {
        case .leaf(let leaf):
            try body(leaf)
        case .sequential(let children):
            for child in children { try child.forEachLeaf(body) }
        case .composite(let branches, let otherwise):
            for branch in branches { try branch.provider.forEachLeaf(body) }
            try otherwise.forEachLeaf(body)
        case .modified(_, let child):
            try child.forEachLeaf(body)
        }
    }

    /// The same structure with every leaf replaced by a tree and every condition by
    /// another: how a description becomes a point's typed provider.
    public func transformed<OtherLeaf, OtherCondition, Failure: Error>(
        leaf transformLeaf: (Leaf) throws(Failure) -> ProviderTree<OtherLeaf, OtherCondition>,
        condition transformCondition: (Condition) throws(Failure) -> OtherCondition
    ) throws(Failure) -> ProviderTree<OtherLeaf, OtherCondition> {
        switch self {
        case .leaf(let leaf):
            return try transformLeaf(leaf)
        case .sequential(let children):
            var result: [ProviderTree<OtherLeaf, OtherCondition>] = []
            for child in children {
                result.append(try child.transformed(leaf: transformLeaf, condition: transformCondition))
            }
            return .sequential(result)
        case .composite(let branches, let otherwise):
            var result: [ProviderBranch<OtherCondition, ProviderTree<OtherLeaf, OtherCondition>>] = []
            for branch in branches {
                result.append(
                    ProviderBranch(
                        condition: try transformCondition(branch.condition),
                        provider: try branch.provider.transformed(leaf: transformLeaf, condition: transformCondition)
                    ))
            }
            return .composite(
                result, otherwise: try otherwise.transformed(leaf: transformLeaf, condition: transformCondition))
        case .modified(let modifier, let child):
            return .modified(modifier, try child.transformed(leaf: transformLeaf, condition: transformCondition))
        }
    }

    /// The modifiers anywhere in the tree, outermost first.
    public var modifiers: [ProviderModifier] {
        switch self {
        case .leaf: return []
        case .sequential(let children): return children.flatMap(\.modifiers)
        case .composite(let branches, let otherwise):
            return branches.flatMap(\.provider.modifiers) + otherwise.modifiers
        case .modified(let modifier, let child): return [modifier] + child.modifiers
        }
    }
}

extension ProviderTree {
    /// This tree acting only at `calls` (an ``ProviderModifier/at(_:)`` around it), inside
    /// a top-level selector of one branch whose fallback `isOriginal` says is the original
    /// (a `match`): calls outside the selector are not the entry's, so they are not counted.
    func placed(at calls: [Int], isOriginal: (Leaf) -> Bool) -> ProviderTree {
        if case .composite(let branches, .leaf(let fallback)) = self, branches.count == 1, isOriginal(fallback) {
            let branch = branches[0]
            return .composite(
                [ProviderBranch(condition: branch.condition, provider: .modified(.at(calls), branch.provider))],
                otherwise: .leaf(fallback))
        }
        return .modified(.at(calls), self)
    }

    /// How many calls this tree covers as a step of a `sequential`: *n* when it carries
    /// `times: n` (a ``ProviderModifier/times(_:)`` at its root, possibly under other
    /// modifiers or inside its selector, where ``selectorsOutermost(passesOn:)`` moves it),
    /// else one. So `[offline 2 times, original]` is offline for two calls.
    public func sequentialSpan(passesOn: (Leaf) -> Bool) -> Int {
        var node = self
        while true {
            switch node {
            case .modified(.times(let count), _):
                return count
            case .modified(_, let child):
                node = child
            case .composite(let branches, .leaf(let fallback)) where branches.count == 1 && passesOn(fallback):
                node = branches[0].provider
            default:
                return 1
            }
        }
    }

    /// The same tree with each modifier that stands directly around a *selector* moved
    /// inside it. A selector is a composite of one branch whose fallback hands the call to
    /// the point's next entry (`passesOn` says which leaves do): the calls it does not take
    /// are not the entry's at all, so they must not be counted by `times`, draw for
    /// `probability` or wait for `delay`. A lease bounds the entry and stays outermost.
    public func selectorsOutermost(passesOn: (Leaf) -> Bool) -> ProviderTree {
        switch self {
        case .leaf:
            return self
        case .sequential(let children):
            return .sequential(children.map { $0.selectorsOutermost(passesOn: passesOn) })
        case .composite(let branches, let otherwise):
            return .composite(
                branches.map {
                    ProviderBranch(
                        condition: $0.condition, provider: $0.provider.selectorsOutermost(passesOn: passesOn))
                }, otherwise: otherwise.selectorsOutermost(passesOn: passesOn))
        case .modified(let modifier, let child):
            let inner = child.selectorsOutermost(passesOn: passesOn)
            guard !modifier.isLease, case .composite(let branches, let otherwise) = inner, branches.count == 1,
                case .leaf(let fallback) = otherwise, passesOn(fallback)
            else { return .modified(modifier, inner) }
            let branch = branches[0]
            let moved = ProviderTree.modified(modifier, branch.provider).selectorsOutermost(passesOn: passesOn)
            return .composite([ProviderBranch(condition: branch.condition, provider: moved)], otherwise: otherwise)
        }
    }
}

/// A result that says "not this entry's call": the point hands the call to its next older
/// entry. Such a leaf never counts as an act, and a composite falling back to it selects
/// the entry's calls (see ``ProviderTree/selectorsOutermost(passesOn:)``).
@_spi(Hooks) public protocol CallPassingResult {
    /// Whether this result hands the call on.
    var passesCallOn: Bool { get }
}

extension ProviderLeaf {
    /// Whether this leaf hands the call to the point's next entry (a ``CallPassingResult``).
    @usableFromInline var passesCallOn: Bool {
        if case .pass = self { return true }
        if case .constant(let value) = self, let passing = value as? any CallPassingResult {
            return passing.passesCallOn
        }
        return false
    }
}

extension ProviderTree {
    /// ``selectorsOutermost(passesOn:)`` with the leaves' own notion of handing a call on.
    @_spi(Hooks) public func withSelectorsOutermost<Result, Failure, Body>() -> ProviderTree
    where Leaf == ProviderLeaf<Result, Failure, Body> {
        // A closure, not `\.passesCallOn`: a key path into a generic type is built at run
        // time on every use, which tripled the cost of applying an entry.
        selectorsOutermost(passesOn: { $0.passesCallOn })
    }

    /// ``sequentialSpan(passesOn:)`` with the leaves' own notion of handing a call on.
    @_spi(Hooks) public func stepSpan<Result, Failure, Body>() -> Int
    where Leaf == ProviderLeaf<Result, Failure, Body> {
        sequentialSpan(passesOn: { $0.passesCallOn })
    }
}

/// A condition over a call's arguments, as a typed composite provider tests it.
public struct ArgumentCondition<Arguments>: Sendable, ProviderSummarizable {
    /// Whether the branch applies to a call with these arguments.
    public let test: @Sendable (Arguments) -> Bool
    /// What the condition checks, for summaries (e.g. `{"host":"api.example.com"}`).
    public let summary: String
    /// What the condition is, as a value its point understands without calling `test`
    /// (e.g. a path pattern a C engine can match): for points that compile providers.
    public let tag: (any Hashable & Sendable)?

    /// A condition that holds when `test` returns true.
    public init(
        _ summary: String = "a condition", tag: (any Hashable & Sendable)? = nil,
        _ test: @escaping @Sendable (Arguments) -> Bool
    ) {
        self.test = test
        self.summary = summary
        self.tag = tag
    }
}
