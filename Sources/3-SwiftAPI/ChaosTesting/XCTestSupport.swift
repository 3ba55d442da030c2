#if canImport(XCTest)
public import ChaosKit
public import XCTest

extension XCTestCase {
    /// Applies `entries` process-wide for the rest of this test, all or nothing, and
    /// registers a teardown block that reverts them — teardown blocks run also when the
    /// test fails or throws. When the test has failed by then, the teardown first records
    /// one more failure that carries the seed and the entries, so the run can be replayed.
    ///
    /// ```swift
    /// func testExpiredBanner() throws {
    ///     try applyChaos(ProfileEntry(Points.now, .constant(.distantPast)), seed: 42)
    ///     XCTAssertTrue(screen.showsExpiredBanner)
    /// }
    /// ```
    /// XCTest runs the tests of a process one after another, so this does not take the
    /// Swift Testing process-wide lock (it cannot wait for it without blocking). Where
    /// XCTest and Swift Testing tests share a process (Xcode on Apple platforms), tests in
    /// the two libraries that use process-wide chaos on the same points can overlap.
    ///
    /// - Returns: the `Chaos` that applied the entries (its `seed` is the one to replay with).
    @discardableResult
    public func applyChaos(
        _ entries: ProfileEntry..., seed: UInt64? = nil,
        file: StaticString = #filePath, line: UInt = #line
    ) throws(ChaosError) -> Chaos {
        let chaos = Chaos(seed: seed)
        try chaos.profile(entries).apply()
        let replay = ChaosReplay(layers: [ChaosReplay.Layer(seed: chaos.seed, entries: entries, isProcessWide: true)])
        addTeardownBlock { [weak self] in
            // `hasSucceeded` is false until the run stops, so count the failures instead.
            if let self, let run = self.testRun, run.totalFailureCount > 0 {
                self.recordChaosReplay(replay, file: file, line: line)
            }
            chaos.revertAll()
        }
        return chaos
    }

    /// Runs `body` with `entries` applied for the current task tree only (`Chaos.with`).
    /// When `body` throws or records failures, a failure carrying the seed and the entries
    /// is recorded as well.
    public func withChaos<T>(
        _ entries: ProfileEntry..., seed: UInt64? = nil,
        file: StaticString = #filePath, line: UInt = #line,
        _ body: () throws -> T
    ) throws -> T {
        let failuresBefore = testRun?.totalFailureCount ?? 0
        return try Chaos.with(entries, seed: seed) {
            let replay = ChaosReplay.current
            do {
                let result = try body()
                if let replay, (testRun?.totalFailureCount ?? 0) > failuresBefore {
                    recordChaosReplay(replay, file: file, line: line)
                }
                return result
            } catch {
                if let replay { recordChaosReplay(replay, file: file, line: line) }
                throw error
            }
        }
    }

    /// The async form of ``withChaos(_:seed:file:line:_:)``.
    public func withChaos<T>(
        _ entries: ProfileEntry..., seed: UInt64? = nil,
        file: StaticString = #filePath, line: UInt = #line,
        isolation: isolated (any Actor)? = #isolation,
        _ body: () async throws -> T
    ) async throws -> T {
        let failuresBefore = testRun?.totalFailureCount ?? 0
        return try await Chaos.with(entries, seed: seed) {
            let replay = ChaosReplay.current
            do {
                let result = try await body()
                if let replay, (testRun?.totalFailureCount ?? 0) > failuresBefore {
                    recordChaosReplay(replay, file: file, line: line)
                }
                return result
            } catch {
                if let replay { recordChaosReplay(replay, file: file, line: line) }
                throw error
            }
        }
    }

    private func recordChaosReplay(_ replay: ChaosReplay, file: StaticString, line: UInt) {
        recordFailure(
            withDescription: "this test failed under chaos — \(replay)",
            inFile: "\(file)", atLine: Int(line), expected: true
        )
    }
}
#endif
