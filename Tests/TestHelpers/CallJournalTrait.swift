public import Testing

/// Serializes the suites that switch the process's call journal (`CallJournal.shared`),
/// across test targets: its selection is process-wide, and suites of different targets run
/// in the same test process and in parallel.
public struct ProcessWideCallJournal: SuiteTrait, TestTrait, TestScoping {
    public var isRecursive: Bool { false }

    public func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        await Self.turn.acquire()
        defer { Self.turn.release() }
        try await function()
    }

    private static let turn = AsyncTurn()
}

extension Trait where Self == ProcessWideCallJournal {
    /// Runs the suite while no other suite marked this way runs: it switches the call
    /// journal, which is process-wide.
    public static var processWideCallJournal: Self { Self() }
}
