public import CChaosRules
import Foundation
public import Synchronization

// How a call is decided by its entry's compiled tree, in Swift: the leaf that answers, the
// step a sequence takes, what `times` and `probability` let through.
//
// Why Swift walks its own tree rather than the C engine's (CChaosFaults/decide.c): an app
// point's leaves are typed Swift values (a `Result`, a thrown `Failure`, a block) and its
// selectors are Swift predicates over typed arguments, which the C plan cannot hold; and
// ChaosKit builds on Apple platforms, where the Linux engine does not. The arithmetic both
// walks share — which step of a sequence a call takes, how seeds and draws derive — is
// CChaosRules', called by both; the conformance tests hold the walks to one meaning.

/// A typed provider tree made ready to run: every counting node (a sequence, `times`) has
/// its own counter and every drawing node (a random leaf, `probability`) its own salt, so
/// nested providers count and draw independently. The shape is the ``ProviderTree``'s;
/// what a modifier does is its ``ModifierRuntime``'s.
@usableFromInline indirect enum CompiledNode<Arguments, Result: Sendable, Failure: Error, Body: Sendable>: Sendable {
    /// `acts`: whether answering with the leaf counts as an act (not for the original, nor
    /// for a result that hands the call on).
    case leaf(ProviderLeaf<Result, Failure, Body>, salt: UInt64, acts: Bool)
    /// The steps, how many calls each covers (its ``ProviderTree/sequentialSpan(passesOn:)``)
    /// and, for a step that is a selector, the conditions of the calls it takes; the spans
    /// again as the walk reads them; and the calls the sequence has been asked about.
    case sequential(
        [(node: CompiledNode, span: Int, selects: [ArgumentCondition<Arguments>]?)], spans: [UInt64], CallCounter,
        selective: Bool)
    case composite([(condition: ArgumentCondition<Arguments>, node: CompiledNode)], otherwise: CompiledNode)
    case modified(ModifierRuntime, CompiledNode)

    typealias Tree = ChaosProviderNode<Arguments, Result, Failure, Body>

    /// `passesOn` says which leaves hand the call on (see ``ProviderLeaf/passesCallOn``).
    init(_ tree: Tree, passesOn: (ProviderLeaf<Result, Failure, Body>) -> Bool) {
        var salt: UInt64 = 0
        self.init(tree, salt: &salt, passesOn: passesOn)
    }

    /// Salts are the nodes' positions in a depth-first walk, so a provider's draws depend
    /// only on its shape and the seed.
    private init(_ tree: Tree, salt: inout UInt64, passesOn: (ProviderLeaf<Result, Failure, Body>) -> Bool) {
        salt &+= 1
        switch tree {
        case .leaf(let leaf):
            self = .leaf(leaf, salt: salt, acts: !leaf.isOriginal && !passesOn(leaf))
        case .sequential(let children):
            let steps = children.map { child in
                var selects: [ArgumentCondition<Arguments>]?
                if case .composite(let branches, .leaf(let fallback)) = child, passesOn(fallback) {
                    selects = branches.map { $0.condition }
                }
                let span = child.sequentialSpan(passesOn: passesOn)
                return (node: CompiledNode(child, salt: &salt, passesOn: passesOn), span: span, selects: selects)
            }
            self = .sequential(
                steps, spans: steps.map { UInt64(max($0.span, 0)) }, CallCounter(),
                selective: steps.contains { $0.selects != nil })
        case .composite(let branches, let otherwise):
            let compiled = branches.map {
                (condition: $0.condition, node: CompiledNode($0.provider, salt: &salt, passesOn: passesOn))
            }
            self = .composite(compiled, otherwise: CompiledNode(otherwise, salt: &salt, passesOn: passesOn))
        case .modified(let modifier, let child):
            let runtime = modifier.compiled(salt: salt)
            self = .modified(runtime, CompiledNode(child, salt: &salt, passesOn: passesOn))
        }
    }

    /// What the next call does, without doing it: the leaf that answers, its salt,
    /// whether that is an act, and the waits of the delays on the way there (added to
    /// `delay`, which stays nil when the call meets no delay). The counters of the nodes
    /// the call reaches advance; nothing else happens.
    @inlinable func resolve(
        _ arguments: Arguments, entrySeed: UInt64, delay: inout Duration?
    ) -> (leaf: ProviderLeaf<Result, Failure, Body>, salt: UInt64, acts: Bool) {
        switch self {
        case .leaf(let leaf, let salt, let acts):
            // A delay acts even around the original: the call was slowed on purpose.
            return (leaf, salt, acts || delay != nil)
        case .sequential(let steps, let spans, let counter, let selective):
            guard selective else {
                let step = steps[Self.step(at: counter.next(), spans: spans)]
                return step.node.resolve(arguments, entrySeed: entrySeed, delay: &delay)
            }
            // A step that is a selector is asked only about the calls it takes: the others
            // pass on without moving the sequence.
            while true {
                let position = counter.value.load(ordering: .relaxed)
                let step = steps[Self.step(at: position, spans: spans)]
                if let selects = step.selects, !selects.contains(where: { $0.test(arguments) }) {
                    return step.node.resolve(arguments, entrySeed: entrySeed, delay: &delay)
                }
                if counter.value.weakCompareExchange(
                    expected: position, desired: position + 1, ordering: .relaxed
                ).exchanged {
                    return step.node.resolve(arguments, entrySeed: entrySeed, delay: &delay)
                }
            }
        case .composite(let branches, let otherwise):
            for branch in branches where branch.condition.test(arguments) {
                return branch.node.resolve(arguments, entrySeed: entrySeed, delay: &delay)
            }
            return otherwise.resolve(arguments, entrySeed: entrySeed, delay: &delay)
        case .modified(let runtime, let child):
            switch runtime.decide(entrySeed: entrySeed) {
            case .proceed:
                break
            case .wait(let wait):
                delay = (delay ?? .zero) + wait
            case .original:
                return (.original, 0, delay != nil)
            case .pass:
                // A delay on the way has acted already: the call is answered (slowly) here,
                // as the fault engine's delay node answers a call its child passes on.
                return (delay == nil ? .pass : .original, 0, delay != nil)
            }
            return child.resolve(arguments, entrySeed: entrySeed, delay: &delay)
        }
    }
}

extension CompiledNode {
    /// The counter of the first ``ProviderModifier/at(_:)`` on the way from the root
    /// through selectors and modifiers: where a placed entry counts its targeted calls.
    var placementCounter: CallCounter? {
        switch self {
        case .modified(let runtime, let child):
            if case .at = runtime.modifier { return runtime.counter }
            return child.placementCounter
        case .composite(let branches, let otherwise):
            for branch in branches { if let counter = branch.node.placementCounter { return counter } }
            return otherwise.placementCounter
        case .leaf, .sequential:
            return nil
        }
    }

    /// The step of a sequence that its call `position` uses (the last one repeats): the
    /// engine's walk (CChaosRules), so both engines pick the same step.
    @inlinable static func step(at position: Int, spans: [UInt64]) -> Int {
        spans.withUnsafeBufferPointer {
            Int(chaos_rules_sequence_step($0.baseAddress, Int32($0.count), UInt64(max(position, 0))))
        }
    }
}
