public import ChaosKit
public import Foundation
public import Logging

/// One change the ``JSONMutator`` made to a JSON document: what, where, and the seed that
/// makes it again.
public struct JSONMutation: Sendable, Hashable, CustomStringConvertible {
    /// What kind of change.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        /// The value became `null`.
        case null
        /// The member was removed from its object.
        case missingKey = "missing-key"
        /// The value became one of another JSON type (a number for a string, an array for an object …).
        case wrongType = "wrong-type"
        /// A number became one too large for 64-bit integers or doubles.
        case hugeNumber = "huge-number"
        /// A number of zero or more became negative.
        case negativeNumber = "negative-number"
        /// A string became a very long one (``JSONMutator/longStringLength`` characters).
        case longString = "long-string"
        /// A string that looks like an enum value (`"active"`, `"in_progress"`) became one
        /// that is none of its type's values.
        case unknownEnumValue = "unknown-enum-value"
    }

    /// What kind of change.
    public let kind: Kind
    /// Where, as a JSON path (`$.users[2].name`, `$['odd key']`).
    public let path: String
    /// The value before.
    public let original: ProfileValue
    /// The value after; nil when the member was removed.
    public let replacement: ProfileValue?
    /// The seed the document was mutated with: ``JSONMutator/mutate(json:seed:)`` with this
    /// seed makes the same changes to the same document.
    public let seed: UInt64

    /// `wrong-type at $.user.name: "Ada" → 0 (seed 42)`, values cut to 80 characters.
    public var description: String {
        let after = replacement.map { InputExcerpt.of($0.description) } ?? "(removed)"
        return "\(kind.rawValue) at \(path): \(InputExcerpt.of(original.description)) → \(after) (seed \(seed))"
    }
}

/// Changes JSON documents the way a careless or changing back-end does, field by field and
/// by type: nulls, missing keys, wrong types, huge or negative numbers, very long strings,
/// unknown enum values. Seeded: the same seed makes the same changes to the same document.
///
/// Use it on response bodies as a network condition (``NetworkCondition/mutatedJSON(_:seed:log:logger:)``,
/// catalogue item `mutated-json`), or directly:
/// ```swift
/// let mutator = JSONMutator(kinds: [.null, .wrongType], count: 2)
/// let result = mutator.mutate(json: Data(#"{"user": {"name": "Ada", "age": 36}}"#.utf8), seed: 7)
/// // result?.mutations: e.g. [null at $.user.name …, wrong-type at $.user.age …]
/// ```
public struct JSONMutator: Sendable, Hashable {
    /// The kinds of change it chooses from (those that fit each value's type).
    public var kinds: Set<JSONMutation.Kind>
    /// How many values of each document it changes: fewer when the document has fewer, or
    /// when a change takes away the others' values (a removed object takes its members).
    public var count: Int
    /// JSON paths (`$.user`, `$.items[0]`) whose values, and the values under them, may be
    /// changed; nil: any value.
    public var paths: [String]?
    /// How many characters a ``JSONMutation/Kind/longString`` has.
    public var longStringLength: Int

    /// A mutator; by default one change of any kind anywhere per document.
    public init(
        kinds: Set<JSONMutation.Kind> = Set(JSONMutation.Kind.allCases), count: Int = 1,
        paths: [String]? = nil, longStringLength: Int = 10_000
    ) {
        self.kinds = kinds
        self.count = max(0, count)
        self.paths = paths
        self.longStringLength = max(1, longStringLength)
    }

    /// The logger mutations are reported on unless another is given: `ChaosKit.JSONMutation`.
    public static let logger = Logger(label: "ChaosKit.JSONMutation")

    /// `data` with ``count`` values changed, and the changes; nil when `data` is not JSON.
    /// Everything not changed keeps its member order and its numbers as written.
    public func mutate(json data: Data, seed: UInt64) -> (data: Data, mutations: [JSONMutation])? {
        guard var tree = try? HARJSON.parse(data) else { return nil }
        let mutations = mutate(&tree, seed: seed)
        return (Data(tree.text(pretty: false).utf8), mutations)
    }

    /// `value` with ``count`` values changed, and the changes.
    public func mutate(_ value: ProfileValue, seed: UInt64) -> (value: ProfileValue, mutations: [JSONMutation]) {
        guard var tree = try? HARJSON.parse(Data(value.description.utf8)) else { return (value, []) }
        let mutations = mutate(&tree, seed: seed)
        let mutated = (try? ProfileValue(json: tree.text(pretty: false))) ?? value
        return (mutated, mutations)
    }

    // MARK: Choosing

    /// One step of a path into a document.
    enum Step: Hashable {
        case key(String)
        case index(Int)
    }

    /// A value that can be changed, and the kinds of change that fit it.
    struct Candidate {
        let steps: [Step]
        let path: String
        let kinds: [JSONMutation.Kind]
    }

    func mutate(_ tree: inout HARJSON, seed: UInt64) -> [JSONMutation] {
        var random = SeededRandom(seed: seed)
        var candidates: [Candidate] = []
        collect(tree, steps: [], path: "$", into: &candidates)
        // In path order, not member order: the same document makes the same choices however
        // its members are ordered (as text, or as a ProfileValue).
        candidates.sort { $0.path < $1.path }
        var mutations: [JSONMutation] = []
        var chosen: [[Step]] = []
        while mutations.count < count, !candidates.isEmpty {
            let candidate = candidates.remove(at: Int.random(in: 0..<candidates.count, using: &random))
            // Never a value inside (or around) one already changed: each change stands alone.
            if chosen.contains(where: { $0.starts(with: candidate.steps) || candidate.steps.starts(with: $0) }) {
                continue
            }
            let kind = candidate.kinds[Int.random(in: 0..<candidate.kinds.count, using: &random)]
            guard let original = Self.value(at: candidate.steps, in: tree) else { continue }
            let replacement = kind == .missingKey ? nil : replacement(for: original, kind: kind, random: &random)
            Self.replace(at: candidate.steps[...], in: &tree, with: replacement)
            chosen.append(candidate.steps)
            mutations.append(
                JSONMutation(
                    kind: kind, path: candidate.path, original: Self.profileValue(original),
                    replacement: replacement.map(Self.profileValue), seed: seed
                ))
        }
        return mutations.sorted { $0.path < $1.path }
    }

    private func allowed(_ path: String) -> Bool {
        guard let paths else { return true }
        return paths.contains { path == $0 || path.hasPrefix($0 + ".") || path.hasPrefix($0 + "[") }
    }

    private func collect(_ node: HARJSON, steps: [Step], path: String, into candidates: inout [Candidate]) {
        if !steps.isEmpty, allowed(path) {
            var fitting: [JSONMutation.Kind] = [.wrongType]
            if node != .null { fitting.append(.null) }
            if case .key = steps.last { fitting.append(.missingKey) }
            switch node {
            case .number(let text):
                fitting.append(.hugeNumber)
                if !text.hasPrefix("-") { fitting.append(.negativeNumber) }
            case .string(let text):
                fitting.append(.longString)
                if Self.looksLikeEnumValue(text) { fitting.append(.unknownEnumValue) }
            default: break
            }
            let kinds = fitting.filter(self.kinds.contains)
            if !kinds.isEmpty { candidates.append(Candidate(steps: steps, path: path, kinds: kinds)) }
        }
        switch node {
        case .object(let members):
            for member in members {
                collect(
                    member.value, steps: steps + [.key(member.key)], path: path + Self.pathComponent(member.key),
                    into: &candidates)
            }
        case .array(let items):
            for (index, item) in items.enumerated() {
                collect(item, steps: steps + [.index(index)], path: path + "[\(index)]", into: &candidates)
            }
        default: break
        }
    }

    /// `.name`, or `['odd key']` for a key that is not an identifier.
    static func pathComponent(_ key: String) -> String {
        let identifier =
            !key.isEmpty
            && key.unicodeScalars.allSatisfy { $0.properties.isAlphabetic || $0 == "_" || ("0"..."9").contains($0) }
            && !("0"..."9").contains(key.unicodeScalars.first!)
        if identifier { return "." + key }
        return "['" + key.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'") + "']"
    }

    /// A short identifier-like word (`active`, `in_progress`, `ORDER-PLACED`): what enum
    /// values in JSON look like, unlike names, sentences, dates or URLs.
    static func looksLikeEnumValue(_ text: String) -> Bool {
        guard (1...40).contains(text.utf8.count), let first = text.utf8.first,
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(first | 0x20)
        else { return false }
        return text.utf8.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte | 0x20)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
        }
    }

    // MARK: Changing

    private func replacement(for original: HARJSON, kind: JSONMutation.Kind, random: inout SeededRandom) -> HARJSON {
        func pick(_ choices: [HARJSON]) -> HARJSON { choices[Int.random(in: 0..<choices.count, using: &random)] }
        switch kind {
        case .null, .missingKey:
            return .null
        case .wrongType:
            switch original {
            case .string(let text):
                return pick([
                    .number(Double(text).map { HARJSON.number($0).text(pretty: false) } ?? "0"), .bool(true),
                    .array([]), .object([]),
                ])
            case .number(let text): return pick([.string(text), .bool(text != "0"), .array([])])
            case .bool(let flag): return pick([.string(flag ? "true" : "false"), .number(flag ? "1" : "0")])
            case .object: return pick([.array([]), .string(""), .number("0")])
            case .array: return pick([.object([]), .string(""), .number("0")])
            case .null: return pick([.string(""), .number("0"), .bool(false), .object([])])
            }
        case .hugeNumber:
            return pick([
                .number("9223372036854775808"), .number("18446744073709551616"), .number("1.7976931348623157e308"),
                .number("9007199254740993"), .number("-9223372036854775809"),
            ])
        case .negativeNumber:
            guard case .number(let text) = original, !text.hasPrefix("-") else { return original }
            return .number(Double(text) == 0 ? "-1" : "-" + text)
        case .longString:
            let pattern = Array("Ω漢🙂e\u{0301}\u{200F}abc ")
            return .string(String((0..<longStringLength).map { pattern[$0 % pattern.count] }))
        case .unknownEnumValue:
            guard case .string(let text) = original else { return original }
            let suffixes = ["_unknown", "_v2", "-NEW"]
            return .string(text + suffixes[Int.random(in: 0..<suffixes.count, using: &random)])
        }
    }

    static func value(at steps: [Step], in tree: HARJSON) -> HARJSON? {
        var node = tree
        for step in steps {
            switch (step, node) {
            case (.key(let key), .object(let members)):
                guard let member = members.last(where: { $0.key == key }) else { return nil }
                node = member.value
            case (.index(let index), .array(let items)) where items.indices.contains(index):
                node = items[index]
            default:
                return nil
            }
        }
        return node
    }

    /// Puts `value` at `steps` (removes the member when nil).
    static func replace(at steps: ArraySlice<Step>, in tree: inout HARJSON, with value: HARJSON?) {
        guard let step = steps.first else {
            if let value { tree = value }
            return
        }
        switch (step, tree) {
        case (.key(let key), .object(var members)):
            guard let position = members.lastIndex(where: { $0.key == key }) else { return }
            if steps.count == 1, value == nil {
                members.remove(at: position)
            } else {
                replace(at: steps.dropFirst(), in: &members[position].value, with: value)
            }
            tree = .object(members)
        case (.index(let index), .array(var items)) where items.indices.contains(index):
            replace(at: steps.dropFirst(), in: &items[index], with: value)
            tree = .array(items)
        default:
            return
        }
    }

    static func profileValue(_ node: HARJSON) -> ProfileValue {
        switch node {
        case .null: .null
        case .bool(let flag): .bool(flag)
        case .number(let text): .number(Double(text) ?? .infinity)
        case .string(let text): .string(text)
        case .array(let items): .array(items.map(profileValue))
        case .object(let members):
            .object(Dictionary(members.map { ($0.key, profileValue($0.value)) }, uniquingKeysWith: { _, last in last }))
        }
    }
}

/// The mutations a ``NetworkCondition/mutatedJSON(_:seed:log:logger:)`` condition made, per
/// response, for the test to read (and to replay a failure from its seed).
public final class JSONMutationLog: Sendable {
    /// The mutations of one response body.
    public struct Entry: Sendable, CustomStringConvertible {
        /// The request the response answered (`GET https://…`).
        public let request: String
        /// The seed the body was mutated with.
        public let seed: UInt64
        /// What was changed.
        public let mutations: [JSONMutation]

        /// `GET https://… (seed 42): null at $.a; …`.
        public var description: String {
            "\(request) (seed \(seed)): \(mutations.map(\.description).joined(separator: "; "))"
        }
    }

    private let storage = Locked<[Entry]>([])
    /// How many entries it keeps (the oldest go first).
    public let capacity: Int

    /// An empty log keeping up to `capacity` responses.
    public init(capacity: Int = 10_000) {
        self.capacity = max(1, capacity)
    }

    /// The log the `mutated-json` catalogue item writes to (profiles cannot name one).
    public static let shared = JSONMutationLog()

    /// Every response's mutations, oldest first.
    public var entries: [Entry] { storage.withLock { $0 } }

    /// Every mutation, oldest first.
    public var mutations: [JSONMutation] { entries.flatMap(\.mutations) }

    /// Empties the log.
    public func removeAll() {
        storage.withLock { $0 = [] }
    }

    func record(_ entry: Entry) {
        storage.withLock { entries in
            if entries.count >= capacity { entries.removeFirst(max(1, capacity / 10)) }
            entries.append(entry)
        }
    }
}
