/// What a point needs done when it starts and stops being used — a C hook patches its
/// function-pointer slots on first use and restores them after the last.
///
/// Give one to ``InjectionPoint`` or ``AsyncInjectionPoint`` when making the point. The point counts its users: every
/// globally applied entry and every live task scope (`Chaos.with`) that involves it.
/// - ``activate()`` runs when the count goes from 0 to 1, **before** the entry or scope
///   takes effect. If it throws, `apply()` (or `with`) undoes the activations it already
///   made and changes nothing else; the error names the entry.
/// - ``deactivate()`` runs when the count drops back to 0, after the last entry or scope
///   has stopped taking effect.
/// - ``changed()`` runs after every change to the point's global entries or scopes while
///   the point is active (so a C fast path can mirror what the point does).
/// - ``admit()`` runs for every user before it is counted, and ``dismiss()`` when it
///   goes: for engines that can hold only so many entries (throwing refuses that user).
///
/// All three are called under the point's own lifecycle lock, one at a time, never on the
/// call path of the point. Points made without an activation skip all of this.
public protocol PointActivation: Sendable {
    /// Prepares the point to be used (e.g. patches its slots); throwing refuses the apply.
    func activate() throws(ChaosError)
    /// Undoes ``activate()``; nothing uses the point anymore.
    func deactivate()
    /// The point's global entries or task scopes changed while it is active.
    func changed()
    /// One more entry or task scope is about to use the point; throwing refuses it.
    func admit() throws(ChaosError)
    /// An entry or task scope that ``admit()`` let in stopped using the point.
    func dismiss()
    /// Whether hooked C calls read the point's newest entry without a reference
    /// (`InjectionPoint.callWithoutRetaining(_:)`, inside a hook section), so that a
    /// reverted entry must also outlive every hook section that may have read it.
    var readsEntriesInHookSections: Bool { get }
}

extension PointActivation {
    /// Does nothing.
    public func changed() {}
    /// Admits every user.
    public func admit() throws(ChaosError) {}
    /// Does nothing.
    public func dismiss() {}
    /// False: only Swift calls of the point read its entries.
    public var readsEntriesInHookSections: Bool { false }
}

/// What a point does right now for calls outside any task scope, as far as that is
/// known without calling it (see ``InjectionPoint/currentBehaviour``).
public enum PointBehaviour<Result> {
    /// Nothing is applied and no task scope involves the point: calls run the original.
    case original
    /// The newest global entry is a plain `.constant`, and no task scope involves the point.
    case constant(Result)
    /// Anything else: a block, a sequence, a modifier, or a live task scope.
    case varying
}
