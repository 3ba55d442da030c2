import Synchronization

/// The subscribers of one kind of value, each with a stream of its own: the event stream of
/// acts (``Chaos/events(bufferingNewest:)``), the followers of the ``CallJournal``, and the
/// console's Server-Sent Events clients all fan out through one of these.
///
/// A subscriber that stops reading its stream (its task cancelled, the stream dropped) is
/// removed by the stream's termination. Delivering takes a snapshot under the lock and
/// yields outside it, so a slow subscriber never holds up the code that delivers.
package final class Subscribers<Element: Sendable>: Sendable {
    private struct State {
        var continuations: [UInt64: AsyncStream<Element>.Continuation] = [:]
        var lastIdentifier: UInt64 = 0
        var closed = false
    }

    private let state = Locked(State())
    /// Whether anyone subscribes: read once per recorded call, so it is an atomic rather
    /// than the lock.
    private let occupied = Atomic<Bool>(false)

    package init() {}

    /// Whether nobody subscribes now: when so, a value need not even be made.
    package var isEmpty: Bool { !occupied.load(ordering: .relaxed) }

    /// A new subscriber: its stream, which keeps the newest `limit` values a slow reader has
    /// not taken yet, and the continuation that feeds it (for values meant for it alone).
    /// Nil once ``close()`` was called.
    package func subscribe(bufferingNewest limit: Int) -> (
        stream: AsyncStream<Element>, continuation: AsyncStream<Element>.Continuation
    )? {
        let (stream, continuation) = AsyncStream.makeStream(of: Element.self, bufferingPolicy: .bufferingNewest(limit))
        let identifier = state.withLock { state -> UInt64? in
            guard !state.closed else { return nil }
            state.lastIdentifier += 1
            state.continuations[state.lastIdentifier] = continuation
            occupied.store(true, ordering: .relaxed)
            return state.lastIdentifier
        }
        guard let identifier else {
            continuation.finish()
            return nil
        }
        continuation.onTermination = { [weak self] _ in self?.remove(identifier) }
        return (stream, continuation)
    }

    /// Hands `value` to every subscriber.
    package func yield(_ value: Element) {
        let continuations = state.withLock { Array($0.continuations.values) }
        for continuation in continuations { continuation.yield(value) }
    }

    /// Ends every subscriber's stream and refuses new subscribers from now on.
    package func close() {
        let ended = state.withLock { state -> [AsyncStream<Element>.Continuation] in
            state.closed = true
            defer { state.continuations = [:] }
            return Array(state.continuations.values)
        }
        occupied.store(false, ordering: .relaxed)
        for continuation in ended { continuation.finish() }
    }

    private func remove(_ identifier: UInt64) {
        state.withLock { state in
            state.continuations.removeValue(forKey: identifier)
            occupied.store(!state.continuations.isEmpty, ordering: .relaxed)
        }
    }
}
