import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Whether anyone observes chaos (times of acts, the event stream), and the event stream's
/// subscribers. Until someone asks, the call path records counts only: a point reads its
/// own `observed` flag, which this turns on for every point, present and future.
enum ChaosObservation {
    private static let observing = Locked(false)
    private static let subscribers = Subscribers<ChaosEvent>()

    /// Whether time recording is on (new points start observed when it is).
    static var isObserving: Bool { observing.withLock { $0 } }

    /// Turns observation on for every live point and every point made later.
    static func start() {
        let first = observing.withLock { observing -> Bool in
            defer { observing = true }
            return !observing
        }
        if first { PointRegistry.shared.forEachPoint { $0.observed.store(true, ordering: .relaxed) } }
    }

    /// A stream of every act of every entry from now on; observation is on from then.
    static func subscribe(bufferingNewest limit: Int) -> AsyncStream<ChaosEvent> {
        start()
        // The event stream is never closed, so a subscription is always made.
        return subscribers.subscribe(bufferingNewest: limit)?.stream ?? AsyncStream { $0.finish() }
    }

    /// Whether anyone takes events now: when not, an act need not make one.
    static var hasSubscribers: Bool { !subscribers.isEmpty }

    /// Hands `event` to every subscriber.
    static func emit(_ event: ChaosEvent) {
        subscribers.yield(event)
    }

    /// The real CLOCK_REALTIME in ns since 1970, read through libc's own function found
    /// with dlsym: never through a GOT slot a system clock hook may have rebound.
    static func realNanoseconds() -> Int64 {
        var now = timespec()
        _ = realClock(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
    }

    private typealias ClockFunction = @convention(c) (clockid_t, UnsafeMutablePointer<timespec>) -> Int32

    private static let realClock: ClockFunction = {
        #if canImport(Glibc)
        if let symbol = dlsym(nil, "clock_gettime") {  // nil: RTLD_DEFAULT, libc's definition
            return unsafeBitCast(symbol, to: ClockFunction.self)
        }
        #endif
        return { clock, now in clock_gettime(clock, now) }
    }()
}
