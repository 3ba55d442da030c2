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
/// | ``lease(_:)`` | `.lease(.seconds(30))` | `"lease": "30s"` | `step~30s` |
public enum ProviderModifier: Sendable, Hashable {
    /// With probability `p` (0…1, drawn from the seeded source) the provider, otherwise the original.
    case probability(Double)
    /// The first `n` calls (n ≥ 1) use the provider, later ones the original.
    case times(Int)
    /// Wait this long (zero or more), then use the provider.
    case delay(Duration)
    /// The entry ends this long (more than zero) after it was applied — a global entry reverts
    /// itself, a scoped one stops acting: chaos that cannot be left on by mistake. Only outermost: it limits a whole entry.
    case lease(Duration)

    /// Every modifier's profile key, innermost first: the order in which a provider object
    /// with several of them wraps its provider (`times`, then `probability`, then `delay`; a
    /// `lease`, which limits the whole entry, is outermost).
    public static let profileKeys = ["times", "probability", "delay", "lease"]

    /// The key that spells this modifier in a JSON profile.
    public var profileKey: String {
        switch self {
        case .times: "times"
        case .probability: "probability"
        case .delay: "delay"
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
        case .lease(let lease): .string(DurationText.format(lease))
        }
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
        case .times, .probability: ModifierRuntime(modifier: self, counter: CallCounter(), salt: salt)
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
        case .delay(let delay):
            return .wait(delay)
        case .lease:
            // The installation keeps a lease (applying reverts the entry when it ends).
            return .proceed
        }
    }
}
