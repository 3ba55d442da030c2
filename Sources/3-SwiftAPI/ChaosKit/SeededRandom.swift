// The arithmetic is CChaosRules': the C fault engine derives its entries' seeds and draws
// with the same functions, so both languages' decisions of an entry agree.
public import CChaosRules

/// A small, fast, reproducible random number generator (SplitMix64).
///
/// Every random choice ChaosKit makes comes from one of these, seeded from the `Chaos`
/// seed, the point's name and the call index — so the same seed replays the same
/// chaos call for call, whatever order threads happen to run in.
public struct SeededRandom: RandomNumberGenerator, Sendable, Hashable {
    @usableFromInline var state: UInt64

    /// A generator that starts from `seed`.
    @inlinable public init(seed: UInt64) {
        state = seed
    }

    /// Where the generator is: `SeededRandom(seed: position)` makes the same numbers from
    /// here on, so a fuzz loop can name the input that failed.
    @inlinable public var position: UInt64 { state }

    /// The next 64 random bits.
    @inlinable public mutating func next() -> UInt64 {
        state &+= chaos_rules_gamma
        return Self.mix(state)
    }

    /// A uniformly distributed number in `0 ..< 1`.
    @inlinable public mutating func nextUnitInterval() -> Double {
        Double(next() >> 11) * 0x1.0p-53
    }

    /// SplitMix64's finaliser: a bijective scramble of 64 bits.
    @inlinable static func mix(_ value: UInt64) -> UInt64 {
        chaos_rules_mix(value)
    }

    /// Combines seeds into one, so that every (seed, point, call, node) gets its own stream.
    /// Fixed arities rather than a variadic list: this runs on every chaotic call, and a
    /// variadic argument allocates an array.
    @inlinable static func derive(_ seed: UInt64, _ first: UInt64) -> UInt64 {
        chaos_rules_derive(seed, first)
    }

    /// Combines a seed and two values into one (see ``derive(_:_:)``).
    @inlinable static func derive(_ seed: UInt64, _ first: UInt64, _ second: UInt64) -> UInt64 {
        chaos_rules_derive2(seed, first, second)
    }

    /// A hash of `text` that is the same in every process (unlike `Hasher`), so seeds
    /// replay across runs.
    static func stableHash(_ text: String) -> UInt64 {
        var text = text
        return text.withUTF8 { bytes in
            bytes.withMemoryRebound(to: CChar.self) { chaos_rules_stable_hash($0.baseAddress, $0.count) }
        }
    }
}
