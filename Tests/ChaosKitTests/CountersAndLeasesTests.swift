import Foundation
import TestHelpers
import Testing

@testable import ChaosKit

/// Every applied entry counts what it did (the proof that chaos took effect), and an entry
/// with a lease reverts itself.
@Suite struct CountersTests {
    @Test func countsAreExactUnderConcurrency() async throws {
        let constant = InjectionPoint<Int, Int, Never>(uniqueName("constant")) { $0 }
        let coin = InjectionPoint<Int, Int, Never>(uniqueName("coin")) { $0 }
        let chaos = Chaos(seed: 9)
        let always = constant.entry(.constant(-1))
        let half = coin.entry(ChaosProvider.constant(-1).probability(0.5))
        try chaos.profile(always, half).apply()
        defer { chaos.revertAll() }
        let tasks = 8
        let calls = 5_000
        let coinActs = SharedCounter()
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<tasks {
                group.addTask {
                    for index in 0..<calls {
                        _ = constant(index)
                        if coin(index) == -1 { coinActs.increment() }
                    }
                }
            }
        }
        let counters = chaos.counters
        #expect(counters.map(\.entry) == [always.id, half.id])
        #expect(counters[0].seen == tasks * calls && counters[0].acted == tasks * calls && counters[0].passed == 0)
        #expect(counters[1].seen == tasks * calls)
        #expect(counters[1].acted == coinActs.current, "acted counts exactly the calls that got the constant")
        #expect(counters[1].acted + counters[1].passed == tasks * calls)
        #expect(counters[1].acted > tasks * calls / 3 && counters[1].acted < tasks * calls * 2 / 3)
    }

    @Test func countersReadDuringCallsAddUp() throws {
        let point = InjectionPoint<Int, Int, Never>(uniqueName()) { $0 }
        let chaos = Chaos(seed: 4)
        // Acts on every call, counted apart from the calls (`times` keeps `acted` of its own).
        try chaos.profile(point.entry(ChaosProvider.constant(-1).times(Int.max))).apply()
        defer { chaos.revertAll() }
        let stop = SharedCounter()
        let finished = SharedCounter()
        let callers = 2
        for _ in 0..<callers {
            Thread {
                var index = 0
                while stop.current == 0 {
                    _ = point(index)
                    index &+= 1
                }
                finished.increment()
            }.start()
        }
        var wrong: [EntryCounters] = []
        for _ in 0..<200_000 {
            let counters = chaos.counters[0]
            if counters.passed < 0 || counters.seen != counters.acted + counters.passed { wrong.append(counters) }
        }
        stop.increment()
        while finished.current < callers { usleep(1000) }
        #expect(wrong.isEmpty, "\(wrong.count) reads showed more acts than calls, e.g. \(wrong.prefix(3))")
        #expect(chaos.counters[0].seen > 0 && chaos.counters[0].passed == 0)
    }

    @Test func theLastActNamesTheCallAndSeedThatReplayIt() throws {
        let point = InjectionPoint<Int, Int, Never>(uniqueName()) { $0 }
        func run(seed: UInt64) throws -> (acts: [Int], last: EntryCounters.LastAct?) {
            let chaos = Chaos(seed: seed)
            let entry = point.entry(ChaosProvider.constant(-1).probability(0.3))
            try chaos.profile(entry).apply()
            defer { chaos.revertAll() }
            let acts = (0..<40).filter { point($0) == -1 }
            return (acts, chaos.counters[0].lastAct)
        }
        let first = try run(seed: 77)
        let last = try #require(first.last)
        #expect(last.callIndex == first.acts.last, "the index of the last call that acted")
        #expect(last.chaosSeed == 77)
        #expect(try run(seed: 77).acts == first.acts, "the seed replays the same acts")
        let never = InjectionPoint<Int, Int, Never>(uniqueName("never")) { $0 }
        let chaos = Chaos(seed: 1)
        try chaos.profile(never.entry(ChaosProvider.constant(0).times(1).probability(0))).apply()
        defer { chaos.revertAll() }
        _ = never(1)
        #expect(chaos.counters[0].lastAct == nil && !chaos.counters[0].hasFired && chaos.counters[0].seen == 1)
    }

    @Test func scopedEntriesCountToo() throws {
        let point = InjectionPoint<Int, Int, Never>(uniqueName()) { $0 }
        let entry = point.entry(.sequential([.original, .constant(0)]))
        try Chaos.with(entry, seed: 3) {
            _ = point(5)
            _ = point(5)
            _ = point(5)
            let counters = try #require(Chaos.currentScope?.counters.first)
            #expect(counters.entry == entry.id && counters.seen == 3 && counters.acted == 2 && counters.passed == 1)
        }
    }

    @Test func observedActsHaveTheirTimeAndReachTheEventStream() async throws {
        let point = InjectionPoint<Int, Int, Never>(uniqueName()) { $0 }
        // Every act of every test reaches every subscriber: a buffer that keeps only the
        // newest 1,024 lost this test's event under load, while tests alongside acted.
        let events = Chaos.events(bufferingNewest: 50_000_000)
        let chaos = Chaos(seed: 5)
        let entry = point.entry(.constant(-1))
        try chaos.profile(entry).apply()
        defer { chaos.revertAll() }
        let before = Date()
        _ = point(1)
        // Bounded: an act that never reaches the stream fails the test instead of hanging it.
        let seen = await withTaskGroup(of: ChaosEvent?.self) { group in
            group.addTask {
                for await event in events where event.entry == entry.id { return event }
                return nil
            }
            group.addTask {
                try? await Task.sleep(for: .seconds(30))
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        let event = try #require(seen, "the act reached the event stream")
        #expect(event.pointName == point.name && event.callIndex == 0)
        let date = try #require(chaos.counters[0].lastAct?.date)
        #expect(abs(date.timeIntervalSince(before)) < 5)
        #expect(abs(event.date.timeIntervalSince(before)) < 5)
    }
}

@Suite struct LeaseTests {
    @Test func aGlobalEntryRevertsItselfWhenItsLeaseEnds() async throws {
        let point = InjectionPoint<Int, Int, Never>(uniqueName()) { $0 }
        let chaos = Chaos(seed: 1)
        let entry = point.entry(ChaosProvider.constant(-1).lease(.milliseconds(80)))
        try chaos.profile(entry).apply()
        #expect(point(1) == -1)
        #expect(chaos.counters.first?.leaseEnds != nil)
        let started = ContinuousClock.now
        while point(1) == -1, ContinuousClock.now - started < .seconds(10) {
            try await Task.sleep(for: .milliseconds(10))
        }
        let took = ContinuousClock.now - started
        #expect(point(1) == 1, "the lease reverted the entry")
        #expect(took >= .milliseconds(60), "not before the lease ended: \(took)")
        #expect(chaos.appliedEntries.isEmpty)
        #expect(throws: ChaosError.self) { try chaos.revert(entry) }
    }

    @Test func aScopedEntryStopsActingWhenItsLeaseEnds() throws {
        let point = InjectionPoint<Int, Int, Never>(uniqueName()) { $0 }
        try Chaos.with(point.entry(ChaosProvider.block { _ in -1 }.lease(.milliseconds(50)))) {
            #expect(point(1) == -1)
            Thread.sleep(forTimeInterval: 0.08)
            #expect(point(1) == 1)
        }
    }

    @Test func leasesFromProfilesAndTheGrammar() throws {
        let point = InjectionPoint<Int, Int, Never>(uniqueName()) { $0 }
        let profile = try ChaosProfile.decode(
            json: """
                {"entries": [{"point": "\(point.name)", "provider": {"constant": 7, "probability": 1, "lease": "30s"}}]}
                """)
        #expect(profile.entries[0].provider.summary == "constant(7) with probability 1.0 for 30s")
        let grammar = try ChaosGrammar.parse("\(point.name)=constant(7)~250ms")
        #expect(grammar[0].provider.modifiers == [.lease(.milliseconds(250))])
        let chaos = try profile.apply()
        defer { chaos.revertAll() }
        let ends = try #require(chaos.counters.first?.leaseEnds)
        #expect(ends.timeIntervalSinceNow > 25 && ends.timeIntervalSinceNow <= 30)
        #expect(
            try ChaosProfile.decode(json: try profile.jsonText()).entries[0].provider.modifiers.contains(
                .lease(.seconds(30))))
    }

    @Test func aLeaseMustBePositiveAndOutermost() {
        let point = InjectionPoint<Int, Int, Never>(uniqueName()) { $0 }
        ValidationTests.expectRejected(
            point.entry(ChaosProvider.constant(1).lease(.zero)), .invalidProvider, mentioning: ["ends before it starts"]
        )
        ValidationTests.expectRejected(
            point.entry(ChaosProvider.constant(1).lease(.seconds(1)).probability(0.5)), .invalidProvider,
            mentioning: ["put it outermost"]
        )
        let bad = try? ChaosProfile.decode(
            json: #"{"entries": [{"point": "x", "provider": {"constant": 1, "lease": 30}}]}"#)
        #expect(bad == nil, "a lease is a duration text such as \"30s\"")
    }
}

/// Applied entries can be switched off and on, and found process-wide by id.
@Suite struct LiveEntryTests {
    @Test func aDisabledEntryStaysAppliedAndKeepsItsCounters() throws {
        let point = InjectionPoint<Int, Int, Never>(uniqueName()) { $0 }
        let chaos = Chaos(seed: 1)
        let entry = point.entry(.constant(-1))
        try chaos.profile(entry).apply()
        defer { chaos.revertAll() }
        #expect(point(1) == -1)
        try chaos.setEnabled(false, entry)
        #expect(point(1) == 1)
        #expect(chaos.appliedEntries == [entry] && chaos.enabledEntries.isEmpty)
        #expect(chaos.counters.first?.acted == 1)
        try chaos.setEnabled(true, entry)
        #expect(point(1) == -1)
        #expect(chaos.counters.first?.acted == 2, "the same installation, counters kept")
        try chaos.setEnabled(false, entry)
        try chaos.revert(entry)
        #expect(point(1) == 1)
        #expect(throws: ChaosError.self) { try chaos.setEnabled(true, entry) }
    }

    @Test func liveEntriesAreFoundByIdWhoeverAppliedThem() throws {
        let point = InjectionPoint<Int, Int, Never>(uniqueName()) { $0 }
        let chaos = Chaos(seed: 2)
        let entry = point.entry(.constant(7))
        try chaos.profile(entry).apply()
        defer { chaos.revertAll() }
        _ = point(0)
        let live = try #require(Chaos.liveEntries.first { $0.entry.id == entry.id })
        #expect(live.isEnabled && live.counters.acted == 1 && live.chaosSeed == 2)
        try Chaos.setEnabled(false, entryID: ProfileEntry.ID(number: entry.id.number))
        #expect(point(0) == 0)
        try Chaos.revert(entryID: entry.id)
        #expect(!Chaos.liveEntries.contains { $0.entry.id == entry.id })
        let missing = #expect(throws: ChaosError.self) { try Chaos.revert(entryID: entry.id) }
        #expect(missing?.kind == .notApplied)
    }
}
