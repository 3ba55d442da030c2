import Foundation

// Randomised models (Dixie's idea: "inject randomised properties to your data models to see
// how robust your application is with objects received from the web"): a Decoder that
// invents the values a type asks for, so that any Decodable type gets seeded random
// instances without a line of code per type.

/// How ``RandomGenerator/decodable(_:options:)`` invents values.
public struct RandomModelOptions: Sendable {
    /// How often an optional property is nil (0…1).
    public var nilProbability: Double
    /// How often a number is an edge value (min, max, 0, −1, the largest finite, the
    /// smallest positive …) and a string an edge string (empty, blank, very long, `"null"`,
    /// control or direction characters) (0…1).
    public var edgeProbability: Double
    /// How often a collection is empty (0…1); otherwise it has 1…``maxCount`` elements.
    public var emptyProbability: Double
    /// The most elements an array, set or dictionary gets.
    public var maxCount: Int
    /// How long a string that is not an edge string is.
    public var stringLength: ClosedRange<Int>
    /// The characters strings are made of (``RandomGenerator/troublesomeCharacters`` unless given).
    public var alphabet: [Character]
    /// How often a `String`-backed enum (`CaseIterable & RawRepresentable`) is offered a raw
    /// value that is none of its cases (0…1). A type that refuses it gets one of its cases
    /// instead; a type that decodes unknown values leniently keeps the unknown one.
    public var unknownEnumProbability: Double
    /// How deep models nest before optionals are nil and collections empty, so that
    /// recursive types (a comment with replies) end.
    public var maxDepth: Int
    /// Whether `Double` and `Float` values may be NaN or infinite (JSON cannot carry them,
    /// so not unless asked).
    public var nonFiniteNumbers: Bool

    /// Options; every default suits a model decoded from a web API's JSON.
    public init(
        nilProbability: Double = 0.25, edgeProbability: Double = 0.25, emptyProbability: Double = 0.25,
        maxCount: Int = 4, stringLength: ClosedRange<Int> = 0...32,
        alphabet: [Character] = RandomGenerator<String>.troublesomeCharacters,
        unknownEnumProbability: Double = 0.25, maxDepth: Int = 6, nonFiniteNumbers: Bool = false
    ) {
        self.nilProbability = nilProbability
        self.edgeProbability = edgeProbability
        self.emptyProbability = emptyProbability
        self.maxCount = max(1, maxCount)
        self.stringLength = max(0, stringLength.lowerBound)...max(0, stringLength.upperBound)
        self.alphabet = alphabet.isEmpty ? RandomGenerator<String>.troublesomeCharacters : alphabet
        self.unknownEnumProbability = unknownEnumProbability
        self.maxDepth = max(0, maxDepth)
        self.nonFiniteNumbers = nonFiniteNumbers
    }
}

extension RandomGenerator where Value: Decodable & SendableMetatype {
    /// Seeded random instances of any `Decodable` type, made by a decoder that invents every
    /// value the type asks for: edge numbers, strings from the troublesome catalogue, empty
    /// collections, nil optionals, unknown raw values for `String`-backed enums — what a
    /// model decoded from the web may hold. The same seed gives the same instance.
    ///
    /// ```swift
    /// struct User: Codable, Sendable { var id: Int; var name: String; var email: String? }
    /// let users = InjectionPoint<Void, User, Never>("app.user") { User(id: 1, name: "Ada", email: nil) }
    /// let entry = ProfileEntry(users, .random(.decodable(User.self)))
    /// ```
    ///
    /// Types that conform to ``RandomChaosValue`` draw their own values; `Date`, `URL`,
    /// `UUID`, `Data` and `Decimal` get valid random values. When a type refuses what was
    /// invented (its `init(from:)` validates), that part is invented again, then with plain
    /// values (`"a"`, `0`, empty collections, nil optionals, the first enum case); a type
    /// that refuses even those stops the program with a message naming the coding path:
    /// conform the part to ``RandomChaosValue`` instead. Enums with associated values are
    /// such a part: their synthesized decoding needs a key the decoder cannot know.
    public static func decodable(
        _ type: Value.Type = Value.self, options: RandomModelOptions = RandomModelOptions()
    ) -> RandomGenerator {
        RandomGenerator { source in
            let invention = Invention(seed: source.next(), options: options)
            do {
                return try invention.make(Value.self, path: [], depth: 0, mode: .random)
            } catch {
                preconditionFailure(
                    "RandomGenerator.decodable(\(Value.self)): no value could be invented (\(error)); conform the part it names to RandomChaosValue"
                )
            }
        }
    }
}

/// What one invented value is being made with: random draws, or the k-th plain value.
enum InventionMode: Equatable {
    case random
    case plain(Int)
}

/// The state of one invented instance: the seeded source, the options, and the types that
/// could not be made (so that a failing part is not retried exponentially often).
final class Invention {
    var random: SeededRandom
    let options: RandomModelOptions
    private var impossible: Set<ObjectIdentifier> = []

    init(seed: UInt64, options: RandomModelOptions) {
        random = SeededRandom(seed: seed)
        self.options = options
    }

    /// Plain strings, tried in order when random ones are refused.
    static let plainStrings = [
        "a", "0", "https://example.com/", "2025-01-01T00:00:00Z", "00000000-0000-0000-0000-000000000000", "true",
    ]

    /// Strings that break code: empty, blank, long, look-alikes of other types, invisible characters.
    static let edgeStrings: [String] = [
        "", " ", "null", "0", "-1", "true", "NaN", "\u{0}", "\u{202E}evil", "👩‍👩‍👧‍👦", "e\u{0301}",
        "<script>alert(1)</script>",
        "'; DROP TABLE users; --", "%s%n", "\n", String(repeating: "W", count: 1_000),
        String(repeating: "🙂", count: 300),
    ]

    func chance(_ probability: Double) -> Bool { random.nextUnitInterval() < probability }

    func pick<T>(_ list: [T]) -> T { list[Int.random(in: 0..<list.count, using: &random)] }

    /// A value of `type`: its own random value, or one decoded from invented values, retried
    /// as the type documentation of ``RandomGenerator/decodable(_:options:)`` says.
    func make<T: Decodable>(_ type: T.Type, path: [any CodingKey], depth: Int, mode: InventionMode) throws -> T {
        if let special: T = special(type, mode: mode) { return special }
        let key = ObjectIdentifier(type)
        if impossible.contains(key) {
            throw DecodingError.dataCorrupted(.init(codingPath: path, debugDescription: "\(T.self) cannot be invented"))
        }
        let hint = EnumHint(type)
        var attempts: [InventionMode] = mode == .random ? [.random, .random, .random] : []
        attempts += Self.plainStrings.indices.map(InventionMode.plain)
        var last: (any Error)?
        for attempt in attempts {
            do {
                return try T(from: InventingDecoder(self, path: path, depth: depth, mode: attempt, hint: hint))
            } catch {
                last = error
            }
        }
        impossible.insert(key)
        throw last
            ?? DecodingError.dataCorrupted(.init(codingPath: path, debugDescription: "\(T.self) cannot be invented"))
    }

    /// Values for the Foundation types whose decoding validates, and for types that draw
    /// their own (``RandomChaosValue``, except the standard ones the decoder invents itself).
    private func special<T>(_ type: T.Type, mode: InventionMode) -> T? {
        let plain = mode != .random
        switch type {
        case is Date.Type:
            return (plain ? RandomGenerator<Date>.defaultCentre : Date.randomChaosValue(using: &random)) as? T
        case is URL.Type:
            let urls = [
                "https://example.com/", "https://example.com/a%20b?q=1&q=2#top", "http://[::1]:8080/",
                "https://xn--bcher-kva.example/",
                "file:///tmp/x", "https://example.com/" + String(repeating: "p/", count: 500), "mailto:a@example.com",
                "https://user:pw@example.com:1/",
            ]
            return URL(string: plain ? urls[0] : pick(urls)) as? T
        case is UUID.Type:
            if plain { return UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)) as? T }
            let a = random.next()
            let b = random.next()
            let bytes =
                (0..<8).map { UInt8(truncatingIfNeeded: a >> ($0 * 8)) }
                + (0..<8).map { UInt8(truncatingIfNeeded: b >> ($0 * 8)) }
            return UUID(
                uuid: (
                    bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                    bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
                )) as? T
        case is Data.Type:
            if plain || chance(options.emptyProbability) { return Data() as? T }
            return Data(
                (0..<Int.random(in: 1...(options.maxCount * 16), using: &random)).map { _ in
                    UInt8.random(in: 0...255, using: &random)
                }) as? T
        case is Decimal.Type:
            if plain { return Decimal(0) as? T }
            let edges: [Decimal] = [
                0, -1, Decimal.greatestFiniteMagnitude, Decimal.leastFiniteMagnitude,
                Decimal(string: "0.000000000000000000000000000001")!,
            ]
            return
                (chance(options.edgeProbability) ? pick(edges) : Decimal(Double.random(in: -1e9...1e9, using: &random)))
                as? T
        case is any StandardInvented.Type:
            return nil
        case let own as any RandomChaosValue.Type:
            return plain ? nil : draw(own) as? T
        default:
            return nil
        }
    }

    private func draw<R: RandomChaosValue>(_ type: R.Type) -> R { R.randomChaosValue(using: &random) }

    // MARK: Primitive values

    func bool(_ mode: InventionMode) -> Bool { mode == .random ? Bool.randomChaosValue(using: &random) : false }

    func integer<I: FixedWidthInteger & RandomChaosValue>(_ type: I.Type, _ mode: InventionMode) -> I {
        guard mode == .random else {
            if case .plain(let k) = mode { return I(k % 2) }
            return 0
        }
        if chance(options.edgeProbability) {
            return pick([I.min, I.max, 0, I.isSigned ? 0 &- 1 : 1, 1])
        }
        return I.randomChaosValue(using: &random)
    }

    func double(_ mode: InventionMode) -> Double {
        guard mode == .random else {
            if case .plain(let k) = mode { return Double(k % 2) }
            return 0
        }
        if chance(options.edgeProbability) {
            var edges: [Double] = [
                0, -0.0, -1, .leastNonzeroMagnitude, .greatestFiniteMagnitude, -.greatestFiniteMagnitude,
                9_007_199_254_740_992, 1e-300,
            ]
            if options.nonFiniteNumbers { edges += [.nan, .infinity, -.infinity] }
            return pick(edges)
        }
        return Double.random(in: -1e12...1e12, using: &random)
    }

    func float(_ mode: InventionMode) -> Float {
        guard mode == .random else {
            if case .plain(let k) = mode { return Float(k % 2) }
            return 0
        }
        if chance(options.edgeProbability) {
            var edges: [Float] = [
                0, -0.0, -1, .leastNonzeroMagnitude, .greatestFiniteMagnitude, -.greatestFiniteMagnitude, 16_777_216,
            ]
            if options.nonFiniteNumbers { edges += [.nan, .infinity, -.infinity] }
            return pick(edges)
        }
        return Float.random(in: -1e6...1e6, using: &random)
    }

    /// An `Int`, from an `Int`-backed enum's raw values when there is a hint (sometimes one
    /// that is none of them).
    func integer(_ mode: InventionMode, hint: EnumHint?) -> Int {
        guard let hint, !hint.integers.isEmpty else { return integer(Int.self, mode) }
        guard mode == .random else { return hint.integers[0] }
        if chance(options.unknownEnumProbability) {
            let unknown = (hint.integers.max() ?? 0) &+ 1 &+ Int(random.next() % 1_000)
            if !hint.integers.contains(unknown) { return unknown }
        }
        return pick(hint.integers)
    }

    func string(_ mode: InventionMode, hint: EnumHint?) -> String {
        if let hint, !hint.cases.isEmpty {
            guard mode == .random else { return hint.cases[0] }
            if chance(options.unknownEnumProbability) { return unknownCase(of: hint) }
            return pick(hint.cases)
        }
        if case .plain(let k) = mode { return Self.plainStrings[k % Self.plainStrings.count] }
        if chance(options.edgeProbability) { return pick(Self.edgeStrings) }
        return RandomGenerator<String>.string(length: options.stringLength, alphabet: options.alphabet).generate(
            using: &random)
    }

    /// A raw value that is none of the enum's cases: a case with a suffix, or any string.
    private func unknownCase(of hint: EnumHint) -> String {
        for _ in 0..<8 {
            let candidate =
                chance(0.5) ? pick(hint.cases) + "_unknown" : pick(Self.edgeStrings + ["UNKNOWN", "other", "v2"])
            if !hint.cases.contains(candidate) { return candidate }
        }
        return "\u{1F9EA}unknown-\(random.next() % 1_000_000)"
    }

    /// How many elements a collection gets.
    func count(_ mode: InventionMode, depth: Int) -> Int {
        guard mode == .random, depth < options.maxDepth, !chance(options.emptyProbability) else { return 0 }
        return Int.random(in: 1...options.maxCount, using: &random)
    }

    /// Whether an optional is nil.
    func isNil(_ mode: InventionMode, depth: Int) -> Bool {
        mode != .random || depth >= options.maxDepth || chance(options.nilProbability)
    }
}

/// The raw values of a `String`- or `Int`-backed `CaseIterable` enum, when the type being
/// invented is one.
struct EnumHint {
    /// The cases' raw values, as strings.
    let cases: [String]
    /// The cases' raw values, when they are integers.
    let integers: [Int]

    init?<T>(_ type: T.Type) {
        guard let iterable = type as? any CaseIterable.Type else { return nil }
        let raw = Self.rawValues(iterable)
        cases = raw.compactMap { $0 as? String }
        integers = raw.compactMap { $0 as? Int }
        guard !cases.isEmpty || !integers.isEmpty else { return nil }
    }

    private static func rawValues<C: CaseIterable>(_ type: C.Type) -> [Any] {
        C.allCases.compactMap { ($0 as? any RawRepresentable)?.rawValue }
    }
}

/// Standard types the decoder invents itself (with its options), although they conform to
/// ``RandomChaosValue``.
protocol StandardInvented {}
extension Bool: StandardInvented {}
extension String: StandardInvented {}
extension Int: StandardInvented {}
extension Int8: StandardInvented {}
extension Int16: StandardInvented {}
extension Int32: StandardInvented {}
extension Int64: StandardInvented {}
extension UInt: StandardInvented {}
extension UInt8: StandardInvented {}
extension UInt16: StandardInvented {}
extension UInt32: StandardInvented {}
extension UInt64: StandardInvented {}
extension Double: StandardInvented {}
extension Float: StandardInvented {}
extension Optional: StandardInvented {}
extension Array: StandardInvented {}

/// The decoder that invents: every container it hands out draws from the ``Invention``.
struct InventingDecoder: Decoder {
    let invention: Invention
    let codingPath: [any CodingKey]
    let depth: Int
    let mode: InventionMode
    /// The enum raw values the first string decoded here should come from.
    let hint: EnumHint?
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(_ invention: Invention, path: [any CodingKey], depth: Int, mode: InventionMode, hint: EnumHint? = nil) {
        self.invention = invention
        self.codingPath = path
        self.depth = depth
        self.mode = mode
        self.hint = hint
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(InventedKeyedContainer<Key>(decoder: self))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        InventedUnkeyedContainer(decoder: self, count: invention.count(mode, depth: depth))
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        InventedSingleValue(decoder: self)
    }

    /// A value of `type` one level down, at `key`.
    func child<T: Decodable>(_ type: T.Type, at key: any CodingKey) throws -> T {
        try invention.make(type, path: codingPath + [key], depth: depth + 1, mode: mode)
    }
}

/// A key for an element of an unkeyed container (`[2]`).
struct IndexKey: CodingKey {
    let intValue: Int?
    var stringValue: String { "Index \(intValue ?? 0)" }
    init(_ index: Int) { intValue = index }
    init?(stringValue: String) { nil }
    init?(intValue: Int) { self.intValue = intValue }
}

struct InventedKeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let decoder: InventingDecoder
    var codingPath: [any CodingKey] { decoder.codingPath }
    private var invention: Invention { decoder.invention }
    private var mode: InventionMode { decoder.mode }

    init(decoder: InventingDecoder) { self.decoder = decoder }

    /// Keys for dictionaries: random strings, a third of them numbers (for `[Int: …]`).
    var allKeys: [Key] {
        var keys: [Key] = []
        var seen: Set<String> = []
        for _ in 0..<invention.count(mode, depth: decoder.depth) {
            let text =
                invention.chance(1.0 / 3)
                ? String(Int.random(in: -1_000...1_000_000, using: &invention.random))
                : invention.string(.random, hint: nil)
            if !seen.contains(text), let key = Key(stringValue: text) {
                seen.insert(text)
                keys.append(key)
            }
        }
        return keys
    }

    func contains(_ key: Key) -> Bool { true }
    func decodeNil(forKey key: Key) throws -> Bool { invention.isNil(mode, depth: decoder.depth) }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { invention.bool(mode) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { invention.string(mode, hint: nil) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { invention.double(mode) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { invention.float(mode) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { invention.integer(type, mode) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { invention.integer(type, mode) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { invention.integer(type, mode) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { invention.integer(type, mode) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { invention.integer(type, mode) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { invention.integer(type, mode) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { invention.integer(type, mode) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { invention.integer(type, mode) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { invention.integer(type, mode) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { invention.integer(type, mode) }
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try decoder.child(type, at: key) }

    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        invention.isNil(mode, depth: decoder.depth) ? nil : try decoder.child(type, at: key)
    }
    func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? {
        try optional { try decode(type, forKey: key) }
    }
    func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? {
        try optional { try decode(type, forKey: key) }
    }
    func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? {
        try optional { try decode(type, forKey: key) }
    }
    func decodeIfPresent(_ type: Float.Type, forKey key: Key) throws -> Float? {
        try optional { try decode(type, forKey: key) }
    }
    func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? {
        try optional { try decode(type, forKey: key) }
    }
    func decodeIfPresent(_ type: Int8.Type, forKey key: Key) throws -> Int8? {
        try optional { try decode(type, forKey: key) }
    }
    func decodeIfPresent(_ type: Int16.Type, forKey key: Key) throws -> Int16? {
        try optional { try decode(type, forKey: key) }
    }
    func decodeIfPresent(_ type: Int32.Type, forKey key: Key) throws -> Int32? {
        try optional { try decode(type, forKey: key) }
    }
    func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? {
        try optional { try decode(type, forKey: key) }
    }
    func decodeIfPresent(_ type: UInt.Type, forKey key: Key) throws -> UInt? {
        try optional { try decode(type, forKey: key) }
    }
    func decodeIfPresent(_ type: UInt8.Type, forKey key: Key) throws -> UInt8? {
        try optional { try decode(type, forKey: key) }
    }
    func decodeIfPresent(_ type: UInt16.Type, forKey key: Key) throws -> UInt16? {
        try optional { try decode(type, forKey: key) }
    }
    func decodeIfPresent(_ type: UInt32.Type, forKey key: Key) throws -> UInt32? {
        try optional { try decode(type, forKey: key) }
    }
    func decodeIfPresent(_ type: UInt64.Type, forKey key: Key) throws -> UInt64? {
        try optional { try decode(type, forKey: key) }
    }

    private func optional<T>(_ value: () throws -> T) throws -> T? {
        invention.isNil(mode, depth: decoder.depth) ? nil : try value()
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        try below(key).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try below(key).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder { below(IndexKey(0)) }
    func superDecoder(forKey key: Key) throws -> any Decoder { below(key) }

    private func below(_ key: any CodingKey) -> InventingDecoder {
        InventingDecoder(invention, path: codingPath + [key], depth: decoder.depth + 1, mode: mode)
    }
}

struct InventedUnkeyedContainer: UnkeyedDecodingContainer {
    let decoder: InventingDecoder
    let count: Int?
    var currentIndex = 0
    var codingPath: [any CodingKey] { decoder.codingPath }
    var isAtEnd: Bool { currentIndex >= (count ?? 0) }
    private var invention: Invention { decoder.invention }

    init(decoder: InventingDecoder, count: Int) {
        self.decoder = decoder
        self.count = count
    }

    /// Moves to the next element; past the end is an error, as from a real decoder.
    private mutating func advance<T>(_ type: T.Type) throws -> InventionMode {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(
                T.self, .init(codingPath: codingPath, debugDescription: "the invented array has \(count ?? 0) elements")
            )
        }
        currentIndex += 1
        return decoder.mode
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd else { return false }
        if invention.isNil(decoder.mode, depth: decoder.depth) {
            currentIndex += 1
            return true
        }
        return false
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool {
        let mode = try advance(type)
        return invention.bool(mode)
    }
    mutating func decode(_ type: String.Type) throws -> String {
        let mode = try advance(type)
        return invention.string(mode, hint: nil)
    }
    mutating func decode(_ type: Double.Type) throws -> Double {
        let mode = try advance(type)
        return invention.double(mode)
    }
    mutating func decode(_ type: Float.Type) throws -> Float {
        let mode = try advance(type)
        return invention.float(mode)
    }
    mutating func decode(_ type: Int.Type) throws -> Int {
        let mode = try advance(type)
        return invention.integer(type, mode)
    }
    mutating func decode(_ type: Int8.Type) throws -> Int8 {
        let mode = try advance(type)
        return invention.integer(type, mode)
    }
    mutating func decode(_ type: Int16.Type) throws -> Int16 {
        let mode = try advance(type)
        return invention.integer(type, mode)
    }
    mutating func decode(_ type: Int32.Type) throws -> Int32 {
        let mode = try advance(type)
        return invention.integer(type, mode)
    }
    mutating func decode(_ type: Int64.Type) throws -> Int64 {
        let mode = try advance(type)
        return invention.integer(type, mode)
    }
    mutating func decode(_ type: UInt.Type) throws -> UInt {
        let mode = try advance(type)
        return invention.integer(type, mode)
    }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 {
        let mode = try advance(type)
        return invention.integer(type, mode)
    }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 {
        let mode = try advance(type)
        return invention.integer(type, mode)
    }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 {
        let mode = try advance(type)
        return invention.integer(type, mode)
    }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 {
        let mode = try advance(type)
        return invention.integer(type, mode)
    }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let key = IndexKey(currentIndex)
        _ = try advance(type)
        return try decoder.child(type, at: key)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<
        NestedKey
    > {
        try nestedDecoder().container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try nestedDecoder().unkeyedContainer()
    }

    mutating func superDecoder() throws -> any Decoder { try nestedDecoder() }

    private mutating func nestedDecoder() throws -> InventingDecoder {
        let key = IndexKey(currentIndex)
        let mode = try advance(InventingDecoder.self)
        return InventingDecoder(invention, path: codingPath + [key], depth: decoder.depth + 1, mode: mode)
    }
}

struct InventedSingleValue: SingleValueDecodingContainer {
    let decoder: InventingDecoder
    var codingPath: [any CodingKey] { decoder.codingPath }
    private var invention: Invention { decoder.invention }
    private var mode: InventionMode { decoder.mode }

    func decodeNil() -> Bool { invention.isNil(mode, depth: decoder.depth) }
    func decode(_ type: Bool.Type) throws -> Bool { invention.bool(mode) }
    func decode(_ type: String.Type) throws -> String { invention.string(mode, hint: decoder.hint) }
    func decode(_ type: Double.Type) throws -> Double { invention.double(mode) }
    func decode(_ type: Float.Type) throws -> Float { invention.float(mode) }
    func decode(_ type: Int.Type) throws -> Int { invention.integer(mode, hint: decoder.hint) }
    func decode(_ type: Int8.Type) throws -> Int8 { invention.integer(type, mode) }
    func decode(_ type: Int16.Type) throws -> Int16 { invention.integer(type, mode) }
    func decode(_ type: Int32.Type) throws -> Int32 { invention.integer(type, mode) }
    func decode(_ type: Int64.Type) throws -> Int64 { invention.integer(type, mode) }
    func decode(_ type: UInt.Type) throws -> UInt { invention.integer(type, mode) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { invention.integer(type, mode) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { invention.integer(type, mode) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { invention.integer(type, mode) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { invention.integer(type, mode) }

    /// A value of `type` in place: the same depth, the same path.
    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try invention.make(type, path: codingPath, depth: decoder.depth, mode: mode)
    }
}
