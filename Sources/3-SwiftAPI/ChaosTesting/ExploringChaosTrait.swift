public import ChaosKit
public import Testing

/// A Swift Testing trait that explores where faults break a test: the test runs once with
/// no fault acting, to count the calls each entry targets, then once per placement of each
/// entry at each of those calls (see `Chaos.explore`).
///
/// ```swift
/// @Test(.exploringChaos(ProfileEntry(Points.fetch, .throwing(.offline))))
/// func syncKeepsEveryScore() async throws {
///     try await syncScores()
///     #expect(store.scores.count == 5)
/// }
/// ```
///
/// What a placement's run records (failed `#expect`s and `#require`s, `Issue.record`, a
/// thrown error) is attributed to that placement: the test gets one issue per failing
/// placement, naming the point, `call K of N`, the first thing that went wrong, and a
/// replay line for `.chaos(seed:…)`. Issues of the run with no fault acting are the
/// test's own and are recorded as they are; then nothing is explored.
///
/// Placements run in parallel task scopes when every entry is task-scoped, else one at a
/// time (entries on system points, C hooks, or virtual time are process-wide). The test
/// body then runs concurrently with itself: keep its state local. A failing placement is
/// run once more; if it passes then, its issue says it is flaky.
public struct ExploringChaosTrait: TestTrait, SuiteTrait, TestScoping {
    let entries: @Sendable () throws -> [ProfileEntry]
    let budget: Int?
    let seed: UInt64?

    /// Recursive: on a suite, every test case inside is explored.
    public var isRecursive: Bool { true }

    public func provideScope(
        for test: Test, testCase: Test.Case?,
        performing function: @Sendable () async throws -> Void
    ) async throws {
        let explorer = try Explorer(try entries(), budget: budget, seed: seed)
        guard let baseline = try await Self.baseline(explorer, test: test, testCase: testCase, function) else { return }
        let result = await withoutActuallyEscaping(function) { escaping in
            await Self.placements(explorer, counts: baseline, test: test, testCase: testCase, escaping)
        }
        for failure in result.failures {
            Issue.record(
                "ChaosKit exploration: \(failure.point) ← \(failure.provider) at call \(failure.call) of \(failure.of)\(failure.flaky ? " (flaky: passed when run again)" : ""): \(failure.error)\nreplay: \(failure.replayLine)",
                sourceLocation: test.sourceLocation)
        }
    }

    /// The calls each entry targets when none acts, or nil (with an issue) when the test
    /// fails without chaos: its own issues are recorded as they are.
    private static func baseline(
        _ explorer: Explorer, test: Test, testCase: Test.Case?, _ function: @Sendable () async throws -> Void
    ) async throws -> [Int]? {
        let counted: Result<[Int], ChaosError> = await withoutActuallyEscaping(function) { escaping in
            do throws(ChaosError) {
                return .success(
                    try await explorer.baseline { entries, seed in
                        try await Chaos.with(entries, seed: seed) {
                            let recorded = try await observingIssues(for: test, testCase: testCase, dropping: false) {
                                try await escaping()
                            }
                            if let first = recorded.first { throw first }
                            return Explorer.placementCalls()
                        }
                    })
            } catch {
                return .failure(error)
            }
        }
        switch counted {
        case .success(let counts):
            return counts
        case .failure(let error) where error.kind == .explorationBaselineFailed:
            Issue.record(
                "ChaosKit exploration: \(error.message); no placement was tried", sourceLocation: test.sourceLocation)
            return nil
        case .failure(let error):
            throw error
        }
    }

    /// Every placement, its issues kept from the test and attributed to it.
    private static func placements(
        _ explorer: Explorer, counts: [Int], test: Test, testCase: Test.Case?,
        _ function: @escaping @Sendable () async throws -> Void
    ) async -> ChaosExploration {
        await explorer.explore(counts: counts) { entry, seed in
            do {
                return try await Chaos.with(entry, seed: seed) { () async throws -> (any Error)? in
                    let recorded = try await observingIssues(for: test, testCase: testCase, dropping: true) {
                        try await function()
                    }
                    return recorded.first ?? Explorer.neverActed()
                }
            } catch {
                return error
            }
        }
    }

    /// Runs `body`, noting every issue it records (and an error it throws) as a
    /// ``RecordedIssue``; `dropping` keeps them from the test (a placement's), else they
    /// are recorded as usual.
    static func observingIssues(
        for test: Test, testCase: Test.Case?, dropping: Bool, _ body: @Sendable () async throws -> Void
    ) async throws -> [RecordedIssue] {
        let recorded = IssueBox()
        let handler = IssueHandlingTrait.compactMapIssues { issue in
            recorded.append(RecordedIssue(description: "\(issue)"))
            return dropping ? nil : issue
        }
        try await handler.provideScope(for: test, testCase: testCase) {
            do {
                try await body()
            } catch {
                guard ChaosTrait.shouldRecord(error) else { return }
                if !dropping { throw error }
                recorded.append(RecordedIssue(description: "threw \(error)"))
            }
        }
        return recorded.all
    }
}

/// What a placement's run recorded, as the error of an exploration's failure.
public struct RecordedIssue: Error, CustomStringConvertible {
    /// The issue, as Swift Testing describes it.
    public let description: String
}

/// Issues noted while a run's body records them (from any of its tasks).
private final class IssueBox: Sendable {
    // Locked, not Mutex: ThreadSanitizer cannot see Mutex's futex on Linux.
    private let issues = Locked<[RecordedIssue]>([])

    func append(_ issue: RecordedIssue) { issues.withLock { $0.append(issue) } }
    var all: [RecordedIssue] { issues.withLock { $0 } }
}

extension Trait where Self == ExploringChaosTrait {
    /// Explores the test: once with `entries` never acting, then once per placement of each
    /// entry at each call it targeted, at most `budget` placements (spread over the calls),
    /// every run seeded by `seed` (drawn when nil, and given in each issue's replay line).
    public static func exploringChaos(
        _ entries: ProfileEntry..., budget: Int? = nil, seed: UInt64? = nil
    ) -> Self {
        ExploringChaosTrait(entries: { entries }, budget: budget, seed: seed)
    }
}
