import Foundation

/// A one-shot signal to wait for without blocking a thread: URLSession delegates signal it
/// on their queue, async tests await it (a semaphore wait would hold one of the few
/// cooperative threads, which the answer being waited for may need). `lock` guards the state.
final class Completion: @unchecked Sendable {
    private let lock = NSLock()
    private var signalled = false
    private var waiter: CheckedContinuation<Void, Never>?

    func signal() {
        let waiting: CheckedContinuation<Void, Never>? = lock.withLock {
            signalled = true
            defer { waiter = nil }
            return waiter
        }
        waiting?.resume()
    }

    /// Waits until signalled, or `seconds` pass; true when signalled.
    func wait(seconds: Double) async -> Bool {
        let timer = Task { [self] in
            try? await Task.sleep(for: .seconds(seconds))
            let waiting: CheckedContinuation<Void, Never>? = lock.withLock {
                defer { waiter = nil }
                return waiter
            }
            waiting?.resume()
        }
        await withCheckedContinuation { continuation in
            let now = lock.withLock { () -> Bool in
                if signalled { return true }
                waiter = continuation
                return false
            }
            if now { continuation.resume() }
        }
        timer.cancel()
        return lock.withLock { signalled }
    }
}
