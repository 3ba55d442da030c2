import Foundation
import TestHelpers
import Testing

@testable import ChaosKit

/// Many callers against apply/revert, scopes and counters at once. CI reruns this suite
/// under `--sanitize=thread`; keep it well under 30 s in debug builds.
@Suite struct ConcurrencyStressTests {
    static let callers = 4
    static let callsPerCaller = 100_000
    static let minimumCycles = 10_000

    /// What the callers saw: how often each allowed value, and anything else.
    struct Tally: Sendable {
        var original = 0
        var chaos = 0
        var unexpected = 0

        static func + (a: Tally, b: Tally) -> Tally {
            Tally(original: a.original + b.original, chaos: a.chaos + b.chaos, unexpected: a.unexpected + b.unexpected)
        }
    }

    @Test func syncCallsWhileApplyingAndReverting() async throws {
        let point = InjectionPoint<Int, Int, Never>(uniqueName()) { $0 }
        let chaos = Chaos(seed: 1)
        let entry = ProfileEntry(point, .constant(-1))
        let started = Signal()
        let callersDone = SharedCounter()

        let (tally, cycles) = try await withThrowingTaskGroup(of: (Tally, Int).self) { group in
            group.addTask {
                // Apply and revert at least `minimumCycles` times, and until every caller is
                // done, so that callers really run against a changing point.
                var cycles = 0
                while cycles < Self.minimumCycles || callersDone.current < Self.callers {
                    try chaos.profile(entry).apply()
                    if cycles == 0 { started.fire() }
                    // Now and then let callers run a while in each state, not only in the
                    // instants between apply and revert.
                    if cycles % 100 == 0 { await Task.yield() }
                    try chaos.revert(entry)
                    if cycles % 100 == 50 { await Task.yield() }
                    cycles += 1
                }
                return (Tally(), cycles)
            }
            for _ in 0..<Self.callers {
                group.addTask {
                    await started.wait()
                    var tally = Tally()
                    for i in 0..<Self.callsPerCaller {
                        let argument = i % 1_000 + 1
                        switch point(argument) {
                        case argument: tally.original += 1
                        case -1: tally.chaos += 1
                        default: tally.unexpected += 1
                        }
                        if i % 1_000 == 0 { await Task.yield() }
                    }
                    callersDone.increment()
                    return (tally, 0)
                }
            }
            var total = Tally()
            var cycles = 0
            for try await (tally, applied) in group {
                total = total + tally
                cycles += applied
            }
            return (total, cycles)
        }
        #expect(cycles >= Self.minimumCycles)
        #expect(tally.unexpected == 0)
        #expect(tally.original + tally.chaos == Self.callers * Self.callsPerCaller)
        #expect(tally.original > 0, "the original was never seen")
        #expect(tally.chaos > 0, "the constant was never seen")
        #expect(point(5) == 5)
        #expect(point.core.activity.load(ordering: .relaxed) == 0)
    }

    @Test func asyncCallsWhileApplyingAndReverting() async throws {
        let point = AsyncInjectionPoint<Int, Int, TestFailure>(uniqueName()) {
            (n: Int) async throws(TestFailure) -> Int in n
        }
        let chaos = Chaos(seed: 2)
        let entry = ProfileEntry(point, .throwing(.offline))
        let started = Signal()
        let callersDone = SharedCounter()
        let callsPerCaller = 25_000

        let tally = try await withThrowingTaskGroup(of: Tally.self) { group in
            group.addTask {
                var cycles = 0
                while cycles < 2_000 || callersDone.current < Self.callers {
                    try chaos.profile(entry).apply()
                    if cycles == 0 { started.fire() }
                    await Task.yield()  // callers run a while with the entry applied …
                    try chaos.revert(entry)
                    await Task.yield()  // … and a while without it
                    cycles += 1
                }
                return Tally()
            }
            for _ in 0..<Self.callers {
                group.addTask {
                    await started.wait()
                    var tally = Tally()
                    for i in 0..<callsPerCaller {
                        do throws(TestFailure) {
                            if try await point(i) == i { tally.original += 1 } else { tally.unexpected += 1 }
                        } catch {
                            if error == .offline { tally.chaos += 1 } else { tally.unexpected += 1 }
                        }
                        if i % 500 == 0 { await Task.yield() }
                    }
                    callersDone.increment()
                    return tally
                }
            }
            return try await group.reduce(Tally(), +)
        }
        #expect(tally.unexpected == 0)
        #expect(tally.original + tally.chaos == Self.callers * callsPerCaller)
        #expect(tally.original > 0)
        #expect(tally.chaos > 0)
        #expect(try await point(3) == 3)
    }

    @Test func callIndexIsExactUnderConcurrency() async throws {
        let point = InjectionPoint<Void, Int, Never>(uniqueName()) { -1 }
        let chaos = Chaos(seed: 3)
        defer { chaos.revertAll() }
        try chaos.profile(ProfileEntry(point, .block { $0.callIndex })).apply()
        let perTask = 25_000
        let indices = await withTaskGroup(of: [Int].self) { group in
            for _ in 0..<Self.callers {
                group.addTask {
                    var seen: [Int] = []
                    seen.reserveCapacity(perTask)
                    for i in 0..<perTask {
                        seen.append(point())
                        if i % 1_000 == 0 { await Task.yield() }
                    }
                    return seen
                }
            }
            return await group.reduce(into: [Int]()) { $0.append(contentsOf: $1) }
        }
        #expect(indices.count == Self.callers * perTask)
        #expect(indices.sorted() == Array(0..<(Self.callers * perTask)), "every call index handed out exactly once")
    }

    @Test func timesAndSequentialCountExactlyUnderConcurrency() async throws {
        let timed = InjectionPoint<Void, Int, Never>(uniqueName()) { 0 }
        let stepped = InjectionPoint<Void, Int, Never>(uniqueName()) { 0 }
        let chaos = Chaos(seed: 4)
        defer { chaos.revertAll() }
        try chaos.profile(
            ProfileEntry(timed, .constant(1).times(1_000)),
            ProfileEntry(stepped, .sequential((1...100).map { .constant($0) }))
        ).apply()
        let perTask = 10_000
        let (hits, steps) = await withTaskGroup(of: (Int, [Int]).self) { group in
            for _ in 0..<Self.callers {
                group.addTask {
                    var hits = 0
                    var steps: [Int] = []
                    for i in 0..<perTask {
                        hits += timed()
                        steps.append(stepped())
                        if i % 1_000 == 0 { await Task.yield() }
                    }
                    return (hits, steps)
                }
            }
            return await group.reduce(into: (0, [Int]())) {
                $0.0 += $1.0
                $0.1.append(contentsOf: $1.1)
            }
        }
        #expect(hits == 1_000, "times(1000) answers exactly 1000 calls")
        // Steps 1…99 each answer once; the last repeats for the rest.
        let counts = Dictionary(steps.map { ($0, 1) }, uniquingKeysWith: +)
        #expect((1...99).allSatisfy { counts[$0] == 1 })
        #expect(counts[100] == Self.callers * perTask - 99)
    }

    @Test func scopedAndGlobalChaosStaySeparateUnderConcurrency() async throws {
        let point = InjectionPoint<Void, String, Never>(uniqueName()) { "original" }
        let chaos = Chaos(seed: 5)
        let global = ProfileEntry(point, .constant("global"))
        let started = Signal()
        let workersDone = SharedCounter()
        let workers = 4
        let perWorker = 20_000

        // Per worker: (scoped?, values seen).
        let results = try await withThrowingTaskGroup(of: (Bool, Set<String>).self) { group in
            group.addTask {
                var cycles = 0
                while cycles < 1_000 || workersDone.current < workers {
                    try chaos.profile(global).apply()
                    if cycles == 0 { started.fire() }
                    if cycles % 20 == 0 { await Task.yield() }
                    try chaos.revert(global)
                    if cycles % 20 == 10 { await Task.yield() }
                    cycles += 1
                }
                return (false, [])
            }
            for worker in 0..<workers {
                let scoped = worker.isMultiple(of: 2)
                group.addTask {
                    await started.wait()
                    func run() async -> Set<String> {
                        var seen = Set<String>()
                        for i in 0..<perWorker {
                            seen.insert(point())
                            if i % 1_000 == 0 { await Task.yield() }
                        }
                        return seen
                    }
                    let seen =
                        scoped
                        ? try await Chaos.with([ProfileEntry(point, .constant("scoped \(worker)"))]) { await run() }
                        : await run()
                    workersDone.increment()
                    return (scoped, seen)
                }
            }
            var results: [(Bool, Set<String>)] = []
            for try await result in group where !result.1.isEmpty { results.append(result) }
            return results
        }
        #expect(results.count == workers)
        var outside = Set<String>()
        for (scoped, seen) in results {
            if scoped {
                #expect(
                    seen.count == 1 && seen.first?.hasPrefix("scoped ") == true,
                    "a scope sees only its own chaos: \(seen)")
            } else {
                #expect(seen.isSubset(of: ["original", "global"]), "outside tasks never see a scope's chaos: \(seen)")
                outside.formUnion(seen)
            }
        }
        #expect(outside == ["original", "global"])
        #expect(point() == "original")
    }
}
