import Foundation
import Synchronization
import TestHelpers
import Testing

@testable import ChaosKit

/// `Chaos.explore`: a baseline that counts each entry's calls, one placement per call, and
/// the failures with their replays.
@Suite struct ExplorationTests {
    enum FetchError: Error, Equatable { case offline }

    /// A fetch point and a sync routine with a bug: it retries the first two fetches, but
    /// not the third.
    final class Scores: Sendable {
        let fetch: AsyncInjectionPoint<Int, Int, FetchError>
        let name = uniqueName()

        init() {
            fetch = AsyncInjectionPoint(name) { (page: Int) async throws(FetchError) -> Int in page * 10 }
        }

        func sync() async throws {
            var total = 0
            for page in 1...2 {
                do { total += try await fetch(page) } catch { total += try await fetch(page) }
            }
            total += try await fetch(3)
            for page in 4...5 { total += (try? await fetch(page)) ?? 0 }
            _ = total
        }
    }

    @Test func theUnhandledCallIsFoundAndReplaysExactly() async throws {
        let scores = Scores()
        let entry = ProfileEntry(scores.fetch, .throwing(.offline))
        let result = try await Chaos.explore(entry, seed: 7) { try await scores.sync() }
        #expect(result.candidates.map(\.calls) == [5])
        #expect(result.placements == 5)
        #expect(result.ranInParallel)
        #expect(result.failures.map(\.call) == [3], "\(result)")
        let failure = try #require(result.failures.first)
        #expect(failure.of == 5 && failure.point == scores.name && !failure.flaky)
        #expect(failure.error as? FetchError == .offline)
        #expect(failure.description.contains("at call 3 of 5"), "\(failure)")
        #expect(failure.replayLine.contains(".chaos(seed: 7, ENTRY.placed(at: 3))"), "\(failure.replayLine)")
        // The replay fails the body the same way, and only its call acts.
        await #expect(throws: FetchError.offline) {
            try await Chaos.with(failure.replay, seed: failure.seed) { try await scores.sync() }
        }
        try await Chaos.with(entry.placed(at: 2), seed: 7) { try await scores.sync() }
    }

    @Test func aConditionCountsOnlyTheCallsItTakes() async throws {
        let point = AsyncInjectionPoint<Int, Int, FetchError>(uniqueName()) {
            (page: Int) async throws(FetchError) -> Int in page
        }
        // Only pages above 2 are the entry's: it targets 3 of the 5 calls.
        let entry = ProfileEntry(point, .composite([.when({ $0 > 2 }, .throwing(.offline))]))
        let result = try await Chaos.explore(entry, seed: 1) {
            for page in 1...5 { _ = try await point(page) }
        }
        #expect(result.candidates.map(\.calls) == [3])
        #expect(result.failures.map(\.call) == [1, 2, 3])
        #expect(result.failures.allSatisfy { $0.of == 3 })
    }

    @Test func aBodyThatFailsWithoutChaosIsRefused() async {
        let point = InjectionPoint<Void, Int, Never>(uniqueName()) { 0 }
        let error = await #expect(throws: ChaosError.self) {
            try await Chaos.explore(ProfileEntry(point, .constant(1))) { () async throws in throw FetchError.offline }
        }
        #expect(error?.kind == .explorationBaselineFailed)
        #expect(error?.message.contains("fails with no fault placed") == true)
    }

    @Test func aBudgetSpreadsThePlacementsOverTheCalls() throws {
        let point = InjectionPoint<Int, Int, FetchError>(uniqueName()) { (page: Int) throws(FetchError) -> Int in page }
        let result = try Chaos.explore(ProfileEntry(point, .throwing(.offline)), budget: 10, seed: 3) {
            for page in 1...100 { _ = try point(page) }
        }
        #expect(result.placements == 10)
        let calls = result.failures.map(\.call)
        #expect(calls.count == 10 && calls.contains(1) && calls.contains(100), "\(calls)")
        #expect(calls != Array(1...10))
        // The same seed spreads them the same way.
        let again = try Chaos.explore(ProfileEntry(point, .throwing(.offline)), budget: 10, seed: 3) {
            for page in 1...100 { _ = try point(page) }
        }
        #expect(again.failures.map(\.call) == calls)
    }

    @Test func aFailureThatPassesWhenRunAgainIsFlakyAndAPlacementNotReachedIsCounted() throws {
        let point = InjectionPoint<Int, Int, FetchError>(uniqueName()) { (page: Int) throws(FetchError) -> Int in page }
        let runs = Atomic<Int>(0)
        // Run 1 is the baseline (3 calls); later runs make 2 calls, so call 3 is never reached.
        // Call 1 fails the body the first time it is placed, and not the second.
        let result = try Chaos.explore(ProfileEntry(point, .throwing(.offline)), seed: 5) {
            let run = runs.wrappingAdd(1, ordering: .relaxed).oldValue
            let calls = run == 0 ? 3 : 2
            for page in 1...calls {
                do { _ = try point(page) } catch  where run > 3 || page == 2 {}
            }
        }
        #expect(result.candidates.map(\.calls) == [3])
        #expect(result.notReached == 1, "\(result)")
        #expect(result.failures.map(\.call) == [1], "\(result)")
        #expect(result.failures.first?.flaky == true, "\(result)")
        #expect(runs.load(ordering: .relaxed) == 5, "the baseline, three placements, and the failure once more")
    }

    @Test func anEntryAlreadyPlacedIsRefused() {
        let point = InjectionPoint<Void, Int, Never>(uniqueName()) { 0 }
        let error = #expect(throws: ChaosError.self) {
            try Chaos.explore(ProfileEntry(point, .constant(1)).placed(at: 2)) {}
        }
        #expect(error?.message.contains("places each entry at each call itself") == true)
    }
}

/// `Chaos.explore(everyPoint:)`: the typical faults of the points the body touches.
@Suite struct EveryPointExplorationTests {
    enum FetchError: Error { case offline }

    @Test func theTypicalFaultsOfTouchedPointsArePlacedAndUntouchedOnesLeftOut() throws {
        let prefix = uniqueName() + "."
        let fetch = InjectionPoint<Int, Int, FetchError>(
            prefix + "fetch",
            catalogue: PointCatalogue(
                [CatalogueItem("offline", "the server is unreachable") { _ in .throwing(.offline) }],
                typicalFaults: ["offline"])
        ) { (page: Int) throws(FetchError) -> Int in page }
        let count = InjectionPoint<Void, Int, Never>(
            prefix + "count",
            catalogue: PointCatalogue(
                [CatalogueItem("zero", "nothing counted") { _ in .constant(0) }], typicalFaults: ["zero"])
        ) { 3 }
        let untouched = InjectionPoint<Void, Int, Never>(
            prefix + "untouched",
            catalogue: PointCatalogue(
                [CatalogueItem("zero", "nothing") { _ in .constant(0) }], typicalFaults: ["zero"])
        ) { 1 }
        _ = untouched
        let body: @Sendable () throws -> Void = {
            // A fetch that fails is not retried; a count of zero divides by zero (caught as an error).
            for page in 1...2 { _ = try fetch(page) }
            guard count() > 0 else { throw FetchError.offline }
        }
        let every = try Chaos.explore(everyPoint: .typical, named: prefix, seed: 4, body)
        #expect(Set(every.candidates.map(\.entry.pointName)) == [prefix + "fetch", prefix + "count"])
        #expect(every.candidates.map(\.calls).sorted() == [1, 2])
        #expect(every.failures.count == 3, "\(every)")
        #expect(
            Set(every.failures.map { "\($0.point) \($0.call)" }) == [
                "\(prefix)fetch 1", "\(prefix)fetch 2", "\(prefix)count 1",
            ])
        let throwing = try Chaos.explore(everyPoint: .throwing, named: prefix, seed: 4, body)
        #expect(throwing.candidates.map(\.entry.pointName) == [prefix + "fetch"])
        #expect(throwing.failures.map(\.call) == [1, 2])
        let error = #expect(throws: ChaosError.self) {
            try Chaos.explore(everyPoint: .typical, named: uniqueName(), body)
        }
        #expect(error?.message.contains("declares typical faults") == true)
    }
}

/// `Chaos.explorations`: what tools (the web console) show of explorations.
@Suite struct ExplorationProgressTests {
    enum FetchError: Error { case offline }

    @Test func aFinishedExplorationIsListedWithItsCountsAndFailures() throws {
        let point = InjectionPoint<Int, Int, FetchError>(uniqueName()) { (page: Int) throws(FetchError) -> Int in page }
        let seed = UInt64.random(in: 1..<(1 << 50))
        let result = try Chaos.explore(ProfileEntry(point, .throwing(.offline)), seed: seed) {
            for page in 1...4 { _ = try point(page) }
        }
        let listed = try #require(Chaos.explorations.last { $0.seed == seed })
        #expect(listed.finished && listed.error == nil)
        #expect(listed.placements == 4 && listed.done == 4)
        #expect(listed.candidates.map(\.calls) == [4])
        #expect(listed.failures.map(\.call) == result.failures.map(\.call))
        let refusedSeed = seed + 1
        _ = try? Chaos.explore(ProfileEntry(point, .throwing(.offline)), seed: refusedSeed) { throw FetchError.offline }
        let refused = try #require(Chaos.explorations.last { $0.seed == refusedSeed })
        #expect(refused.finished && refused.done == 0)
        #expect(refused.error?.contains("fails with no fault placed") == true, "\(String(describing: refused.error))")
        #expect(Chaos.explorations.filter(\.finished).count <= 10, "only the last ten finished ones are kept")
    }
}
