/// The one-line profile grammar of the `CHAOS` environment variable, in the spirit of fail-rs.
///
/// ```text
/// CHAOS="clock.now=offset(-1d);demo.fetch-score=20%3*offline->original"
/// ```
/// - entries are `point=chain`, separated by `;`
/// - a chain is steps joined by `->`; a step with a count `N*` is used N times, then the
///   chain moves on; a step without a count stays for good
/// - a step is `[P%][N*]task[(arguments)][@delay]`: `P%` applies it with probability P/100,
///   `@250ms` waits before answering
/// - tasks: `original` (or `off`), `nil`, `random`, `constant(JSON)`, or a catalogue item
///   of the point with arguments `name(value)` or `name(key=value, …)`; a single value is
///   passed as the parameter `value`
public enum ChaosGrammar {
    /// Parses `text` into profile entries; errors name the column and what to write instead.
    public static func parse(_ text: String, source: String = "CHAOS") throws(ChaosError) -> [ChaosProfile.Entry] {
        var entries: [ChaosProfile.Entry] = []
        var offset = 0
        for rawEntry in text.split(separator: ";", omittingEmptySubsequences: false) {
            defer { offset += rawEntry.count + 1 }
            let entryText = rawEntry.trimmingCharacters(in: .whitespaces)
            if entryText.isEmpty { continue }
            let location = "\(source) column \(offset + 1)"
            guard let equals = entryText.firstIndex(of: "=") else {
                throw ChaosError(.invalidProfile, subject: location, "'\(entryText)' needs the form point=provider, e.g. clock.now=offset(-1d)")
            }
            let point = entryText[..<equals].trimmingCharacters(in: .whitespaces)
            let chain = String(entryText[entryText.index(after: equals)...])
            guard !point.isEmpty else { throw ChaosError(.invalidProfile, subject: location, "the point name before '=' is missing") }
            let provider = try parseChain(chain, location: "\(location) (\(point))")
            entries.append(ChaosProfile.Entry(pointName: point, provider: provider, enabled: true, location: location))
        }
        return entries
    }

    private static func parseChain(_ text: String, location: String) throws(ChaosError) -> ProviderDescription {
        let steps = splitTopLevel(text, separator: "->")
        guard !steps.isEmpty, steps.allSatisfy({ !$0.trimmingCharacters(in: .whitespaces).isEmpty }) else {
            throw ChaosError(.invalidProfile, subject: location, "an empty step; write steps such as 3*offline->original")
        }
        var parsed: [(count: Int?, provider: ProviderDescription)] = []
        for step in steps {
            parsed.append(try parseStep(step.trimmingCharacters(in: .whitespaces), location: location))
        }
        // Built from the end: a counted step is repeated, then the rest of the chain follows.
        var result = parsed[parsed.count - 1].provider
        if let count = parsed[parsed.count - 1].count { result = .times(count, result) }
        for step in parsed.dropLast().reversed() {
            guard let count = step.count else {
                throw ChaosError(
                    .invalidProfile, subject: location,
                    "a step without a count never ends, so nothing after it would run; give it a count such as 3*"
                )
            }
            result = .sequential(Array(repeating: step.provider, count: count) + [result])
        }
        return result
    }

    private static func parseStep(_ text: String, location: String) throws(ChaosError) -> (count: Int?, provider: ProviderDescription) {
        var rest = Substring(text)
        var probability: Double?
        var count: Int?
        var delay: Duration?
        if let percent = rest.firstIndex(of: "%"), let value = Double(rest[..<percent]) {
            guard (0...100).contains(value) else {
                throw ChaosError(.invalidProfile, subject: location, "\(value)% is outside 0…100%")
            }
            probability = value / 100
            rest = rest[rest.index(after: percent)...]
        }
        if let star = rest.firstIndex(of: "*"), let value = Int(rest[..<star]) {
            guard value >= 1 else { throw ChaosError(.invalidProfile, subject: location, "\(value)* would never apply; use 1* or more") }
            count = value
            rest = rest[rest.index(after: star)...]
        }
        if let at = rest.lastIndex(of: "@"), !rest[at...].contains(")") {
            let delayText = String(rest[rest.index(after: at)...])
            guard let parsed = DurationText.parse(delayText) else {
                throw ChaosError(.invalidProfile, subject: location, "'@\(delayText)' is not a delay; write @250ms, @2s or @1m")
            }
            delay = parsed
            rest = rest[..<at]
        }
        var provider = try parseTask(String(rest), location: location)
        if let probability { provider = .probability(probability, provider) }
        if let delay { provider = .delayed(delay, provider) }
        return (count, provider)
    }

    private static func parseTask(_ text: String, location: String) throws(ChaosError) -> ProviderDescription {
        var name = text
        var arguments: String?
        if let open = text.firstIndex(of: "(") {
            guard text.hasSuffix(")") else {
                throw ChaosError(.invalidProfile, subject: location, "'\(text)' opens '(' but does not end with ')'")
            }
            name = String(text[..<open])
            arguments = String(text[text.index(after: open)..<text.index(before: text.endIndex)])
        }
        name = name.trimmingCharacters(in: .whitespaces)
        guard !name.isEmpty, name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" || $0 == "." }) else {
            throw ChaosError(.invalidProfile, subject: location, "'\(text)' is not a provider; use original, nil, random, constant(…) or a catalogue item")
        }
        switch name {
        case "original", "off": return .original
        case "nil": return .nil
        case "random": return .random
        case "constant":
            guard let arguments else {
                throw ChaosError(.invalidProfile, subject: location, "constant needs a JSON value, e.g. constant(42) or constant(\"text\")")
            }
            do {
                return .constantValue(try JSONDocumentParser.parse(arguments).value)
            } catch {
                throw ChaosError(.invalidProfile, subject: location, "constant(\(arguments)): \(error.message)")
            }
        default:
            return .catalogue(name, ProfileParameters(try parseArguments(arguments ?? "", location: location)))
        }
    }

    private static func parseArguments(_ text: String, location: String) throws(ChaosError) -> [String: ProfileValue] {
        let parts = splitTopLevel(text, separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        if parts.count == 1, !parts[0].contains("=") { return ["value": value(parts[0])] }
        var result: [String: ProfileValue] = [:]
        for part in parts {
            guard let equals = part.firstIndex(of: "=") else {
                throw ChaosError(.invalidProfile, subject: location, "argument '\(part)' needs the form key=value when there are several")
            }
            result[part[..<equals].trimmingCharacters(in: .whitespaces)] = value(part[part.index(after: equals)...].trimmingCharacters(in: .whitespaces))
        }
        return result
    }

    private static func value(_ text: String) -> ProfileValue {
        if let parsed = try? JSONDocumentParser.parse(text).value { return parsed }
        return .string(text)
    }

    /// Splits at `separator` outside parentheses and quotes.
    private static func splitTopLevel(_ text: String, separator: String) -> [String] {
        var parts: [String] = []
        var current = ""
        var depth = 0
        var quoted = false
        var index = text.startIndex
        while index < text.endIndex {
            let character = text[index]
            if character == "\"" { quoted.toggle() }
            if !quoted {
                if character == "(" { depth += 1 }
                if character == ")" { depth -= 1 }
                if depth == 0, text[index...].hasPrefix(separator) {
                    parts.append(current)
                    current = ""
                    index = text.index(index, offsetBy: separator.count)
                    continue
                }
            }
            current.append(character)
            index = text.index(after: index)
        }
        parts.append(current)
        return parts
    }
}
