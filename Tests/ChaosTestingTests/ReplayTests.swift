import ChaosKit
import ChaosTesting
import Synchronization
import Testing

/// A failure under chaos names the seed and the entries, so the run can be replayed.
///
/// Swift Testing offers no public runner to run a test inside a test, so these tests call
/// the trait's `provideScope` directly, inside the running test, and look at the issues it
/// records: through `withKnownIssue(matching:)` (the matcher sees an issue as recorded) or
/// through an outer issue-handling scope that sees issues after the trait annotated them,
/// and suppresses them so that the expected failure does not fail this test.
@Suite struct ReplayTests {
    static let point = InjectionPoint<Void, String, Never>("chaostesting.replay.greeting") { "original" }
    static let entry = ProfileEntry(point, .constant("chaos"))

    static func hasReplay(_ issue: Issue, seed: UInt64, entry: ProfileEntry = entry) -> Bool {
        issue.comments.contains { comment in
            comment.rawValue.hasPrefix(ChaosReplay.marker)
                && comment.rawValue.contains("seed \(seed)")
                && comment.rawValue.contains(entry.description)
        }
    }

    /// Runs `body` and returns the issues it recorded, as the trait left them; they are
    /// suppressed so that they do not fail the calling test.
    static func issuesRecorded(
        by body: @escaping @Sendable () async throws -> Void
    ) async throws -> [Issue] {
        let recorded = Recorder<Issue>()
        let observer = IssueHandlingTrait.compactMapIssues { issue in
            recorded.record(issue)
            return nil
        }
        let test = try #require(Test.current)
        try await observer.provideScope(for: test, testCase: Test.Case.current, performing: body)
        return recorded.values
    }

    // MARK: The message

    @Test func replayNamesSeedsEntriesAndHowToReplay() {
        let replay = ChaosReplay(layers: [
            .init(seed: 7, entries: [Self.entry], isProcessWide: true),
            .init(seed: 42, entries: [Self.entry], isProcessWide: false),
        ])
        let text = replay.description
        #expect(text.hasPrefix("ChaosKit replay: "))
        #expect(text.contains("process-wide chaos seed 7, entries: [chaostesting.replay.greeting ← constant(chaos)]"))
        #expect(text.contains("task-scoped chaos seed 42, entries: [chaostesting.replay.greeting ← constant(chaos)]"))
        #expect(text.contains(".chaos(global: …, seed: 7)"))
        #expect(text.contains(".chaos(seed: 42, …)"))
        #expect(replay.comment.rawValue == text)
    }

    @Test func thereIsNoReplayOutsideChaos() {
        #expect(ChaosReplay.current == nil)
    }

    @Test(.chaos(seed: 42, entry))
    func theTraitsScopeIsTheCurrentReplay() {
        #expect(
            ChaosReplay.current == ChaosReplay(layers: [.init(seed: 42, entries: [Self.entry], isProcessWide: false)]))
    }

    @Test func annotatingTwiceKeepsTheFirstReplay() throws {
        let first = ChaosReplay(layers: [.init(seed: 1, entries: [], isProcessWide: false)])
        let second = ChaosReplay(layers: [.init(seed: 2, entries: [], isProcessWide: false)])
        withKnownIssue {
            Issue.record("probe")
        } matching: { issue in
            let annotated = second.annotating(first.annotating(issue))
            return annotated.comments.filter { $0.rawValue.hasPrefix(ChaosReplay.marker) } == [first.comment]
        }
    }

    // MARK: Errors thrown out of the test

    @Test func aThrownErrorIsRecordedWithTheSeed() async throws {
        let trait: ChaosTrait = .chaos(seed: 42, Self.entry)
        let test = try #require(Test.current)
        let testCase = Test.Case.current
        try await withKnownIssue {
            try await trait.provideScope(for: test, testCase: testCase) {
                #expect(Self.point() == "chaos")
                throw Boom()
            }
        } matching: { issue in
            issue.error is Boom && Self.hasReplay(issue, seed: 42)
        }
    }

    @Test func aThrownErrorIsRecordedOnceAndNotRethrown() async throws {
        let trait: ChaosTrait = .chaos(seed: 42, Self.entry)
        let test = try #require(Test.current)
        let issues = try await Self.issuesRecorded {
            try await trait.provideScope(for: test, testCase: nil) { throw Boom() }
        }
        try #require(issues.count == 1)
        #expect(issues[0].error is Boom)
        #expect(Self.hasReplay(issues[0], seed: 42))
    }

    // MARK: Failed expectations

    @Test func aFailedExpectationCarriesTheSeed() async throws {
        let trait: ChaosTrait = .chaos(seed: 42, Self.entry)
        let test = try #require(Test.current)
        let issues = try await Self.issuesRecorded {
            try await trait.provideScope(for: test, testCase: nil) {
                #expect(Self.point() == "original")
            }
        }
        try #require(issues.count == 1)
        #expect(Self.hasReplay(issues[0], seed: 42))
        if case .expectationFailed = issues[0].kind {
        } else {
            Issue.record("expected an expectation failure, got \(issues[0].kind)")
        }
    }

    @Test func aFailedRequireIsRecordedOnceWithTheSeed() async throws {
        let trait: ChaosTrait = .chaos(seed: 42, Self.entry)
        let test = try #require(Test.current)
        let letThrough = Atomic<Bool>(false)
        let issues = try await Self.issuesRecorded {
            do {
                try await trait.provideScope(for: test, testCase: nil) {
                    try #require(Self.point() == "original")
                }
            } catch is ExpectationFailedError {
                // `#require` recorded its issue already; the trait must not record another.
                letThrough.store(true, ordering: .relaxed)
            }
        }
        let wasLetThrough = letThrough.load(ordering: .relaxed)
        #expect(wasLetThrough)
        try #require(issues.count == 1)
        #expect(Self.hasReplay(issues[0], seed: 42))
    }

    @Test func anIssueInsideABodyScopeReportsThatScope() async throws {
        let trait: ChaosTrait = .chaos(seed: 42, Self.entry)
        let other = InjectionPoint<Void, Int, Never>(uniqueName()) { 0 }
        let otherEntry = ProfileEntry(other, .constant(1))
        let test = try #require(Test.current)
        let issues = try await Self.issuesRecorded {
            try await trait.provideScope(for: test, testCase: nil) {
                try Chaos.with(otherEntry, seed: 7) {
                    _ = Issue.record("inside the body's own scope")
                }
                Issue.record("back in the trait's scope")
            }
        }
        try #require(issues.count == 2)
        #expect(Self.hasReplay(issues[0], seed: 7, entry: otherEntry))
        #expect(Self.hasReplay(issues[0], seed: 7, entry: Self.entry), "the scope includes the trait's entries")
        #expect(Self.hasReplay(issues[1], seed: 42))
        #expect(!Self.hasReplay(issues[1], seed: 42, entry: otherEntry))
    }

    @Test func aPassingTestRecordsNothing() async throws {
        let trait: ChaosTrait = .chaos(seed: 42, Self.entry)
        let test = try #require(Test.current)
        let issues = try await Self.issuesRecorded {
            try await trait.provideScope(for: test, testCase: nil) {
                #expect(Self.point() == "chaos")
            }
        }
        #expect(issues.isEmpty)
    }

    @Test func cancellationPassesThrough() async throws {
        let trait: ChaosTrait = .chaos(seed: 42, Self.entry)
        let test = try #require(Test.current)
        let letThrough = Atomic<Bool>(false)
        let issues = try await Self.issuesRecorded {
            do {
                try await trait.provideScope(for: test, testCase: nil) { throw CancellationError() }
            } catch is CancellationError {
                letThrough.store(true, ordering: .relaxed)
            }
        }
        let wasLetThrough = letThrough.load(ordering: .relaxed)
        #expect(wasLetThrough)
        #expect(issues.isEmpty)
    }
}

/// `requireFired: true` (or `.failingIfNeverFired()`): chaos that never acted fails the test,
/// naming the entry, with the report.
@Suite struct NeverFiredTests {
    static let point = InjectionPoint<Int, Int, Never>("chaostesting.never-fired") { $0 }
    static let other = InjectionPoint<Int, Int, Never>("chaostesting.never-fired.other") { $0 }

    /// The text of the issues `body` records (recorded, not reported as failures).
    static func messages(_ body: @escaping @Sendable () async throws -> Void) async throws -> [String] {
        try await ReplayTests.issuesRecorded(by: body).map { $0.comments.map(\.rawValue).joined(separator: "\n") }
    }

    @Test func anEntryThatNeverActsFailsTheTestNamingItWithTheReport() async throws {
        let active = Self.other.entry(.constant(0))
        let idle = Self.point.entry(ChaosProvider.constant(0).probability(0))
        let trait = ChaosTrait.chaos(seed: 1, active, idle, requireFired: true)
        let test = try #require(Test.current)
        let messages = try await Self.messages {
            try await trait.provideScope(for: test, testCase: nil) {
                #expect(Self.other(1) == 0)
                _ = Self.point(1)  // reached, never acted
            }
        }
        try #require(messages.count == 1, "one issue names every entry that never acted: \(messages)")
        let lines = messages[0].split(separator: "\n").map(String.init)
        #expect(lines.first == "armed but never fired: entry \(idle.id) \(idle) (1 call reached it)")
        #expect(lines.dropFirst().first == "ChaosKit report: seed 1, 2 entries, 1 never acted:")
        #expect(lines.contains("  \(active.id) \(active): seen 1, acted 1"), "\(lines)")
        #expect(lines.contains("  \(idle.id) \(idle): seen 1, acted 0  <- NEVER ACTED"), "\(lines)")
    }

    @Test func everyEntryThatNeverActedIsNamed() async throws {
        let idle = Self.point.entry(ChaosProvider.constant(0).probability(0))
        let unreached = Self.other.entry(.constant(0))
        let trait = ChaosTrait.chaos(seed: 3, requireFired: true, entries: { [idle, unreached] })
        let test = try #require(Test.current)
        let messages = try await Self.messages {
            try await trait.provideScope(for: test, testCase: nil) {
                _ = Self.point(1)
                _ = Self.point(2)
            }
        }
        try #require(messages.count == 1)
        #expect(
            messages[0].hasPrefix(
                "armed but never fired: entry \(idle.id) \(idle) (2 calls reached it); "
                    + "entry \(unreached.id) \(unreached) (no call reached it)\n"), "\(messages[0])")
    }

    @Test func theOldSpellingStillFailsTheTest() async throws {
        let idle = Self.point.entry(ChaosProvider.constant(0).probability(0))
        let trait = ChaosTrait.chaos(seed: 1, idle).failingIfNeverFired()
        let test = try #require(Test.current)
        try await withKnownIssue {
            try await trait.provideScope(for: test, testCase: nil) {
                _ = Self.point(1)  // reached, never acted
            }
        } matching: { issue in
            "\(issue)".contains("armed but never fired: entry \(idle.id)") && "\(issue)".contains("1 call reached it")
        }
    }

    @Test func entriesThatAllActedPass() async throws {
        let active = Self.point.entry(.constant(0))
        let alsoActive = Self.other.entry(ChaosProvider.constant(0).times(1))
        let trait = ChaosTrait.chaos(seed: 1, active, alsoActive, requireFired: true)
        let test = try #require(Test.current)
        let messages = try await Self.messages {
            try await trait.provideScope(for: test, testCase: nil) {
                #expect(Self.point(1) == 0)
                #expect(Self.other(1) == 0)
                #expect(Self.other(2) == 2)
            }
        }
        #expect(messages.isEmpty)
    }

    @Test func withoutRequireFiredAnIdleEntryPasses() async throws {
        let idle = Self.point.entry(ChaosProvider.constant(0).probability(0))
        let test = try #require(Test.current)
        let messages = try await Self.messages {
            try await ChaosTrait.chaos(seed: 1, idle).provideScope(for: test, testCase: nil) {
                _ = Self.point(1)
            }
        }
        #expect(messages.isEmpty)
    }

    @Test func processWideEntriesAreCheckedToo() async throws {
        let idle = Self.point.entry(ChaosProvider.constant(0).times(1).probability(0))
        let trait = ChaosTrait.chaos(global: idle, seed: 2, requireFired: true)
        let test = try #require(Test.current)
        try await withKnownIssue {
            try await trait.provideScope(for: test, testCase: nil) {}
        } matching: { issue in
            "\(issue)".contains("armed but never fired: entry \(idle.id)")
                && "\(issue)".contains("ChaosKit report: seed 2, 1 entry, 1 never acted:")
        }
    }
}
