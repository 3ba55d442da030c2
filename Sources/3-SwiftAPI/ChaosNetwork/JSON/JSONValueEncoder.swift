public import ChaosKit
public import Foundation

// Kakapo's serialization, on Encodable: key transformers (snake_case and custom) and a null
// policy (omit, null, or a value), for plain JSON answers and for JSON:API documents.

/// How member names are written: as declared, in snake_case, kebab-case, or by your own
/// function (after Kakapo's key transformers). It applies to every member name a model
/// encodes, nested ones and dictionary keys included.
public struct KeyTransformer: Sendable {
    private let transform: @Sendable (String) -> String

    /// A transformer from your own function.
    public init(_ transform: @escaping @Sendable (String) -> String) {
        self.transform = transform
    }

    /// Names as declared.
    public static let identity = KeyTransformer { $0 }

    /// `userName` → `user_name`, `avatarURL` → `avatar_url`, `URLString` → `url_string`.
    public static let snakeCase = KeyTransformer { words(of: $0).joined(separator: "_") }

    /// `userName` → `user-name` (the JSON:API examples' style).
    public static let kebabCase = KeyTransformer { words(of: $0).joined(separator: "-") }

    /// A transformer from your own function (`.custom { $0.uppercased() }`).
    public static func custom(_ transform: @escaping @Sendable (String) -> String) -> KeyTransformer {
        KeyTransformer(transform)
    }

    /// This transformer, then `next` (as Kakapo nests transformers).
    public func then(_ next: KeyTransformer) -> KeyTransformer {
        let first = transform
        return KeyTransformer { next(first($0)) }
    }

    /// `key` transformed.
    public func callAsFunction(_ key: String) -> String { transform(key) }

    /// The lower-cased words of a camelCase name; underscores and hyphens already there
    /// separate words too, and leading or trailing ones are kept.
    static func words(of name: String) -> [String] {
        let characters = Array(name)
        let leading = characters.prefix { $0 == "_" }.count
        let trailing = characters.count == leading ? 0 : characters.reversed().prefix { $0 == "_" }.count
        let core = characters[leading..<(characters.count - trailing)]
        var words: [String] = []
        var current = ""
        let indices = Array(core.indices)
        for (position, index) in indices.enumerated() {
            let character = core[index]
            if character == "_" || character == "-" {
                if !current.isEmpty { words.append(current) }
                current = ""
                continue
            }
            if character.isUppercase, !current.isEmpty {
                let previous = core[indices[position - 1]]
                let next = position + 1 < indices.count ? core[indices[position + 1]] : nil
                // A new word: after a lower-case letter or digit ("userName"), or at the last
                // capital of an acronym that a lower-case word follows ("URLString").
                if previous.isLowercase || previous.isNumber || (previous.isUppercase && next?.isLowercase == true) {
                    words.append(current)
                    current = ""
                }
            }
            current += character.lowercased()
        }
        if !current.isEmpty { words.append(current) }
        let body = words.isEmpty ? [""] : words
        var result = body
        result[0] = String(repeating: "_", count: leading) + result[0]
        result[result.count - 1] += String(repeating: "_", count: trailing)
        return result
    }
}

/// What an optional that is nil becomes (Kakapo's `PropertyPolicy`, for every optional).
public enum NullPolicy: Sendable, Hashable {
    /// The member is left out (what `JSONEncoder` does).
    case omit
    /// The member is `null`.
    case null
    /// The member has this value.
    case value(ProfileValue)
}

/// One property's own policy (after Kakapo): left out, `null`, or a value — whatever the
/// serializer's ``NullPolicy`` says about plain optionals. It works with `JSONEncoder` too:
/// in a keyed container `.omit` writes no member at all.
///
/// ```swift
/// struct Profile: Encodable { var bio: PropertyPolicy<String> }
/// // Profile(bio: .null) → {"bio": null};  Profile(bio: .omit) → {}
/// ```
public enum PropertyPolicy<Wrapped> {
    /// No member.
    case omit
    /// A `null` member.
    case null
    /// The member has this value.
    case value(Wrapped)
}

extension PropertyPolicy: Sendable where Wrapped: Sendable {}
extension PropertyPolicy: Equatable where Wrapped: Equatable {}
extension PropertyPolicy: Hashable where Wrapped: Hashable {}

extension PropertyPolicy: Encodable where Wrapped: Encodable {
    /// Outside a keyed container (where there is no member to leave out) `.omit` is `null`.
    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .omit, .null:
            var container = encoder.singleValueContainer()
            try container.encodeNil()
        case .value(let wrapped):
            try wrapped.encode(to: encoder)
        }
    }
}

extension KeyedEncodingContainer {
    /// A ``PropertyPolicy`` member: none for `.omit`, `null`, or the value. (Synthesized
    /// `Encodable` conformances pick this overload for `PropertyPolicy` properties.)
    public mutating func encode<Wrapped: Encodable>(_ value: PropertyPolicy<Wrapped>, forKey key: Key) throws {
        switch value {
        case .omit: return
        case .null: try encodeNil(forKey: key)
        case .value(let wrapped): try encode(wrapped, forKey: key)
        }
    }
}

/// Encodes models as `ProfileValue` (and JSON) with a ``KeyTransformer`` and a
/// ``NullPolicy``: Kakapo's `Serializable` with its transformers, on `Encodable` instead of
/// reflection. `Date`, `Data`, `URL` and `Decimal` values are written by `JSONEncoder`, with
/// its strategies (the router's: ISO 8601 dates, unless given another encoder).
///
/// ```swift
/// struct User: Encodable { var firstName: String; var nickname: String? }
/// let json = try JSONValueEncoder(keys: .snakeCase, nilValues: .null).encode(User(firstName: "Ada", nickname: nil))
/// // {"first_name": "Ada", "nickname": null}
/// ```
///
/// Numbers become `Double`s on the way (JSON's own numbers): integers beyond 2^53 lose precision.
public struct JSONValueEncoder: Sendable {
    /// How member names are written.
    public var keys: KeyTransformer
    /// What nil optionals become.
    public var nilValues: NullPolicy
    /// Makes the `JSONEncoder` that writes dates, data, URLs and decimals.
    public var encoder: @Sendable () -> JSONEncoder

    /// An encoder with these settings (by default names as declared, nil optionals left out).
    public init(
        keys: KeyTransformer = .identity, nilValues: NullPolicy = .omit,
        encoder: @escaping @Sendable () -> JSONEncoder = Router.defaultEncoder
    ) {
        self.keys = keys
        self.nilValues = nilValues
        self.encoder = encoder
    }

    /// `value` as a JSON value; a value that does not encode is a `ChaosError`.
    public func encode<T: Encodable>(_ value: T) throws(ChaosError) -> ProfileValue {
        let context = CaptureContext(keys: keys, nilValues: nilValues, leafEncoder: encoder())
        do {
            return try context.capture(value, path: []).resolved
        } catch {
            throw ChaosError(
                .invalidNetworkConfiguration, subject: "\(T.self)",
                "the value does not encode as JSON (\(error)); check its Encodable conformance")
        }
    }

    /// `value` as JSON text (members sorted by name).
    public func data<T: Encodable>(_ value: T) throws(ChaosError) -> Data {
        let tree = try encode(value)
        let writer = JSONEncoder()
        writer.outputFormatting = [.sortedKeys]
        do {
            return try writer.encode(tree)
        } catch {
            throw ChaosError(
                .invalidNetworkConfiguration, subject: "\(T.self)", "the value does not encode as JSON (\(error))")
        }
    }
}

// MARK: - The capturing encoder

/// A JSON value being built by the capturing encoder: containers fill it in place.
final class CaptureBox {
    enum Content {
        case unset
        case value(ProfileValue)
        case object([String: CaptureBox])
        case array([CaptureBox])
    }

    var content: Content = .unset

    /// The value; a value that encoded nothing is `{}`, as with `JSONEncoder`.
    var resolved: ProfileValue {
        switch content {
        case .unset: .object([:])
        case .value(let value): value
        case .object(let members): .object(members.mapValues(\.resolved))
        case .array(let items): .array(items.map(\.resolved))
        }
    }

    func set(_ key: String, _ box: CaptureBox) {
        guard case .object(var members) = content else { return }
        content = .unset
        members[key] = box
        content = .object(members)
    }

    func append(_ box: CaptureBox) {
        guard case .array(var items) = content else { return }
        content = .unset
        items.append(box)
        content = .array(items)
    }

    var count: Int {
        switch content {
        case .array(let items): items.count
        case .object(let members): members.count
        default: 0
        }
    }
}

/// A relationship a JSON:API resource's members hold.
enum CapturedRelationship {
    case toOne((any JSONAPIResource)?)
    case toMany([any JSONAPIResource])

    /// The relationship `value` stands for, when it is a resource or a list of them.
    init?(_ value: Any) {
        if let resource = value as? any JSONAPIResource {
            self = .toOne(resource)
        } else if let many = value as? any JSONAPIToMany {
            self = .toMany(many.jsonAPIResources)
        } else {
            return nil
        }
    }
}

/// Lists of resources are to-many relationships.
protocol JSONAPIToMany {
    var jsonAPIResources: [any JSONAPIResource] { get }
}

extension Array: JSONAPIToMany where Element: JSONAPIResource {
    var jsonAPIResources: [any JSONAPIResource] { map { $0 } }
}

/// The settings of one encoding, and what a JSON:API resource's top level held.
final class CaptureContext {
    let keys: KeyTransformer
    let nilValues: NullPolicy
    let leafEncoder: JSONEncoder
    /// A resource's relationships by property name (only at a resource's top level), in order.
    var relationships: [(property: String, relationship: CapturedRelationship)] = []

    init(keys: KeyTransformer, nilValues: NullPolicy, leafEncoder: JSONEncoder) {
        self.keys = keys
        self.nilValues = nilValues
        self.leafEncoder = leafEncoder
    }

    /// `value` encoded into a new box.
    func capture<T: Encodable>(_ value: T, path: [any CodingKey], resourceRoot: Bool = false) throws -> CaptureBox {
        let box = CaptureBox()
        if let tree = value as? ProfileValue {
            box.content = .value(tree)
        } else if value is Date || value is Data || value is URL || value is Decimal {
            // Written by JSONEncoder, with its strategies.
            box.content = .value(try ProfileValue(json: leafEncoder.encode(value)))
        } else {
            try value.encode(to: CaptureEncoder(box: box, context: self, codingPath: path, resourceRoot: resourceRoot))
        }
        return box
    }
}

struct CaptureEncoder: Encoder {
    let box: CaptureBox
    let context: CaptureContext
    let codingPath: [any CodingKey]
    /// Whether this is a JSON:API resource's top level, where resources are relationships.
    let resourceRoot: Bool
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        if case .object = box.content {} else { box.content = .object([:]) }
        return KeyedEncodingContainer(
            CaptureKeyed<Key>(box: box, context: context, codingPath: codingPath, resourceRoot: resourceRoot))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        if case .array = box.content {} else { box.content = .array([]) }
        return CaptureUnkeyed(box: box, context: context, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        CaptureSingle(box: box, context: context, codingPath: codingPath)
    }
}

/// A number as a JSON value; JSON has no NaN or infinity, as `JSONEncoder` says too.
private func number(_ value: Double, _ path: [any CodingKey]) throws -> ProfileValue {
    guard value.isFinite else {
        throw EncodingError.invalidValue(
            value, .init(codingPath: path, debugDescription: "\(value) is not a JSON number"))
    }
    return .number(value)
}

struct CaptureKeyed<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let box: CaptureBox
    let context: CaptureContext
    let codingPath: [any CodingKey]
    let resourceRoot: Bool

    private func put(_ value: ProfileValue, _ key: Key) {
        let child = CaptureBox()
        child.content = .value(value)
        box.set(context.keys(key.stringValue), child)
    }

    /// A nil optional, as the null policy says.
    private func absent(_ key: Key) {
        switch context.nilValues {
        case .omit: break
        case .null: put(.null, key)
        case .value(let value): put(value, key)
        }
    }

    mutating func encodeNil(forKey key: Key) throws { put(.null, key) }
    mutating func encode(_ value: Bool, forKey key: Key) throws { put(.bool(value), key) }
    mutating func encode(_ value: String, forKey key: Key) throws { put(.string(value), key) }
    mutating func encode(_ value: Double, forKey key: Key) throws { put(try number(value, codingPath + [key]), key) }
    mutating func encode(_ value: Float, forKey key: Key) throws {
        put(try number(Double(value), codingPath + [key]), key)
    }
    mutating func encode(_ value: Int, forKey key: Key) throws { put(.number(Double(value)), key) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { put(.number(Double(value)), key) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { put(.number(Double(value)), key) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { put(.number(Double(value)), key) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { put(.number(Double(value)), key) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { put(.number(Double(value)), key) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { put(.number(Double(value)), key) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { put(.number(Double(value)), key) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { put(.number(Double(value)), key) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { put(.number(Double(value)), key) }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        if resourceRoot, let relationship = CapturedRelationship(value) {
            context.relationships.append((key.stringValue, relationship))
            return
        }
        box.set(context.keys(key.stringValue), try context.capture(value, path: codingPath + [key]))
    }

    mutating func encodeIfPresent<T: Encodable>(_ value: T?, forKey key: Key) throws {
        if let value { return try encode(value, forKey: key) }
        // A nil to-one relationship is one with no resource (left out under .omit).
        if resourceRoot, T.self is any JSONAPIResource.Type || T.self is any JSONAPIToMany.Type {
            if context.nilValues != .omit {
                context.relationships.append(
                    (key.stringValue, T.self is any JSONAPIToMany.Type ? .toMany([]) : .toOne(nil)))
            }
            return
        }
        absent(key)
    }

    mutating func encodeIfPresent(_ value: Bool?, forKey key: Key) throws {
        if let value { try encode(value, forKey: key) } else { absent(key) }
    }
    mutating func encodeIfPresent(_ value: String?, forKey key: Key) throws {
        if let value { try encode(value, forKey: key) } else { absent(key) }
    }
    mutating func encodeIfPresent(_ value: Double?, forKey key: Key) throws {
        if let value { try encode(value, forKey: key) } else { absent(key) }
    }
    mutating func encodeIfPresent(_ value: Float?, forKey key: Key) throws {
        if let value { try encode(value, forKey: key) } else { absent(key) }
    }
    mutating func encodeIfPresent(_ value: Int?, forKey key: Key) throws {
        if let value { try encode(value, forKey: key) } else { absent(key) }
    }
    mutating func encodeIfPresent(_ value: Int8?, forKey key: Key) throws {
        if let value { try encode(value, forKey: key) } else { absent(key) }
    }
    mutating func encodeIfPresent(_ value: Int16?, forKey key: Key) throws {
        if let value { try encode(value, forKey: key) } else { absent(key) }
    }
    mutating func encodeIfPresent(_ value: Int32?, forKey key: Key) throws {
        if let value { try encode(value, forKey: key) } else { absent(key) }
    }
    mutating func encodeIfPresent(_ value: Int64?, forKey key: Key) throws {
        if let value { try encode(value, forKey: key) } else { absent(key) }
    }
    mutating func encodeIfPresent(_ value: UInt?, forKey key: Key) throws {
        if let value { try encode(value, forKey: key) } else { absent(key) }
    }
    mutating func encodeIfPresent(_ value: UInt8?, forKey key: Key) throws {
        if let value { try encode(value, forKey: key) } else { absent(key) }
    }
    mutating func encodeIfPresent(_ value: UInt16?, forKey key: Key) throws {
        if let value { try encode(value, forKey: key) } else { absent(key) }
    }
    mutating func encodeIfPresent(_ value: UInt32?, forKey key: Key) throws {
        if let value { try encode(value, forKey: key) } else { absent(key) }
    }
    mutating func encodeIfPresent(_ value: UInt64?, forKey key: Key) throws {
        if let value { try encode(value, forKey: key) } else { absent(key) }
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key)
        -> KeyedEncodingContainer<NestedKey>
    {
        let child = CaptureBox()
        box.set(context.keys(key.stringValue), child)
        return CaptureEncoder(box: child, context: context, codingPath: codingPath + [key], resourceRoot: false)
            .container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let child = CaptureBox()
        box.set(context.keys(key.stringValue), child)
        return CaptureEncoder(box: child, context: context, codingPath: codingPath + [key], resourceRoot: false)
            .unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder {
        // A superclass's members go into the same object, as JSON:API attributes expect.
        CaptureEncoder(box: box, context: context, codingPath: codingPath, resourceRoot: resourceRoot)
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        let child = CaptureBox()
        box.set(context.keys(key.stringValue), child)
        return CaptureEncoder(box: child, context: context, codingPath: codingPath + [key], resourceRoot: false)
    }
}

struct CaptureUnkeyed: UnkeyedEncodingContainer {
    let box: CaptureBox
    let context: CaptureContext
    let codingPath: [any CodingKey]
    var count: Int { box.count }

    private func put(_ value: ProfileValue) {
        let child = CaptureBox()
        child.content = .value(value)
        box.append(child)
    }

    private var nextKey: any CodingKey { IndexKey(box.count) }

    mutating func encodeNil() throws { put(.null) }
    mutating func encode(_ value: Bool) throws { put(.bool(value)) }
    mutating func encode(_ value: String) throws { put(.string(value)) }
    mutating func encode(_ value: Double) throws { put(try number(value, codingPath + [nextKey])) }
    mutating func encode(_ value: Float) throws { put(try number(Double(value), codingPath + [nextKey])) }
    mutating func encode(_ value: Int) throws { put(.number(Double(value))) }
    mutating func encode(_ value: Int8) throws { put(.number(Double(value))) }
    mutating func encode(_ value: Int16) throws { put(.number(Double(value))) }
    mutating func encode(_ value: Int32) throws { put(.number(Double(value))) }
    mutating func encode(_ value: Int64) throws { put(.number(Double(value))) }
    mutating func encode(_ value: UInt) throws { put(.number(Double(value))) }
    mutating func encode(_ value: UInt8) throws { put(.number(Double(value))) }
    mutating func encode(_ value: UInt16) throws { put(.number(Double(value))) }
    mutating func encode(_ value: UInt32) throws { put(.number(Double(value))) }
    mutating func encode(_ value: UInt64) throws { put(.number(Double(value))) }

    mutating func encode<T: Encodable>(_ value: T) throws {
        box.append(try context.capture(value, path: codingPath + [nextKey]))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<
        NestedKey
    > {
        let child = CaptureBox()
        let path = codingPath + [nextKey]
        box.append(child)
        return CaptureEncoder(box: child, context: context, codingPath: path, resourceRoot: false).container(
            keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let child = CaptureBox()
        let path = codingPath + [nextKey]
        box.append(child)
        return CaptureEncoder(box: child, context: context, codingPath: path, resourceRoot: false).unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder {
        let child = CaptureBox()
        let path = codingPath + [nextKey]
        box.append(child)
        return CaptureEncoder(box: child, context: context, codingPath: path, resourceRoot: false)
    }
}

struct CaptureSingle: SingleValueEncodingContainer {
    let box: CaptureBox
    let context: CaptureContext
    let codingPath: [any CodingKey]

    private func put(_ value: ProfileValue) { box.content = .value(value) }

    mutating func encodeNil() throws { put(.null) }
    mutating func encode(_ value: Bool) throws { put(.bool(value)) }
    mutating func encode(_ value: String) throws { put(.string(value)) }
    mutating func encode(_ value: Double) throws { put(try number(value, codingPath)) }
    mutating func encode(_ value: Float) throws { put(try number(Double(value), codingPath)) }
    mutating func encode(_ value: Int) throws { put(.number(Double(value))) }
    mutating func encode(_ value: Int8) throws { put(.number(Double(value))) }
    mutating func encode(_ value: Int16) throws { put(.number(Double(value))) }
    mutating func encode(_ value: Int32) throws { put(.number(Double(value))) }
    mutating func encode(_ value: Int64) throws { put(.number(Double(value))) }
    mutating func encode(_ value: UInt) throws { put(.number(Double(value))) }
    mutating func encode(_ value: UInt8) throws { put(.number(Double(value))) }
    mutating func encode(_ value: UInt16) throws { put(.number(Double(value))) }
    mutating func encode(_ value: UInt32) throws { put(.number(Double(value))) }
    mutating func encode(_ value: UInt64) throws { put(.number(Double(value))) }

    mutating func encode<T: Encodable>(_ value: T) throws {
        box.content = try context.capture(value, path: codingPath).content
    }
}

/// A key for an element of an unkeyed container.
struct IndexKey: CodingKey {
    let intValue: Int?
    var stringValue: String { "Index \(intValue ?? 0)" }
    init(_ index: Int) { intValue = index }
    init?(stringValue: String) { nil }
    init?(intValue: Int) { self.intValue = intValue }
}
