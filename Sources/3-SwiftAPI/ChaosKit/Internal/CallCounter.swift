public import Synchronization

/// A thread-safe counter; `next()` hands out 0, 1, 2 … exactly once each under concurrency.
@usableFromInline final class CallCounter: Sendable {
    @usableFromInline let value = Atomic<Int>(0)

    @usableFromInline init() {}

    @inlinable func next() -> Int {
        value.wrappingAdd(1, ordering: .relaxed).oldValue
    }
}
