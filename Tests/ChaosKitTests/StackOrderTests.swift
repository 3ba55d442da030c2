import Foundation
import TestHelpers
import Testing

@testable import ChaosKit

/// Global chaos on one point forms a stack: the later entry wins, reverting it brings the
/// earlier one back, whichever `Chaos` applied them.
@Suite struct StackOrderTests {
    static func point() -> InjectionPoint<Void, String, Never> {
        InjectionPoint(uniqueName()) { "original" }
    }

    @Test func laterEntryWinsAcrossTwoChaosInstances() throws {
        let point = Self.point()
        let first = Chaos(seed: 1)
        let second = Chaos(seed: 2)
        defer {
            first.revertAll()
            second.revertAll()
        }
        let a = ProfileEntry(point, .constant("A"))
        let b = ProfileEntry(point, .constant("B"))
        try first.profile(a).apply()
        #expect(point() == "A")
        try second.profile(b).apply()
        #expect(point() == "B")
        try second.revert(b)
        #expect(point() == "A", "reverting the later entry brings the earlier one back")
        try first.revert(a)
        #expect(point() == "original")
    }

    @Test func revertingTheEarlierKeepsTheLaterAcrossTwoChaosInstances() throws {
        let point = Self.point()
        let first = Chaos(seed: 1)
        let second = Chaos(seed: 2)
        defer {
            first.revertAll()
            second.revertAll()
        }
        let a = ProfileEntry(point, .constant("A"))
        let b = ProfileEntry(point, .constant("B"))
        try first.profile(a).apply()
        try second.profile(b).apply()
        try first.revert(a)
        #expect(point() == "B")
        try second.revert(b)
        #expect(point() == "original")
    }

    @Test func laterEntryWinsInOneChaos() throws {
        let point = Self.point()
        let chaos = Chaos(seed: 1)
        defer { chaos.revertAll() }
        let a = ProfileEntry(point, .constant("A"))
        let b = ProfileEntry(point, .constant("B"))
        try chaos.profile(a).apply()
        try chaos.profile(b).apply()
        #expect(point() == "B")
        try chaos.revert(b)
        #expect(point() == "A")
        try chaos.profile(b).apply()
        try chaos.revert(a)
        #expect(point() == "B", "reverting the earlier entry keeps the later on top")
        try chaos.revert(b)
        #expect(point() == "original")
        #expect(chaos.appliedEntries.isEmpty)
    }

    @Test func laterEntryWinsWithinOneApply() throws {
        let point = Self.point()
        let chaos = Chaos(seed: 1)
        defer { chaos.revertAll() }
        let a = ProfileEntry(point, .constant("A"))
        let b = ProfileEntry(point, .constant("B"))
        try chaos.profile(a, b).apply()
        #expect(point() == "B")
        #expect(chaos.appliedEntries == [a, b])
    }

    @Test func revertAllRestoresOriginal() throws {
        let point = Self.point()
        let other = InjectionPoint<Int, Int, TestFailure>(uniqueName()) { (n: Int) throws(TestFailure) -> Int in n }
        let chaos = Chaos(seed: 1)
        try chaos.profile(ProfileEntry(point, .constant("A"))).apply()
        try chaos.profile(ProfileEntry(point, .constant("B")), ProfileEntry(other, .throwing(.offline))).apply()
        #expect(point() == "B")
        #expect(chaos.appliedEntries.count == 3)
        chaos.revertAll()
        #expect(point() == "original")
        #expect(try other(4) == 4)
        #expect(chaos.appliedEntries.isEmpty)
        // The hot path is back to "nothing applied".
        #expect(point.core.activity.load(ordering: .relaxed) == 0)
        #expect(other.core.activity.load(ordering: .relaxed) == 0)
        // revertAll twice is harmless.
        chaos.revertAll()
        #expect(point() == "original")
    }

    @Test func revertAllOfOneChaosLeavesAnothersEntries() throws {
        let point = Self.point()
        let first = Chaos(seed: 1)
        let second = Chaos(seed: 2)
        defer { second.revertAll() }
        try first.profile(ProfileEntry(point, .constant("A"))).apply()
        try second.profile(ProfileEntry(point, .constant("B"))).apply()
        try first.profile(ProfileEntry(point, .constant("C"))).apply()
        #expect(point() == "C")
        first.revertAll()
        #expect(point() == "B")
    }

    @Test func stackOnAsyncPoint() async throws {
        let point = AsyncInjectionPoint<Void, String, TestFailure>(uniqueName()) {
            () async throws(TestFailure) -> String in "original"
        }
        let first = Chaos(seed: 1)
        let second = Chaos(seed: 2)
        defer {
            first.revertAll()
            second.revertAll()
        }
        let a = ProfileEntry(point, .constant("A"))
        let b = ProfileEntry(point, .throwing(.offline))
        try first.profile(a).apply()
        try second.profile(b).apply()
        await #expect(throws: TestFailure.offline) { try await point() }
        try first.revert(a)
        await #expect(throws: TestFailure.offline) { try await point() }
        try first.profile(a).apply()
        #expect(try await point() == "A")
        try first.revert(a)
        try second.revert(b)
        #expect(try await point() == "original")
    }

    @Test func reappliedEntryStartsFresh() throws {
        let point = Self.point()
        let chaos = Chaos(seed: 1)
        defer { chaos.revertAll() }
        let entry = ProfileEntry(point, .sequential([.constant("first"), .constant("then")]))
        try chaos.profile(entry).apply()
        #expect(collect(2) { point() } == ["first", "then"])
        try chaos.revert(entry)
        try chaos.profile(entry).apply()
        #expect(point() == "first", "a re-applied entry gets new counters")
    }

    /// The same entry applied by two `Chaos` (allowed: `.alreadyApplied` is per `Chaos`).
    /// Reverting it in the earlier `Chaos` must remove that `Chaos`'s installation, not the
    /// later one on top: the later must keep winning, with its own seed and counters.
    @Test func revertingSharedEntryInEarlierChaosKeepsLaterChaosOnTop() throws {
        let name = uniqueName()
        let point = InjectionPoint<Void, String, Never>(name) { "original" }
        let entry = ProfileEntry(point, .block { env in "\(env.randomSeed) \(env.callIndex)" })
        /// What call `index` answers when the `Chaos` seeded `seed` applied the entry.
        func expected(seed: UInt64, call index: UInt64) -> String {
            let entrySeed = SeededRandom.derive(seed, SeededRandom.stableHash(name))
            return "\(SeededRandom.derive(entrySeed, index, 0)) \(index)"
        }
        let first = Chaos(seed: 1)
        let second = Chaos(seed: 2)
        defer {
            first.revertAll()
            second.revertAll()
        }
        try first.profile(entry).apply()
        try second.profile(entry).apply()
        #expect(point() == expected(seed: 2, call: 0))
        try first.revert(entry)
        #expect(first.appliedEntries.isEmpty)
        #expect(second.appliedEntries == [entry])
        #expect(point() == expected(seed: 2, call: 1), "the second Chaos's installation must still answer")
        try second.revert(entry)
        #expect(point() == "original")
    }
}
