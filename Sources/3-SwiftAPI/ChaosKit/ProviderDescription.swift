import Foundation

/// A provider described without types, as a profile, the `CHAOS` grammar or a name-based
/// entry gives it: the same ``ProviderTree`` as a typed provider, whose leaves name what to
/// do (``DescribedLeaf``) and whose conditions are `match` objects. The point it is applied
/// to turns it into its own typed provider and says what does not fit.
public typealias ProviderDescription = ProviderTree<DescribedLeaf, ProfileParameters>

/// What answers a call, described without types.
public enum DescribedLeaf: Sendable, ProviderSummarizable {
    /// Call the real implementation.
    case original
    /// Hand the call to the point's next entry (see ``ProviderLeaf/pass``).
    case pass
    /// Return nil; the point must return an Optional.
    case `nil`
    /// A random value: the point's own `random` catalogue item, or a ``RandomChaosValue``
    /// of its result type.
    case random
    /// Return this value; it must have the point's result type.
    case constant(any Sendable)
    /// Return this JSON value decoded as the point's result type (which must be
    /// `Decodable`; dates as ISO-8601 strings).
    case constantValue(ProfileValue)
    /// Throw this error; it must have the point's failure type.
    case throwing(any Error)
    /// A provider the point names in its catalogue, with parameters.
    case catalogue(String, ProfileParameters)

    /// A short rendering for logs.
    public var summary: String {
        switch self {
        case .original: "original"
        case .pass: "pass"
        case .nil: "nil"
        case .random: "random"
        case .constant(let value): "constant(\(value))"
        case .constantValue(let value): "constant(\(InputExcerpt.of(value)))"
        case .throwing(let error): "throwing(\(error))"
        case .catalogue(let name, let parameters):
            parameters.values.isEmpty && parameters.positional == nil ? name : "\(name)(\(parameters.summary))"
        }
    }
}

extension ProviderTree where Leaf == DescribedLeaf, Condition == ProfileParameters {
    /// Call the real implementation.
    public static var original: Self { .leaf(.original) }
    /// Hand the call to the point's next entry.
    public static var pass: Self { .leaf(.pass) }
    /// Return nil; the point must return an Optional.
    public static var `nil`: Self { .leaf(.nil) }
    /// A random value of the point's result type.
    public static var random: Self { .leaf(.random) }
    /// Return this value; it must have the point's result type.
    public static func constant(_ value: any Sendable) -> Self { .leaf(.constant(value)) }
    /// Return this JSON value decoded as the point's result type.
    public static func constantValue(_ value: ProfileValue) -> Self { .leaf(.constantValue(value)) }
    /// Throw this error; it must have the point's failure type.
    public static func throwing(_ error: any Error) -> Self { .leaf(.throwing(error)) }
    /// A catalogue item of the point, with parameters.
    public static func catalogue(_ name: String, _ parameters: ProfileParameters = ProfileParameters()) -> Self {
        .leaf(.catalogue(name, parameters))
    }
    /// Only calls whose arguments match `conditions` get `provider`; the others the original.
    public static func matching(_ conditions: ProfileParameters, _ provider: Self) -> Self {
        .composite([ProviderBranch(condition: conditions, provider: provider)], otherwise: .original)
    }
    /// With probability `p` (0…1) the provider, otherwise the original.
    public static func probability(_ p: Double, _ provider: Self) -> Self { .modified(.probability(p), provider) }
    /// The first `n` calls use the provider, then the original.
    public static func times(_ n: Int, _ provider: Self) -> Self { .modified(.times(n), provider) }
    /// Wait, then use the provider.
    public static func delayed(_ delay: Duration, _ provider: Self) -> Self { .modified(.delay(delay), provider) }

    /// This provider acting only at `calls` (counted from 1) of the calls its entry
    /// targets, and passing the others on: an entry's fault placed at chosen calls. The
    /// placement goes inside a top-level `match`, so that calls outside it are not counted.
    public func placed(at calls: [Int]) -> Self {
        placed(at: calls) { if case .original = $0 { true } else { false } }
    }

    /// Whether an `at` modifier already places this provider somewhere.
    public var isPlaced: Bool {
        modifiers.contains { if case .at = $0 { true } else { false } }
    }
}

extension PointCore {
    /// The typed provider `description` stands for on this point; an error says what does
    /// not fit (a wrong constant, an unknown item or parameter, a `match` the point cannot read).
    func typed(_ description: ProviderDescription) throws(ChaosError) -> Tree {
        try description.transformed(
            leaf: { (leaf: DescribedLeaf) throws(ChaosError) -> Tree in try typedLeaf(leaf) },
            condition: { (conditions: ProfileParameters) throws(ChaosError) in try condition(for: conditions) }
        )
    }

    private func typedLeaf(_ leaf: DescribedLeaf) throws(ChaosError) -> Tree {
        typealias Result = Provider.Result
        typealias Failure = Provider.Failure
        switch leaf {
        case .original:
            return .leaf(.original)
        case .pass:
            return .leaf(.pass)
        case .constant(let value):
            guard let typed = value as? Result else {
                throw ChaosError(
                    .valueTypeMismatch, subject: name,
                    "the point returns \(Result.self) but the constant is \(type(of: value)); give a \(Result.self)"
                )
            }
            return .leaf(.constant(typed))
        case .constantValue(let value):
            return .leaf(.constant(try decodeConstant(value)))
        case .nil:
            guard let optional = Result.self as? any ExpressibleByNilLiteral.Type,
                let none = optional.init(nilLiteral: ()) as? Result
            else {
                throw ChaosError(
                    .valueTypeMismatch, subject: name,
                    "the point returns \(Result.self), which cannot be nil; use constant or original instead"
                )
            }
            return .leaf(.constant(none))
        case .random:
            // A point can give `random` its own meaning (a C hook: a value of its C return type).
            if hasItem("random") { return try makeItem("random", ProfileParameters()) }
            guard let randomType = Result.self as? any RandomChaosValue.Type else {
                throw ChaosError(
                    .valueTypeMismatch, subject: name,
                    "\(Result.self) has no ready random values; conform it to RandomChaosValue or use a catalogue item"
                )
            }
            return .leaf(
                .random(
                    RandomGenerator { source in
                        // Checked above: the result type is this RandomChaosValue type.
                        randomType.randomChaosValue(using: &source) as! Result
                    }))
        case .throwing(let error):
            guard let typed = error as? Failure else {
                let fix =
                    Failure.self == Never.self
                    ? "this point cannot throw; use a value provider instead" : "throw a \(Failure.self)"
                throw ChaosError(
                    .valueTypeMismatch, subject: name, "\(type(of: error)) is not the point's error type: \(fix)")
            }
            return .leaf(.throwing(typed))
        case .catalogue(let itemName, let parameters):
            return try makeItem(itemName, parameters)
        }
    }

    /// A profile's constant decoded as the result type (dates as ISO-8601 text, through the
    /// one reader every profile date goes through).
    private func decodeConstant(_ value: ProfileValue) throws(ChaosError) -> Provider.Result {
        typealias Result = Provider.Result
        guard let decodable = Result.self as? any Decodable.Type else {
            throw ChaosError(
                .valueTypeMismatch, subject: name,
                "the point returns \(Result.self), which a profile cannot spell; use a catalogue item instead"
            )
        }
        let decoder = JSONDecoder()
        // Text only: a number would be ambiguous (seconds since 1970, or since 2001 as
        // Foundation encodes dates by default).
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            guard let date = ISO8601Date.parse(text) else {
                throw DecodingError.dataCorruptedError(
                    in: container, debugDescription: "'\(text)' is not an ISO-8601 date")
            }
            return date
        }
        do {
            // Wrapped in an array so that plain numbers and strings decode too.
            let data = Data("[\(value)]".utf8)
            let decoded: Any = try decodeFirst(decodable, from: data, decoder)
            guard let typed = decoded as? Result else {
                throw DecodingError.typeMismatch(Result.self, .init(codingPath: [], debugDescription: ""))
            }
            return typed
        } catch {
            throw ChaosError(
                .valueTypeMismatch, subject: name,
                "the constant \(InputExcerpt.of(value)) is not a \(Result.self) (\(InputExcerpt.of(String(describing: error)))); write it as \(Result.self) encodes in JSON (dates as ISO-8601)"
            )
        }
    }
}

private func decodeFirst<T: Decodable>(_: T.Type, from data: Data, _ decoder: JSONDecoder) throws -> T {
    try decoder.decode([T].self, from: data)[0]
}
