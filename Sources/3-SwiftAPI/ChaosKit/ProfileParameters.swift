public import Foundation

/// The parameters given to a catalogue item (or a `match` object), with typed accessors
/// whose errors say what to fix.
///
/// When a point makes a provider from them, they have already been checked against the
/// item's declared ``CatalogueParameter``s: every name is known, every value has its
/// declared type and range, and every declared default is filled in. The accessors then
/// cannot fail for a declared parameter.
public struct ProfileParameters: Sendable, Hashable {
    /// The parameters by name.
    public var values: [String: ProfileValue]
    /// Who the parameters are for, used in error messages ("clock.now offset").
    public var context: String
    /// The one unnamed value of the `CHAOS` grammar's `item(value)`; checking binds it to
    /// the item's first declared parameter.
    var positional: ProfileValue?
    /// Where each parameter was written (`file:line:column at $.path`), when known.
    var locations: [String: String] = [:]
    /// Where the parameters as a whole were written, when known.
    var location: String?
    /// Where the catalogue item's name was written, when known: an unknown item is an
    /// error about the name, not about its parameters.
    var itemLocation: String?

    /// Parameters for `context` (used in error messages).
    public init(_ values: [String: ProfileValue] = [:], context: String = "") {
        self.values = values
        self.context = context
    }

    /// Whether the parameter `name` is present (given, or filled in from its default).
    public func has(_ name: String) -> Bool { values[name] != nil }

    /// An `.invalidProvider` error about these parameters (about `name` when given), located
    /// where the parameter was written when that is known.
    public func invalid(_ message: String, parameter name: String? = nil) -> ChaosError {
        var error = ChaosError(.invalidProvider, subject: context.isEmpty ? nil : context, message)
        error.sourceLocation = name.flatMap { locations[$0] } ?? location
        return error
    }

    private func wrongType(_ name: String, _ expected: String) -> ChaosError {
        let found = values[name].map { " (found \($0.typeName): \(InputExcerpt.of($0)))" } ?? " (it is missing)"
        return invalid("parameter '\(name)' must be \(expected)\(found)", parameter: name)
    }

    /// The number named `name`, `defaultValue` when absent; any other type is an error.
    public func double(_ name: String, default defaultValue: Double? = nil) throws(ChaosError) -> Double {
        switch values[name] {
        case .number(let value)?: return value
        case nil: if let defaultValue { return defaultValue }
        default: break
        }
        throw wrongType(name, "a number")
    }

    /// The whole number named `name`, `defaultValue` when absent.
    public func int(_ name: String, default defaultValue: Int? = nil) throws(ChaosError) -> Int {
        let value = try double(name, default: defaultValue.map(Double.init))
        guard value.rounded() == value, abs(value) < 9e15 else { throw wrongType(name, "a whole number") }
        return Int(value)
    }

    /// The text named `name`, `defaultValue` when absent.
    public func string(_ name: String, default defaultValue: String? = nil) throws(ChaosError) -> String {
        switch values[name] {
        case .string(let value)?: return value
        case nil: if let defaultValue { return defaultValue }
        default: break
        }
        throw wrongType(name, "a string")
    }

    /// The flag named `name`, `defaultValue` when absent.
    public func bool(_ name: String, default defaultValue: Bool? = nil) throws(ChaosError) -> Bool {
        switch values[name] {
        case .bool(let value)?: return value
        case nil: if let defaultValue { return defaultValue }
        default: break
        }
        throw wrongType(name, "true or false")
    }

    /// The duration named `name`: text in the grammar of ``DurationText`` (`"250ms"`), or a
    /// number of `unit`s (milliseconds unless the declaration says otherwise).
    public func duration(_ name: String, unit: Duration = .milliseconds(1)) throws(ChaosError) -> Duration {
        switch values[name] {
        case .string(let text)?:
            do throws(ChaosError) {
                return try DurationText.duration(text)
            } catch {
                throw invalid("parameter '\(name)': \(error.message)", parameter: name)
            }
        case .number(let count)? where count >= 0 && count.isFinite:
            return unit * count
        default:
            throw wrongType(name, "a duration such as \"250ms\" or \"2s\"")
        }
    }

    /// The clock offset named `name`: text such as `"-30y"`, or a number of seconds.
    public func offset(_ name: String) throws(ChaosError) -> ClockOffset {
        switch values[name] {
        case .string(let text)?:
            do throws(ChaosError) {
                return try ClockOffset.parse(text)
            } catch {
                throw invalid("parameter '\(name)': \(error.message)", parameter: name)
            }
        case .number(let seconds)? where seconds.isFinite:
            return ClockOffset(seconds: seconds)
        default:
            throw wrongType(name, "an offset such as \"-1d\" or \"+30y\", or a number of seconds")
        }
    }

    /// The date named `name`: ISO-8601 text (see ``ISO8601Date``) or seconds since 1970.
    public func date(_ name: String, default defaultValue: Date? = nil) throws(ChaosError) -> Date {
        switch values[name] {
        case .string(let text)?:
            guard let date = ISO8601Date.parse(text) else {
                throw invalid(
                    "parameter '\(name)' is '\(InputExcerpt.of(text))', which is not an ISO-8601 date; write e.g. \"2026-03-29T01:00:00Z\"",
                    parameter: name
                )
            }
            return date
        case .number(let seconds)? where seconds.isFinite:
            return Date(timeIntervalSince1970: seconds)
        case nil:
            if let defaultValue { return defaultValue }
            throw wrongType(name, "an ISO-8601 date such as \"2026-03-29T01:00:00Z\"")
        default:
            throw wrongType(name, "an ISO-8601 date string (e.g. \"2026-03-29T01:00:00Z\") or seconds since 1970")
        }
    }

    /// The list of strings named `name`, nil when absent.
    public func strings(_ name: String) throws(ChaosError) -> [String]? {
        switch values[name] {
        case nil: return nil
        case .array(let items)?:
            var result: [String] = []
            for item in items {
                guard case .string(let text) = item else { throw wrongType(name, "a list of strings") }
                result.append(text)
            }
            return result
        default:
            throw wrongType(name, "a list of strings such as [\"london\", \"tokyo\"]")
        }
    }

    /// A short rendering: `by: "-1d", days: 2`.
    public var summary: String {
        var parts = values.sorted { $0.key < $1.key }.map { "\($0.key): \(InputExcerpt.of($0.value))" }
        if let positional { parts.insert(InputExcerpt.of(positional), at: 0) }
        return parts.joined(separator: ", ")
    }
}

extension ProfileParameters: ProviderSummarizable {}
