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
        state &+= 0x9E37_79B9_7F4A_7C15
        return Self.mix(state)
    }

    /// A uniformly distributed number in `0 ..< 1`.
    @inlinable public mutating func nextUnitInterval() -> Double {
        Double(next() >> 11) * 0x1.0p-53
    }

    /// SplitMix64's finaliser: a bijective scramble of 64 bits.
    @inlinable static func mix(_ value: UInt64) -> UInt64 {
        var z = value
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// Combines seeds into one, so that every (seed, point, call, node) gets its own stream.
    /// Fixed arities rather than a variadic list: this runs on every chaotic call, and a
    /// variadic argument allocates an array.
    @inlinable static func derive(_ seed: UInt64, _ first: UInt64) -> UInt64 {
        mix(mix(seed) ^ (first &+ 0x9E37_79B9_7F4A_7C15))
    }

    /// Combines a seed and two values into one (see ``derive(_:_:)``).
    @inlinable static func derive(_ seed: UInt64, _ first: UInt64, _ second: UInt64) -> UInt64 {
        mix(derive(seed, first) ^ (second &+ 0x9E37_79B9_7F4A_7C15))
    }

    /// A hash of `text` that is the same in every process (unlike `Hasher`), so seeds
    /// replay across runs.
    static func stableHash(_ text: String) -> UInt64 {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in text.utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3
        }
        return hash
    }
}
