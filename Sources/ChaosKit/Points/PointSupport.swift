import Foundation

extension Chaos {
    /// Creates the built-in injection points (`clock.now`, `clock.timeZone`, `clock.sleep`,
    /// `strings.localized`, `location.current`, `location.updates`) with their catalogues,
    /// so that name-based entries and profiles can find them before any code has used them.
    ///
    /// Points are created on first use anyway; call this before applying a profile that
    /// names a built-in point the program may not have touched yet.
    public static func registerBuiltInPoints() {
        _ = ChaosClock.now
        _ = ChaosClock.timeZone
        _ = ChaosClock.sleep
        _ = ChaosStrings.localized
        _ = ChaosLocation.current
        _ = ChaosLocation.updates
    }
}

extension ProfileParameters {
    /// An `.invalidProvider` error about these parameters.
    func invalid(_ message: String) -> ChaosError {
        ChaosError(.invalidProvider, subject: context.isEmpty ? nil : context, message)
    }

    /// Whether the parameter `name` is present.
    func has(_ name: String) -> Bool { values[name] != nil }

    /// A date given as ISO-8601 text or as seconds since 1970.
    func date(_ name: String, default defaultValue: Date? = nil) throws(ChaosError) -> Date {
        switch values[name] {
        case .string(let text)?:
            guard let date = ISO8601Date.parse(text) else {
                throw invalid("parameter '\(name)' is '\(text)', which is not an ISO-8601 date; write e.g. \"2026-03-29T01:00:00Z\"")
            }
            return date
        case .number(let seconds)?:
            return Date(timeIntervalSince1970: seconds)
        case nil:
            if let defaultValue { return defaultValue }
            throw invalid("parameter '\(name)' is missing; give an ISO-8601 date such as \"2026-03-29T01:00:00Z\"")
        default:
            throw invalid("parameter '\(name)' must be an ISO-8601 date string (e.g. \"2026-03-29T01:00:00Z\") or seconds since 1970")
        }
    }

    /// A finite number, `defaultValue` when absent.
    func finite(_ name: String, default defaultValue: Double? = nil) throws(ChaosError) -> Double {
        let value = try double(name, default: defaultValue)
        guard value.isFinite else { throw invalid("parameter '\(name)' must be a finite number") }
        return value
    }

    /// A list of strings, nil when absent.
    func strings(_ name: String) throws(ChaosError) -> [String]? {
        switch values[name] {
        case nil: return nil
        case .array(let items)?:
            var result: [String] = []
            for item in items {
                guard case .string(let text) = item else {
                    throw invalid("parameter '\(name)' must be a list of strings, but it holds \(item)")
                }
                result.append(text)
            }
            return result
        default:
            throw invalid("parameter '\(name)' must be a list of strings such as [\"london\", \"tokyo\"]")
        }
    }
}

extension ProfileParameters {
    /// These parameters with the one-line grammar's positional `value` (`offset(-1d)`)
    /// renamed to `key`, the item's main parameter, unless `key` is given too.
    func naming(_ key: String) -> ProfileParameters {
        guard values[key] == nil, let value = values["value"] else { return self }
        var copy = self
        copy.values["value"] = nil
        copy.values[key] = value
        return copy
    }
}
