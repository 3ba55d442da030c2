import Foundation

/// A chaos profile: a seed and entries, as a JSON file or a `CHAOS` variable carries them.
///
/// ```json
/// { "seed": 42,
///   "entries": [
///     { "point": "clock.now", "provider": { "item": "offset", "parameters": { "days": -1 } } },
///     { "point": "demo.fetch-score",
///       "provider": { "sequential": [ { "item": "offline", "times": 3 }, "original" ], "probability": 0.2 } }
///   ] }
/// ```
/// A provider is a string (`"original"`, `"nil"`, `"random"`, or a catalogue item without
/// parameters) or an object with one of `constant`, `sequential` or `item` (+ `parameters`),
/// and optional modifiers `probability` (0…1), `times` (≥ 1) and `delay` (`"250ms"`, `"2s"`
/// or milliseconds). The schema is `Docs/profile.schema.json`.
public struct ChaosProfile: Sendable {
    /// One entry of a profile, with where it was written.
    public struct Entry: Sendable {
        /// The point's name.
        public var pointName: String
        /// What the point should do.
        public var provider: ProviderDescription
        /// Disabled entries are kept but not applied.
        public var enabled: Bool
        /// Where the entry is: `file:line:column` and its JSON path, for error messages.
        public var location: String
    }

    /// The seed, when the profile fixes one.
    public var seed: UInt64?
    /// The entries, in order.
    public var entries: [Entry]

    /// A profile with these entries.
    public init(seed: UInt64? = nil, entries: [Entry]) {
        self.seed = seed
        self.entries = entries
    }

    /// Reads and decodes the JSON profile at `path`.
    public static func load(contentsOfFile path: String) throws(ChaosError) -> ChaosProfile {
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw ChaosError(.invalidProfile, subject: path, "cannot read the profile (\(error.localizedDescription)); check the path")
        }
        return try decode(json: text, file: path)
    }

    /// Decodes a JSON profile; errors give file, line, column and the JSON path.
    public static func decode(json: String, file: String = "<profile>") throws(ChaosError) -> ChaosProfile {
        let root: JSONNode
        do {
            root = try JSONDocumentParser.parse(json)
        } catch {
            throw ChaosError(.invalidProfile, subject: "\(file):\(error.line):\(error.column)", error.message)
        }
        return try ProfileDecoder(file: file).profile(root)
    }

    /// The enabled entries as ``ProfileEntry`` values.
    public var profileEntries: [ProfileEntry] {
        entries.filter(\.enabled).map { ProfileEntry(point: $0.pointName, $0.provider) }
    }

    /// Applies the enabled entries with a new `Chaos` (seeded from the profile when it has a
    /// seed), all or nothing; an error names the entry's file, line, column and JSON path.
    public func apply(seed overrideSeed: UInt64? = nil) throws(ChaosError) -> Chaos {
        let chaos = Chaos(seed: overrideSeed ?? seed)
        let located = entries.filter(\.enabled).map { (entry: ProfileEntry(point: $0.pointName, $0.provider), location: $0.location) }
        chaos.profile(located.map(\.entry))
        do {
            try chaos.apply()
        } catch {
            let culprit = located.first { error.subject?.hasPrefix("entry \($0.entry.id) ") == true }
            throw culprit.map { ChaosError(error.kind, subject: $0.location, error.message) } ?? error
        }
        return chaos
    }

    /// Checks every enabled entry against the live points; nothing stays applied.
    public func validate() throws(ChaosError) {
        try apply().revertAll()
    }
}

/// Turns a positioned JSON tree into a profile, with errors that point at the spot.
private struct ProfileDecoder {
    let file: String

    func fail(_ node: JSONNode, _ path: String, _ message: String) -> ChaosError {
        ChaosError(.invalidProfile, subject: "\(file):\(node.line):\(node.column) at \(path)", message)
    }

    func members(_ node: JSONNode, _ path: String, allowed: Set<String>) throws(ChaosError) -> [String: JSONNode] {
        guard case .object(let list) = node.content else {
            throw fail(node, path, "expected an object, found \(node.typeName)")
        }
        var result: [String: JSONNode] = [:]
        for (key, value) in list {
            guard allowed.contains(key) else {
                throw fail(value, "\(path).\(key)", "unknown member '\(key)'; allowed here: \(allowed.sorted().joined(separator: ", "))")
            }
            guard result[key] == nil else { throw fail(value, "\(path).\(key)", "'\(key)' appears twice; keep one") }
            result[key] = value
        }
        return result
    }

    func profile(_ root: JSONNode) throws(ChaosError) -> ChaosProfile {
        let top = try members(root, "$", allowed: ["seed", "entries", "$schema", "description"])
        var seed: UInt64?
        if let node = top["seed"] {
            guard case .number(let value) = node.content, value >= 0, value.rounded() == value, value < 9_007_199_254_740_992 else {
                throw fail(node, "$.seed", "the seed must be a whole number from 0 to 2^53")
            }
            seed = UInt64(value)
        }
        guard let entriesNode = top["entries"] else { throw fail(root, "$", "a profile needs an \"entries\" array") }
        guard case .array(let items) = entriesNode.content else {
            throw fail(entriesNode, "$.entries", "expected an array of entries, found \(entriesNode.typeName)")
        }
        var entries: [ChaosProfile.Entry] = []
        for (index, item) in items.enumerated() {
            entries.append(try entry(item, "$.entries[\(index)]"))
        }
        return ChaosProfile(seed: seed, entries: entries)
    }

    func entry(_ node: JSONNode, _ path: String) throws(ChaosError) -> ChaosProfile.Entry {
        let fields = try members(node, path, allowed: ["point", "provider", "enabled", "match", "comment"])
        guard let pointNode = fields["point"] else { throw fail(node, path, "an entry needs \"point\": the point's name, e.g. \"clock.now\"") }
        guard case .string(let pointName) = pointNode.content, !pointName.isEmpty else {
            throw fail(pointNode, "\(path).point", "the point must be a non-empty string such as \"clock.now\"")
        }
        guard let providerNode = fields["provider"] else {
            throw fail(node, path, "an entry needs \"provider\", e.g. \"original\" or {\"constant\": …}")
        }
        var provider = try self.provider(providerNode, "\(path).provider")
        if let match = fields["match"] {
            guard case .object = match.content else { throw fail(match, "\(path).match", "match must be an object of conditions") }
            guard case .object(let members) = match.value else { throw fail(match, "\(path).match", "match must be an object") }
            provider = .matching(ProfileParameters(members, context: "\(pointName) match"), provider)
        }
        var enabled = true
        if let node = fields["enabled"] {
            guard case .bool(let flag) = node.content else { throw fail(node, "\(path).enabled", "enabled must be true or false") }
            enabled = flag
        }
        return ChaosProfile.Entry(
            pointName: pointName, provider: provider, enabled: enabled,
            location: "\(file):\(node.line):\(node.column) at \(path)"
        )
    }

    func provider(_ node: JSONNode, _ path: String) throws(ChaosError) -> ProviderDescription {
        switch node.content {
        case .string(let name):
            switch name {
            case "original": return .original
            case "nil": return .nil
            case "random": return .random
            case "": throw fail(node, path, "an empty provider name; use \"original\", \"nil\", \"random\" or a catalogue item")
            default: return .catalogue(name, ProfileParameters())
            }
        case .object:
            let fields = try members(
                node, path,
                allowed: ["constant", "sequential", "item", "parameters", "probability", "times", "delay"]
            )
            let kinds = ["constant", "sequential", "item"].filter { fields[$0] != nil }
            guard kinds.count == 1 else {
                let found = kinds.isEmpty ? "none" : kinds.joined(separator: " and ")
                throw fail(node, path, "a provider object needs exactly one of constant, sequential or item (found \(found))")
            }
            var result: ProviderDescription
            switch kinds[0] {
            case "constant":
                result = .constantValue(fields["constant"]!.value)
            case "sequential":
                let listNode = fields["sequential"]!
                guard case .array(let items) = listNode.content else {
                    throw fail(listNode, "\(path).sequential", "sequential takes an array of providers")
                }
                guard !items.isEmpty else {
                    throw fail(listNode, "\(path).sequential", "sequential needs at least one provider (the last one repeats)")
                }
                var parts: [ProviderDescription] = []
                for (index, item) in items.enumerated() {
                    parts.append(try provider(item, "\(path).sequential[\(index)]"))
                }
                result = .sequential(parts)
            default:
                let nameNode = fields["item"]!
                guard case .string(let name) = nameNode.content, !name.isEmpty else {
                    throw fail(nameNode, "\(path).item", "item must be the catalogue item's name, e.g. \"offset\"")
                }
                var parameters: [String: ProfileValue] = [:]
                if let parametersNode = fields["parameters"] {
                    guard case .object(let values) = parametersNode.value else {
                        throw fail(parametersNode, "\(path).parameters", "parameters must be an object, e.g. {\"days\": -1}")
                    }
                    parameters = values
                }
                result = .catalogue(name, ProfileParameters(parameters))
            }
            if fields["parameters"] != nil, kinds[0] != "item" {
                throw fail(fields["parameters"]!, "\(path).parameters", "parameters belong to an item provider")
            }
            if let node = fields["times"] {
                guard case .number(let value) = node.content, value.rounded() == value, value >= 1, value < 1e15 else {
                    throw fail(node, "\(path).times", "times must be a whole number of 1 or more")
                }
                result = .times(Int(value), result)
            }
            if let node = fields["probability"] {
                guard case .number(let value) = node.content, (0...1).contains(value) else {
                    throw fail(node, "\(path).probability", "probability must be a number from 0 to 1 (0.2 for 20%)")
                }
                result = .probability(value, result)
            }
            if let node = fields["delay"] {
                let delay: Duration?
                switch node.content {
                case .number(let milliseconds) where milliseconds >= 0: delay = .milliseconds(milliseconds)
                case .string(let text): delay = DurationText.parse(text)
                default: delay = nil
                }
                guard let delay else {
                    throw fail(node, "\(path).delay", "delay must be milliseconds or a string such as \"250ms\", \"2s\" or \"1m\"")
                }
                result = .delayed(delay, result)
            }
            return result
        default:
            throw fail(node, path, "a provider is a string such as \"original\" or an object such as {\"constant\": 1}; found \(node.typeName)")
        }
    }
}

/// Durations written as text: `250ms`, `2s`, `1.5s`, `3m`, `1h`, `500us`.
public enum DurationText {
    /// The duration `text` stands for, or nil when it is not one.
    public static func parse(_ text: String) -> Duration? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        let units: [(String, Double)] = [("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9), ("s", 1), ("m", 60), ("h", 3600)]
        for (suffix, scale) in units where trimmed.hasSuffix(suffix) {
            guard let number = Double(trimmed.dropLast(suffix.count)), number >= 0, number.isFinite else { return nil }
            return .nanoseconds(Int64((number * scale * 1e9).rounded()))
        }
        return nil
    }
}

extension ChaosProfile {
    /// The profile as JSON that ``decode(json:file:)`` reads back to the same profile.
    /// Providers that JSON cannot spell (typed constants, errors, blocks) are an error.
    public func jsonText() throws(ChaosError) -> String {
        var members: [String: ProfileValue] = [:]
        if let seed { members["seed"] = .number(Double(seed)) }
        var list: [ProfileValue] = []
        for entry in entries {
            var fields: [String: ProfileValue] = ["point": .string(entry.pointName)]
            if !entry.enabled { fields["enabled"] = .bool(false) }
            if case .matching(let conditions, let inner) = entry.provider {
                fields["match"] = .object(conditions.values)
                fields["provider"] = try Self.json(inner, entry.pointName)
            } else {
                fields["provider"] = try Self.json(entry.provider, entry.pointName)
            }
            list.append(.object(fields))
        }
        members["entries"] = .array(list)
        return ProfileValue.object(members).description
    }

    private static func json(_ provider: ProviderDescription, _ point: String) throws(ChaosError) -> ProfileValue {
        func modified(_ key: String, _ value: ProfileValue, _ inner: ProviderDescription) throws(ChaosError) -> ProfileValue {
            // The decoder wraps times first, then probability, then delay: a modifier can join
            // an object only when nothing in it wraps further out.
            let rank = ["times": 0, "probability": 1, "delay": 2]
            var object: [String: ProfileValue]
            switch try json(inner, point) {
            case .object(let members) where !members.keys.contains(where: { (rank[$0] ?? -1) >= rank[key]! }): object = members
            case .string(let name) where !["original", "nil", "random"].contains(name): object = ["item": .string(name)]
            case let other: object = ["sequential": .array([other])]
            }
            object[key] = value
            return .object(object)
        }
        switch provider {
        case .original: return .string("original")
        case .nil: return .string("nil")
        case .random: return .string("random")
        case .constantValue(let value): return .object(["constant": value])
        case .catalogue(let name, let parameters):
            return parameters.values.isEmpty ? .string(name) : .object(["item": .string(name), "parameters": .object(parameters.values)])
        case .sequential(let parts):
            var items: [ProfileValue] = []
            for part in parts { items.append(try json(part, point)) }
            return .object(["sequential": .array(items)])
        case .probability(let p, let inner): return try modified("probability", .number(p), inner)
        case .times(let n, let inner): return try modified("times", .number(Double(n)), inner)
        case .delayed(let delay, let inner):
            let (seconds, attoseconds) = delay.components
            return try modified("delay", .number(Double(seconds) * 1000 + Double(attoseconds) / 1e15), inner)
        case .matching:
            throw ChaosError(.invalidProfile, subject: point, "match may only stand at the top of an entry")
        case .constant, .throwing:
            throw ChaosError(.invalidProfile, subject: point, "typed constants and errors cannot be written as JSON; use constantValue or a catalogue item")
        }
    }
}
