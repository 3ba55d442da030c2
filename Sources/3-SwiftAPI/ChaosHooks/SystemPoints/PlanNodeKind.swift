/// The kinds of node a fault plan is made of, in the engine's order (`CHAOS_NODE_*`): the
/// words the plan compiler writes. The engine's table of names (names.c) spells them too; a
/// test requires the two to agree.
enum PlanNodeKind: String, CaseIterable, CustomStringConvertible {
    case original, pass, fail, short, offset, frozen, speed, set, unset
    case sequential, composite, probability, times, delay, ask, virtual, at
    case powerLoss = "power-loss"
    case corrupt, attributes, pace, limit, stall, omit, linger

    var description: String { rawValue }
}
