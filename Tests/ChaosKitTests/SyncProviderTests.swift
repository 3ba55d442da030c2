import Foundation
import TestHelpers
import Testing

@testable import ChaosKit

/// Every provider on synchronous points, both non-throwing (`Never`) and throwing (`TestFailure`).
@Suite struct SyncProviderTests {
    // MARK: Points

    typealias Plain = ChaosProvider<Int, String, Never>
    typealias Throwing = ChaosProvider<Int, String, TestFailure>

    static func plainPoint(_ name: String = uniqueName()) -> InjectionPoint<Int, String, Never> {
        InjectionPoint(name) { "real \($0)" }
    }

    static func throwingPoint(_ name: String = uniqueName()) -> InjectionPoint<Int, String, TestFailure> {
        InjectionPoint(name) { (n: Int) throws(TestFailure) -> String in
            if n < 0 { throw .real }
            return "real \(n)"
        }
    }

    // MARK: No chaos

    @Test func unappliedPointCallsOriginal() throws {
        let plain = Self.plainPoint()
        let throwing = Self.throwingPoint()
        #expect(plain(1) == "real 1")
        #expect(try throwing(2) == "real 2")
        #expect(throws: TestFailure.real) { try throwing(-1) }
        #expect(plain.callOriginal(3) == "real 3")
    }

    @Test func voidPointIsCallableWithoutArguments() {
        let point = InjectionPoint<Void, Int, Never>(uniqueName()) { 7 }
        #expect(point() == 7)
        let chaos = Chaos(seed: 1)
        defer { chaos.revertAll() }
        #expect(throws: Never.self) { try chaos.profile(ProfileEntry(point, .constant(8))).apply() }
        #expect(point() == 8)
        #expect(point.callOriginal(()) == 7)
    }

    // MARK: original

    @Test func originalProviderCallsOriginal() throws {
        let plain = Self.plainPoint()
        let throwing = Self.throwingPoint()
        let chaos = Chaos(seed: 1)
        defer { chaos.revertAll() }
        try chaos.profile(ProfileEntry(plain, .original), ProfileEntry(throwing, .original)).apply()
        #expect(plain(5) == "real 5")
        #expect(try throwing(6) == "real 6")
        #expect(throws: TestFailure.real) { try throwing(-1) }
    }

    // MARK: constant

    @Test func constantProvider() throws {
        let plain = Self.plainPoint()
        let throwing = Self.throwingPoint()
        let chaos = Chaos(seed: 1)
        try chaos.profile(ProfileEntry(plain, .constant("fake")), ProfileEntry(throwing, .constant("fake too"))).apply()
        #expect(plain(1) == "fake")
        #expect(plain(2) == "fake")
        #expect(try throwing(1) == "fake too")
        // The constant replaces the original entirely, including its failures.
        #expect(try throwing(-1) == "fake too")
        // callOriginal bypasses chaos.
        #expect(plain.callOriginal(1) == "real 1")
        chaos.revertAll()
        #expect(plain(1) == "real 1")
        #expect(try throwing(1) == "real 1")
    }

    // MARK: nil

    @Test func nilProviderOnOptionalResults() throws {
        let plain = InjectionPoint<Void, String?, Never>(uniqueName()) { "here" }
        let throwing = InjectionPoint<Void, Int?, TestFailure>(uniqueName()) { () throws(TestFailure) -> Int? in 42 }
        let chaos = Chaos(seed: 1)
        defer { chaos.revertAll() }
        #expect(plain() == "here")
        try chaos.profile(ProfileEntry(plain, .nil), ProfileEntry(throwing, .nil)).apply()
        #expect(plain() == nil)
        #expect(try throwing() == nil)
    }

    // MARK: block

    @Test func blockInspectsArgumentsAndCountsCalls() throws {
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
                    return "block \(env.arguments * 10)"
                })
        ).apply()
        #expect(point(1) == "block 10")
        #expect(point(2) == "block 20")
        #expect(point(3) == "block 30")
        let calls = seen.values
        #expect(calls.map(\.arguments) == [1, 2, 3])
        #expect(calls.map(\.index) == [0, 1, 2])
        #expect(calls.allSatisfy { $0.name == name })
    }

    @Test func blockCallsOriginal() throws {
        let point = Self.plainPoint()
        let chaos = Chaos(seed: 1)
        defer { chaos.revertAll() }
        try chaos.profile(
            ProfileEntry(
                point,
                .block { env in
                    "wrapped(\(env.callOriginal()))|\(env.callOriginal(with: env.arguments + 100))"
                })
        ).apply()
        #expect(point(1) == "wrapped(real 1)|real 101")
    }

    @Test func blockOnThrowingPointCanThrowAndForwardOriginalFailures() throws {
        let point = Self.throwingPoint()
        let chaos = Chaos(seed: 1)
        defer { chaos.revertAll() }
        try chaos.profile(
            ProfileEntry(
                point,
                .block { (env) throws(TestFailure) -> String in
                    if env.arguments == 0 { throw .timeout(seconds: 5) }
                    return try env.callOriginal()
                })
        ).apply()
        #expect(throws: TestFailure.timeout(seconds: 5)) { try point(0) }
        #expect(try point(4) == "real 4")
        #expect(throws: TestFailure.real) { try point(-1) }
    }

    @Test func blockCallIndexCountsPerEntry() throws {
        let point = Self.plainPoint()
        let chaos = Chaos(seed: 1)
        defer { chaos.revertAll() }
        let first = ProfileEntry(point, .block { "first \($0.callIndex)" })
        try chaos.profile(first).apply()
        #expect(collect(3) { point(0) } == ["first 0", "first 1", "first 2"])
        try chaos.revert(first)
        // A new entry starts counting again from 0.
        let second = ProfileEntry(point, .block { "second \($0.callIndex)" })
        try chaos.profile(second).apply()
        #expect(collect(2) { point(0) } == ["second 0", "second 1"])
    }

    @Test func blockRandomSourceIsSeededPerCall() throws {
        let point = InjectionPoint<Void, UInt64, Never>(uniqueName()) { 0 }
        func run(seed: UInt64) throws -> [UInt64] {
            let chaos = Chaos(seed: seed)
            defer { chaos.revertAll() }
            try chaos.profile(
                ProfileEntry(
                    point,
                    .block { env in
                        var random = env.random
                        #expect(random == SeededRandom(seed: env.randomSeed))
                        return random.next()
                    })
            ).apply()
            return collect(20) { point() }
        }
        let a = try run(seed: 7)
        #expect(try run(seed: 7) == a)
        #expect(try run(seed: 8) != a)
        #expect(Set(a).count == a.count, "each call gets its own random stream")
    }

    // MARK: random

    @Test func randomProviderWithGenerator() throws {
        let plain = InjectionPoint<Void, Int, Never>(uniqueName()) { -1 }
        let throwing = InjectionPoint<Void, Int, TestFailure>(uniqueName()) { () throws(TestFailure) -> Int in -1 }
        let chaos = Chaos(seed: 3)
        defer { chaos.revertAll() }
        try chaos.profile(
            ProfileEntry(plain, .random(.integer(in: 10...20))),
            ProfileEntry(throwing, .random(.integer(in: 100...105)))
        ).apply()
        let values = collect(200) { plain() }
        #expect(values.allSatisfy { (10...20).contains($0) })
        #expect(Set(values).count > 5, "a random provider should not return one value")
        let thrown = try collect(200) { try throwing() }
        #expect(thrown.allSatisfy { (100...105).contains($0) })
    }

    @Test func randomProviderOfRandomChaosValueType() throws {
        let point = InjectionPoint<Void, String, Never>(uniqueName()) { "original" }
        let flags = InjectionPoint<Void, Bool, TestFailure>(uniqueName()) { () throws(TestFailure) -> Bool in false }
        let chaos = Chaos(seed: 3)
        defer { chaos.revertAll() }
        try chaos.profile(ProfileEntry(point, .random()), ProfileEntry(flags, .random())).apply()
        let strings = collect(50) { point() }
        #expect(Set(strings).count > 10)
        let bools = try collect(100) { try flags() }
        #expect(bools.contains(true) && bools.contains(false))
    }

    // MARK: throwing

    @Test func throwingProvider() throws {
        let point = Self.throwingPoint()
        let chaos = Chaos(seed: 1)
        defer { chaos.revertAll() }
        try chaos.profile(ProfileEntry(point, .throwing(.offline))).apply()
        #expect(throws: TestFailure.offline) { try point(1) }
        #expect(throws: TestFailure.offline) { try point(2) }
        // The thrown error has the point's own (typed) failure type.
        let error: TestFailure? = caught { () throws(TestFailure) in try point(3) }
        #expect(error == .offline)
    }

    // MARK: sequential

    @Test func sequentialLastRepeats() throws {
        let point = Self.plainPoint()
        let chaos = Chaos(seed: 1)
        defer { chaos.revertAll() }
        try chaos.profile(ProfileEntry(point, .sequential([.constant("a"), .original, .constant("c")]))).apply()
        #expect(collect(6) { point(1) } == ["a", "real 1", "c", "c", "c", "c"])
    }

    @Test func sequentialOnThrowingPoint() throws {
        let point = Self.throwingPoint()
        let chaos = Chaos(seed: 1)
        defer { chaos.revertAll() }
        try chaos.profile(ProfileEntry(point, .sequential([.throwing(.offline), .constant("b"), .original]))).apply()
        #expect(throws: TestFailure.offline) { try point(1) }
        #expect(try point(1) == "b")
        #expect(try point(1) == "real 1")
        #expect(try point(2) == "real 2")
        #expect(throws: TestFailure.real) { try point(-1) }
    }

    @Test func sequentialOfOneIsThatProvider() throws {
        let point = Self.plainPoint()
        let chaos = Chaos(seed: 1)
        defer { chaos.revertAll() }
        try chaos.profile(ProfileEntry(point, .sequential([.constant("only")]))).apply()
        #expect(collect(3) { point(0) } == ["only", "only", "only"])
    }

    // MARK: composite

    @Test func compositeFirstMatchWinsFallbackOriginal() throws {
        let point = Self.plainPoint()
        let chaos = Chaos(seed: 1)
        defer { chaos.revertAll() }
        try chaos.profile(
            ProfileEntry(
                point,
                .composite([
                    Plain.when({ $0 > 10 }, .constant("big")),
                    Plain.when({ $0 > 5 }, .constant("medium")),  // shadowed by "big" for > 10
                    Plain.when({ $0 == 0 }, .block { _ in "zero" }),
                ]))
        ).apply()
        #expect(point(11) == "big")
        #expect(point(100) == "big")
        #expect(point(6) == "medium")
        #expect(point(0) == "zero")
        #expect(point(3) == "real 3", "no case matches: the default fallback is the original")
    }

    @Test func compositeExplicitFallback() throws {
        let point = Self.throwingPoint()
        let chaos = Chaos(seed: 1)
        defer { chaos.revertAll() }
        try chaos.profile(
            ProfileEntry(
                point,
                .composite(
                    [Throwing.when({ $0 == 1 }, .original), Throwing.when({ $0 == 2 }, .throwing(.offline))],
                    otherwise: .constant("fallback")
                ))
        ).apply()
        #expect(try point(1) == "real 1")
        #expect(throws: TestFailure.offline) { try point(2) }
        #expect(try point(3) == "fallback")
        #expect(try point(-5) == "fallback")
    }

    @Test func compositeWithoutCasesUsesFallback() throws {
        let point = Self.plainPoint()
        let chaos = Chaos(seed: 1)
        defer { chaos.revertAll() }
        try chaos.profile(ProfileEntry(point, .composite([], otherwise: .constant("x")))).apply()
        #expect(point(1) == "x")
    }

    @Test func nestedProvidersCountIndependently() throws {
        let point = Self.plainPoint()
        let chaos = Chaos(seed: 1)
        defer { chaos.revertAll() }
        // Each sequential counts only the calls that reach it.
        try chaos.profile(
            ProfileEntry(
                point,
                .composite([
                    Plain.when({ $0 == 0 }, .sequential([.constant("z0"), .constant("z1")])),
                    Plain.when({ $0 == 1 }, .sequential([.constant("o0"), .constant("o1")])),
                ]))
        ).apply()
        #expect(point(0) == "z0")
        #expect(point(1) == "o0")
        #expect(point(1) == "o1")
        #expect(point(0) == "z1")
        #expect(point(0) == "z1")
    }

    // MARK: Tuples of arguments

    @Test func tupleArgumentsReachBlocksAndConditions() throws {
        let point = InjectionPoint<(String, Int), String, Never>(uniqueName()) { "\($0.0)#\($0.1)" }
        let chaos = Chaos(seed: 1)
        defer { chaos.revertAll() }
        try chaos.profile(
            ProfileEntry(
                point,
                .composite(
                    [
                        ChaosProvider<(String, Int), String, Never>.when(
                            { $0.0 == "key" }, .block { env in env.callOriginal(with: ("other", env.arguments.1 + 1)) })
                    ]
                ))
        ).apply()
        #expect(point(("key", 1)) == "other#2")
        #expect(point(("else", 1)) == "else#1")
    }

    // MARK: Descriptions

    @Test func summariesDescribeProviders() {
        typealias P = ChaosProvider<Int, String, TestFailure>
        #expect(P.original.summary == "original")
        #expect(P.constant("a").summary == "constant(a)")
        #expect(P.throwing(.offline).summary == "throwing(offline)")
        #expect(P.block { _ in "" }.summary == "block")
        #expect(P.random().summary == "random")
        #expect(P.sequential([.constant("a"), .original]).summary == "sequential[constant(a), original]")
        #expect(P.composite([P.when({ _ in true }, .constant("a"))]).summary == "constant(a) when a condition")
        #expect(
            P.composite([P.when({ _ in true }, .constant("a"))], otherwise: .constant("b")).summary
                == "composite[constant(a) when a condition; otherwise constant(b)]")
        #expect(P.constant("a").probability(0.5).summary == "constant(a) with probability 0.5")
        #expect(P.constant("a").times(3).summary == "constant(a) 3 times")
        let name = uniqueName()
        let point = Self.plainPoint(name)
        let entry = ProfileEntry(point, .constant("x"))
        #expect(entry.description == "\(name) ← constant(x)")
        #expect(entry.pointName == name)
    }
}
