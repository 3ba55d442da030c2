import Foundation
import TestHelpers
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

        let sequential = ProfileEntry(
            point: name, .sequential([.constant(5), .original, .throwing(TestFailure.timeout(seconds: 1))]))
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
        let point = AsyncInjectionPoint<Void, String, TestFailure>(name) { () async throws(TestFailure) -> String in
            "real"
        }
        let chaos = Chaos(seed: 1)
        defer { chaos.revertAll() }
        try chaos.profile(
            ProfileEntry(point: name, .sequential([.constant("a"), .throwing(TestFailure.offline), .original]))
        ).apply()
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
        #expect(
            ProviderDescription.catalogue("offset", ProfileParameters(["days": .number(2), "b": .bool(true)])).summary
                == "offset(b: true, days: 2)")
        #expect(ProviderDescription.catalogue("plain", ProfileParameters()).summary == "plain")
        #expect(ProfileEntry(point: "a.b", .nil).description == "a.b ← nil")
    }

    // MARK: Catalogue items

    @Test func catalogueItemWithParameters() throws {
        let name = uniqueName()
        let received = Recorder<ProfileParameters>()
        let point = InjectionPoint<Int, Int, Never>(
            name,
            catalogue: [
                CatalogueItem("x", "adds k", parameters: [.integer("k", "what to add")]) { params in
                    received.record(params)
                    let k = try params.int("k")
                    return .block { env in env.arguments + k }
                },
                CatalogueItem("double", "twice the argument") { _ in .block { $0.arguments * 2 } },
            ]
        ) { $0 }
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
        #expect(Chaos.catalogue.contains { $0.name == name && $0.items.map(\.name) == ["double", "x"] })
        #expect(point.catalogue.items.map(\.name) == ["x", "double"])
        #expect(
            Chaos.catalogue.first { $0.name == name }?.items.first { $0.name == "x" }?.parameters == "k: whole number")
    }

    @Test func catalogueItemOnAsyncPoint() async throws {
        let name = uniqueName()
        let point = AsyncInjectionPoint<Void, String, TestFailure>(
            name,
            catalogue: [
                CatalogueItem("offline") { _ in .throwing(.offline) },
                CatalogueItem("status", parameters: [.string("text", "the status", default: "fine")]) { params in
                    .constant(try params.string("text"))
                },
            ]
        ) { () async throws(TestFailure) -> String in "online" }
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
        let point = InjectionPoint<Int, Int, Never>(
            name,
            catalogue: [
                CatalogueItem("offset") { _ in .original },
                CatalogueItem("double") { _ in .original },
            ]
        ) { $0 }
        ValidationTests.expectRejected(
            ProfileEntry(point: name, .catalogue("triple", ProfileParameters())),
            .invalidProvider, mentioning: ["no catalogue item named 'triple'", "choose one of: double, offset"]
        )
        ValidationTests.expectRejected(
            ProfileEntry(point: name, .catalogue("ofset", ProfileParameters())),
            .invalidProvider, mentioning: ["did you mean 'offset'?"]
        )
        #expect(point(1) == 1)
    }

    @Test func catalogueItemOnPointWithoutCatalogue() {
        let name = uniqueName()
        let point = InjectionPoint<Int, Int, Never>(name) { $0 }
        ValidationTests.expectRejected(
            ProfileEntry(point: name, .catalogue("anything", ProfileParameters())),
            .invalidProvider, mentioning: ["this point has no catalogue items"]
        )
        #expect(point.catalogue.items.isEmpty)
    }

    @Test func catalogueItemParametersAreCheckedAgainstTheirDeclarations() {
        let name = uniqueName()
        let made = SharedCounter()
        let point = InjectionPoint<Int, Int, Never>(
            name,
            catalogue: [
                CatalogueItem(
                    "x",
                    parameters: [
                        .integer("k", "a count", range: 1...10),
                        .choice("mode", "how", ["fast", "slow"], default: "fast"),
                        .duration("wait", "a delay", optional: true),
                    ]
                ) { params in
                    made.increment()
                    return .constant(try params.int("k"))
                },
                CatalogueItem("bad") { _ in ChaosProvider<Int, Int, Never>.constant(1).times(0) },
                CatalogueItem("plain") { _ in .constant(5) },
            ]
        ) { $0 }
        func rejected(_ parameters: [String: ProfileValue], _ fragments: [String], item: String = "x") {
            ValidationTests.expectRejected(
                ProfileEntry(point: name, .catalogue(item, ProfileParameters(parameters))), .invalidProvider,
                mentioning: fragments)
        }
        rejected(["k": .string("one")], ["parameter 'k' must be a whole number", "a string"])
        rejected(["k": .number(1.5)], ["parameter 'k' must be a whole number"])
        rejected(["k": .number(11)], ["parameter 'k' is 11, outside 1…10"])
        rejected([:], ["parameter 'k' is missing", "a count"])
        rejected(
            ["k": .number(2), "kk": .number(1)],
            ["unknown parameter 'kk'", "did you mean 'k'?", "takes: k, mode, wait"])
        rejected(["k": .number(2), "mdoe": .string("fast")], ["unknown parameter 'mdoe'", "did you mean 'mode'?"])
        rejected(["k": .number(2), "mode": .string("fats")], ["parameter 'mode' is 'fats'", "did you mean 'fast'?"])
        rejected(["k": .number(2), "wait": .string("-1s")], ["parameter 'wait'", "negative"])
        rejected(["k": .number(2), "wait": .string("3y")], ["parameter 'wait'", "calendar units"])
        rejected(["port": .number(8080)], ["'plain' takes no parameters"], item: "plain")
        #expect(made.current == 0, "no provider is made from parameters that do not fit")
        // A catalogue item's provider is checked like any other.
        rejected([:], ["times(0)"], item: "bad")
        #expect(point(1) == 1)
    }

    @Test func declaredDefaultsAndUnitsReachTheMaker() throws {
        let name = uniqueName()
        let seen = Recorder<ProfileParameters>()
        let point = InjectionPoint<Int, Int, Never>(
            name,
            catalogue: [
                CatalogueItem(
                    "x",
                    parameters: [
                        .duration("wait", "a delay in seconds", unit: "s"),
                        .integer("n", "a count", default: 3),
                    ]
                ) { params in
                    seen.record(params)
                    return .constant(try params.int("n"))
                }
            ]
        ) { $0 }
        try Chaos.with(ProfileEntry(point: name, .catalogue("x", ProfileParameters(["wait": .number(2)])))) {
            #expect(point(0) == 3)
        }
        let params = try #require(seen.values.first)
        #expect(try params.duration("wait") == .seconds(2), "a bare number counts the declared unit")
        #expect(params.values["n"] == .number(3), "the default is filled in")
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
        func check(_ expected: String, _ body: () throws -> Any) {
            let error = #expect(throws: ChaosError.self, performing: body)
            #expect(error?.kind == .invalidProvider)
            #expect(error?.subject == "clock.now offset")
            #expect(error?.message == expected)
        }
        check("parameter 's' must be a number (found a string: \"text\")") { try params.double("s") }
        check("parameter 'missing' must be a number (it is missing)") { try params.double("missing") }
        check("parameter 'n' must be a whole number (found a number: 2.5)") { try params.int("n") }
        check("parameter 'huge' must be a whole number (found a number: 1e+300)") { try params.int("huge") }
        check("parameter 'b' must be a string (found a boolean: true)") { try params.string("b") }
        check("parameter 'n' must be true or false (found a number: 2.5)") { try params.bool("n") }
        check("parameter 'z' must be true or false (found null: null)") { try params.bool("z", default: true) }
        // A default applies only when the parameter is absent, not when it has the wrong type.
        check("parameter 's' must be a number (found a string: \"text\")") { try params.int("s", default: 3) }
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
