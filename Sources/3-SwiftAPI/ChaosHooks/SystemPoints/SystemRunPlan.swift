import CChaosFaults
@_spi(Hooks) public import ChaosKit

/// A profile's system entries compiled for a program that `chaos run` starts: the fault
/// plan its preload library executes, and the environment it starts with.
///
/// The entries mean what they mean in-process: each is typed by its point (catalogue
/// items made, parameters and `match` objects checked), then compiled by the same compiler
/// as in-process entries. Entries on one point stack as they do when the profile is
/// applied: the last one decides first.
public struct SystemRunPlan: Sendable, Equatable {
    /// The plan text after its `chaos-plan 1` and `seed` lines (the seed is chosen per run).
    public let body: String
    /// Variables the program starts with set (a value) or removed (nil), for programs that
    /// read `environ` directly: from `system.getenv` entries that set or unset a variable
    /// on every call (no modifier, no condition beyond the name).
    public let environment: [EnvironmentChange]
    /// The profile's seed, when it has one.
    public let seed: UInt64?

    /// A variable set or removed when the program starts.
    public struct EnvironmentChange: Sendable, Equatable {
        /// The variable.
        public let name: String
        /// Its value, or nil to remove it.
        public let value: String?
    }

    /// Whether the plan draws from its seed (it has probabilities): only then does a run
    /// need its seed to be replayed.
    public var draws: Bool { body.contains(" probability p=") }

    /// Whether some entry loses power (a `power-loss` item): its runs end with the program
    /// killed on purpose, and what it left on disk is the program's recovery to judge.
    public var losesPower: Bool {
        body.split(separator: "\n").contains { Self.isPowerLossNode(String($0)) }
    }

    /// Whether `line` of a plan is a `power-loss` node (`node 2 power-loss torn=yes`).
    public static func isPowerLossNode(_ line: String) -> Bool {
        let words = line.split(separator: " ")
        return words.first == "node" && words.count > 2 && words[2] == Substring(PlanNodeKind.powerLoss.rawValue)
    }

    /// The whole plan text with `seed`.
    public func text(seed: UInt64) -> String {
        "chaos-plan 1\nseed \(seed)\n" + body
    }

    /// Compiles the enabled entries of `profile`. Every entry must be on a system point and
    /// have a plan form; an error names the entry (or parameter) where it was written.
    public static func compile(_ profile: ChaosProfile) throws(ChaosError) -> SystemRunPlan {
        SystemPoints.register()
        var byPoint: [SystemPointKind: [(number: Int, entry: ChaosProfile.Entry, tree: SystemPlanCompiler.Tree)]] = [:]
        var environment: [EnvironmentChange] = []
        try checkEngineLimit(profile, under: "a program under chaos run")
        for (number, entry) in profile.entries.enumerated() where entry.enabled {
            guard let kind = SystemPointKind(pointName: entry.pointName) else {
                let names = SystemPointKind.allCases.map(\.pointName)
                let name = InputExcerpt.of(entry.pointName, limit: 200)
                let hint = Suggestions.hint(for: entry.pointName, in: names)
                // A near or `system.` name is a typo; anything else is a Swift program's point.
                let why =
                    hint.isEmpty && !entry.pointName.hasPrefix("system.")
                    ? "chaos run reaches another program through its system calls only; \(name) lives in a Swift program (apply it there)"
                    : "no system point is named '\(name)'\(hint)"
                throw entry.located(
                    ChaosError(
                        .unknownPoint, subject: name,
                        "\(why); chaos run takes \(names.joined(separator: ", "))"))
            }
            let tree: SystemPlanCompiler.Tree
            do throws(ChaosError) {
                tree = try SystemPoints.point(for: kind).provider(for: entry.provider).node
                if let problem = tree.problem { throw ChaosError(.invalidProvider, subject: kind.pointName, problem) }
            } catch {
                throw entry.located(error)
            }
            byPoint[kind, default: []].append((number, entry, tree))
            if let change = environmentChange(tree) { environment.append(change) }
        }
        var lines: [String] = []
        var owners: [(firstLine: Int, entry: ChaosProfile.Entry)] = []
        for kind in SystemPointKind.allCases {
            for item in (byPoint[kind] ?? []).reversed() {
                do throws(SystemPlanCompiler.Unsupported) {
                    owners.append((lines.count + 3, item.entry))  // after `chaos-plan 1` and `seed`
                    lines += try SystemPlanCompiler.entry(
                        item.tree, point: kind,
                        label: "#\(item.number + 1) \(kind.pointName) ← \(item.entry.provider.summary.prefix(200))",
                        delivery: .program, entrySeed: nil
                    )
                } catch {
                    throw item.entry.located(
                        ChaosError(
                            .invalidProvider, subject: kind.pointName,
                            "chaos run cannot apply \(item.entry.provider.summary.prefix(120)): \(error.reason)"))
                }
            }
        }
        let plan = SystemRunPlan(
            body: lines.isEmpty ? "" : lines.joined(separator: "\n") + "\n", environment: environment,
            seed: profile.seed)
        // The preload library must be able to run it: check with its own parser.
        let text = plan.text(seed: 0)
        var error = chaos_plan_error()
        if let parsed = chaos_plan_parse(text, text.utf8.count, &error) {
            chaos_plan_free(parsed)
        } else {
            let message = withUnsafeBytes(of: error.message) { CText.string(Array($0.bindMemory(to: CChar.self))) }
            let owner = owners.last { $0.firstLine <= Int(error.line) }
            let refused = ChaosError(
                .invalidProvider, subject: "chaos run", "the fault engine cannot execute this entry: \(message)")
            throw owner.map { $0.entry.located(refused) } ?? refused
        }
        return plan
    }

    /// Refuses the enabled system entry of `profile` that takes it past the engine's limit,
    /// located there in profile order (the engine's parser meets entries stacked per point
    /// and would name another one); `holder` says what holds them, for the message.
    public static func checkEngineLimit(_ profile: ChaosProfile, under holder: String) throws(ChaosError) {
        let system = profile.entries.filter { $0.enabled && SystemPointKind(pointName: $0.pointName) != nil }
        let limit = Int(CHAOS_PLAN_MAX_ENTRIES)
        guard system.count > limit else { return }
        throw system[limit].located(
            ChaosError(
                .invalidProvider, subject: system[limit].pointName,
                "\(holder) takes at most \(limit) system entries, and this is enabled system entry \(limit + 1); remove \(system.count - limit) or disable them (\"enabled\": false)"
            ))
    }

    /// The variable a `system.getenv` entry sets or unsets on every call, if that is all it does.
    private static func environmentChange(_ tree: SystemPlanCompiler.Tree) -> EnvironmentChange? {
        guard case .composite(let branches, otherwise: .leaf(.constant(.pass))) = tree, branches.count == 1,
            let target = branches[0].condition.tag as? SystemTarget, target.point == .getenv,
            case .leaf(.constant(let outcome)) = branches[0].provider,
            let name = target.variableName
        else { return nil }
        switch outcome {
        case .set(let value): return EnvironmentChange(name: name, value: value)
        case .unset: return EnvironmentChange(name: name, value: nil)
        default: return nil
        }
    }
}
