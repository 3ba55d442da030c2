/// A modifier from fault-injection practice, wrapped around a provider: when it acts.
///
/// This type is the one table of modifiers. Each one's check, summary, JSON key and
/// value, `CHAOS` grammar token, schema fragment and per-call decision are defined here
/// and nowhere else; code (`.probability(0.2)`), profiles (`"probability": 0.2`) and the
/// grammar (`20%offline`) all build the same ``ProviderTree/modified(_:_:)`` node.
///
/// | modifier | code | profile key | grammar |
/// |---|---|---|---|
/// | ``probability(_:)`` | `.probability(0.2)` | `"probability": 0.2` | `20%step` |
/// | ``times(_:)`` | `.times(3)` | `"times": 3` | `3*step` |
/// | ``delay(_:)`` | `.delayed(by: .milliseconds(250))` | `"delay": "250ms"` | `step@250ms` |
/// | ``at(_:)`` | `.at(call: 3)` | `"at": 3`, `"at": [2, 5]` | `step#3`, `step#2,5` |
/// | ``lease(_:)`` | `.lease(.seconds(30))` | `"lease": "30s"` | `step~30s` |
public enum ProviderModifier: Sendable, Hashable {
    /// With probability `p` (0…1, drawn from the seeded source) the provider, otherwise the original.
    case probability(Double)
    /// The first `n` calls (n ≥ 1) use the provider, later ones the original.
    case times(Int)
    /// Wait this long (zero or more), then use the provider.
    case delay(Duration)
    /// Only the listed calls use the provider: counted from 1 among the calls the entry
    /// targets, at most ``maximumPlacedCalls`` of them, each once. Every other call passes
    /// to the point's next entry (see ``ProviderLeaf/pass``), so an entry placed at call
    /// K hides nothing else. This is how an exploration places one fault at one call.
    case at([Int])
    /// The entry ends this long (more than zero) after it was applied — a global entry reverts
    /// itself, a scoped one stops acting: chaos that cannot be left on by mistake. Only outermost: it limits a whole entry.
    case lease(Duration)

    /// Every modifier's profile key, innermost first: the order in which a provider object
    /// with several of them wraps its provider (`times`, then `probability`, then `delay`; a
    /// `lease`, which limits the whole entry, is outermost).
    public static let profileKeys = ["times", "probability", "delay", "at", "lease"]

    /// How many calls one ``at(_:)`` may list (the fault engine's bound too).
    public static let maximumPlacedCalls = 4096

    /// The key that spells this modifier in a JSON profile.
    public var profileKey: String {
        switch self {
        case .times: "times"
        case .probability: "probability"
        case .delay: "delay"
        case .at: "at"
        case .lease: "lease"
        }
    }

    /// Whether this is a lease (which the entry keeps, rather than each call).
    public var isLease: Bool {
        if case .lease = self { return true }
        return false
    }

    /// Why this modifier cannot be applied, or nil when it can.
    public var problem: String? {
        switch self {
        case .probability(let p):
            (0...1).contains(p) ? nil : "probability(\(p)) is outside 0…1; use a value such as 0.2 for 20%"
        case .times(let n):
            n >= 1 ? nil : "times(\(n)) would never apply; use times(1) or more, or .original"
        case .delay(let delay):
            delay >= .zero ? nil : "delayed(by: \(delay)) is negative; use a duration of zero or more"
        case .at(let calls):
            Self.placementProblem(calls)
        case .lease(let lease):
            lease > .zero
                ? nil
                : "lease(\(DurationText.format(lease))) ends before it starts; give a duration above zero, e.g. .seconds(30)"
        }
    }

    /// `inner` with this modifier, e.g. `"offline with probability 0.2"`.
    public func summary(of inner: String) -> String {
        switch self {
        case .probability(let p): "\(inner) with probability \(p)"
        case .times(let n): "\(inner) \(n) times"
        case .delay(let delay): "\(inner) after \(DurationText.format(delay))"
        case .at(let calls):
            "\(inner) at call\(calls.count == 1 ? "" : "s") \(calls.map(String.init).joined(separator: ", "))"
        case .lease(let lease): "\(inner) for \(DurationText.format(lease))"
        }
    }

    // MARK: Profiles

    /// The modifier a profile's `key` gives with `value`; nil for a key that is no
    /// modifier's. The error says what to write instead.
    static func fromProfile(key: String, value: ProfileValue) -> Result<ProviderModifier, ModifierSyntaxError>? {
        switch key {
        case "probability":
            guard case .number(let p) = value, (0...1).contains(p) else {
                return .failure(ModifierSyntaxError("probability must be a number from 0 to 1 (0.2 for 20%)"))
            }
            return .success(.probability(p))
        case "times":
            guard case .number(let n) = value, n.rounded() == n, n >= 1, n < 1e15 else {
                return .failure(ModifierSyntaxError("times must be a whole number of 1 or more"))
            }
            return .success(.times(Int(n)))
        case "delay":
            switch value {
            case .number(let milliseconds) where milliseconds >= 0 && milliseconds.isFinite:
                return .success(.delay(.milliseconds(milliseconds)))
            case .string(let text):
                do throws(ChaosError) {
                    return .success(.delay(try DurationText.duration(text)))
                } catch {
                    return .failure(ModifierSyntaxError("delay: \(error.message)"))
                }
            default:
                return .failure(
                    ModifierSyntaxError("delay must be milliseconds or a duration such as \"250ms\", \"2s\" or \"1m\""))
            }
        case "at":
            let numbers: [ProfileValue]
            switch value {
            case .number: numbers = [value]
            case .array(let items): numbers = items
            default: return .failure(ModifierSyntaxError(Self.placementSyntax))
            }
            var calls: [Int] = []
            for number in numbers {
                guard case .number(let call) = number, call.rounded() == call, call >= 1, call < 1e15 else {
                    return .failure(ModifierSyntaxError(Self.placementSyntax))
                }
                calls.append(Int(call))
            }
            if let problem = Self.placementProblem(calls) { return .failure(ModifierSyntaxError(problem)) }
            return .success(.at(calls))
        case "lease":
            guard case .string(let text) = value else {
                return .failure(ModifierSyntaxError("lease must be a duration such as \"30s\" or \"5m\""))
            }
            do throws(ChaosError) {
                let lease = try DurationText.duration(text)
                guard lease > .zero else {
                    return .failure(ModifierSyntaxError("lease must be longer than zero, e.g. \"30s\""))
                }
                return .success(.lease(lease))
            } catch {
                return .failure(ModifierSyntaxError("lease: \(error.message)"))
            }
        default:
            return nil
        }
    }

    /// The value of this modifier's profile key.
    var profileValue: ProfileValue {
        switch self {
        case .probability(let p): .number(p)
        case .times(let n): .number(Double(n))
        case .delay(let delay): .string(DurationText.format(delay))
        case .at(let calls): calls.count == 1 ? .number(Double(calls[0])) : .array(calls.map { .number(Double($0)) })
        case .lease(let lease): .string(DurationText.format(lease))
        }
    }

    private static let placementSyntax = "at is a call number counted from 1, or a list of them, e.g. 3 or [2, 5]"

    /// Why `calls` cannot place a provider, or nil when they can.
    static func placementProblem(_ calls: [Int]) -> String? {
        if calls.isEmpty { return "at([]) would never act; list calls counted from 1, e.g. at(call: 3)" }
        if let bad = calls.first(where: { $0 < 1 }) {
            return "at(call: \(bad)) is no call; calls are counted from 1, e.g. at(call: 3)"
        }
        if calls.count > maximumPlacedCalls {
            return "at lists \(calls.count) calls; list at most \(maximumPlacedCalls)"
        }
        if Set(calls).count != calls.count { return "at lists a call twice; list each call once" }
        return nil
    }

    /// The JSON Schema of every modifier key of a provider object, with a description each
    /// (what `chaos list` shows).
    public static var schemaProperties: [(key: String, schema: ProfileValue)] {
        [
            (
                "probability",
                .object([
                    "description": .string(
                        "Apply the provider with this probability (0…1), otherwise call the original."),
                    "type": .string("number"), "minimum": .number(0), "maximum": .number(1),
                ])
            ),
            (
                "times",
                .object([
                    "description": .string("Apply the provider to the first N calls, then call the original."),
                    "type": .string("integer"), "minimum": .number(1),
                ])
            ),
            (
                "delay",
                .object([
                    "description": .string("Wait before answering: milliseconds, or a duration such as \"250ms\"."),
                    "oneOf": .array([
                        .object(["type": .string("number"), "minimum": .number(0)]),
                        .object(["type": .string("string"), "pattern": .string(DurationText.schemaPattern)]),
                    ]),
                ])
            ),
            (
                "at",
                .object([
                    "description": .string(
                        "Apply the provider only at these calls the entry targets (counted from 1); other calls pass to the point's next entry."
                    ),
                    "oneOf": .array([
                        .object(["type": .string("integer"), "minimum": .number(1)]),
                        .object([
                            "type": .string("array"), "minItems": .number(1),
                            "maxItems": .number(Double(maximumPlacedCalls)), "uniqueItems": .bool(true),
                            "items": .object(["type": .string("integer"), "minimum": .number(1)]),
                        ]),
                    ]),
                ])
            ),
            (
                "lease",
                .object([
                    "description": .string(
                        "Revert the entry by itself this long after it is applied (outermost only), e.g. \"30s\"."),
                    "type": .string("string"), "pattern": .string(DurationText.schemaPattern),
                ])
            ),
        ]
    }

    // MARK: Grammar

    /// How a modifier is written around a step of the `CHAOS` grammar: a prefix value
    /// ended by a character (`20%`, `3*`), or a suffix introduced by one (`@250ms`).
    enum GrammarForm {
        case prefix(terminator: Character)
        case suffix(introducer: Character)
    }

    /// The grammar's modifiers: their form and how their text becomes a modifier.
    static let grammar:
        [(form: GrammarForm, read: @Sendable (String) -> Result<ProviderModifier, ModifierSyntaxError>)] = [
            (
                .prefix(terminator: "%"),
                { text in
                    guard let percent = Double(text), (0...100).contains(percent) else {
                        return .failure(
                            ModifierSyntaxError(
                                "'\(text)%' is not a probability; write a percentage from 0 to 100, e.g. 20%"))
                    }
                    return .success(.probability(percent / 100))
                }
            ),
            (
                .prefix(terminator: "*"),
                { text in
                    guard let count = Int(text), count >= 1 else {
                        return .failure(ModifierSyntaxError("'\(text)*' is not a count; write 1* or more, e.g. 3*"))
                    }
                    return .success(.times(count))
                }
            ),
            (
                .suffix(introducer: "@"),
                { text in
                    do throws(ChaosError) {
                        return .success(.delay(try DurationText.duration(text)))
                    } catch {
                        return .failure(ModifierSyntaxError("'@\(text)' is not a delay: \(error.message)"))
                    }
                }
            ),
            (
                .suffix(introducer: "#"),
                { text in
                    let calls = text.split(separator: ",", omittingEmptySubsequences: false).map {
                        Int(String($0.filter { !$0.isWhitespace }))
                    }
                    guard !calls.isEmpty, !calls.contains(nil) else {
                        return .failure(
                            ModifierSyntaxError(
                                "'#\(text)' is not a list of calls; write call numbers counted from 1, e.g. #3 or #2,5")
                        )
                    }
                    if let problem = placementProblem(calls.compactMap { $0 }) {
                        return .failure(ModifierSyntaxError("'#\(text)': \(problem)"))
                    }
                    return .success(.at(calls.compactMap { $0 }))
                }
            ),
            (
                .suffix(introducer: "~"),
                { text in
                    do throws(ChaosError) {
                        let lease = try DurationText.duration(text)
                        guard lease > .zero else {
                            return .failure(
                                ModifierSyntaxError("'~\(text)' is not a lease: give a duration above zero, e.g. ~30s"))
                        }
                        return .success(.lease(lease))
                    } catch {
                        return .failure(ModifierSyntaxError("'~\(text)' is not a lease: \(error.message)"))
                    }
                }
            ),
        ]

    // MARK: Calls

    /// This modifier ready to run, with its own counter and random salt.
    func compiled(salt: UInt64) -> ModifierRuntime {
        switch self {
        case .times, .probability, .at: ModifierRuntime(modifier: self, counter: CallCounter(), salt: salt)
        case .delay, .lease: ModifierRuntime(modifier: self, counter: nil, salt: salt)
        }
    }

}

/// Why a modifier's text or value is not one.
struct ModifierSyntaxError: Error {
    let message: String
    init(_ message: String) { self.message = message }
}

/// What a modifier decides for one call.
@usableFromInline enum ModifierDecision: Sendable {
    /// Go on to the modified provider.
    case proceed
    /// Wait this long, then go on.
    case wait(Duration)
    /// Call the original instead.
    case original
    /// Hand the call to the point's next entry.
    case pass
}

/// A modifier of an applied entry, with its counter and salt.
@usableFromInline struct ModifierRuntime: Sendable {
    @usableFromInline let modifier: ProviderModifier
    @usableFromInline let counter: CallCounter?
    @usableFromInline let salt: UInt64

    /// What the modifier does for the next call it is asked about, in an entry seeded
    /// `entrySeed`. Both counting modifiers count the calls that reach them, not the
    /// entry's: calls a selector keeps away take no count and no draw.
    @usableFromInline func decide(entrySeed: UInt64) -> ModifierDecision {
        switch modifier {
        case .probability(let p):
            // The fault engine's chaos_fault_draw makes the same draw, so both engines agree.
            let asked = UInt64(bitPattern: Int64(counter?.next() ?? 0))
            var source = SeededRandom(seed: SeededRandom.derive(entrySeed, asked, salt))
            return source.nextUnitInterval() < p ? .proceed : .original
        case .times(let limit):
            return (counter?.next() ?? 0) < limit ? .proceed : .original
        case .at(let calls):
            // Few calls are listed (one, for a placement): a scan beats a set's hashing.
            let call = (counter?.next() ?? 0) + 1
            return calls.contains(call) ? .proceed : .pass
        case .delay(let delay):
            return .wait(delay)
        case .lease:
            // The installation keeps a lease (applying reverts the entry when it ends).
            return .proceed
        }
    }
}
