public import Foundation

/// Makes random values of one type from a seeded source; the `.random` provider uses one.
///
/// Ready generators cover Bool, integers, floating point, String, Date, Optional and
/// collections; conform your own types to ``RandomChaosValue`` to get `.random()` for them.
public struct RandomGenerator<Value>: Sendable {
    @usableFromInline let body: @Sendable (inout SeededRandom) -> Value

    /// A generator from your own function; draw every random bit from the given source.
    public init(_ body: @escaping @Sendable (inout SeededRandom) -> Value) {
        self.body = body
    }

    /// One value, drawn from `source`.
    @inlinable public func generate(using source: inout SeededRandom) -> Value {
        body(&source)
    }

    /// A generator of `transform` applied to this generator's values.
    public func map<Other>(_ transform: @escaping @Sendable (Value) -> Other) -> RandomGenerator<Other> {
        let body = self.body
        return RandomGenerator<Other> { source in transform(body(&source)) }
    }
}

/// A type with a sensible "anything goes" random value, for `.random()` providers.
public protocol RandomChaosValue: SendableMetatype {
    /// A random value, drawn from `source`.
    static func randomChaosValue(using source: inout SeededRandom) -> Self
}

extension RandomGenerator where Value: RandomChaosValue {
    /// The type's own random values (see ``RandomChaosValue``).
    public static var any: RandomGenerator { RandomGenerator { Value.randomChaosValue(using: &$0) } }
}

extension RandomGenerator where Value == Bool {
    /// `true` with probability `probability`.
    public static func bool(probability: Double = 0.5) -> RandomGenerator {
        RandomGenerator { $0.nextUnitInterval() < probability }
    }
}

extension RandomGenerator where Value: FixedWidthInteger & Sendable {
    /// A uniformly distributed integer in `range`.
    public static func integer(in range: ClosedRange<Value>) -> RandomGenerator {
        RandomGenerator { Value.random(in: range, using: &$0) }
    }
}

extension RandomGenerator where Value: BinaryFloatingPoint & Sendable, Value.RawSignificand: FixedWidthInteger {
    /// A uniformly distributed number in `range`.
    public static func floatingPoint(in range: ClosedRange<Value>) -> RandomGenerator {
        RandomGenerator { Value.random(in: range, using: &$0) }
    }
}

extension RandomGenerator where Value == String {
    /// Letters, digits, punctuation, accents, right-to-left script, CJK and emoji: text that
    /// breaks layouts and naive byte counting.
    public static let troublesomeCharacters: [Character] = Array(
        "abcXYZ019 .,;'\"<>&%@éüßøñ¿¡שלוםمرحبا漢字かな한글🙂👩‍👩‍👧🇺🇳\u{0301}\u{200F}"
    )

    /// A string whose length is in `length`, made of characters drawn from `alphabet`.
    public static func string(
        length: ClosedRange<Int> = 0...64,
        alphabet: [Character] = troublesomeCharacters
    ) -> RandomGenerator {
        precondition(!alphabet.isEmpty, "RandomGenerator.string needs a non-empty alphabet")
        return RandomGenerator { source in
            let count = Int.random(in: length, using: &source)
            var result = ""
            for _ in 0..<count {
                result.append(alphabet[Int.random(in: 0..<alphabet.count, using: &source)])
            }
            return result
        }
    }
}

extension RandomGenerator where Value == Date {
    /// The centre random dates are drawn around unless one is given: 2025-01-01T00:00:00Z.
    /// Fixed, not "now", so that the same seed gives the same dates on every run, on any
    /// day — and so that drawing a date never reads a clock that chaos may be hooking.
    public static var defaultCentre: Date { Date(timeIntervalSince1970: 1_735_689_600) }

    /// A date within ±`days` days of `reference` (Dixie's example used ±10,000 days),
    /// centred on ``defaultCentre`` unless given: a seeded draw replays exactly.
    public static func date(withinDays days: Int = 10_000, of reference: Date = defaultCentre) -> RandomGenerator {
        let span = Double(days) * 86_400
        return RandomGenerator { source in
            reference.addingTimeInterval(Double.random(in: -span...span, using: &source))
        }
    }
}

extension RandomGenerator {
    /// `nil` with probability `nilProbability`, otherwise a value from `wrapped`.
    public static func optional<Wrapped>(
        _ wrapped: RandomGenerator<Wrapped>, nilProbability: Double = 0.5
    ) -> RandomGenerator where Value == Wrapped? {
        RandomGenerator { source in
            source.nextUnitInterval() < nilProbability ? nil : wrapped.generate(using: &source)
        }
    }

    /// An array whose length is in `count`, of values from `element`.
    public static func array<Element>(
        of element: RandomGenerator<Element>, count: ClosedRange<Int> = 0...16
    ) -> RandomGenerator where Value == [Element] {
        RandomGenerator { source in
            let length = Int.random(in: count, using: &source)
            return (0..<length).map { _ in element.generate(using: &source) }
        }
    }

    /// One of `choices`, uniformly.
    public static func element(of choices: [Value]) -> RandomGenerator where Value: Sendable {
        precondition(!choices.isEmpty, "RandomGenerator.element(of:) needs at least one choice")
        return RandomGenerator { source in choices[Int.random(in: 0..<choices.count, using: &source)] }
    }
}

extension Bool: RandomChaosValue {
    /// `true` or `false`, evenly.
    public static func randomChaosValue(using source: inout SeededRandom) -> Bool { source.next() & 1 == 1 }
}

extension RandomChaosValue where Self: FixedWidthInteger {
    /// Any value of the type; one in four is an edge (min, max, 0, -1 or 1).
    public static func randomChaosValue(using source: inout SeededRandom) -> Self {
        if source.next() % 4 == 0 {
            let edges: [Self] = [.min, .max, 0, 1, Self.isSigned ? 0 &- 1 : .max / 2]
            return edges[Int(source.next() % UInt64(edges.count))]
        }
        return Self.random(in: .min ... .max, using: &source)
    }
}

extension Int: RandomChaosValue {}
extension Int8: RandomChaosValue {}
extension Int16: RandomChaosValue {}
extension Int32: RandomChaosValue {}
extension Int64: RandomChaosValue {}
extension UInt: RandomChaosValue {}
extension UInt8: RandomChaosValue {}
extension UInt16: RandomChaosValue {}
extension UInt32: RandomChaosValue {}
extension UInt64: RandomChaosValue {}

extension Double: RandomChaosValue {
    /// Any finite value, with zero, negative zero, infinities, NaN and tiny values among them.
    public static func randomChaosValue(using source: inout SeededRandom) -> Double {
        if source.next() % 4 == 0 {
            let edges: [Double] = [
                0, -0.0, .infinity, -.infinity, .nan, .leastNonzeroMagnitude, .greatestFiniteMagnitude,
            ]
            return edges[Int(source.next() % UInt64(edges.count))]
        }
        return Double.random(in: -1e12...1e12, using: &source)
    }
}

extension Float: RandomChaosValue {
    /// A value derived from `Double`'s, rounded to `Float`.
    public static func randomChaosValue(using source: inout SeededRandom) -> Float {
        Float(Double.randomChaosValue(using: &source))
    }
}

extension String: RandomChaosValue {
    /// Up to 64 troublesome characters (see ``RandomGenerator/troublesomeCharacters``).
    public static func randomChaosValue(using source: inout SeededRandom) -> String {
        RandomGenerator<String>.string().generate(using: &source)
    }
}

extension Date: RandomChaosValue {
    /// A date within ±10,000 days of 2025-01-01 (Dixie's example span). The centre is
    /// fixed, not "now", so that the same seed gives the same dates on every run — and so
    /// that drawing a date never reads a clock that chaos may be hooking.
    public static func randomChaosValue(using source: inout SeededRandom) -> Date {
        RandomGenerator<Date>.date().generate(using: &source)
    }
}

extension Optional: RandomChaosValue where Wrapped: RandomChaosValue {
    /// `nil` half the time, otherwise a random wrapped value.
    public static func randomChaosValue(using source: inout SeededRandom) -> Wrapped? {
        source.next() & 1 == 0 ? nil : Wrapped.randomChaosValue(using: &source)
    }
}

extension Array: RandomChaosValue where Element: RandomChaosValue {
    /// Up to 16 random elements.
    public static func randomChaosValue(using source: inout SeededRandom) -> [Element] {
        let count = Int(source.next() % 17)
        return (0..<count).map { _ in Element.randomChaosValue(using: &source) }
    }
}
