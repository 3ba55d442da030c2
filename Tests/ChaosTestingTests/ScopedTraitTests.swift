import ChaosKit
import ChaosTesting
import Foundation
import Synchronization
import Testing

/// The clock the parallel tests lie to; nothing applies global chaos to it.
let testClock = InjectionPoint<Void, Date, Never>("chaostesting.clock.now") { Date() }

/// Deals out one clock entry per test case of `eachCaseSeesOnlyItsOwnClock`, each with a
/// day of its own, and remembers which entry got which day.
final class ClockDealer: Sendable {
    private let next = Atomic<Int>(1)
    private let dealt = Locked<[ProfileEntry.ID: Date]>([:])

    func deal() -> [ProfileEntry] {
        let date = day(next.wrappingAdd(1, ordering: .relaxed).oldValue)
        let entry = ProfileEntry(testClock, .constant(date))
        dealt.withLock { $0[entry.id] = date }
        return [entry]
    }

    func date(dealtTo entry: ProfileEntry) -> Date? {
        dealt.withLock { $0[entry.id] }
    }
}

let clockDealer = ClockDealer()
let datesSeenByCases = Locked<Set<Date>>([])

@Suite struct ParallelScopeTests {
    /// 50 cases run in parallel; the trait gives each its own scope with its own clock.
    @Test(.chaos(entries: { clockDealer.deal() }), arguments: 0..<50)
    func eachCaseSeesOnlyItsOwnClock(_ index: Int) async throws {
        let scope = try #require(Chaos.currentScope)
        try #require(scope.entries.count == 1)
        let mine = try #require(clockDealer.date(dealtTo: scope.entries[0]))
        for _ in 0..<20 {
            #expect(testClock() == mine)
            await Task.yield()
        }
        // Child tasks inherit the case's scope.
        let fromChild = await Task { testClock() }.value
        #expect(fromChild == mine)

        // Chaos that depends on the argument: a scope in the body, inside the trait's.
        try await Chaos.with(ProfileEntry(testClock, .constant(day(1_000 + index)))) {
            await Task.yield()
            #expect(testClock() == day(1_000 + index))
        }
        #expect(testClock() == mine)

        let firstToSeeIt = datesSeenByCases.withLock { $0.insert(mine).inserted }
        #expect(firstToSeeIt, "another case saw day \(mine) too")
    }

    /// 50 concurrent tasks, each in its own scope, each see only their own clock.
    @Test func fiftyConcurrentTasksSeeOnlyTheirOwnScope() async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for n in 0..<50 {
                group.addTask {
                    try await Chaos.with(ProfileEntry(testClock, .constant(day(n))), seed: UInt64(n)) {
                        for _ in 0..<20 {
                            #expect(testClock() == day(n))
                            #expect(Chaos.currentScope?.seed == UInt64(n))
                            await Task.yield()
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(testClock() > realClockThreshold)
    }

    @Test func outsideAnyScopeTheClockIsReal() {
        #expect(Chaos.currentScope == nil)
        #expect(testClock() > realClockThreshold)
    }
}

// MARK: - Suite and test traits together

let suiteGreeting = InjectionPoint<Void, String, Never>("chaostesting.suite.greeting") { "original" }
let suiteFarewell = InjectionPoint<Void, String, Never>("chaostesting.suite.farewell") { "original" }
let suiteTicket = InjectionPoint<Void, String, Never>("chaostesting.suite.ticket") { "original" }
let suiteGreetingEntry = ProfileEntry(suiteGreeting, .constant("from suite"))
/// Call 0 of each installation says "first": a case that sees "first" has a scope of its own.
let suiteTicketEntry = ProfileEntry(suiteTicket, .sequential([.constant("first"), .constant("later")]))

@Suite(.chaos(seed: 5, suiteGreetingEntry, suiteTicketEntry))
struct SuiteTraitTests {
    @Test func suiteTraitScopesTheTestOnce() {
        #expect(suiteGreeting() == "from suite")
        #expect(Chaos.currentScope?.seed == 5)
        // Applied once, not once for the suite and again for the test.
        #expect(Chaos.currentScope?.entries == [suiteGreetingEntry, suiteTicketEntry])
    }

    @Test(arguments: 0..<10)
    func everyCaseGetsAScopeOfItsOwn(_ index: Int) async {
        #expect(suiteTicket() == "first", "case \(index) shares its scope")
        await Task.yield()
        #expect(suiteTicket() == "later")
    }

    @Test(.chaos(ProfileEntry(suiteFarewell, .constant("from test"))))
    func testTraitNestsInsideTheSuiteTrait() {
        #expect(suiteGreeting() == "from suite")
        #expect(suiteFarewell() == "from test")
        #expect(Chaos.currentScope?.seed == 5, "a trait without a seed inherits the suite's")
        #expect(Chaos.currentScope?.entries.count == 3)
    }

    @Test(.chaos(seed: 9, ProfileEntry(suiteGreeting, .constant("from test"))))
    func innermostTraitWins() {
        #expect(suiteGreeting() == "from test")
        #expect(Chaos.currentScope?.seed == 9)
    }

    @Suite struct Nested {
        @Test func nestedSuitesInheritTheTraitOnce() {
            #expect(suiteGreeting() == "from suite")
            #expect(Chaos.currentScope?.entries == [suiteGreetingEntry, suiteTicketEntry])
        }
    }
}

@Suite struct TraitEdgeTests {
    @Test func testsOutsideTheSuiteDoNotSeeItsChaos() {
        // Other tests scope the suite points; this one runs outside their traits.
        #expect(suiteGreeting() == "original")
        #expect(Chaos.currentScope == nil)
    }

    @Test func anInvalidEntryFailsBeforeTheBodyRuns() async throws {
        let trait: ChaosTrait = .chaos(ProfileEntry(point: "chaostesting.no-such-point", .original))
        let test = try #require(Test.current)
        let ran = Atomic<Bool>(false)
        let error = await #expect(throws: ChaosError.self) {
            try await trait.provideScope(for: test, testCase: Test.Case.current) {
                ran.store(true, ordering: .relaxed)
            }
        }
        #expect(error?.kind == .unknownPoint)
        let bodyRan = ran.load(ordering: .relaxed)
        #expect(!bodyRan)
    }

    @Test(.chaos(seed: 77))
    func aTraitWithoutEntriesLendsItsSeedToScopesInTheBody() throws {
        let point = InjectionPoint<Void, String, Never>(uniqueName()) { "original" }
        try Chaos.with(ProfileEntry(point, .constant("x"))) {
            #expect(Chaos.currentScope?.seed == 77)
        }
    }
}
