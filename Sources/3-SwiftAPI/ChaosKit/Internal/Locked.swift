#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A value behind a pthread mutex: the one lock type of every ChaosKit module.
///
/// Not `Synchronization.Mutex`: on Linux its futex-based locking is invisible to
/// ThreadSanitizer, which then reports races between correctly locked accesses; a pthread
/// mutex is understood by every sanitizer and costs the same uncontended.
@usableFromInline package final class Locked<Value: Sendable>: @unchecked Sendable {
    // `value` is only read or written between lock() and unlock(): that is what makes
    // this class Sendable.
    // Unchecked: the mutex already makes accesses exclusive, and the runtime's dynamic
    // exclusivity tracking would cost more than the lock itself on every call.
    @exclusivity(unchecked) @usableFromInline var value: Value
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    /// A lock guarding `value`.
    @usableFromInline package init(_ value: Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    @usableFromInline func lock() {
        pthread_mutex_lock(mutex)
    }

    @usableFromInline func unlock() {
        pthread_mutex_unlock(mutex)
    }

    /// Runs `body` with exclusive access to the value.
    @inlinable package func withLock<Result, Failure: Error>(
        _ body: (inout Value) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        lock()
        defer { unlock() }
        return try body(&value)
    }
}
