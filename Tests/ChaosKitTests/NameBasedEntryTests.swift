import Foundation
import Testing
@testable import ChaosKit

/// Entries made from a point's name and an untyped `ProviderDescription` (as profiles make
/// them), catalogue items, and `ProfileParameters`.
@Suite struct NameBasedEntryTests {
    // MARK: Every described provider

    @Test func describedProvidersOnSyncPoint() throws {
        let name = uniqueName()
        let point = InjectionPoint<Int, Int, TestFailure>(name) { (n: Int) throws(TestFailure) -> Int in n }
        let chaos = Chaos(seed: 1)
        defer { chaos.revertAll() }

        let constant = ProfileEntry(point: name, .constant(99))
        try chaos.profile(constant).apply()
        #expect(try point(1) == 99)
        try chaos.revert(constant)

        let throwing = ProfileEntry(point: name, .throwing(TestFailure.offline))
        try chaos.profile(throwing).apply()
        #expect(throws: TestFailure.offline) { try point(1) }
        try chaos.revert(throwing)

        let sequential = ProfileEntry(point: name, .sequential([.constant(5), .original, .throwing(TestFailure.timeout(seconds: 1))]))
        try chaos.profile(sequential).apply()
        #expect(try point(1) == 5)
        #expect(try point(1) == 1)
        #expect(throws: TestFailure.timeout(seconds: 1)) { try point(1) }
        #expect(throws: TestFailure.timeout(seconds: 1)) { try point(1) }
        try chaos.revert(sequential)

        let times = ProfileEntry(point: name, .times(2, .constant(7)))
        try chaos.profile(times).apply()
        #expect(try collect(3) { try point(1) } == [7, 7, 1])
        try chaos.revert(times)

        let random = ProfileEntry(point: name, .random)
        try chaos.profile(random).apply()
        let values = try collect(20) { try point(1) }
        #expect(Set(values).count > 5)
        try chaos.revert(random)

        let never = ProfileEntry(point: name, .probability(0, .constant(1)))
        let always = ProfileEntry(point: name, .probability(1, .original))
        try chaos.profile(never).apply()
        #expect(try point(3) == 3)
        try chaos.profile(always).apply()
        #expect(try point(4) == 4)
        chaos.revertAll()
        #expect(try point(8) == 8)
    }

    @Test func describedNilAndDelay() throws {
        let name = uniqueName()
        let point = InjectionPoint<Void, String?, Never>(name) { "here" }
        let chaos = Chaos(seed: 1)
        defer { chaos.revertAll() }
        try chaos.profile(ProfileEntry(point: name, .delayed(.milliseconds(30), .nil))).apply()
        let clock = ContinuousClock()
        var result: String? = "unset"
        let elapsed = clock.measure { result = point() }
        #expect(result == nil)
        #expect(elapsed >= .milliseconds(30))
    }

    @Test func describedConstantForOptionalResult() throws {
        let name = uniqueName()
        let point = InjectionPoint<Void, Int?, Never>(name) { nil }
        let chaos = Chaos(seed: 1)
        defer { chaos.revertAll() }
        // A wrapped value fits an Optional result.
        try chaos.profile(ProfileEntry(point: name, .constant(4))).apply()
        #expect(point() == 4)
    }

    @Test func describedProvidersOnAsyncPoint() async throws {
        let name = uniqueName()
        let point = AsyncInjectionPoint<Void, String, TestFailure>(name) { () async throws(TestFailure) -> String in "real" }
        let chaos = Chaos(seed: 1)
        defer { chaos.revertAll() }
        try chaos.profile(ProfileEntry(point: name, .sequential([.constant("a"), .throwing(TestFailure.offline), .original]))).apply()
        #expect(try await point() == "a")
        await #expect(throws: TestFailure.offline) { try await point() }
        #expect(try await point() == "real")
    }

    @Test func describedEntriesInScope() async throws {
        let name = uniqueName()
        let point = AsyncInjectionPoint<Void, Int, Never>(name) { 0 }
        let result = try await Chaos.with([ProfileEntry(point: name, .constant(3))]) { await point() }
        #expect(result == 3)
        #expect(await point() == 0)
    }

    @Test func summaries() {
        #expect(ProviderDescription.original.summary == "original")
        #expect(ProviderDescription.nil.summary == "nil")
        #expect(ProviderDescription.random.summary == "random")
        #expect(ProviderDescription.constant(3).summary == "constant(3)")
        #expect(ProviderDescription.sequential([.nil, .original]).summary == "sequential[nil, original]")
        #expect(ProviderDescription.times(2, .random).summary == "random 2 times")
        #expect(ProviderDescription.probability(0.5, .nil).summary == "nil with probability 0.5")
        #expect(ProviderDescription.catalogue("offset", ProfileParameters(["days": .number(2), "b": .bool(true)])).summary
            == "offset(b: true, days: 2)")
        #expect(ProviderDescription.catalogue("plain", ProfileParameters()).summary == "plain")
        #expect(ProfileEntry(point: "a.b", .nil).description == "a.b ← nil")
    }

    // MARK: Catalogue items

    @Test func catalogueItemWithParameters() throws {
        let name = uniqueName()
        let point = InjectionPoint<Int, Int, Never>(name) { $0 }
        let received = Recorder<ProfileParameters>()
        point.addCatalogueItem("x") { (params) throws(ChaosError) -> ChaosProvider<Int, Int, Never> in
            received.record(params)
            let k = try params.int("k")
            return .block { env in env.arguments + k }
        }
        point.addCatalogueItem("double") { _ in .block { $0.arguments * 2 } }
        let chaos = Chaos(seed: 1)
        defer { chaos.revertAll() }
        try chaos.profile(ProfileEntry(point: name, .catalogue("x", ProfileParameters(["k": .number(1)])))).apply()
        #expect(point(10) == 11)
        #expect(received.values.first?.values == ["k": .number(1)])
        #expect(received.values.first?.context == "\(name) x", "the context defaults to the point and item names")
        chaos.revertAll()
        try chaos.profile(ProfileEntry(point: name, .times(1, .catalogue("double", ProfileParameters())))).apply()
        #expect(point(10) == 20)
        #expect(point(10) == 10)
        #expect(Chaos.catalogue.contains { $0.point == name && $0.items == ["double", "x"] })
        #expect(point.catalogueItemNames == ["double", "x"])
    }

    @Test func catalogueItemOnAsyncPoint() async throws {
        let name = uniqueName()
        let point = AsyncInjectionPoint<Void, String, TestFailure>(name) { () async throws(TestFailure) -> String in "online" }
        point.addCatalogueItem("offline") { _ in .throwing(.offline) }
        point.addCatalogueItem("status") { (params) throws(ChaosError) in .constant(try params.string("text", default: "fine")) }
        let chaos = Chaos(seed: 1)
        defer { chaos.revertAll() }
        try chaos.profile(ProfileEntry(point: name, .catalogue("offline", ProfileParameters()))).apply()
        await #expect(throws: TestFailure.offline) { try await point() }
        chaos.revertAll()
        try chaos.profile(ProfileEntry(point: name, .catalogue("status", ProfileParameters()))).apply()
        #expect(try await point() == "fine")
    }

    @Test func unknownCatalogueItemListsTheAvailableOnes() {
        let name = uniqueName()
        let point = InjectionPoint<Int, Int, Never>(name) { $0 }
        point.addCatalogueItem("offset") { _ in .original }
        point.addCatalogueItem("double") { _ in .original }
        let error = ValidationTests.expectRejected(
            ProfileEntry(point: name, .catalogue("triple", ProfileParameters())),
            .invalidProvider, mentioning: ["no catalogue item named 'triple'", "choose one of: double, offset"]
        )
        _ = error
        #expect(point(1) == 1)
    }

    @Test func catalogueItemOnPointWithoutCatalogue() {
        let name = uniqueName()
        let point = InjectionPoint<Int, Int, Never>(name) { $0 }
        ValidationTests.expectRejected(
            ProfileEntry(point: name, .catalogue("anything", ProfileParameters())),
            .invalidProvider, mentioning: ["this point has no catalogue items"]
        )
        #expect(point.catalogueItemNames.isEmpty)
    }

    @Test func catalogueItemParameterErrorsReachApply() {
        let name = uniqueName()
        let point = InjectionPoint<Int, Int, Never>(name) { $0 }
        point.addCatalogueItem("x") { (params) throws(ChaosError) -> ChaosProvider<Int, Int, Never> in
            .constant(try params.int("k"))
        }
        ValidationTests.expectRejected(
            ProfileEntry(point: name, .catalogue("x", ProfileParameters(["k": .string("one")]))),
            .invalidProvider, mentioning: ["parameter 'k' must be a number"]
        )
        ValidationTests.expectRejected(
            ProfileEntry(point: name, .catalogue("x", ProfileParameters(["k": .number(1.5)]))),
            .invalidProvider, mentioning: ["parameter 'k' must be a whole number"]
        )
        ValidationTests.expectRejected(
            ProfileEntry(point: name, .catalogue("x", ProfileParameters())),
            .invalidProvider, mentioning: ["parameter 'k'"]
        )
        // A catalogue item's provider is checked like any other.
        point.addCatalogueItem("bad") { _ in ChaosProvider<Int, Int, Never>.constant(1).times(0) }
        ValidationTests.expectRejected(
            ProfileEntry(point: name, .catalogue("bad", ProfileParameters())),
            .invalidProvider, mentioning: ["times(0)"]
        )
    }

    // MARK: ProfileParameters

    @Test func typedAccessorsReadValuesAndDefaults() throws {
        let params = ProfileParameters(
            ["n": .number(2.5), "i": .number(3), "s": .string("text"), "b": .bool(true), "z": .null],
            context: "clock.now offset"
        )
        #expect(try params.double("n") == 2.5)
        #expect(try params.double("i") == 3)
        #expect(try params.int("i") == 3)
        #expect(try params.string("s") == "text")
        #expect(try params.bool("b"))
        #expect(try params.double("missing", default: 1.5) == 1.5)
        #expect(try params.int("missing", default: 7) == 7)
        #expect(try params.string("missing", default: "d") == "d")
        #expect(try params.bool("missing", default: false) == false)
        #expect(try ProfileParameters(["big": .number(-4e15)]).int("big") == -4_000_000_000_000_000)
    }

    @Test func typedAccessorErrorsSayWhatToFix() {
        let params = ProfileParameters(
            ["n": .number(2.5), "s": .string("text"), "b": .bool(true), "z": .null, "huge": .number(1e300)],
            context: "clock.now offset"
        )
        func check(_ expected: String, _ body: () throws -> Void) {
            let error = expectChaosError(.invalidProvider, body)
            #expect(error?.subject == "clock.now offset")
            #expect(error?.message == expected)
        }
        check("parameter 's' must be a number") { _ = try params.double("s") }
        check("parameter 'missing' must be a number") { _ = try params.double("missing") }
        check("parameter 'n' must be a whole number") { _ = try params.int("n") }
        check("parameter 'huge' must be a whole number") { _ = try params.int("huge") }
        check("parameter 'b' must be a string") { _ = try params.string("b") }
        check("parameter 'n' must be true or false") { _ = try params.bool("n") }
        check("parameter 'z' must be true or false") { _ = try params.bool("z", default: true) }
        // A default applies only when the parameter is absent, not when it has the wrong type.
        check("parameter 's' must be a number") { _ = try params.int("s", default: 3) }
    }

    @Test func profileValueDescriptionsAreJSON() {
        #expect(ProfileValue.null.description == "null")
        #expect(ProfileValue.bool(false).description == "false")
        #expect(ProfileValue.number(3).description == "3")
        #expect(ProfileValue.number(2.5).description == "2.5")
        #expect(ProfileValue.string("a").description == "\"a\"")
        #expect(ProfileValue.array([.number(1), .null]).description == "[1,null]")
        #expect(ProfileValue.object(["b": .number(1), "a": .bool(true)]).description == "{\"a\":true,\"b\":1}")
    }
}
