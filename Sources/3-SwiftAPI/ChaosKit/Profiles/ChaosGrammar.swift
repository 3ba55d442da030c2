/// The one-line profile grammar of the `CHAOS` environment variable, in the spirit of fail-rs.
///
/// ```text
/// CHAOS="clock.now=offset(-1d);demo.fetch-score=20%3*offline->original"
/// ```
/// - entries are `point=chain`, separated by `;`
/// - a chain is steps joined by `->`; a step with a count `N*` covers N calls, then the
///   chain moves on; a step without a count stays for good (`2*offline->original` is the
///   JSON `{"sequential": [{"item": "offline", "times": 2}, "original"]}`)
/// - a step is `[P%][N*]task[(arguments)][~lease][#calls][@delay]`: `P%` applies it with probability P/100,
///   `~30s` reverts the entry 30 s after it was applied, `#3` (or `#2,5`) acts only at those
///   calls of the entry and passes the others on, `@250ms` waits before answering (the modifiers of ``ProviderModifier``)
/// - tasks: `original` (or `off`), `pass` (the point's next entry decides), `nil`, `random`, `constant(JSON)`, or a catalogue item
///   of the point with arguments `name(value)` or `name(key=value, …)`; a single unnamed
///   value fills the item's first declared parameter
///
/// Errors give the column of the offending character.
public enum ChaosGrammar {
    /// Parses `text` into profile entries; errors name the column and what to write instead.
    public static func parse(_ text: String, source: String = "CHAOS") throws(ChaosError) -> [ChaosProfile.Entry] {
        let characters = Array(text)
        var entries: [ChaosProfile.Entry] = []
        for range in split(characters, 0..<characters.count, on: [";"]) {
            let trimmed = trim(characters, range)
            if trimmed.isEmpty { continue }
            let location = "\(source) column \(trimmed.lowerBound + 1)"
            func fail(_ column: Int, _ message: String) -> ChaosError {
                ChaosError(.invalidProfile, subject: "\(source) column \(column + 1)", message)
            }
            guard let equals = characters[trimmed].firstIndex(of: "=") else {
                throw fail(
                    trimmed.upperBound,
                    "'\(InputExcerpt.of(String(characters[trimmed])))' needs the form point=provider, e.g. clock.now=offset(-1d)"
                )
            }
            let pointRange = trim(characters, trimmed.lowerBound..<equals)
            guard !pointRange.isEmpty else { throw fail(equals, "the point name before '=' is missing") }
            let point = String(characters[pointRange])
            if let bad = characters[pointRange].firstIndex(where: { $0.isWhitespace || $0 == "(" || $0 == ")" }) {
                throw fail(bad, "'\(InputExcerpt.of(point))' is not a point name; names have no spaces or parentheses")
            }
            let parser = StepParser(characters: characters, source: source)
            let provider = try parser.chain(equals + 1..<trimmed.upperBound)
            entries.append(ChaosProfile.Entry(pointName: point, provider: provider, enabled: true, location: location))
        }
        return entries
    }

    /// Splits `range` at each top-level occurrence of `separator` (outside parentheses,
    /// brackets, braces and double quotes).
    static func split(_ characters: [Character], _ range: Range<Int>, on separator: [Character]) -> [Range<Int>] {
        var parts: [Range<Int>] = []
        var start = range.lowerBound
        var depth = 0
        var quoted = false
        var index = range.lowerBound
        while index < range.upperBound {
            let character = characters[index]
            if quoted {
                if character == "\\" {
                    index += 2
                    continue
                }
                if character == "\"" { quoted = false }
            } else {
                switch character {
                case "\"": quoted = true
                case "(", "[", "{": depth += 1
                case ")", "]", "}": depth -= 1
                default:
                    if depth == 0, index + separator.count <= range.upperBound,
                        Array(characters[index..<index + separator.count]) == separator
                    {
                        parts.append(start..<index)
                        index += separator.count
                        start = index
                        continue
                    }
                }
            }
            index += 1
        }
        parts.append(start..<range.upperBound)
        return parts
    }

    /// `range` without leading and trailing whitespace.
    static func trim(_ characters: [Character], _ range: Range<Int>) -> Range<Int> {
        var lower = range.lowerBound
        var upper = range.upperBound
        while lower < upper, characters[lower].isWhitespace { lower += 1 }
        while upper > lower, characters[upper - 1].isWhitespace { upper -= 1 }
        return lower..<upper
    }
}

/// Parses chains and steps of one entry, reporting columns of the whole text.
private struct StepParser {
    let characters: [Character]
    let source: String

    func fail(_ column: Int, _ message: String) -> ChaosError {
        ChaosError(.invalidProfile, subject: "\(source) column \(column + 1)", message)
    }

    func text(_ range: Range<Int>) -> String { String(characters[range]) }

    func chain(_ range: Range<Int>) throws(ChaosError) -> ProviderDescription {
        let steps = ChaosGrammar.split(characters, range, on: ["-", ">"])
        var parsed: [(count: Int?, provider: ProviderDescription, at: Int)] = []
        for step in steps {
            let trimmed = ChaosGrammar.trim(characters, step)
            guard !trimmed.isEmpty else {
                throw fail(step.lowerBound, "an empty step; write steps such as 3*offline->original")
            }
            let (count, provider) = try self.step(trimmed)
            parsed.append((count, provider, trimmed.lowerBound))
        }
        // A counted step covers its count of calls, as `times` does in a JSON sequential.
        for step in parsed.dropLast() where step.count == nil {
            throw fail(
                step.at, "a step without a count never ends, so nothing after it would run; give it a count such as 3*")
        }
        return parsed.count == 1 ? parsed[0].provider : .sequential(parsed.map(\.provider))
    }

    /// A step: modifier prefixes, the task, modifier suffixes. The modifiers wrap the task
    /// in the order a JSON provider object applies its keys (`times` innermost), so both
    /// spell the same tree; the `times` prefix is also the step's count, which the chain
    /// checks.
    func step(_ range: Range<Int>) throws(ChaosError) -> (count: Int?, provider: ProviderDescription) {
        var lower = range.lowerBound
        var upper = range.upperBound
        var prefixes: [ProviderModifier] = []
        var count: Int?
        // Prefixes: a number ended by a modifier's terminator (20%, 3*).
        scanning: while lower < upper {
            var end = lower
            while end < upper, characters[end].isNumber || characters[end] == "." { end += 1 }
            guard end > lower, end < upper else { break }
            for (form, read) in ProviderModifier.grammar {
                guard case .prefix(let terminator) = form, characters[end] == terminator else { continue }
                switch read(text(lower..<end)) {
                case .success(.times(let n)): count = n
                case .success(let modifier): prefixes.append(modifier)
                case .failure(let problem): throw fail(lower, problem.message)
                }
                lower = end + 1
                continue scanning
            }
            break
        }
        // Suffixes: introduced by a modifier's character outside parentheses (@250ms).
        var suffixes: [ProviderModifier] = []
        for (form, read) in ProviderModifier.grammar {
            guard case .suffix(let introducer) = form else { continue }
            let parts = ChaosGrammar.split(characters, lower..<upper, on: [introducer])
            guard parts.count > 1 else { continue }
            guard parts.count == 2 else {
                throw fail(parts[2].lowerBound - 1, "'\(introducer)' appears twice in one step; give it once")
            }
            switch read(text(ChaosGrammar.trim(characters, parts[1]))) {
            case .success(let modifier): suffixes.append(modifier)
            case .failure(let problem): throw fail(parts[1].lowerBound - 1, problem.message)
            }
            upper = parts[0].upperBound
        }
        var provider = try task(ChaosGrammar.trim(characters, lower..<upper))
        if let count { provider = .modified(.times(count), provider) }
        for modifier in prefixes.reversed() { provider = .modified(modifier, provider) }
        for modifier in suffixes { provider = .modified(modifier, provider) }
        return (count, provider)
    }

    func task(_ range: Range<Int>) throws(ChaosError) -> ProviderDescription {
        guard !range.isEmpty else {
            throw fail(range.lowerBound, "a step needs a provider, e.g. offline or offset(-1d)")
        }
        var nameEnd = range.upperBound
        var arguments: Range<Int>?
        if let open = characters[range].firstIndex(of: "(") {
            guard characters[range.upperBound - 1] == ")" else {
                throw fail(
                    range.upperBound - 1, "'\(InputExcerpt.of(text(range)))' opens '(' but does not end with ')'")
            }
            nameEnd = open
            arguments = open + 1..<range.upperBound - 1
        }
        let nameRange = ChaosGrammar.trim(characters, range.lowerBound..<nameEnd)
        let name = text(nameRange)
        if let bad = characters[nameRange].firstIndex(where: {
            !($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" || $0 == ".")
        }) {
            throw fail(
                bad,
                "'\(InputExcerpt.of(text(range)))' is not a provider; use original, nil, random, constant(…) or a catalogue item"
            )
        }
        guard !name.isEmpty else { throw fail(range.lowerBound, "a provider name is missing before '('") }
        switch name {
        case "original", "off", "pass", "nil", "random":
            if let arguments, !ChaosGrammar.trim(characters, arguments).isEmpty {
                throw fail(arguments.lowerBound, "\(name) takes no arguments")
            }
            switch name {
            case "nil": return .nil
            case "random": return .random
            case "pass": return .pass
            default: return .original
            }
        case "constant":
            guard let arguments else {
                throw fail(nameRange.upperBound, "constant needs a JSON value, e.g. constant(42) or constant(\"text\")")
            }
            do throws(JSONSyntaxError) {
                return .constantValue(try JSONDocumentParser.parse(text(arguments)).value)
            } catch {
                // The JSON error's column counts within the argument, which starts on this line.
                throw fail(
                    arguments.lowerBound + error.column - 1,
                    "constant(\(InputExcerpt.of(text(arguments)))): \(error.message)")
            }
        default:
            var parameters = ProfileParameters()
            parameters.location = "\(source) column \(nameRange.lowerBound + 1)"
            parameters.itemLocation = parameters.location
            if let arguments { try self.arguments(arguments, into: &parameters) }
            return .catalogue(name, parameters)
        }
    }

    func arguments(_ range: Range<Int>, into parameters: inout ProfileParameters) throws(ChaosError) {
        let parts = ChaosGrammar.split(characters, range, on: [","]).map { ChaosGrammar.trim(characters, $0) }
        if parts.count == 1, parts[0].isEmpty { return }
        let named = parts.map { part in ChaosGrammar.split(characters, part, on: ["="]) }
        if parts.count == 1, named[0].count == 1 {
            parameters.positional = value(parts[0])
            return
        }
        for (part, pieces) in zip(parts, named) {
            guard !part.isEmpty else { throw fail(part.lowerBound, "an empty argument; remove the extra ','") }
            guard pieces.count == 2 else {
                throw fail(
                    part.lowerBound,
                    "argument '\(InputExcerpt.of(text(part)))' needs the form key=value when there are several")
            }
            let keyRange = ChaosGrammar.trim(characters, pieces[0])
            let key = text(keyRange)
            guard !key.isEmpty else { throw fail(part.lowerBound, "an argument name is missing before '='") }
            guard parameters.values[key] == nil else {
                throw fail(keyRange.lowerBound, "argument '\(InputExcerpt.of(key))' is given twice; keep one")
            }
            let valueRange = ChaosGrammar.trim(characters, pieces[1])
            parameters.values[key] = value(valueRange)
            parameters.locations[key] = "\(source) column \(valueRange.lowerBound + 1)"
        }
    }

    /// A JSON value when the text is one (`42`, `true`, `"text"`, `[1,2]`), else the text.
    func value(_ range: Range<Int>) -> ProfileValue {
        let raw = text(range)
        if let parsed = try? JSONDocumentParser.parse(raw).value { return parsed }
        return .string(raw)
    }
}
