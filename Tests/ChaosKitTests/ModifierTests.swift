import Foundation
import TestHelpers
import Testing

@testable import ChaosKit

/// The modifiers `.probability`, `.times` and `.delayed` on sync and async points,
/// throwing and non-throwing.
@Suite struct ModifierTests {
    static let band = 0.27...0.33

    // MARK: probability

    @Test func probabilityHitsAboutPOfCallsOnSyncPoint() throws {
        let point = InjectionPoint<Void, Int, Never>(uniqueName()) { 0 }
        let chaos = Chaos(seed: 2024)
        defer { chaos.revertAll() }
        try chaos.profile(ProfileEntry(point, .constant(1).probability(0.3))).apply()
        let hits = collect(10_000) { point() }.reduce(0, +)
        #expect(Self.band.contains(Double(hits) / 10_000), "hits: \(hits)")
    }

    @Test func probabilityOnThrowingSyncPoint() throws {
        let point = InjectionPoint<Void, Int, TestFailure>(uniqueName()) { () throws(TestFailure) -> Int in 0 }
        let chaos = Chaos(seed: 99)
        defer { chaos.revertAll() }
        try chaos.profile(ProfileEntry(point, .throwing(.offline).probability(0.3))).apply()
        var failures = 0
        for _ in 0..<10_000 {
            do throws(TestFailure) {
                #expect(try point() == 0)
            } catch {
                #expect(error == .offline)
                failures += 1
            }
        }
        #expect(Self.band.contains(Double(failures) / 10_000), "failures: \(failures)")
    }

    @Test func probabilityOnAsyncPoints() async throws {
        let plain = AsyncInjectionPoint<Void, Int, Never>(uniqueName()) { 0 }
        let throwing = AsyncInjectionPoint<Void, Int, TestFailure>(uniqueName()) {
            () async throws(TestFailure) -> Int in 0
        }
        let chaos = Chaos(seed: 7)
        defer { chaos.revertAll() }
        try chaos.profile(
            ProfileEntry(plain, .constant(1).probability(0.3)),
            ProfileEntry(throwing, .throwing(.offline).probability(0.3))
        ).apply()
        var hits = 0
        var failures = 0
        for _ in 0..<10_000 {
            hits += await plain()
            if (try? await throwing()) == nil { failures += 1 }
        }
        #expect(Self.band.contains(Double(hits) / 10_000), "hits: \(hits)")
        #expect(Self.band.contains(Double(failures) / 10_000), "failures: \(failures)")
    }

    @Test func probabilityZeroNeverAndOneAlways() async throws {
        let never = InjectionPoint<Void, Int, Never>(uniqueName()) { 0 }
        let always = InjectionPoint<Void, Int, TestFailure>(uniqueName()) { () throws(TestFailure) -> Int in 0 }
        let asyncNever = AsyncInjectionPoint<Void, Int, TestFailure>(uniqueName()) {
            () async throws(TestFailure) -> Int in 0
        }
        let asyncAlways = AsyncInjectionPoint<Void, Int, Never>(uniqueName()) { 0 }
        let chaos = Chaos(seed: 11)
        defer { chaos.revertAll() }
        try chaos.profile(
            ProfileEntry(never, .constant(1).probability(0)),
            ProfileEntry(always, .throwing(.offline).probability(1)),
            ProfileEntry(asyncNever, .throwing(.offline).probability(0)),
            ProfileEntry(asyncAlways, .constant(1).probability(1))
        ).apply()
        for _ in 0..<2_000 {
            #expect(never() == 0)
            #expect(throws: TestFailure.offline) { try always() }
            #expect(try await asyncNever() == 0)
            #expect(await asyncAlways() == 1)
        }
    }

    // MARK: times

    @Test func timesThenOriginalOnSyncPoints() throws {
        let plain = InjectionPoint<Int, String, Never>(uniqueName()) { "real \($0)" }
        let throwing = InjectionPoint<Int, String, TestFailure>(uniqueName()) {
            (n: Int) throws(TestFailure) -> String in "real \(n)"
        }
        let chaos = Chaos(seed: 1)
        defer { chaos.revertAll() }
        try chaos.profile(
            ProfileEntry(plain, .constant("x").times(3)),
            ProfileEntry(throwing, .throwing(.offline).times(3))
        ).apply()
        #expect(collect(5) { plain(1) } == ["x", "x", "x", "real 1", "real 1"])
        for _ in 0..<3 {
            #expect(throws: TestFailure.offline) { try throwing(2) }
        }
        #expect(try throwing(2) == "real 2")
        #expect(try throwing(3) == "real 3")
    }

    @Test func timesThenOriginalOnAsyncPoints() async throws {
        let plain = AsyncInjectionPoint<Int, String, Never>(uniqueName()) { "real \($0)" }
        let throwing = AsyncInjectionPoint<Int, String, TestFailure>(uniqueName()) {
            (n: Int) async throws(TestFailure) -> String in "real \(n)"
        }
        let chaos = Chaos(seed: 1)
        defer { chaos.revertAll() }
        try chaos.profile(
            ProfileEntry(plain, .constant("x").times(3)),
            ProfileEntry(throwing, .throwing(.offline).times(3))
        ).apply()
        var results: [String] = []
        for _ in 0..<5 { results.append(await plain(1)) }
        #expect(results == ["x", "x", "x", "real 1", "real 1"])
        for _ in 0..<3 {
            await #expect(throws: TestFailure.offline) { try await throwing(2) }
        }
        #expect(try await throwing(2) == "real 2")
    }

    @Test func timesOneAndNestedInSequential() throws {
        let point = InjectionPoint<Void, String, Never>(uniqueName()) { "real" }
        let chaos = Chaos(seed: 1)
        defer { chaos.revertAll() }
        // sequential: call 0 → "a"; from call 1 on, the repeating last step is "b" twice, then original.
        try chaos.profile(ProfileEntry(point, .sequential([.constant("a"), .constant("b").times(2)]))).apply()
        #expect(collect(5) { point() } == ["a", "b", "b", "real", "real"])
    }

    // MARK: delayed

    @Test func delayedWaitsOnSyncPoints() throws {
        let plain = InjectionPoint<Void, String, Never>(uniqueName()) { "real" }
        let throwing = InjectionPoint<Void, String, TestFailure>(uniqueName()) { () throws(TestFailure) -> String in
            "real"
        }
        let chaos = Chaos(seed: 1)
        defer { chaos.revertAll() }
        try chaos.profile(
            ProfileEntry(plain, .constant("late").delayed(by: .milliseconds(30))),
            ProfileEntry(throwing, .throwing(.offline).delayed(by: .milliseconds(30)))
        ).apply()
        let clock = ContinuousClock()
        var result = ""
        let elapsed = clock.measure { result = plain() }
        #expect(result == "late")
        #expect(elapsed >= .milliseconds(30))
        let thrownAfter = clock.measure {
            #expect(throws: TestFailure.offline) { try throwing() }
        }
        #expect(thrownAfter >= .milliseconds(30))
    }

    @Test func delayedOriginalStillCallsOriginal() throws {
        let point = InjectionPoint<Int, Int, Never>(uniqueName()) { $0 * 2 }
        let chaos = Chaos(seed: 1)
        defer { chaos.revertAll() }
        try chaos.profile(ProfileEntry(point, .original.delayed(by: .milliseconds(30)))).apply()
        let clock = ContinuousClock()
        var result = 0
        let elapsed = clock.measure { result = point(21) }
        #expect(result == 42)
        #expect(elapsed >= .milliseconds(30))
    }

    @Test func delayedWaitsOnAsyncPoints() async throws {
        let plain = AsyncInjectionPoint<Void, String, Never>(uniqueName()) { "real" }
        let throwing = AsyncInjectionPoint<Void, String, TestFailure>(uniqueName()) {
            () async throws(TestFailure) -> String in "real"
        }
        let chaos = Chaos(seed: 1)
        defer { chaos.revertAll() }
        try chaos.profile(
            ProfileEntry(plain, .constant("late").delayed(by: .milliseconds(30))),
            ProfileEntry(throwing, .throwing(.offline).delayed(by: .milliseconds(30)))
        ).apply()
        let clock = ContinuousClock()
        let start = clock.now
        #expect(await plain() == "late")
        #expect(clock.now - start >= .milliseconds(30))
        let second = clock.now
        await #expect(throws: TestFailure.offline) { try await throwing() }
        #expect(clock.now - second >= .milliseconds(30))
    }

    @Test func delayedZeroIsAllowed() async throws {
        let point = AsyncInjectionPoint<Void, Int, Never>(uniqueName()) { 0 }
        let chaos = Chaos(seed: 1)
        defer { chaos.revertAll() }
        try chaos.profile(ProfileEntry(point, .constant(1).delayed(by: .zero))).apply()
        #expect(await point() == 1)
    }

    @Test func cancelledDelayStillAnswers() async throws {
        let point = AsyncInjectionPoint<Void, String, Never>(uniqueName()) { "real" }
        let chaos = Chaos(seed: 1)
        defer { chaos.revertAll() }
        try chaos.profile(ProfileEntry(point, .constant("late").delayed(by: .seconds(60)))).apply()
        let task = Task { await point() }
        task.cancel()
        #expect(await task.value == "late")
    }

    // MARK: Combinations

    @Test func modifiersCompose() throws {
        let point = InjectionPoint<Void, Int, Never>(uniqueName()) { 0 }
        let chaos = Chaos(seed: 1)
        defer { chaos.revertAll() }
        // Always (p = 1), for two calls, each after a zero delay.
        try chaos.profile(ProfileEntry(point, .constant(5).delayed(by: .zero).probability(1).times(2))).apply()
        #expect(collect(4) { point() } == [5, 5, 0, 0])
    }
}
