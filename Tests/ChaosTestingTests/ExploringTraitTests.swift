import ChaosKit
import ChaosTesting
import Foundation
import Synchronization
import TestHelpers
import Testing

/// `.exploringChaos(…)`: the test runs once with no fault acting, then once per placement;
/// what a placement's run records becomes one issue per failing placement.
@Suite struct ExploringTraitTests {
    enum FetchError: Error { case offline }

    static let fetch = AsyncInjectionPoint<Int, Int, FetchError>("chaostesting.explore.fetch") {
        (page: Int) async throws(FetchError) -> Int in page
    }

    /// Fetches five pages; retries the first two, not the third; the last two may fail.
    static func sync() async throws -> Int {
        var total = 0
        for page in 1...2 {
            do { total += try await fetch(page) } catch { total += try await fetch(page) }
        }
        total += try await fetch(3)
        for page in 4...5 { total += (try? await fetch(page)) ?? 0 }
        return total
    }

    static func issues(
        of trait: ExploringChaosTrait, _ body: @escaping @Sendable () async throws -> Void
    ) async throws -> [Issue] {
        let test = try #require(Test.current)
        return try await ReplayTests.issuesRecorded {
            try await trait.provideScope(for: test, testCase: nil, performing: body)
        }
    }

    @Test func eachFailingPlacementIsOneIssueWithItsCallAndAReplay() async throws {
        let trait: ExploringChaosTrait = .exploringChaos(
            ProfileEntry(Self.fetch, .throwing(.offline)), seed: 9)
        let issues = try await Self.issues(of: trait) {
            let total = try await Self.sync()
            #expect(total == 15, "every page counted")
        }
        let texts = issues.map { "\($0)" }
        // Five calls without faults (no retry). Calls 1 and 2 are retried; call 3 throws out of
        // the body; calls 4 and 5 (pages 4 and 5) make the total short.
        #expect(issues.count == 3, "\(texts)")
        #expect(texts.contains { $0.contains("at call 3 of 5: threw offline") }, "\(texts)")
        #expect(texts.contains { $0.contains("at call 4 of 5") && $0.contains("every page counted") }, "\(texts)")
        #expect(texts.contains { $0.contains("at call 5 of 5") && $0.contains("every page counted") }, "\(texts)")
        #expect(texts.allSatisfy { $0.contains(".chaos(seed: 9, ENTRY.placed(at: ") }, "\(texts)")
    }

    @Test func aTestThatFailsWithoutChaosKeepsItsOwnIssueAndExploresNothing() async throws {
        let trait: ExploringChaosTrait = .exploringChaos(ProfileEntry(Self.fetch, .throwing(.offline)))
        let runs = Atomic<Int>(0)
        let issues = try await Self.issues(of: trait) {
            runs.wrappingAdd(1, ordering: .relaxed)
            #expect(Bool(false), "broken without chaos")
        }
        let texts = issues.map { "\($0)" }
        #expect(runs.load(ordering: .relaxed) == 1)
        #expect(texts.contains { $0.contains("broken without chaos") }, "\(texts)")
        #expect(texts.contains { $0.contains("no placement was tried") }, "\(texts)")
    }

    @Test func aBodyThatHandlesEveryFaultRecordsNothing() async throws {
        let trait: ExploringChaosTrait = .exploringChaos(ProfileEntry(Self.fetch, .throwing(.offline)))
        let issues = try await Self.issues(of: trait) {
            for page in 1...4 { _ = try? await Self.fetch(page) }
        }
        #expect(issues.isEmpty, "\(issues)")
    }

    @Test(.exploringChaos(ProfileEntry(ExploringTraitTests.fetch, .throwing(.offline))))
    func theTraitOnATestThatHandlesItsFaults() async {
        var total = 0
        for page in 1...3 { total += (try? await Self.fetch(page)) ?? 0 }
        #expect(total <= 6)
    }
}
