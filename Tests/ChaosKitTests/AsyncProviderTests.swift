import Foundation
import TestHelpers
import Testing

@testable import ChaosKit

/// Every provider on async points, both non-throwing (`Never`) and throwing (`TestFailure`).
@Suite struct AsyncProviderTests {
    typealias Plain = AsyncChaosProvider<Int, String, Never>
    typealias Throwing = AsyncChaosProvider<Int, String, TestFailure>

    static func plainPoint(_ name: String = uniqueName()) -> AsyncInjectionPoint<Int, String, Never> {
        AsyncInjectionPoint(name) { n in
            await Task.yield()
            return "real \(n)"
        }
    }

    static func throwingPoint(_ name: String = uniqueName()) -> AsyncInjectionPoint<Int, String, TestFailure> {
        AsyncInjectionPoint(name) { (n: Int) async throws(TestFailure) -> String in
            await Task.yield()
            if n < 0 { throw .real }
            return "real \(n)"
        }
    }

    @Test func unappliedPointCallsOriginal() async throws {
        let plain = Self.plainPoint()
        let throwing = Self.throwingPoint()
        #expect(await plain(1) == "real 1")
        #expect(try await throwing(2) == "real 2")
        await #expect(throws: TestFailure.real) { try await throwing(-1) }
        #expect(await plain.callOriginal(3) == "real 3")
    }

    @Test func voidPointIsCallableWithoutArguments() async throws {
        let point = AsyncInjectionPoint<Void, Int, Never>(uniqueName()) { 7 }
        #expect(await point() == 7)
        let chaos = Chaos(seed: 1)
        defer { chaos.revertAll() }
        try chaos.profile(ProfileEntry(point, .constant(8))).apply()
        #expect(await point() == 8)
        #expect(await point.callOriginal(()) == 7)
    }

    @Test func originalProvider() async throws {
        let plain = Self.plainPoint()
        let throwing = Self.throwingPoint()
        let chaos = Chaos(seed: 1)
        defer { chaos.revertAll() }
        try chaos.profile(ProfileEntry(plain, .original), ProfileEntry(throwing, .original)).apply()
        #expect(await plain(5) == "real 5")
        #expect(try await throwing(6) == "real 6")
        await #expect(throws: TestFailure.real) { try await throwing(-1) }
    }

    @Test func constantProvider() async throws {
        let plain = Self.plainPoint()
        let throwing = Self.throwingPoint()
        let chaos = Chaos(seed: 1)
        try chaos.profile(ProfileEntry(plain, .constant("fake")), ProfileEntry(throwing, .constant("fake too"))).apply()
        #expect(await plain(1) == "fake")
        #expect(try await throwing(-1) == "fake too")
        #expect(await plain.callOriginal(1) == "real 1")
        chaos.revertAll()
        #expect(await plain(1) == "real 1")
        #expect(try await throwing(1) == "real 1")
    }

    @Test func nilProvider() async throws {
        let plain = AsyncInjectionPoint<Void, String?, Never>(uniqueName()) { "here" }
        let throwing = AsyncInjectionPoint<Void, Int?, TestFailure>(uniqueName()) {
            () async throws(TestFailure) -> Int? in 1
        }
        let chaos = Chaos(seed: 1)
        defer { chaos.revertAll() }
        try chaos.profile(ProfileEntry(plain, .nil), ProfileEntry(throwing, .nil)).apply()
        #expect(await plain() == nil)
        #expect(try await throwing() == nil)
    }

    @Test func blockInspectsArgumentsCountsCallsAndCallsOriginal() async throws {
        let name = uniqueName()
        let point = Self.plainPoint(name)
        let seen = Recorder<(arguments: Int, index: Int, name: String)>()
        let chaos = Chaos(seed: 1)
        defer { chaos.revertAll() }
        try chaos.profile(
            ProfileEntry(
                point,
                .block { env in
                    seen.record((env.arguments, env.callIndex, env.pointName))
                    let own = await env.callOriginal()
                    let other = await env.callOriginal(with: env.arguments + 100)
                    return "\(own)|\(other)"
                })
        ).apply()
        #expect(await point(1) == "real 1|real 101")
        #expect(await point(2) == "real 2|real 102")
        #expect(await point(3) == "real 3|real 103")
        let calls = seen.values
        #expect(calls.map(\.arguments) == [1, 2, 3])
        #expect(calls.map(\.index) == [0, 1, 2])
        #expect(calls.allSatisfy { $0.name == name })
    }

    @Test func blockOnThrowingPoint() async throws {
        let point = Self.throwingPoint()
        let chaos = Chaos(seed: 1)
        defer { chaos.revertAll() }
        try chaos.profile(
            ProfileEntry(
                point,
                .block { (env) async throws(TestFailure) -> String in
                    if env.arguments == 0 { throw .timeout(seconds: 1) }
                    return try await env.callOriginal()
                })
        ).apply()
        await #expect(throws: TestFailure.timeout(seconds: 1)) { try await point(0) }
        #expect(try await point(4) == "real 4")
        await #expect(throws: TestFailure.real) { try await point(-1) }
    }

    @Test func randomProviders() async throws {
        let ranged = AsyncInjectionPoint<Void, Int, Never>(uniqueName()) { -1 }
        let typed = AsyncInjectionPoint<Void, Bool, TestFailure>(uniqueName()) { () async throws(TestFailure) -> Bool in
            false
        }
        let chaos = Chaos(seed: 5)
        defer { chaos.revertAll() }
        try chaos.profile(ProfileEntry(ranged, .random(.integer(in: 1...3))), ProfileEntry(typed, .random())).apply()
        var ints: [Int] = []
        var bools: [Bool] = []
        for _ in 0..<100 {
            ints.append(await ranged())
            bools.append(try await typed())
        }
        #expect(ints.allSatisfy { (1...3).contains($0) })
        #expect(Set(ints) == [1, 2, 3])
        #expect(bools.contains(true) && bools.contains(false))
    }

    @Test func throwingProvider() async throws {
        let point = Self.throwingPoint()
        let chaos = Chaos(seed: 1)
        defer { chaos.revertAll() }
        try chaos.profile(ProfileEntry(point, .throwing(.offline))).apply()
        let error: TestFailure? = await caught { () async throws(TestFailure) in try await point(1) }
        #expect(error == .offline)
    }

    @Test func sequentialLastRepeats() async throws {
        let plain = Self.plainPoint()
        let throwing = Self.throwingPoint()
        let chaos = Chaos(seed: 1)
        defer { chaos.revertAll() }
        try chaos.profile(
            ProfileEntry(plain, .sequential([.constant("a"), .original, .constant("c")])),
            ProfileEntry(throwing, .sequential([.throwing(.offline), .constant("b")]))
        ).apply()
        var results: [String] = []
        for _ in 0..<5 { results.append(await plain(1)) }
        #expect(results == ["a", "real 1", "c", "c", "c"])
        await #expect(throws: TestFailure.offline) { try await throwing(1) }
        #expect(try await throwing(1) == "b")
        #expect(try await throwing(1) == "b")
    }

    @Test func compositeDefaultAndExplicitFallback() async throws {
        let plain = Self.plainPoint()
        let throwing = Self.throwingPoint()
        let chaos = Chaos(seed: 1)
        defer { chaos.revertAll() }
        try chaos.profile(
            ProfileEntry(
                plain,
                .composite([
                    Plain.when({ $0 > 10 }, .constant("big")),
                    Plain.when({ $0 > 5 }, .constant("medium")),
                ])),
            ProfileEntry(
                throwing,
                .composite(
                    [Throwing.when({ $0 == 2 }, .throwing(.offline)), Throwing.when({ $0 == 2 }, .constant("never"))],
                    otherwise: .block { env in "fallback \(env.arguments)" }
                ))
        ).apply()
        #expect(await plain(11) == "big")
        #expect(await plain(6) == "medium")
        #expect(await plain(1) == "real 1")
        await #expect(throws: TestFailure.offline) { try await throwing(2) }
        #expect(try await throwing(3) == "fallback 3")
    }
}
