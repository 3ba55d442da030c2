import Foundation

/// A JSON-like value, as profiles carry them (parameters of catalogue items, constants).
public enum ProfileValue: Sendable, Hashable, CustomStringConvertible {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([ProfileValue])
    case object([String: ProfileValue])

    /// The value as JSON text.
    public var description: String {
        switch self {
        case .null: "null"
        case .bool(let value): String(value)
        case .number(let value): value.rounded() == value && abs(value) < 1e15 ? String(Int64(value)) : String(value)
        case .string(let value): Self.quoted(value)
        case .array(let values): "[\(values.map(\.description).joined(separator: ","))]"
        case .object(let members):
            "{\(members.sorted { $0.key < $1.key }.map { "\(Self.quoted($0.key)):\($0.value)" }.joined(separator: ","))}"
        }
    }

    /// `text` as a JSON string literal.
    static func quoted(_ text: String) -> String {
        var result = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case let control where control.value < 0x20: result += String(format: "\\u%04x", control.value)
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }
}

/// The parameters given to a catalogue item, with typed accessors whose errors say what to fix.
public struct ProfileParameters: Sendable, Hashable {
    /// The raw parameters by name.
    public var values: [String: ProfileValue]
    /// Who the parameters are for, used in error messages ("clock.now offset").
    public var context: String

    /// Parameters for `context` (used in error messages).
    public init(_ values: [String: ProfileValue] = [:], context: String = "") {
        self.values = values
        self.context = context
    }

    private func missing(_ name: String, _ kind: String) -> ChaosError {
        ChaosError(.invalidProvider, subject: context, "parameter '\(name)' must be \(kind)")
    }

    /// The number named `name`, `defaultValue` when absent; any other type is an error.
    public func double(_ name: String, default defaultValue: Double? = nil) throws(ChaosError) -> Double {
        switch values[name] {
        case .number(let value)?: return value
        case nil: if let defaultValue { return defaultValue }
        default: break
        }
        throw missing(name, "a number")
    }

    /// The whole number named `name`, `defaultValue` when absent.
    public func int(_ name: String, default defaultValue: Int? = nil) throws(ChaosError) -> Int {
        let value = try double(name, default: defaultValue.map(Double.init))
        guard value.rounded() == value, abs(value) < 9e15 else { throw missing(name, "a whole number") }
        return Int(value)
    }

    /// The text named `name`, `defaultValue` when absent.
    public func string(_ name: String, default defaultValue: String? = nil) throws(ChaosError) -> String {
        switch values[name] {
        case .string(let value)?: return value
        case nil: if let defaultValue { return defaultValue }
        default: break
        }
        throw missing(name, "a string")
    }

    /// The flag named `name`, `defaultValue` when absent.
    public func bool(_ name: String, default defaultValue: Bool? = nil) throws(ChaosError) -> Bool {
        switch values[name] {
        case .bool(let value)?: return value
        case nil: if let defaultValue { return defaultValue }
        default: break
        }
        throw missing(name, "true or false")
    }
}

/// A provider described without types, as a profile or a name-based entry gives it; the
/// point it is applied to turns it into a typed provider and says what does not fit.
public indirect enum ProviderDescription: Sendable {
    /// Call the real implementation.
    case original
    /// Return this value; it must have the point's result type.
    case constant(any Sendable)
    /// Return this JSON value decoded as the point's result type (which must be `Decodable`;
    /// dates as ISO-8601 strings).
    case constantValue(ProfileValue)
    /// Only calls whose arguments match these conditions get the provider; the point must
    /// have an argument matcher (see `setArgumentMatcher`).
    case matching(ProfileParameters, ProviderDescription)
    /// Return nil; the point must return an Optional.
    case `nil`
    /// A random value; the point's result type must conform to ``RandomChaosValue``.
    case random
    /// Throw this error; it must have the point's failure type.
    case throwing(any Error)
    /// Call *i* uses provider *i*; the last one repeats.
    case sequential([ProviderDescription])
    /// A provider the point names in its catalogue, with parameters.
    case catalogue(String, ProfileParameters)
    /// With probability p (0…1) the provider, otherwise the original.
    case probability(Double, ProviderDescription)
    /// The first n calls use the provider, then the original.
    case times(Int, ProviderDescription)
    /// Wait, then use the provider.
    case delayed(Duration, ProviderDescription)

    /// A short rendering for logs.
    public var summary: String {
        switch self {
        case .original: "original"
        case .constant(let value): "constant(\(value))"
        case .constantValue(let value): "constant(\(value))"
        case .matching(let conditions, let inner): "\(inner.summary) when \(ProviderDescription.catalogue("", conditions).summary)"
        case .nil: "nil"
        case .random: "random"
        case .throwing(let error): "throwing(\(error))"
        case .sequential(let parts): "sequential[\(parts.map(\.summary).joined(separator: ", "))]"
        case .catalogue(let name, let parameters):
            parameters.values.isEmpty ? name
                : "\(name)(\(parameters.values.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", ")))"
        case .probability(let p, let inner): "\(inner.summary) with probability \(p)"
        case .times(let n, let inner): "\(inner.summary) \(n) times"
        case .delayed(let delay, let inner): "\(inner.summary) after \(delay)"
        }
    }

    /// The typed provider this describes, for a point named `pointName`.
    func typed<P: ChaosProviderProtocol>(
        as _: P.Type, pointName: String, catalogue: Catalogue<P>
    ) throws(ChaosError) -> P {
        switch self {
        case .original:
            return .original
        case .constant(let value):
            guard let typed = value as? P.Result else {
                throw ChaosError(
                    .valueTypeMismatch, subject: pointName,
                    "the point returns \(P.Result.self) but the constant is \(type(of: value)); give a \(P.Result.self)"
                )
            }
            return .constant(typed)
        case .constantValue(let value):
            return .constant(try decode(value, as: P.Result.self, pointName: pointName))
        case .matching(let conditions, let inner):
            let condition = try catalogue.matcher(conditions, pointName: pointName)
            let provider = try inner.typed(as: P.self, pointName: pointName, catalogue: catalogue)
            return .composite([P.when(condition, provider)])
        case .nil:
            guard let optional = P.Result.self as? any ExpressibleByNilLiteral.Type,
                  let none = optional.init(nilLiteral: ()) as? P.Result else {
                throw ChaosError(
                    .valueTypeMismatch, subject: pointName,
                    "the point returns \(P.Result.self), which cannot be nil; use constant or original instead"
                )
            }
            return .constant(none)
        case .random:
            // A point can give `.random` its own meaning (a C hook: a value of its C return type).
            if catalogue.has("random") {
                return try catalogue.make("random", ProfileParameters(context: "\(pointName) random"), pointName: pointName)
            }
            guard let randomType = P.Result.self as? any RandomChaosValue.Type else {
                throw ChaosError(
                    .valueTypeMismatch, subject: pointName,
                    "\(P.Result.self) has no ready random values; conform it to RandomChaosValue or use a catalogue item"
                )
            }
            return .random(RandomGenerator { source in
                // Checked above: the result type is this RandomChaosValue type.
                randomType.randomChaosValue(using: &source) as! P.Result
            })
        case .throwing(let error):
            guard let typed = error as? P.Failure else {
                let fix = P.Failure.self == Never.self
                    ? "this point cannot throw; use a value provider instead"
                    : "throw a \(P.Failure.self)"
                throw ChaosError(.valueTypeMismatch, subject: pointName, "\(type(of: error)) is not the point's error type: \(fix)")
            }
            return .throwing(typed)
        case .sequential(let parts):
            var typedParts: [P] = []
            for part in parts {
                typedParts.append(try part.typed(as: P.self, pointName: pointName, catalogue: catalogue))
            }
            return .sequential(typedParts)
        case .catalogue(let name, var parameters):
            if parameters.context.isEmpty { parameters.context = "\(pointName) \(name)" }
            return try catalogue.make(name, parameters, pointName: pointName)
        case .probability(let p, let inner):
            return try inner.typed(as: P.self, pointName: pointName, catalogue: catalogue).probability(p)
        case .times(let n, let inner):
            return try inner.typed(as: P.self, pointName: pointName, catalogue: catalogue).times(n)
        case .delayed(let delay, let inner):
            return try inner.typed(as: P.self, pointName: pointName, catalogue: catalogue).delayed(by: delay)
        }
    }

    private func decode<Value>(_ value: ProfileValue, as _: Value.Type, pointName: String) throws(ChaosError) -> Value {
        guard let decodable = Value.self as? any Decodable.Type else {
            throw ChaosError(
                .valueTypeMismatch, subject: pointName,
                "the point returns \(Value.self), which a profile cannot spell; use a catalogue item instead"
            )
        }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        do {
            // Wrapped in an array so that plain numbers and strings decode too.
            let data = Data("[\(value)]".utf8)
            let decoded: Any = try decodeFirst(decodable, from: data, decoder)
            guard let typed = decoded as? Value else { throw DecodingError.typeMismatch(Value.self, .init(codingPath: [], debugDescription: "")) }
            return typed
        } catch {
            throw ChaosError(
                .valueTypeMismatch, subject: pointName,
                "the constant \(value) is not a \(Value.self) (\(error)); write it as \(Value.self) encodes in JSON (dates as ISO-8601)"
            )
        }
    }
}

private func decodeFirst<T: Decodable>(_: T.Type, from data: Data, _ decoder: JSONDecoder) throws -> T {
    try decoder.decode([T].self, from: data)[0]
}
