import Foundation
import TestHelpers
import Testing

@testable import ChaosKit

/// The `at` modifier and the `pass` provider: a fault placed at the K-th call the entry
/// targets, with every other call handed to the point's next entry.
@Suite struct PlacementTests {
    @Test func atActsOnlyAtTheListedCallsAndCountsEveryCall() throws {
        let point = InjectionPoint<Void, Int, TestFailure>(uniqueName()) { () throws(TestFailure) -> Int in 0 }
        let chaos = Chaos(seed: 1)
        defer { chaos.revertAll() }
        try chaos.profile(ProfileEntry(point, .throwing(.offline).at(calls: [2, 5]))).apply()
        let outcomes = collect(6) { () -> String in (try? point()).map { "\($0)" } ?? "x" }
        #expect(outcomes == ["0", "x", "0", "0", "x", "0"])
        let counters = try #require(chaos.counters.first)
        #expect(counters.seen == 6)
        #expect(counters.acted == 2)
        #expect(counters.lastAct?.callIndex == 4)
    }

    @Test func aCallNotPlacedGoesToTheOlderEntryNotToTheOriginal() throws {
        let point = InjectionPoint<Void, Int, Never>(uniqueName()) { 0 }
        let chaos = Chaos(seed: 1)
        defer { chaos.revertAll() }
        try chaos.profile(ProfileEntry(point, .constant(1))).apply()
        try chaos.profile(ProfileEntry(point, .constant(2).at(call: 2))).apply()
        #expect(collect(4) { point() } == [1, 2, 1, 1])
        // `times` keeps its meaning: once used up, the original answers.
        let times = Chaos(seed: 1)
        defer { times.revertAll() }
        try times.profile(ProfileEntry(point, .constant(3).times(1))).apply()
        #expect(collect(3) { point() } == [3, 0, 0])
    }

    @Test func passHandsEveryCallOnThroughScopesThenGlobalEntries() async throws {
        let point = AsyncInjectionPoint<Void, Int, Never>(uniqueName()) { 0 }
        let chaos = Chaos(seed: 1)
        defer { chaos.revertAll() }
        try chaos.profile(ProfileEntry(point, .constant(1))).apply()
        let results = try await Chaos.with(ProfileEntry(point, .constant(7).at(call: 2))) {
            try await Chaos.with(ProfileEntry(point, .constant(9).at(call: 3))) {
                var results: [Int] = []
                for _ in 0..<4 { results.append(await point()) }
                return results
            }
        }
        // Call 1: inner passes, outer passes (its call 1), global answers. Call 2: the outer
        // entry's second call. Call 3: the inner entry's third.
        #expect(results == [1, 7, 9, 1])
        let alone = try await Chaos.with(ProfileEntry(point, .pass)) { await point() }
        #expect(alone == 1)
        chaos.revertAll()
        #expect(try Chaos.with(ProfileEntry(point, .pass)) { 0 } == 0)
    }

    @Test func aSyncPassWithNothingBelowCallsTheOriginalAndActsOnNothing() throws {
        let point = InjectionPoint<Void, Int, Never>(uniqueName()) { 42 }
        let chaos = Chaos(seed: 1)
        defer { chaos.revertAll() }
        try chaos.profile(ProfileEntry(point, .pass)).apply()
        #expect(collect(3) { point() } == [42, 42, 42])
        #expect(chaos.counters.first?.acted == 0)
        #expect(chaos.counters.first?.seen == 3)
    }

    @Test func profilesAndTheGrammarSpellAtAndPass() throws {
        let name = uniqueName()
        let point = InjectionPoint<Void, Int, Never>(name) { 0 }
        let profile = try ChaosProfile.decode(
            json: #"{"entries": [{"point": "\#(name)", "provider": {"constant": 5, "at": [3, 1]}}]}"#)
        let chaos = try profile.apply(seed: 1)
        defer { chaos.revertAll() }
        #expect(collect(4) { point() } == [5, 0, 5, 0])
        // Written back, it reads the same.
        let text = try profile.jsonText()
        #expect(text.contains(#""at":[3,1]"#) || text.contains(#""at": [3, 1]"#), "\(text)")
        let line = try ChaosGrammar.parse("\(name)=constant(5)#2,4;\(name)=pass")
        #expect(line.count == 2)
        #expect(line[0].provider.summary == "constant(5) at calls 2, 4")
        #expect(line[1].provider.summary == "pass")
    }

    @Test(arguments: [
        (#"0"#, "counted from 1"), (#"[]"#, "never act"), (#"[2, 2]"#, "twice"), (#"1.5"#, "call number"),
        (#""3""#, "call number"),
    ])
    func badPlacementsAreRefusedWithTheirPath(value: String, says: String) throws {
        let name = uniqueName()
        _ = InjectionPoint<Void, Int, Never>(name) { 0 }
        let error = #expect(throws: ChaosError.self) {
            try ChaosProfile.decode(
                json: #"{"entries": [{"point": "\#(name)", "provider": {"constant": 5, "at": \#(value)}}]}"#)
        }
        #expect(error?.message.contains(says) == true, "\(String(describing: error?.message))")
        #expect(error?.description.contains("entries[0].provider.at") == true, "\(String(describing: error))")
    }

    @Test func grammarRefusesABadCallList() {
        for (text, says) in [
            ("p=fail#0", "counted from 1"), ("p=fail#a", "not a list of calls"), ("p=fail#2#3", "twice"),
        ] {
            let error = #expect(throws: ChaosError.self) { try ChaosGrammar.parse(text) }
            #expect(error?.message.contains(says) == true, "\(text): \(String(describing: error?.message))")
        }
    }
}
