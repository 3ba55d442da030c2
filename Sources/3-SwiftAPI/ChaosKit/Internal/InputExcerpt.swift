/// Input quoted in an error message: at most ``limit`` characters, so that a 5 MB value
/// gives a readable error instead of echoing itself. Every module quotes input through it.
package enum InputExcerpt {
    /// How many characters of input an error message quotes at most.
    package static let limit = 80

    /// `text`, cut to ``limit`` characters with an ellipsis and the full length when longer;
    /// control characters are shown escaped.
    package static func of(_ text: some StringProtocol, limit: Int = limit) -> String {
        var excerpt = ""
        var count = 0
        for character in text {
            if count == limit {
                return excerpt + "… (\(text.count) characters)"
            }
            if let scalar = character.unicodeScalars.first, character.unicodeScalars.count == 1, scalar.value < 0x20 {
                excerpt += scalar == "\n" ? "\\n" : scalar == "\t" ? "\\t" : "\\u{\(String(scalar.value, radix: 16))}"
            } else {
                excerpt.append(character)
            }
            count += 1
        }
        return excerpt
    }

    /// A JSON value, rendered and cut the same way.
    static func of(_ value: ProfileValue) -> String {
        of(value.description)
    }
}

/// "Did you mean" suggestions: the valid names nearest to a mistyped one.
@_spi(Hooks) public enum Suggestions {
    /// Up to three names from `candidates` within a small edit distance of `name`, nearest
    /// first (ties in the order given).
    static func nearest(to name: String, in candidates: [String], limit: Int = 3) -> [String] {
        // No valid name is this long: a mistyped one is near in length too.
        guard name.utf8.count <= 256 else { return [] }
        let typed = Array(name.lowercased())
        let threshold = threshold(forLength: typed.count)
        let scored = candidates.enumerated().compactMap { index, candidate -> (Int, Int, String)? in
            let isPrefixCandidate = !name.isEmpty && candidate.count >= typed.count
            // The distance is at least the difference in length: skip what cannot be near.
            guard abs(candidate.count - typed.count) <= threshold || isPrefixCandidate else { return nil }
            let distance = editDistance(typed, Array(candidate.lowercased()))
            let isPrefix = candidate.lowercased().hasPrefix(name.lowercased()) && !name.isEmpty
            guard distance <= threshold || isPrefix else { return nil }
            return (isPrefix ? min(distance, threshold) : distance, index, candidate)
        }
        return scored.sorted { ($0.0, $0.1) < ($1.0, $1.1) }.prefix(limit).map(\.2)
    }

    /// How many edits a name of `length` characters may be from a valid one to count as
    /// near: typos within a third of the length, at least 1 and at most 3.
    private static func threshold(forLength length: Int) -> Int {
        max(1, min(3, length / 3 + 1))
    }

    /// The names of `candidates` at most `maxDistance` edits from `name` (case aside,
    /// transpositions counted once), nearest first (ties in the order given), and never
    /// further than ``nearest(to:in:limit:)`` reaches, so that a short name is not near
    /// everything. Narrower than it (no prefixes): this decides that a name is a
    /// misspelling, rather than only suggesting.
    static func within(_ maxDistance: Int, of name: String, in candidates: [String]) -> [String] {
        guard name.utf8.count <= 256 else { return [] }
        let typed = Array(name.lowercased())
        let reach = min(maxDistance, threshold(forLength: typed.count))
        let scored = candidates.enumerated().compactMap { index, candidate -> (Int, Int, String)? in
            guard abs(candidate.count - typed.count) <= reach else { return nil }
            let distance = editDistance(typed, Array(candidate.lowercased()))
            return distance <= reach ? (distance, index, candidate) : nil
        }
        return scored.sorted { ($0.0, $0.1) < ($1.0, $1.1) }.map(\.2)
    }

    /// `"; did you mean a, b or c?"`, or an empty string when nothing is near.
    public static func hint(for name: String, in candidates: [String]) -> String {
        let near = nearest(to: name, in: candidates, limit: 3)
        guard !near.isEmpty else { return "" }
        let quoted = near.map { "'\($0)'" }
        let list = quoted.count == 1 ? quoted[0] : quoted.dropLast().joined(separator: ", ") + " or " + quoted.last!
        return "; did you mean \(list)?"
    }

    /// Levenshtein distance with transpositions counted as one edit (optimal string alignment).
    static func editDistance(_ a: [Character], _ b: [Character]) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previousPrevious = [Int](repeating: 0, count: b.count + 1)
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    current[j] = min(current[j], previousPrevious[j - 2] + 1)
                }
            }
            (previousPrevious, previous, current) = (previous, current, previousPrevious)
        }
        return previous[b.count]
    }
}
