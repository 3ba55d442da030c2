import ChaosKit
import Synchronization
import Testing

@testable import ChaosTesting

// MARK: - Serialization of process-wide chaos

/// The point every serialization test applies global chaos to, each with its own value.
let sharedGlobalPoint = InjectionPoint<Void, Int, Never>("chaostesting.global.shared") { 0 }
let processWideInFlight = Atomic<Int>(0)
let processWideMaxInFlight = Atomic<Int>(0)

/// What every serialization test does while it holds the process-wide lock: count itself
/// in, check that it is alone and that its global value holds while it yields, count out.
func exerciseProcessWideChaos(expecting value: Int) async {
    let inFlight = processWideInFlight.wrappingAdd(1, ordering: .sequentiallyConsistent).newValue
    processWideMaxInFlight.max(inFlight, ordering: .sequentiallyConsistent)
    #expect(inFlight == 1, "another test using process-wide chaos overlapped this one")
    for _ in 0..<50 {
        #expect(sharedGlobalPoint() == value)
        await Task.yield()
    }
    #expect(processWideMaxInFlight.load(ordering: .sequentiallyConsistent) == 1)
    processWideInFlight.wrappingSubtract(1, ordering: .sequentiallyConsistent)
}

func sharedEntry(_ value: Int) -> ProfileEntry {
    ProfileEntry(sharedGlobalPoint, .constant(value))
}

/// Not `.serialized`: Swift Testing runs these in parallel; only the trait serializes them.
@Suite struct ProcessWideSerializationTests {
    @Test(.chaos(global: sharedEntry(1))) func first() async { await exerciseProcessWideChaos(expecting: 1) }
    @Test(.chaos(global: sharedEntry(2))) func second() async { await exerciseProcessWideChaos(expecting: 2) }
    @Test(.chaos(global: sharedEntry(3))) func third() async { await exerciseProcessWideChaos(expecting: 3) }
    @Test(.chaos(global: sharedEntry(4), seed: 4)) func fourth() async { await exerciseProcessWideChaos(expecting: 4) }
    @Test(.chaos(global: sharedEntry(5), seed: 5)) func fifth() async { await exerciseProcessWideChaos(expecting: 5) }
    @Test(.chaos(seed: 6, global: { [sharedEntry(6)] })) func sixth() async {
        await exerciseProcessWideChaos(expecting: 6)
    }

    /// Each case of a parameterized test holds the lock on its own.
    @Test(.chaos(global: sharedEntry(7)), arguments: 0..<10)
    func parameterized(_ index: Int) async {
        await exerciseProcessWideChaos(expecting: 7)
    }

    /// A test that applies global chaos itself, serialized by `.processWideChaos`.
    @Test(.processWideChaos) func appliesItsOwn() async throws {
        let chaos = Chaos(seed: 8)
        try chaos.profile(sharedEntry(8)).apply()
        defer { chaos.revertAll() }
        await exerciseProcessWideChaos(expecting: 8)
    }
}

// MARK: - Nesting

let nestedGlobalPoint = InjectionPoint<Void, String, Never>("chaostesting.global.nested") { "original" }
let nestedSuiteEntry = ProfileEntry(nestedGlobalPoint, .constant("suite"))

/// A suite-level process-wide trait composes with test-level ones: the lock is re-entrant
/// within the test's task tree, so this suite finishing at all shows there is no deadlock.
@Suite(.chaos(global: nestedSuiteEntry, seed: 11))
struct NestedProcessWideTests {
    @Test func suiteChaosIsAppliedGlobally() async {
        #expect(nestedGlobalPoint() == "suite")
        // Seen outside the task tree too: from a detached task.
        #expect(await Task.detached { nestedGlobalPoint() }.value == "suite")
        #expect(ChaosReplay.current?.layers == [.init(seed: 11, entries: [nestedSuiteEntry], isProcessWide: true)])
    }

    @Test(.chaos(global: ProfileEntry(nestedGlobalPoint, .constant("test")), seed: 12))
    func testChaosStacksOnTopOfTheSuites() {
        #expect(nestedGlobalPoint() == "test")
        #expect(ChaosReplay.current?.layers.map(\.seed) == [11, 12])
    }

    @Test(.processWideChaos) func theLockAloneNestsToo() {
        #expect(nestedGlobalPoint() == "suite")
    }

    @Test(.chaos(ProfileEntry(nestedGlobalPoint, .constant("scoped"))))
    func aTaskScopeWinsOverProcessWideChaos() async {
        #expect(nestedGlobalPoint() == "scoped")
        #expect(await Task.detached { nestedGlobalPoint() }.value == "suite")
        #expect(ChaosReplay.current?.layers.map(\.isProcessWide) == [true, false])
    }
}

// MARK: - Revert

@Suite struct ProcessWideRevertTests {
    @Test func chaosIsRevertedAfterTheTestThrowsAndTheIssueCarriesTheSeed() async throws {
        let point = InjectionPoint<Void, String, Never>(uniqueName()) { "original" }
        let entry = ProfileEntry(point, .constant("chaos"))
        let trait: ChaosTrait = .chaos(global: entry, seed: 7)
        let test = try #require(Test.current)
        let testCase = Test.Case.current
        let seenInside = Recorder<String>()
        try await withKnownIssue {
            try await trait.provideScope(for: test, testCase: testCase) {
                seenInside.record(point())
                throw Boom()
            }
        } matching: { issue in
            issue.error is Boom
                && issue.comments.contains {
                    $0.rawValue.contains("process-wide chaos seed 7") && $0.rawValue.contains(entry.description)
                }
        }
        #expect(seenInside.values == ["chaos"])
        #expect(point() == "original")
    }

    @Test func chaosIsRevertedAfterAFailedExpectation() async throws {
        let point = InjectionPoint<Void, String, Never>(uniqueName()) { "original" }
        let trait: ChaosTrait = .chaos(global: ProfileEntry(point, .constant("chaos")), seed: 7)
        let test = try #require(Test.current)
        let testCase = Test.Case.current
        await withKnownIssue {
            try await trait.provideScope(for: test, testCase: testCase) {
                #expect(point() == "original")
            }
        }
        #expect(point() == "original")
    }

    @Test func anInvalidEntryAppliesNothingAndReleasesTheLock() async throws {
        let point = InjectionPoint<Void, String, Never>(uniqueName()) { "original" }
        let trait: ChaosTrait = .chaos(
            global: ProfileEntry(point, .constant("chaos")),
            ProfileEntry(point: "chaostesting.no-such-point", .original)
        )
        let test = try #require(Test.current)
        await #expect(throws: ChaosError.self) {
            try await trait.provideScope(for: test, testCase: nil) {}
        }
        #expect(point() == "original")
        // The lock was released: taking it again finishes.
        try await ProcessWideChaos.withExclusiveAccess {}
    }
}

// MARK: - The lock

@Suite struct FIFOAsyncLockTests {
    /// Waits (without a time limit) until `count` tasks are queued on `lock`.
    func waitUntil(_ lock: FIFOAsyncLock, hasWaiters count: Int) async {
        while await lock.waiterCount < count {
            await Task.yield()
        }
    }

    @Test func waitersAreServedInArrivalOrder() async throws {
        let lock = FIFOAsyncLock()
        try await lock.lock()
        let order = Recorder<Int>()
        var waiters: [Task<Void, any Error>] = []
        for n in 0..<8 {
            waiters.append(
                Task {
                    try await lock.lock()
                    order.record(n)
                    await lock.unlock()
                })
            await waitUntil(lock, hasWaiters: n + 1)
        }
        await lock.unlock()
        for waiter in waiters { try await waiter.value }
        #expect(order.values == Array(0..<8))
        #expect(await !lock.locked)
    }

    @Test func aCancelledWaiterStopsWaitingWithoutTheLock() async throws {
        let lock = FIFOAsyncLock()
        try await lock.lock()
        let waiter = Task { try await lock.lock() }
        await waitUntil(lock, hasWaiters: 1)
        waiter.cancel()
        await #expect(throws: CancellationError.self) { try await waiter.value }
        #expect(await lock.waiterCount == 0)
        #expect(await lock.locked, "the lock stays with its holder")
        await lock.unlock()
        #expect(await !lock.locked)
    }

    @Test func anAlreadyCancelledTaskDoesNotQueue() async throws {
        let lock = FIFOAsyncLock()
        try await lock.lock()
        let waiter = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await lock.lock()
        }
        await #expect(throws: CancellationError.self) { try await waiter.value }
        #expect(await lock.waiterCount == 0)
        await lock.unlock()
    }

    @Test func exclusiveAccessIsReentrantWithinATaskTree() async throws {
        let depth = try await ProcessWideChaos.withExclusiveAccess {
            try await ProcessWideChaos.withExclusiveAccess {
                try await withThrowingTaskGroup(of: Int.self) { group in
                    group.addTask { try await ProcessWideChaos.withExclusiveAccess { 3 } }
                    return try await group.next() ?? 0
                }
            }
        }
        #expect(depth == 3)
    }
}
