import CChaosFaults
@_spi(Hooks) import ChaosKit

/// Compiles system point providers into entries of the fault engine's plan (the text of
/// Docs/FaultPlan.md). The provider semantics are Swift's; the engine only runs the tree:
///
/// | provider | plan node |
/// |---|---|
/// | `.original`, `.constant(.real)` | `original` |
/// | `.constant(.fail(errno:))`, `.resolverFailure` | `fail errno=…` / `fail ret=EAI_…` |
/// | `.constant(.short)`, clock outcomes, `.set`, `.unset` | `short`, `offset`, `frozen`, `speed`, `set`, `unset` |
/// | `.sequential` | `sequential` (runs of one child written `I*N`) |
/// | `.composite` over ``SystemTarget`` conditions | `composite` with `case` lines |
/// | `.pass`, `.constant(.pass)` | `pass` |
/// | `.probability`, `.times`, `.at(call:)`, `.delayed(by:)` | `probability`, `times`, `at`, `delay` |
///
/// Blocks, random values and conditions written as closures have no plan form: in-process
/// they are answered by Swift (an `ask` node), and `chaos run` refuses them.
struct SystemPlanCompiler {
    /// Who runs the plan.
    enum Delivery {
        /// This process (`speed` anchors at the instant the entry was made).
        case inProcess
        /// A program under `chaos run` (`speed` anchors at the start of its process tree).
        case program
    }

    /// Why a provider cannot be compiled.
    struct Unsupported: Error {
        let reason: String
    }

    typealias Tree = ChaosProviderNode<SystemCall, SystemOutcome, Never, SystemProvider.Body>

    let point: SystemPointKind
    let delivery: Delivery
    /// What the entry's probability nodes draw from (in-process: the entry's seed); nil
    /// lets the engine derive it from the plan's seed and the point, as ChaosKit does.
    let entrySeed: UInt64?
    /// The position of the node being written in a depth-first walk of the tree, counted
    /// from 1 as ChaosKit counts it: a probability node's salt, so that both engines draw
    /// the same numbers.
    private var position: UInt64 = 0

    private var nodes: [String?] = []
    private var families: Set<SocketFamily> = []
    private var scopes: [ClockScope] = []

    init(point: SystemPointKind, delivery: Delivery, entrySeed: UInt64?) {
        self.point = point
        self.delivery = delivery
        self.entrySeed = entrySeed
    }

    /// The `entry` line and `node`/`case` lines of one entry.
    static func entry(_ tree: Tree, point: SystemPointKind, label: String, delivery: Delivery, entrySeed: UInt64?)
        throws(Unsupported) -> [String]
    {
        var compiler = SystemPlanCompiler(point: point, delivery: delivery, entrySeed: entrySeed)
        // The shape ChaosKit runs: modifiers around a selector count only its calls.
        _ = try compiler.emit(tree.withSelectorsOutermost())
        let body = compiler.nodes.compactMap { $0 }
        guard body.count == compiler.nodes.count, body.count <= Int(CHAOS_PLAN_MAX_NODES) else {
            throw Unsupported(
                reason:
                    "the provider needs \(compiler.nodes.count) plan nodes; a plan entry holds at most \(Int(CHAOS_PLAN_MAX_NODES))"
            )
        }
        return [compiler.entryLine(label: label)] + body
    }

    /// An entry whose every call Swift answers (an `ask` node): for providers with no plan
    /// form, and for points that task scopes involve. `scopes` are the clock options of the
    /// outcomes it may answer.
    static func askingEntry(point: SystemPointKind, label: String, scopes: [ClockScope]) -> [String] {
        var compiler = SystemPlanCompiler(point: point, delivery: .inProcess, entrySeed: nil)
        compiler.scopes = scopes
        compiler.families = Set(SocketFamily.allCases)
        return [compiler.entryLine(label: label), "node 0 \(PlanNodeKind.ask) id=0"]
    }

    /// The clock options of the outcomes anywhere in `tree`.
    static func clockScopes(in tree: Tree) -> [ClockScope] {
        var scopes: [ClockScope] = []
        tree.forEachLeaf { leaf in
            if case .constant(let outcome) = leaf, let scope = outcome.clockScope { scopes.append(scope) }
        }
        return scopes
    }

    private func entryLine(label: String) -> String {
        var words = ["entry", point.planName, PlanText.word("label", label)]
        if let entrySeed { words.append("seed=\(entrySeed)") }
        if point.isSocketPoint {
            let chosen = families.union([.inet, .inet6])
            words.append(
                "family=" + SocketFamily.allCases.filter(chosen.contains).map(\.rawValue).joined(separator: ","))
        }
        if point == .clock, !scopes.isEmpty {
            // Options are per entry: any outcome that asks for one turns it on.
            words.append("monotonic=" + (scopes.contains { $0.monotonic } ? "yes" : "no"))
            words.append("stat=" + (scopes.contains { $0.fileTimes } ? "yes" : "no"))
            words.append("sleep=" + (scopes.contains { $0.sleeps } ? "yes" : "no"))
        }
        return words.joined(separator: " ")
    }

    /// Writes `tree`'s nodes (a parent before its children) and returns the index of its root.
    private mutating func emit(_ tree: Tree) throws(Unsupported) -> Int {
        position += 1
        switch tree {
        case .leaf(let leaf):
            let index = reserve()
            nodes[index] = "node \(index) \(try leafText(leaf))"
            return index
        case .sequential(let children):
            let index = reserve()
            // A step covers its span of calls (`I*N`), and a run of equal leaves is one
            // node covering that many: a jump after 10,000 readings stays two nodes.
            var runs: [(child: Int, count: Int, leaf: String?)] = []
            for child in children {
                if case .leaf(let leaf) = child, let last = runs.last, let text = last.leaf,
                    text == (try leafText(leaf))
                {
                    runs[runs.count - 1].count += 1
                    position += 1  // the leaf not written still has its place in the walk
                    continue
                }
                var text: String?
                if case .leaf(let leaf) = child { text = try leafText(leaf) }
                runs.append((try emit(child), child.stepSpan(), text))
            }
            nodes[index] =
                "node \(index) \(PlanNodeKind.sequential) children="
                + runs.map { $0.count == 1 ? "\($0.child)" : "\($0.child)*\($0.count)" }.joined(separator: ",")
            return index
        case .composite(let branches, let otherwise):
            let index = reserve()
            var cases: [String] = []
            for branch in branches {
                guard let target = branch.condition.tag as? SystemTarget, target.point == point else {
                    throw Unsupported(
                        reason:
                            "the condition '\(branch.condition.summary)' is Swift code; only \(point.pointName)'s own conditions (a match object, an item's target parameters, or .on(SystemTarget, …)) have a plan form"
                    )
                }
                families.formUnion(target.families)
                let child = try emit(branch.provider)
                cases.append("case \(child) \(target.planText)")
            }
            let fallback = try emit(otherwise)
            nodes[index] = (["node \(index) \(PlanNodeKind.composite) otherwise=\(fallback)"] + cases).joined(
                separator: "\n")
            return index
        case .modified(let modifier, let child):
            let index = reserve()
            let salt = position
            let childIndex = try emit(child)
            switch modifier {
            case .probability(let p):
                nodes[index] = "node \(index) \(PlanNodeKind.probability) p=\(p) child=\(childIndex) salt=\(salt)"
            case .times(let n):
                nodes[index] = "node \(index) \(PlanNodeKind.times) n=\(n) child=\(childIndex)"
            case .at(let calls):
                // The engine reads a rising list.
                let listed = calls.sorted().map(String.init).joined(separator: ",")
                nodes[index] = "node \(index) \(PlanNodeKind.at) calls=\(listed) child=\(childIndex)"
            case .delay(let duration):
                guard point != .clock, point != .getenv else {
                    throw Unsupported(reason: "\(point.pointName) answers at once; it takes no delay")
                }
                guard duration <= .seconds(86_400) else {
                    throw Unsupported(reason: "a system call waits at most a day, not \(DurationText.format(duration))")
                }
                nodes[index] =
                    "node \(index) \(PlanNodeKind.delay) by=\(duration.wholeNanosecondsForPlan) child=\(childIndex)"
            case .lease:
                throw Unsupported(
                    reason:
                        "a lease reverts an entry in a running ChaosKit; chaos run cannot revert one inside another program (use times, or drop the lease)"
                )
            }
            return index
        }
    }

    private mutating func reserve() -> Int {
        nodes.append(nil)
        return nodes.count - 1
    }

    private mutating func leafText(_ leaf: ProviderLeaf<SystemOutcome, Never, SystemProvider.Body>) throws(Unsupported)
        -> String
    {
        switch leaf {
        case .original:
            return PlanNodeKind.original.rawValue
        case .pass:
            return PlanNodeKind.pass.rawValue
        case .block:
            throw Unsupported(reason: "a block is Swift code; it runs in-process only")
        case .random:
            throw Unsupported(reason: "a random outcome is drawn by Swift; it runs in-process only")
        case .throwing:
            throw Unsupported(reason: "system points do not throw")
        case .constant(let outcome):
            if let problem = outcome.problem(on: point) { throw Unsupported(reason: problem) }
            switch outcome {
            case .real: return PlanNodeKind.original.rawValue
            case .pass: return PlanNodeKind.pass.rawValue
            case .fail(let code): return "\(PlanNodeKind.fail) errno=\(SystemErrno.name(code))"
            case .failWithAnyErrno: return "\(PlanNodeKind.fail) errno=any"
            case .resolverFailure(let code): return "\(PlanNodeKind.fail) ret=\(SystemErrno.name(code))"
            case .short(let max): return max.map { "\(PlanNodeKind.short) max=\($0)" } ?? PlanNodeKind.short.rawValue
            case .corrupt(let bytes, let offset, let with):
                return "\(PlanNodeKind.corrupt) bytes=\(bytes)" + (offset.map { " offset=\($0)" } ?? "")
                    + " with=\(with.rawValue)"
            case .offset(let ns, let scope):
                scopes.append(scope)
                return "\(PlanNodeKind.offset) by=\(ns)"
            case .frozen(let ns, let scope):
                scopes.append(scope)
                return "\(PlanNodeKind.frozen) at=\(ns)"
            case .speed(let factor, let since, let scope):
                scopes.append(scope)
                return "\(PlanNodeKind.speed) factor=\(factor) anchor=" + (delivery == .program ? "start" : "\(since)")
            case .virtual(let start, let flowing):
                scopes.append(ClockScope(monotonic: true, fileTimes: true, sleeps: true))
                return PlanNodeKind.virtual.rawValue + (start.map { " at=\($0 == 0 ? 1 : $0)" } ?? "")
                    + (flowing ? " flow=yes" : "")
            case .set(let value): return "\(PlanNodeKind.set) " + PlanText.word("value", value)
            case .unset: return PlanNodeKind.unset.rawValue
            case .powerLoss(let torn): return PlanNodeKind.powerLoss.rawValue + (torn ? " torn=yes" : "")
            case .attributes(let attributes): return attributes.planWords
            case .pace(let rate): return "\(PlanNodeKind.pace) rate=\(rate)"
            case .slice(let bytes, let variation):
                return "\(PlanNodeKind.short) max=\(bytes)" + (variation > 0 ? " variation=\(variation)" : "")
            case .limit(let bytes, let end): return "\(PlanNodeKind.limit) bytes=\(bytes) then=\(end.rawValue)"
            case .slowClose(let duration): return "\(PlanNodeKind.linger) by=\(duration.wholeNanosecondsForPlan)"
            case .stall(let duration, let end):
                return "\(PlanNodeKind.stall) for=\(duration.wholeNanosecondsForPlan) then=\(end.rawValue)"
            case .omit(.named(let pattern)): return "\(PlanNodeKind.omit) " + PlanText.word("name", pattern)
            case .omit(.oneIn(let count)): return "\(PlanNodeKind.omit) every=\(count)"
            // The images choose which slots the in-process delivery rebinds; the engine fails
            // whatever allocation reaches it.
            case .outOfMemory: return "\(PlanNodeKind.fail) errno=ENOMEM"
            }
        }
    }
}

extension Duration {
    /// The duration in whole nanoseconds (a plan's unit), saturating.
    var wholeNanosecondsForPlan: Int64 {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? (seconds < 0 ? .min : .max) : scaled &+ attoseconds / 1_000_000_000
    }
}
