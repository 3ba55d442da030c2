#if canImport(XCTest)
import ChaosKit
import ChaosTesting
import Foundation
import Testing
import XCTest

/// The XCTest helpers used the usual way, from XCTest tests.
final class ChaosXCTestHelperTests: XCTestCase {
    static let point = InjectionPoint<Void, String, Never>("chaostesting.xctest.greeting") { "original" }

    func testApplyChaosLastsUntilTeardownAndIsRevertedThen() throws {
        // Teardown blocks run last-in-first-out: this one runs after applyChaos's revert.
        addTeardownBlock {
            XCTAssertEqual(Self.point(), "original", "applyChaos was not reverted in teardown")
        }
        let chaos = try applyChaos(ProfileEntry(Self.point, .constant("chaos")), seed: 42)
        XCTAssertEqual(chaos.seed, 42)
        XCTAssertEqual(Self.point(), "chaos")
    }

    func testApplyChaosWithAnInvalidEntryAppliesNothing() {
        XCTAssertThrowsError(
            try applyChaos(
                ProfileEntry(Self.point, .constant("chaos")),
                ProfileEntry(point: "chaostesting.no-such-point", .original)
            )
        ) { error in
            XCTAssertEqual((error as? ChaosError)?.kind, .unknownPoint)
        }
        XCTAssertEqual(Self.point(), "original")
    }

    func testWithChaosScopesToTheBlock() throws {
        let inside = try withChaos(ProfileEntry(Self.point, .constant("scoped")), seed: 3) { () -> String in
            XCTAssertEqual(Chaos.currentScope?.seed, 3)
            return Self.point()
        }
        XCTAssertEqual(inside, "scoped")
        XCTAssertEqual(Self.point(), "original")
    }

    func testAsyncWithChaosScopesToTheBlock() async throws {
        let inside = try await withChaos(ProfileEntry(Self.point, .constant("scoped"))) { () async -> String in
            await Task.yield()
            return Self.point()
        }
        XCTAssertEqual(inside, "scoped")
        XCTAssertEqual(Self.point(), "original")
    }
}

// MARK: - XCTest cases run programmatically

/// An XCTest case that keeps the failure messages it records.
final class RecordingTestCase: XCTestCase, @unchecked Sendable {
    private let recorded = Locked<[String]>([])

    var failureMessages: [String] { recorded.withLock { $0 } }

    override func recordFailure(
        withDescription description: String, inFile filePath: String, atLine lineNumber: Int, expected: Bool
    ) {
        recorded.withLock { $0.append(description) }
        super.recordFailure(withDescription: description, inFile: filePath, atLine: lineNumber, expected: expected)
    }
}

/// Runs an XCTest case (set-up, body, teardown blocks, tear-down) on a thread of its own,
/// so that XCTest's blocking waits never hold a thread of the cooperative pool.
func runOnItsOwnThread(_ testCase: RecordingTestCase) async {
    await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
        let thread = Thread {
            testCase.run()
            done.resume()
        }
        thread.start()
    }
}

/// Runs XCTest cases inside Swift Testing tests: Swift Testing runs without XCTest's
/// console observer, so the failures these cases are meant to have stay out of the log.
/// Serialized: XCTest sends `XCTAssert` failures to one process-wide "current test case".
@Suite(.serialized) struct XCTestCaseRunTests {
    @Test func applyChaosIsRevertedAfterTheTestThrowsAndTheFailureNamesTheSeed() async {
        let point = InjectionPoint<Void, String, Never>(uniqueName()) { "original" }
        let entry = ProfileEntry(point, .constant("chaos"))
        let seenInside = Recorder<String>()
        let testCase = RecordingTestCase(name: "throwsAfterApplyingChaos") { testCase in
            try testCase.applyChaos(entry, seed: 42)
            seenInside.record(point())
            throw Boom()
        }
        await runOnItsOwnThread(testCase)

        #expect(seenInside.values == ["chaos"])
        #expect(point() == "original")
        #expect(testCase.testRun?.hasSucceeded == false)
        let messages = testCase.failureMessages
        #expect(messages.contains { $0.contains("boom") })
        #expect(messages.contains { $0.contains("process-wide chaos seed 42") && $0.contains(entry.description) })
    }

    @Test func applyChaosIsRevertedAfterAFailedAssertion() async {
        let point = InjectionPoint<Void, String, Never>(uniqueName()) { "original" }
        let testCase = RecordingTestCase(name: "failsAfterApplyingChaos") { testCase in
            try testCase.applyChaos(ProfileEntry(point, .constant("chaos")), seed: 5)
            XCTAssertEqual(point(), "original")
        }
        await runOnItsOwnThread(testCase)

        #expect(point() == "original")
        #expect(testCase.testRun?.hasSucceeded == false)
        #expect(testCase.failureMessages.contains { $0.contains("seed 5") })
    }

    @Test func aPassingTestGetsNoReplayFailure() async {
        let point = InjectionPoint<Void, String, Never>(uniqueName()) { "original" }
        let testCase = RecordingTestCase(name: "passesUnderChaos") { testCase in
            try testCase.applyChaos(ProfileEntry(point, .constant("chaos")), seed: 5)
            XCTAssertEqual(point(), "chaos")
        }
        await runOnItsOwnThread(testCase)

        #expect(point() == "original")
        #expect(testCase.testRun?.hasSucceeded == true)
        #expect(testCase.failureMessages.isEmpty)
    }

    @Test func withChaosNamesTheSeedWhenTheBlockFailsOrThrows() async {
        let point = InjectionPoint<Void, String, Never>(uniqueName()) { "original" }
        let entry = ProfileEntry(point, .constant("scoped"))
        let failing = RecordingTestCase(name: "failsInsideWithChaos") { testCase in
            try testCase.withChaos(entry, seed: 9) {
                XCTAssertEqual(point(), "original")
            }
        }
        let throwing = RecordingTestCase(name: "throwsInsideWithChaos") { testCase in
            try testCase.withChaos(entry, seed: 10) {
                throw Boom()
            }
        }
        await runOnItsOwnThread(failing)
        await runOnItsOwnThread(throwing)

        #expect(
            failing.failureMessages.contains {
                $0.contains("task-scoped chaos seed 9") && $0.contains(entry.description)
            }, "\(failing.failureMessages)")
        #expect(throwing.failureMessages.contains { $0.contains("task-scoped chaos seed 10") })
        #expect(throwing.failureMessages.contains { $0.contains("boom") })
        #expect(point() == "original")
    }
}
#endif
