public import ChaosKit

/// Serializes the users of process-wide chaos.
///
/// Chaos applied with `Chaos().apply()` — and, later, hooks that rebind C symbols — is seen
/// by every task and thread of the process, so two tests that apply it at the same time see
/// each other's chaos. ``withExclusiveAccess(isolation:_:)`` runs its body while holding one
/// process-wide, first-come-first-served async lock; the `.chaos(global:)` and
/// `.processWideChaos` traits hold it for a whole test case. Waiting suspends the task and
/// never blocks a thread of the cooperative pool.
///
/// The lock only orders code that asks for it: a test that calls the same points without
/// one of these traits (and without a task scope of its own, which wins over global chaos)
/// can still see the chaos. Give such tests `.processWideChaos`, or their own points.
///
/// The lock is re-entrant within a task tree: a body that holds it (and its child tasks)
/// may ask again and runs at once, so a suite-level `.chaos(global:)` composes with a
/// test-level one. The holder status is a task-local value; an unstructured `Task {}`
/// started inside inherits it, so do not let such a task outlive the body.
public enum ProcessWideChaos {
    @TaskLocal static var holdsLock = false
    @TaskLocal static var activeLayers: [ChaosReplay.Layer] = []

    static let lock = FIFOAsyncLock()

    /// Runs `body` while no other `withExclusiveAccess` (in this process) runs.
    ///
    /// Callers are served in the order they asked. A task cancelled while it waits stops
    /// waiting and gets a `CancellationError`; once `body` runs it finishes normally.
    public static func withExclusiveAccess<T>(
        isolation: isolated (any Actor)? = #isolation,
        _ body: () async throws -> T
    ) async throws -> T {
        if holdsLock {
            return try await body()
        }
        try await lock.lock()
        do {
            let result = try await $holdsLock.withValue(true, operation: body)
            await lock.unlock()
            return result
        } catch {
            await lock.unlock()
            throw error
        }
    }

    /// The `Chaos` that ``with(_:seed:isolation:_:)`` applied for the current task, if any.
    @TaskLocal static var applied: Chaos?

    /// Applies `entries` globally (all or nothing) while holding the process-wide lock,
    /// runs `body`, and reverts them afterwards — also when `body` throws.
    ///
    /// Without a seed one is drawn; ``ChaosReplay/current`` reports it inside `body`.
    public static func with<T>(
        _ entries: [ProfileEntry], seed: UInt64? = nil,
        isolation: isolated (any Actor)? = #isolation,
        _ body: () async throws -> T
    ) async throws -> T {
        try await withExclusiveAccess {
            let chaos = Chaos(seed: seed)
            try chaos.profile(entries).apply()
            defer { chaos.revertAll() }
            let layer = ChaosReplay.Layer(seed: chaos.seed, entries: entries, isProcessWide: true)
            return try await $applied.withValue(chaos) {
                try await $activeLayers.withValue(activeLayers + [layer], operation: body)
            }
        }
    }
}

/// A first-in-first-out async mutex: `lock()` suspends (never blocks a thread) until the
/// lock is handed over, and `unlock()` hands it to the longest waiter.
actor FIFOAsyncLock {
    private var isLocked = false
    private var waiters: [(id: UInt64, continuation: CheckedContinuation<Void, any Error>)] = []
    private var nextWaiterID: UInt64 = 0

    /// The number of tasks waiting (for tests).
    var waiterCount: Int { waiters.count }

    /// Whether some task holds the lock (for tests).
    var locked: Bool { isLocked }

    /// Takes the lock, waiting behind earlier callers. Throws `CancellationError` when the
    /// task is cancelled while it waits (it then does not hold the lock).
    func lock() async throws {
        if !isLocked {
            isLocked = true
            return
        }
        let id = nextWaiterID
        nextWaiterID += 1
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                if Task.isCancelled {
                    continuation.resume(throwing: CancellationError())
                } else {
                    waiters.append((id, continuation))
                }
            }
        } onCancel: {
            Task { await self.cancelWaiter(id) }
        }
    }

    /// Releases the lock, handing it straight to the longest waiter if there is one.
    func unlock() {
        precondition(isLocked, "FIFOAsyncLock.unlock() without lock()")
        if waiters.isEmpty {
            isLocked = false
        } else {
            waiters.removeFirst().continuation.resume()
        }
    }

    private func cancelWaiter(_ id: UInt64) {
        // A waiter already handed the lock is no longer queued: it keeps the lock.
        guard let index = waiters.firstIndex(where: { $0.id == id }) else { return }
        waiters.remove(at: index).continuation.resume(throwing: CancellationError())
    }
}
