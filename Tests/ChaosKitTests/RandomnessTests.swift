import Foundation
import TestHelpers
import Testing

@testable import ChaosKit

/// Seeds and random values: `Chaos(seed:)` replays, `SeededRandom` is SplitMix64, and the
/// ready generators stay in range.
@Suite struct RandomnessTests {
    // MARK: Seeded chaos replays

    /// The values `point` gives over `count` calls with `provider` applied by a `Chaos(seed:)`.
    static func run<R: Sendable>(
        _ point: InjectionPoint<Void, R, Never>, _ provider: ChaosProvider<Void, R, Never>,
        seed: UInt64, count: Int = 50
    ) throws -> [R] {
        let chaos = Chaos(seed: seed)
        defer { chaos.revertAll() }
        try chaos.profile(ProfileEntry(point, provider)).apply()
        return collect(count) { point() }
    }

    @Test func sameSeedSameRandomSequence() throws {
        let ints = InjectionPoint<Void, Int, Never>(uniqueName()) { 0 }
        let strings = InjectionPoint<Void, String, Never>(uniqueName()) { "" }
        let a = try Self.run(ints, .random(), seed: 42)
        #expect(try Self.run(ints, .random(), seed: 42) == a)
        #expect(try Self.run(ints, .random(), seed: 43) != a)
        #expect(Set(a).count > 30, "apart from the edge values (one in four), 50 random Ints hardly repeat")
        let s = try Self.run(strings, .random(), seed: 42)
        #expect(try Self.run(strings, .random(), seed: 42) == s)
        #expect(try Self.run(strings, .random(), seed: 43) != s)
    }

    @Test func sameSeedSameProbabilityPattern() throws {
        let point = InjectionPoint<Void, Bool, Never>(uniqueName()) { false }
        let provider = ChaosProvider<Void, Bool, Never>.constant(true).probability(0.5)
        let a = try Self.run(point, provider, seed: 42)
        #expect(try Self.run(point, provider, seed: 42) == a)
        #expect(try Self.run(point, provider, seed: 4242) != a)
        #expect(a.contains(true) && a.contains(false))
    }

    @Test func sameSeedSameSequenceOnAsyncPoint() async throws {
        let point = AsyncInjectionPoint<Void, UInt32, Never>(uniqueName()) { 0 }
        func run(_ seed: UInt64) async throws -> [UInt32] {
            let chaos = Chaos(seed: seed)
            defer { chaos.revertAll() }
            try chaos.profile(ProfileEntry(point, .random())).apply()
            var values: [UInt32] = []
            for _ in 0..<50 { values.append(await point()) }
            return values
        }
        let a = try await run(1)
        #expect(try await run(1) == a)
        #expect(try await run(2) != a)
    }

    @Test func sameSeedSameSequenceInScopes() throws {
        let point = InjectionPoint<Void, Int, Never>(uniqueName()) { 0 }
        let entry = ProfileEntry(point, .random(.integer(in: 0...1_000_000)))
        let a = try Chaos.with([entry], seed: 5) { collect(50) { point() } }
        let b = try Chaos.with([entry], seed: 5) { collect(50) { point() } }
        let c = try Chaos.with([entry], seed: 6) { collect(50) { point() } }
        #expect(a == b)
        #expect(a != c)
        // Scoped and global chaos with one seed agree.
        #expect(try Self.run(point, .random(.integer(in: 0...1_000_000)), seed: 5) == a)
    }

    /// Design: "every random choice is reproducible from the seed". `Date.randomChaosValue`
    /// draws its offset from the seed but adds it to `Date()` read at every call, so the same
    /// seed gives different dates from one call (and one run) to the next.
    @Test func sameSeedSameRandomDates() throws {
        let point = InjectionPoint<Void, Date, Never>(uniqueName()) { Date(timeIntervalSince1970: 0) }
        let a = try Self.run(point, .random(), seed: 42)
        Thread.sleep(forTimeInterval: 0.01)
        let b = try Self.run(point, .random(), seed: 42)
        #expect(a == b)
    }

    @Test func noSeedDrawsOne() {
        // Without a seed, one is drawn; two such builders almost surely differ.
        let seeds = Set((0..<8).map { _ in Chaos().seed })
        #expect(seeds.count > 1)
        #expect(Chaos(seed: 17).seed == 17)
    }

    // MARK: SeededRandom

    @Test func seededRandomIsSplitMix64() {
        // Reference values of SplitMix64 from seed 0.
        var random = SeededRandom(seed: 0)
        #expect(random.next() == 0xE220_A839_7B1D_CDAF)
        #expect(random.next() == 0x6E78_9E6A_A1B9_65F4)
        #expect(random.next() == 0x06C4_5D18_8009_454F)
    }

    @Test func seededRandomIsDeterministic() {
        var a = SeededRandom(seed: 123)
        var b = SeededRandom(seed: 123)
        var c = SeededRandom(seed: 124)
        let first = (0..<100).map { _ in a.next() }
        #expect(first == (0..<100).map { _ in b.next() })
        #expect(first != (0..<100).map { _ in c.next() })
        #expect(a == b, "equal states after equal draws")
        // Works as a RandomNumberGenerator for the standard library.
        var d = SeededRandom(seed: 9)
        var e = SeededRandom(seed: 9)
        #expect(Int.random(in: 0..<1_000_000, using: &d) == Int.random(in: 0..<1_000_000, using: &e))
        #expect([1, 2, 3, 4, 5].shuffled(using: &d) == [1, 2, 3, 4, 5].shuffled(using: &e))
    }

    @Test func unitIntervalStaysInRange() {
        var random = SeededRandom(seed: 77)
        let values = (0..<10_000).map { _ in random.nextUnitInterval() }
        #expect(values.allSatisfy { $0 >= 0 && $0 < 1 })
        let mean = values.reduce(0, +) / Double(values.count)
        #expect((0.48...0.52).contains(mean), "mean \(mean)")
    }

    @Test func deriveAndStableHashAreStable() {
        #expect(SeededRandom.derive(1, 2, 3) == SeededRandom.derive(1, 2, 3))
        #expect(SeededRandom.derive(1, 2, 3) != SeededRandom.derive(1, 3, 2))
        #expect(SeededRandom.derive(1, 2) != SeededRandom.derive(2, 2))
        // FNV-1a 64: the same in every process.
        #expect(SeededRandom.stableHash("") == 0xCBF2_9CE4_8422_2325)
        #expect(SeededRandom.stableHash("a") == 0xAF63_DC4C_8601_EC8C)
        #expect(SeededRandom.stableHash("clock.now") != SeededRandom.stableHash("clock.now2"))
    }

    // MARK: Ready generators

    @Test func integerGeneratorStaysInRange() {
        var source = SeededRandom(seed: 1)
        let small = RandomGenerator<Int8>.integer(in: -3...3)
        let values = (0..<1_000).map { _ in small.generate(using: &source) }
        #expect(values.allSatisfy { (-3...3).contains($0) })
        #expect(Set(values).count == 7)
        let single = RandomGenerator<UInt>.integer(in: 5...5)
        #expect(single.generate(using: &source) == 5)
        let wide = RandomGenerator<Int>.integer(in: .min ... .max)
        _ = wide.generate(using: &source)
    }

    @Test func floatingPointGeneratorStaysInRange() {
        var source = SeededRandom(seed: 2)
        let doubles = RandomGenerator<Double>.floatingPoint(in: -1.5...2.5)
        #expect((0..<1_000).allSatisfy { _ in (-1.5...2.5).contains(doubles.generate(using: &source)) })
        let floats = RandomGenerator<Float>.floatingPoint(in: 0...1)
        #expect((0..<1_000).allSatisfy { _ in (0...1).contains(floats.generate(using: &source)) })
    }

    @Test func stringGeneratorRespectsLengthAndAlphabet() {
        var source = SeededRandom(seed: 3)
        let generator = RandomGenerator<String>.string(length: 2...5, alphabet: ["a", "b"])
        let values = (0..<500).map { _ in generator.generate(using: &source) }
        #expect(values.allSatisfy { (2...5).contains($0.count) && $0.allSatisfy { $0 == "a" || $0 == "b" } })
        #expect(Set(values.map(\.count)) == [2, 3, 4, 5])
        let troublesome = RandomGenerator<String>.string(length: 10...10)
        let scalars = Set(RandomGenerator<String>.troublesomeCharacters.flatMap(\.unicodeScalars))
        for _ in 0..<100 {
            let text = troublesome.generate(using: &source)
            // Neighbouring characters may merge into one grapheme (flags, combining marks),
            // so check the length loosely and the content by scalars.
            #expect((1...10).contains(text.count))
            #expect(text.unicodeScalars.allSatisfy { scalars.contains($0) })
        }
        let empty = RandomGenerator<String>.string(length: 0...0)
        #expect(empty.generate(using: &source) == "")
    }

    @Test func dateGeneratorStaysWithinDays() {
        var source = SeededRandom(seed: 4)
        let reference = Date(timeIntervalSince1970: 1_000_000_000)
        let generator = RandomGenerator<Date>.date(withinDays: 3, of: reference)
        let span: TimeInterval = 3 * 86_400
        let values = (0..<1_000).map { _ in generator.generate(using: &source) }
        #expect(values.allSatisfy { abs($0.timeIntervalSince(reference)) <= span })
        #expect(values.contains { $0 < reference } && values.contains { $0 > reference })
        // The default is ±10,000 days.
        let wide = RandomGenerator<Date>.date(of: reference)
        #expect(
            (0..<1_000).allSatisfy { _ in
                abs(wide.generate(using: &source).timeIntervalSince(reference)) <= 10_000 * 86_400
            })
        // With a fixed reference, a date generator is reproducible.
        var a = SeededRandom(seed: 8)
        var b = SeededRandom(seed: 8)
        #expect(generator.generate(using: &a) == generator.generate(using: &b))
    }

    @Test func optionalArrayElementAndBoolGenerators() {
        var source = SeededRandom(seed: 5)
        let optional = RandomGenerator<Int?>.optional(.integer(in: 1...2), nilProbability: 0.5)
        let optionals = (0..<500).map { _ in optional.generate(using: &source) }
        #expect(optionals.contains(nil))
        #expect(optionals.compactMap { $0 }.allSatisfy { (1...2).contains($0) })
        #expect(optionals.contains { $0 != nil })
        let never = RandomGenerator<Int?>.optional(.integer(in: 1...2), nilProbability: 0)
        #expect((0..<100).allSatisfy { _ in never.generate(using: &source) != nil })
        let always = RandomGenerator<Int?>.optional(.integer(in: 1...2), nilProbability: 1)
        #expect((0..<100).allSatisfy { _ in always.generate(using: &source) == nil })

        let array = RandomGenerator<[UInt8]>.array(of: .integer(in: 10...12), count: 1...4)
        let arrays = (0..<500).map { _ in array.generate(using: &source) }
        #expect(arrays.allSatisfy { (1...4).contains($0.count) && $0.allSatisfy { (10...12).contains($0) } })
        #expect(Set(arrays.map(\.count)) == [1, 2, 3, 4])

        let choices = ["red", "green", "blue"]
        let element = RandomGenerator<String>.element(of: choices)
        let picked = (0..<300).map { _ in element.generate(using: &source) }
        #expect(Set(picked) == Set(choices))

        let bools = RandomGenerator<Bool>.bool(probability: 0.25)
        let trues = (0..<10_000).filter { _ in bools.generate(using: &source) }.count
        #expect((0.22...0.28).contains(Double(trues) / 10_000))
        let mapped = RandomGenerator<Int>.integer(in: 1...3).map { "#\($0)" }
        #expect(["#1", "#2", "#3"].contains(mapped.generate(using: &source)))
    }

    @Test func randomChaosValuesOfReadyTypes() {
        var source = SeededRandom(seed: 6)
        let ints = (0..<1_000).map { _ in Int.randomChaosValue(using: &source) }
        // One in four is an edge value.
        #expect(ints.contains(.min) && ints.contains(.max) && ints.contains(0))
        let bytes = (0..<1_000).map { _ in UInt8.randomChaosValue(using: &source) }
        #expect(Set(bytes).count > 100)
        let doubles = (0..<1_000).map { _ in Double.randomChaosValue(using: &source) }
        #expect(doubles.contains { $0.isNaN } && doubles.contains { $0.isInfinite })
        #expect(doubles.filter(\.isFinite).allSatisfy { abs($0) <= Double.greatestFiniteMagnitude })
        let strings = (0..<200).map { _ in String.randomChaosValue(using: &source) }
        #expect(strings.allSatisfy { $0.count <= 64 })
        let optionals = (0..<200).map { _ in Int?.randomChaosValue(using: &source) }
        #expect(optionals.contains(nil) && optionals.contains { $0 != nil })
        let arrays = (0..<200).map { _ in [Bool].randomChaosValue(using: &source) }
        #expect(arrays.allSatisfy { $0.count <= 16 })
        let any = RandomGenerator<Int16>.any
        _ = any.generate(using: &source)
        let floats = (0..<200).map { _ in Float.randomChaosValue(using: &source) }
        #expect(floats.count == 200)
    }
}

/// The README's seeded random dates replay exactly: the range's centre is a fixed date,
/// not the clock at the moment the provider is made.
@Suite struct ReproducibleRandomDateTests {
    @Test func aSeededRandomDateReplaysWhateverTheTimeIsWhenTheProviderIsMade() throws {
        let point = InjectionPoint(uniqueName()) { Date() }
        func draws() throws -> [Date] {
            // A new provider each time, made at a different moment.
            let entry = point.entry(.random(.date(withinDays: 10_000)))
            return try Chaos.with(entry, seed: 42) { (0..<8).map { _ in point() } }
        }
        let first = try draws()
        Thread.sleep(forTimeInterval: 0.01)
        #expect(try draws() == first)
        let centre = RandomGenerator<Date>.defaultCentre
        #expect(centre == Date(timeIntervalSince1970: 1_735_689_600), "2025-01-01T00:00:00Z")
        for date in first { #expect(abs(date.timeIntervalSince(centre)) <= 10_000 * 86_400) }
    }
}
