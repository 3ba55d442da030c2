public import ChaosKit
public import Testing

/// What chaos was in force, written so that a failure can be replayed: the seeds and the
/// entries of the task scope and of the process-wide chaos a ChaosTesting trait applied.
///
/// The `.chaos(…)` traits attach this to every issue their test records (see
/// ``ChaosTrait``); the XCTest helpers add it to the failure messages of a failed test.
/// Use ``current`` to put it into messages of your own:
/// ```swift
/// #expect(price > 0, "\(ChaosReplay.current?.description ?? "no chaos")")
/// ```
public struct ChaosReplay: Sendable, Hashable, CustomStringConvertible {
    /// One layer of chaos: a seed and the entries it drove.
    public struct Layer: Sendable, Hashable {
        /// Every random choice of this layer derives from this seed.
        public var seed: UInt64
        /// The entries in force, outermost first.
        public var entries: [ProfileEntry]
        /// Whether the layer was applied process-wide (`Chaos().apply()`) rather than
        /// scoped to a task (`Chaos.with`).
        public var isProcessWide: Bool

        /// A layer of chaos driven by `seed`.
        public init(seed: UInt64, entries: [ProfileEntry], isProcessWide: Bool) {
            self.seed = seed
            self.entries = entries
            self.isProcessWide = isProcessWide
        }
    }

    /// The text every replay message starts with; issue annotation uses it to annotate once.
    public static let marker = "ChaosKit replay"

    /// The layers, process-wide ones (outermost first) before the task scope.
    public var layers: [Layer]

    /// A record of these layers.
    public init(layers: [Layer]) {
        self.layers = layers
    }

    /// The chaos the current task sees: the process-wide chaos applied by the
    /// `.chaos(global:)` traits around it, and its innermost `Chaos.with` scope (whose
    /// entries include those of the scopes around it). Nil when there is neither.
    public static var current: ChaosReplay? {
        var layers = ProcessWideChaos.activeLayers
        if let scope = Chaos.currentScope {
            layers.append(Layer(seed: scope.seed, entries: scope.entries, isProcessWide: false))
        }
        return layers.isEmpty ? nil : ChaosReplay(layers: layers)
    }

    /// One line, e.g. `ChaosKit replay: task-scoped chaos seed 42, entries: [clock.now ←
    /// constant(…)]. To replay, run again with the same seed(s): .chaos(seed: 42, …)`.
    public var description: String {
        let parts = layers.map { layer in
            let kind = layer.isProcessWide ? "process-wide" : "task-scoped"
            let entries = layer.entries.map(\.description).joined(separator: ", ")
            return "\(kind) chaos seed \(layer.seed), entries: [\(entries)]"
        }
        let hints = layers.map { layer in
            layer.isProcessWide ? ".chaos(global: …, seed: \(layer.seed))" : ".chaos(seed: \(layer.seed), …)"
        }
        return "\(Self.marker): \(parts.joined(separator: "; ")). "
            + "To replay, run again with the same seed(s): \(hints.joined(separator: " and "))"
    }

    /// The description as a Swift Testing comment.
    public var comment: Comment {
        Comment(rawValue: description)
    }

    /// `issue` with this replay appended to its comments, unless it already carries a
    /// replay (an inner trait, which knows more, annotated it first).
    public func annotating(_ issue: Issue) -> Issue {
        if issue.comments.contains(where: { $0.rawValue.hasPrefix(Self.marker) }) {
            return issue
        }
        var annotated = issue
        annotated.comments.append(comment)
        return annotated
    }
}
