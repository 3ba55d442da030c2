public import Foundation

/// One parameter a catalogue item (or a point's `match` object) takes: its name, type,
/// unit, default, range and meaning.
///
/// Profiles, the `CHAOS` grammar, the JSON schema and `chaos list` are all derived from
/// these declarations: a profile's parameters are checked against them before the item's
/// provider is made, so an unknown, misspelled, mistyped, missing or out-of-range
/// parameter is a located error that names the nearest valid name, and nothing is applied.
public struct CatalogueParameter: Sendable, Hashable {
    /// What values the parameter takes.
    public enum Kind: Sendable, Hashable {
        /// A finite number.
        case number
        /// A whole number.
        case integer
        /// `true` or `false`.
        case boolean
        /// Any string.
        case string
        /// One of these names.
        case choice([String])
        /// A duration of zero or more: text in the grammar of ``DurationText`` (`"250ms"`),
        /// or a number in the parameter's ``CatalogueParameter/unit``.
        case duration
        /// A clock offset: text such as `"-30y"` or `"+1d12h"` (see ``ClockOffset``), or a
        /// number of seconds.
        case offset
        /// An instant: ISO-8601 text (see ``ISO8601Date``) or seconds since 1970.
        case date
        /// A list of strings.
        case strings
    }

    /// Whether a parameter must be given.
    public enum Requirement: Sendable, Hashable {
        /// It must be given.
        case required
        /// It may be left out; the item then does without it.
        case optional
        /// It may be left out; it then has this value.
        case defaulted(ProfileValue)
    }

    /// The name profiles use.
    public let name: String
    /// What values it takes.
    public let kind: Kind
    /// The unit of a number (`"km"`, `"seconds"`), or of a duration given as a number
    /// (`"ms"` unless said otherwise).
    public let unit: String?
    /// Whether it must be given, and its default.
    public let requirement: Requirement
    /// The smallest and largest allowed value, for numbers and whole numbers.
    public let range: ClosedRange<Double>?
    /// What it means, in a few words.
    public let summary: String

    /// A parameter of any kind; the static factories (``number(_:_:unit:default:range:optional:)``
    /// and the others) read better.
    public init(
        _ name: String, _ kind: Kind, _ summary: String, unit: String? = nil,
        requirement: Requirement = .required, range: ClosedRange<Double>? = nil
    ) {
        self.name = name
        self.kind = kind
        self.summary = summary
        self.unit = kind == .duration ? (unit ?? "ms") : unit
        self.requirement = requirement
        self.range = range
    }

    private static func requirement(_ value: ProfileValue?, optional: Bool) -> Requirement {
        value.map(Requirement.defaulted) ?? (optional ? .optional : .required)
    }

    /// A finite number, optionally within `range`.
    public static func number(
        _ name: String, _ summary: String, unit: String? = nil, default value: Double? = nil,
        range: ClosedRange<Double>? = nil, optional: Bool = false
    ) -> CatalogueParameter {
        CatalogueParameter(
            name, .number, summary, unit: unit,
            requirement: requirement(value.map(ProfileValue.number), optional: optional), range: range)
    }

    /// A whole number, optionally within `range`.
    public static func integer(
        _ name: String, _ summary: String, unit: String? = nil, default value: Int? = nil,
        range: ClosedRange<Int>? = nil, optional: Bool = false
    ) -> CatalogueParameter {
        CatalogueParameter(
            name, .integer, summary, unit: unit,
            requirement: requirement(value.map { .number(Double($0)) }, optional: optional),
            range: range.map { Double($0.lowerBound)...Double($0.upperBound) }
        )
    }

    /// `true` or `false`.
    public static func boolean(_ name: String, _ summary: String, default value: Bool? = nil) -> CatalogueParameter {
        CatalogueParameter(
            name, .boolean, summary, requirement: requirement(value.map(ProfileValue.bool), optional: false))
    }

    /// Any string.
    public static func string(_ name: String, _ summary: String, default value: String? = nil, optional: Bool = false)
        -> CatalogueParameter
    {
        CatalogueParameter(
            name, .string, summary, requirement: requirement(value.map(ProfileValue.string), optional: optional))
    }

    /// One of `choices`.
    public static func choice(_ name: String, _ summary: String, _ choices: [String], default value: String? = nil)
        -> CatalogueParameter
    {
        CatalogueParameter(
            name, .choice(choices), summary, requirement: requirement(value.map(ProfileValue.string), optional: false))
    }

    /// A duration of zero or more (a bare number counts `unit`s: `"ms"` or `"s"`).
    public static func duration(
        _ name: String, _ summary: String, unit: String = "ms", default value: Duration? = nil, optional: Bool = false
    ) -> CatalogueParameter {
        CatalogueParameter(
            name, .duration, summary, unit: unit,
            requirement: requirement(value.map { .string(DurationText.format($0)) }, optional: optional)
        )
    }

    /// A clock offset (`"-30y"`, `"+1d12h"`, or seconds).
    public static func offset(_ name: String, _ summary: String, optional: Bool = false) -> CatalogueParameter {
        CatalogueParameter(name, .offset, summary, requirement: optional ? .optional : .required)
    }

    /// An instant (ISO-8601 or seconds since 1970).
    public static func date(_ name: String, _ summary: String, default value: Date? = nil, optional: Bool = false)
        -> CatalogueParameter
    {
        CatalogueParameter(
            name, .date, summary,
            requirement: requirement(value.map { .string(ISO8601Date.format($0)) }, optional: optional)
        )
    }

    /// A list of strings.
    public static func strings(_ name: String, _ summary: String, optional: Bool = true) -> CatalogueParameter {
        CatalogueParameter(name, .strings, summary, requirement: optional ? .optional : .required)
    }

    /// The default, when the parameter has one.
    public var defaultValue: ProfileValue? {
        if case .defaulted(let value) = requirement { return value }
        return nil
    }

    /// The type as `chaos list` shows it: `number`, `duration`, `"a" | "b"` …
    public var typeDescription: String {
        switch kind {
        case .number: "number"
        case .integer: "whole number"
        case .boolean: "true | false"
        case .string: "string"
        case .choice(let choices): choices.map { "\"\($0)\"" }.joined(separator: " | ")
        case .duration: "duration"
        case .offset: "offset"
        case .date: "ISO-8601 date"
        case .strings: "[string]"
        }
    }

    /// One line for tools: `factor: number (0…100) = 1 — how many times as fast`.
    public var description: String {
        var text = "\(name): \(typeDescription)"
        if let unit, kind != .duration { text += " (\(unit))" }
        if let range {
            text += " \(ProfileValue.numberText(range.lowerBound))…\(ProfileValue.numberText(range.upperBound))"
        }
        switch requirement {
        case .required: break
        case .optional: text += " (optional)"
        case .defaulted(let value): text += " = \(value)"
        }
        return summary.isEmpty ? text : "\(text) — \(summary)"
    }

    // MARK: Checking

    /// `value` checked against this declaration, in the form the typed accessors read
    /// (durations as text); the error says what is wrong, without the subject.
    func checked(_ value: ProfileValue) -> Result<ProfileValue, CheckFailure> {
        func fail(_ expected: String) -> Result<ProfileValue, CheckFailure> {
            .failure(CheckFailure("must be \(expected), not \(value.typeName) (\(InputExcerpt.of(value)))"))
        }
        func inRange(_ number: Double) -> Result<ProfileValue, CheckFailure> {
            if let range, !range.contains(number) {
                let bounds = "\(ProfileValue.numberText(range.lowerBound))…\(ProfileValue.numberText(range.upperBound))"
                return .failure(
                    CheckFailure(
                        "is \(ProfileValue.numberText(number)), outside \(bounds)\(unit.map { " \($0)" } ?? "")"))
            }
            return .success(.number(number))
        }
        switch (kind, value) {
        case (.number, .number(let number)) where number.isFinite:
            return inRange(number)
        case (.number, _):
            return fail("a number")
        case (.integer, .number(let number)) where number.rounded() == number && abs(number) < 9e15:
            return inRange(number)
        case (.integer, _):
            return fail("a whole number")
        case (.boolean, .bool):
            return .success(value)
        case (.boolean, _):
            return fail("true or false")
        case (.string, .string):
            return .success(value)
        case (.string, _):
            return fail("a string")
        case (.choice(let choices), .string(let text)):
            if choices.contains(text) { return .success(value) }
            // Names are matched without regard to case, and then spelled as declared.
            if let canonical = choices.first(where: { $0.lowercased() == text.lowercased() }) {
                return .success(.string(canonical))
            }
            return .failure(
                CheckFailure(
                    "is '\(InputExcerpt.of(text))', which is not one of its choices\(Suggestions.hint(for: text, in: choices)); choose one of: \(choices.joined(separator: ", "))"
                ))
        case (.choice(let choices), _):
            return fail("one of: \(choices.joined(separator: ", "))")
        case (.duration, .string(let text)):
            do throws(ChaosError) {
                return .success(.string(DurationText.format(try DurationText.duration(text))))
            } catch {
                return .failure(CheckFailure(error.message))
            }
        case (.duration, .number(let count)) where count >= 0 && count.isFinite:
            return .success(.string(DurationText.format(durationUnit * count)))
        case (.duration, _):
            return fail("a duration such as \"250ms\" or \"2s\", or a number of \(unit ?? "ms") of 0 or more")
        case (.offset, .string(let text)):
            do throws(ChaosError) {
                _ = try ClockOffset.parse(text)
                return .success(value)
            } catch {
                return .failure(CheckFailure(error.message))
            }
        case (.offset, .number(let seconds)) where seconds.isFinite:
            return .success(value)
        case (.offset, _):
            return fail("an offset such as \"-1d\" or \"+30y\", or a number of seconds")
        case (.date, .string(let text)):
            if ISO8601Date.parse(text) != nil { return .success(value) }
            return .failure(
                CheckFailure(
                    "is '\(InputExcerpt.of(text))', which is not an ISO-8601 date; write e.g. \"2026-03-29T01:00:00Z\"")
            )
        case (.date, .number(let seconds)) where seconds.isFinite:
            return .success(value)
        case (.date, _):
            return fail("an ISO-8601 date such as \"2026-03-29T01:00:00Z\", or seconds since 1970")
        case (.strings, .array(let items)) where items.allSatisfy({ if case .string = $0 { true } else { false } }):
            return .success(value)
        case (.strings, _):
            return fail("a list of strings such as [\"london\", \"tokyo\"]")
        }
    }

    /// The duration one unit of a bare number stands for.
    var durationUnit: Duration {
        switch unit {
        case "ns": .nanoseconds(1)
        case "us", "µs": .microseconds(1)
        case "s": .seconds(1)
        case "m": .seconds(60)
        case "h": .seconds(3_600)
        default: .milliseconds(1)
        }
    }

    /// Why a value does not fit a declaration.
    struct CheckFailure: Error {
        let message: String
        init(_ message: String) { self.message = message }
    }

    // MARK: Schema

    /// The JSON Schema of the parameter's values.
    var schema: ProfileValue {
        var schema: [String: ProfileValue] = ["description": .string(summary)]
        switch kind {
        case .number:
            schema["type"] = .string("number")
        case .integer:
            schema["type"] = .string("integer")
        case .boolean:
            schema["type"] = .string("boolean")
        case .string:
            schema["type"] = .string("string")
        case .choice(let choices):
            schema["enum"] = .array(choices.map(ProfileValue.string))
        case .duration:
            schema["oneOf"] = .array([
                .object(["type": .string("number"), "minimum": .number(0)]),
                .object(["type": .string("string"), "pattern": .string(DurationText.schemaPattern)]),
            ])
        case .offset:
            schema["type"] = .array([.string("string"), .string("number")])
        case .date:
            schema["type"] = .array([.string("string"), .string("number")])
        case .strings:
            schema["type"] = .string("array")
            schema["items"] = .object(["type": .string("string")])
        }
        if let range {
            schema["minimum"] = .number(range.lowerBound)
            schema["maximum"] = .number(range.upperBound)
        }
        if let defaultValue { schema["default"] = defaultValue }
        return .object(schema)
    }
}

extension ProfileParameters {
    /// These parameters checked against `declared` for the item (or match object) `owner`:
    /// the `CHAOS` grammar's unnamed value bound to the first declared parameter, every name
    /// known, every value of its declared type and range, every default filled in. The
    /// first problem is a located error that names the nearest valid name.
    public func checked(against declared: [CatalogueParameter], owner: String) throws(ChaosError) -> ProfileParameters {
        var result = self
        result.positional = nil
        let names = declared.map(\.name)
        if let positional {
            guard let first = declared.first else {
                throw invalid("\(owner) takes no parameters; remove the value in parentheses")
            }
            guard values[first.name] == nil else {
                throw invalid(
                    "'\(first.name)' is given twice, by position and by name; keep one", parameter: first.name)
            }
            result.values[first.name] = positional
        }
        for name in result.values.keys.sorted() where !names.contains(name) {
            let takes =
                names.isEmpty ? "\(owner) takes no parameters" : "\(owner) takes: \(names.joined(separator: ", "))"
            throw invalid(
                "unknown parameter '\(InputExcerpt.of(name))'\(Suggestions.hint(for: name, in: names)); \(takes)",
                parameter: name)
        }
        for parameter in declared {
            if let value = result.values[parameter.name] {
                switch parameter.checked(value) {
                case .success(let normalized): result.values[parameter.name] = normalized
                case .failure(let failure):
                    throw invalid("parameter '\(parameter.name)' \(failure.message)", parameter: parameter.name)
                }
            } else {
                switch parameter.requirement {
                case .required:
                    throw invalid("parameter '\(parameter.name)' is missing: \(parameter.description)")
                case .optional:
                    break
                case .defaulted(let value):
                    result.values[parameter.name] = value
                }
            }
        }
        return result
    }
}
