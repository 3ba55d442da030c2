/// Turns a positioned JSON tree into a profile, with errors that point at the spot.
struct ProfileDecoder {
    let file: String

    func location(_ line: Int, _ column: Int, _ path: String) -> String {
        "\(file):\(line):\(column) at \(path)"
    }

    func fail(_ node: JSONNode, _ path: String, _ message: String) -> ChaosError {
        ChaosError(.invalidProfile, subject: location(node.line, node.column, path), message)
    }

    func members(_ node: JSONNode, _ path: String, allowed: [String]) throws(ChaosError) -> [String: JSONNode] {
        guard case .object(let list) = node.content else {
            throw fail(node, path, "expected an object, found \(node.typeName)")
        }
        var result: [String: JSONNode] = [:]
        for member in list {
            guard allowed.contains(member.key) else {
                throw ChaosError(
                    .invalidProfile,
                    subject: location(member.keyLine, member.keyColumn, "\(path).\(InputExcerpt.of(member.key))"),
                    "unknown member '\(InputExcerpt.of(member.key))'\(Suggestions.hint(for: member.key, in: allowed)); allowed here: \(allowed.sorted().joined(separator: ", "))"
                )
            }
            result[member.key] = member.value
        }
        return result
    }

    func profile(_ root: JSONNode) throws(ChaosError) -> ChaosProfile {
        let top = try members(root, "$", allowed: ["seed", "entries", "$schema", "description"])
        var seed: UInt64?
        if let node = top["seed"] {
            guard case .number(let value, _) = node.content, value >= 0, value.rounded() == value,
                value < 9_007_199_254_740_992
            else {
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
        guard let pointNode = fields["point"] else {
            throw fail(node, path, "an entry needs \"point\": the point's name, e.g. \"clock.now\"")
        }
        guard case .string(let pointName) = pointNode.content, !pointName.isEmpty else {
            throw fail(pointNode, "\(path).point", "the point must be a non-empty string such as \"clock.now\"")
        }
        guard let providerNode = fields["provider"] else {
            throw fail(node, path, "an entry needs \"provider\", e.g. \"original\" or {\"constant\": …}")
        }
        var provider = try self.provider(providerNode, "\(path).provider")
        if let match = fields["match"] {
            var conditions = try parameters(match, "\(path).match", what: "match")
            conditions.context = "\(pointName) match"
            provider = .matching(conditions, provider)
        }
        var enabled = true
        if let node = fields["enabled"] {
            guard case .bool(let flag) = node.content else {
                throw fail(node, "\(path).enabled", "enabled must be true or false")
            }
            enabled = flag
        }
        var entry = ChaosProfile.Entry(
            pointName: pointName, provider: provider, enabled: enabled, location: location(node.line, node.column, path)
        )
        entry.pointLocation = location(pointNode.line, pointNode.column, "\(path).point")
        return entry
    }

    /// A `parameters` or `match` object, with where each member was written.
    func parameters(_ node: JSONNode, _ path: String, what: String) throws(ChaosError) -> ProfileParameters {
        guard case .object(let list) = node.content else {
            throw fail(node, path, "\(what) must be an object, e.g. {\"days\": -1}; found \(node.typeName)")
        }
        var result = ProfileParameters()
        result.location = location(node.line, node.column, path)
        for member in list {
            guard !member.key.isEmpty else {
                throw ChaosError(
                    .invalidProfile, subject: location(member.keyLine, member.keyColumn, path),
                    "an empty member name; name the parameter")
            }
            result.values[member.key] = member.value.value
            result.locations[member.key] = location(
                member.value.line, member.value.column, "\(path).\(InputExcerpt.of(member.key))")
        }
        return result
    }

    func provider(_ node: JSONNode, _ path: String) throws(ChaosError) -> ProviderDescription {
        switch node.content {
        case .string(let name):
            switch name {
            case "original": return .original
            case "pass": return .pass
            case "nil": return .nil
            case "random": return .random
            case "":
                throw fail(
                    node, path, "an empty provider name; use \"original\", \"nil\", \"random\" or a catalogue item")
            default:
                var parameters = ProfileParameters()
                parameters.location = location(node.line, node.column, path)
                parameters.itemLocation = parameters.location
                return .catalogue(name, parameters)
            }
        case .object:
            let kinds = ["constant", "sequential", "item"]
            let fields = try members(node, path, allowed: kinds + ["parameters"] + ProviderModifier.profileKeys)
            let given = kinds.filter { fields[$0] != nil }
            guard given.count == 1 else {
                let found = given.isEmpty ? "none" : given.joined(separator: " and ")
                throw fail(
                    node, path, "a provider object needs exactly one of constant, sequential or item (found \(found))")
            }
            if let parametersNode = fields["parameters"], given[0] != "item" {
                throw fail(
                    parametersNode, "\(path).parameters",
                    "parameters belong to an item provider; remove them or name the item")
            }
            var result: ProviderDescription
            switch given[0] {
            case "constant":
                result = .constantValue(fields["constant"]!.value)
            case "sequential":
                let listNode = fields["sequential"]!
                guard case .array(let items) = listNode.content else {
                    throw fail(listNode, "\(path).sequential", "sequential takes an array of providers")
                }
                guard !items.isEmpty else {
                    throw fail(
                        listNode, "\(path).sequential", "sequential needs at least one provider (the last one repeats)")
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
                var parameters = ProfileParameters()
                if let parametersNode = fields["parameters"] {
                    parameters = try self.parameters(parametersNode, "\(path).parameters", what: "parameters")
                } else {
                    parameters.location = location(nameNode.line, nameNode.column, "\(path).item")
                }
                parameters.itemLocation = location(nameNode.line, nameNode.column, "\(path).item")
                result = .catalogue(name, parameters)
            }
            // Innermost first, as ProviderModifier.profileKeys orders them.
            for key in ProviderModifier.profileKeys {
                guard let modifierNode = fields[key] else { continue }
                switch ProviderModifier.fromProfile(key: key, value: modifierNode.value) {
                case .success(let modifier)?: result = .modified(modifier, result)
                case .failure(let problem)?: throw fail(modifierNode, "\(path).\(key)", problem.message)
                case nil: break
                }
            }
            return result
        default:
            throw fail(
                node, path,
                "a provider is a string such as \"original\" or an object such as {\"constant\": 1}; found \(node.typeName)"
            )
        }
    }
}

extension ChaosProfile {
    /// The profile as JSON that ``decode(json:file:)-(String,_)`` reads back to the same
    /// profile. Providers that JSON cannot spell (typed constants, errors, blocks, nested
    /// conditions) are an error.
    public func jsonText() throws(ChaosError) -> String {
        var members: [String: ProfileValue] = [:]
        if let seed { members["seed"] = .number(Double(seed)) }
        var list: [ProfileValue] = []
        for entry in entries {
            var fields: [String: ProfileValue] = ["point": .string(entry.pointName)]
            if !entry.enabled { fields["enabled"] = .bool(false) }
            if case .composite(let branches, .leaf(.original)) = entry.provider, branches.count == 1 {
                fields["match"] = .object(branches[0].condition.values)
                fields["provider"] = try Self.json(branches[0].provider, entry.pointName)
            } else {
                fields["provider"] = try Self.json(entry.provider, entry.pointName)
            }
            list.append(.object(fields))
        }
        members["entries"] = .array(list)
        return ProfileValue.object(members).description
    }

    private static func json(_ provider: ProviderDescription, _ point: String) throws(ChaosError) -> ProfileValue {
        switch provider {
        case .leaf(let leaf):
            switch leaf {
            case .original: return .string("original")
            case .pass: return .string("pass")
            case .nil: return .string("nil")
            case .random: return .string("random")
            case .constantValue(let value): return .object(["constant": value])
            case .catalogue(let name, let parameters):
                var values = parameters.values
                if let positional = parameters.positional {
                    // The grammar's unnamed value belongs to the item's first parameter.
                    let first = (try? PointRegistry.shared.point(named: point))?
                        .catalogueItems.first { $0.name == name }?.declaredParameters.first?.name
                    guard let first else {
                        throw ChaosError(
                            .invalidProfile, subject: point,
                            "\(name)(\(InputExcerpt.of(positional))) has an unnamed value, and no live point says which parameter it is; name it (key=value)"
                        )
                    }
                    values[first] = positional
                }
                return values.isEmpty ? .string(name) : .object(["item": .string(name), "parameters": .object(values)])
            case .constant, .throwing:
                throw ChaosError(
                    .invalidProfile, subject: point,
                    "typed constants and errors cannot be written as JSON; use constantValue or a catalogue item")
            }
        case .sequential(let parts):
            var items: [ProfileValue] = []
            for part in parts { items.append(try json(part, point)) }
            return .object(["sequential": .array(items)])
        case .composite:
            throw ChaosError(.invalidProfile, subject: point, "match conditions may only stand at the top of an entry")
        case .modified(let modifier, let inner):
            // A provider object applies its modifiers innermost first (profileKeys order): a
            // modifier can join the object only when nothing in it wraps further out.
            let key = modifier.profileKey
            let rank = ProviderModifier.profileKeys.firstIndex(of: key)!
            var object: [String: ProfileValue]
            switch try json(inner, point) {
            case .object(let members)
            where !members.keys.contains(where: { (ProviderModifier.profileKeys.firstIndex(of: $0) ?? -1) >= rank }):
                object = members
            case .string(let name) where !["original", "pass", "nil", "random"].contains(name):
                object = ["item": .string(name)]
            case let other:
                object = ["sequential": .array([other])]
            }
            object[key] = modifier.profileValue
            return .object(object)
        }
    }
}
