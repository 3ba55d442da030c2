public import ChaosKit
public import Foundation
import CChaosFaults

#if canImport(Glibc)
import Glibc
#endif

/// Time that moves on command, for the whole process (Linux): `Date()`, every realtime,
/// monotonic and boot-time clock (so `ContinuousClock`, `SuspendingClock`,
/// `DispatchTime.now()` and `ProcessInfo.systemUptime`), and the waits built on them:
/// `nanosleep`, `clock_nanosleep`, `usleep`, `sleep`, `Thread.sleep`, and the kernel
/// timers (timerfd) behind `Task.sleep`, `DispatchQueue.asyncAfter`,
/// `DispatchSourceTimer` and a run loop's `Timer`. CPU-time clocks stay real.
///
/// ```swift
/// try VirtualTime.start(at: ISO8601Date.parse("2030-01-01T00:00:00Z"))
/// defer { VirtualTime.stop() }
/// async let token = refreshAfterAnHour()      // sleeps for one virtual hour
/// try await VirtualTime.advance(by: .seconds(3600))  // returns once it has woken
/// ```
///
/// Virtual time is the `system.clock` catalogue item `virtual` applied globally, so a
/// profile can switch it on too, and `chaos run` children get it from the same plan. It
/// stands still until advanced; `advance(by:)` steps through every pending deadline in
/// order, waking each sleeper and firing each timer at its own instant, and waits (within
/// a settle limit) until what that scheduled has started before it takes the next step.
///
/// A wait nobody advances does not hang silently: after the watchdog period of real time
/// without an advance, the pending virtual deadlines are written to standard error.
/// ``stop()`` restores the real clocks, and pending waits go on for what remained of them,
/// in real time.
///
/// The timeouts of `poll`, `ppoll`, `select`, `epoll_wait`, `epoll_pwait` and the timed
/// condition-variable waits (`NSCondition.wait(until:)`) are virtual too, and descriptors
/// becoming ready, or a signal, still end such a wait at once. Out of reach:
/// `DispatchSemaphore` and `DispatchGroup` timeouts (a futex inside libc), calls from inside
/// libc itself, and statically linked code.
public enum VirtualTime {
    /// The applied entry while virtual time runs from ``start(at:flowing:)``.
    private static let applied = Locked<Chaos?>(nil)

    /// Starts virtual time at `start` (nil: now). With `flowing`, it also runs at real pace
    /// between advances. Throws when it already runs, or off Linux.
    public static func start(at start: Date? = nil, flowing: Bool = false) throws(ChaosError) {
        let nanoseconds = start.map { Int64(($0.timeIntervalSince1970 * 1e9).rounded()) }
        if let nanoseconds, nanoseconds <= 0 {
            throw ChaosError(.invalidProvider, subject: "VirtualTime", "virtual time starts after 1970; \(start.map { ISO8601Date.format($0) } ?? "") is not")
        }
        try applied.withLock { (chaos: inout Chaos?) throws(ChaosError) in
            guard chaos == nil, chaos_vt_running() == 0 else {
                throw ChaosError(.alreadyApplied, subject: "VirtualTime", "virtual time already runs; stop it first")
            }
            let made = Chaos(seed: 0)  // nothing in it draws
            try made.profile(ProfileEntry(SystemPoints.clock, .constant(.virtual(startNanosecondsSince1970: nanoseconds, flowing: flowing)))).apply()
            guard chaos_vt_running() != 0 else {
                made.revertAll()
                throw ChaosError(.systemFailure, subject: "VirtualTime", "the clock point did not start virtual time (is a scoped clock entry live?)")
            }
            chaos = made
        }
    }

    /// Stops virtual time: the real clocks come back exactly, and pending waits go on for
    /// what remained of them in real time. Does nothing when it does not run.
    public static func stop() {
        let chaos = applied.withLock { (chaos: inout Chaos?) -> Chaos? in
            defer { chaos = nil }
            return chaos
        }
        chaos?.revertAll()
    }

    /// Whether virtual time runs (started here or by a profile).
    public static var isRunning: Bool { chaos_vt_running() != 0 }

    /// The virtual wall-clock time (the real time when virtual time is off).
    public static var now: Date {
        Date(timeIntervalSince1970: Double(isRunning ? chaos_vt_reading_ns(CLOCK_REALTIME) : chaos_fault_real_ns(CLOCK_REALTIME)) / 1e9)
    }

    /// How far ahead of now the earliest pending sleep or timer is due (nil: none).
    public static var nextDeadline: Duration? {
        let next = chaos_vt_next_deadline()
        guard next != Int64.max else { return nil }
        return .nanoseconds(max(0, next - chaos_vt_monotonic_ns()))
    }

    /// Waits begun on virtual time since the process started: sleeps, deadlines given to
    /// libdispatch (`Task.sleep`, `asyncAfter`, timer sources) and timers armed by others.
    /// Before advancing, a test can wait for this to grow, so that the work it started has
    /// armed its wait rather than arming it after the advance.
    public static var waitsBegun: UInt64 { chaos_vt_waits() }

    /// Sleeps for `duration` of real time, whatever virtual time does: every other sleep and
    /// timeout of the process (`usleep`, `Thread.sleep`, `poll`) waits for virtual time
    /// while it runs.
    public static func sleepInRealTime(_ duration: Duration) {
        chaos_vt_sleep_real(duration.wholeNanosecondsForPlan)
    }

    /// Moves virtual time forward by `duration`, through every deadline on the way in
    /// order, and returns once the last has been taken. Blocks the calling thread.
    public static func advance(by duration: Duration) throws(ChaosError) {
        let nanoseconds = duration.wholeNanosecondsForPlan
        guard nanoseconds >= 0 else {
            throw ChaosError(.invalidProvider, subject: "VirtualTime", "advance(by: \(duration)) goes back; virtual time only moves forward")
        }
        try advanceMonotonic(to: saturatingAdd(chaos_vt_monotonic_ns(), nanoseconds))
    }

    /// `advance(by:)` on a thread of its own, so that the tasks and queues it wakes have
    /// the cooperative pool while it waits for them.
    public static func advance(by duration: Duration) async throws(ChaosError) {
        try await offloaded { () throws(ChaosError) in try advance(by: duration) }
    }

    /// Moves virtual time forward to the wall-clock instant `date`, like `advance(by:)`.
    public static func advance(to date: Date) throws(ChaosError) {
        guard isRunning else { throw notRunning() }
        let target = chaos_vt_to_monotonic(CLOCK_REALTIME, Int64((date.timeIntervalSince1970 * 1e9).rounded()))
        guard target >= chaos_vt_monotonic_ns() else {
            throw ChaosError(.invalidProvider, subject: "VirtualTime", "advance(to: \(ISO8601Date.format(date))) is before the virtual now \(ISO8601Date.format(now)); virtual time only moves forward")
        }
        try advanceMonotonic(to: target)
    }

    /// `advance(to:)` on a thread of its own.
    public static func advance(to date: Date) async throws(ChaosError) {
        try await offloaded { () throws(ChaosError) in try advance(to: date) }
    }

    /// Advances to each next deadline until none is pending, as `TestClock.run()` does,
    /// taking at most `maxSteps` steps (a repeating timer never runs out). Returns the
    /// steps taken; throws when deadlines are still pending after `maxSteps`.
    @discardableResult
    public static func run(maxSteps: Int = 10_000) throws(ChaosError) -> Int {
        guard isRunning else { throw notRunning() }
        var steps = 0
        while steps < maxSteps {
            let next = chaos_vt_next_deadline()
            guard next != Int64.max else { return steps }
            let taken = chaos_vt_advance_to(next, Int64(maxSteps - steps))
            guard taken >= 0 else { throw notRunning() }
            steps += max(1, Int(taken))
        }
        guard chaos_vt_next_deadline() == Int64.max else {
            throw ChaosError(.invalidProvider, subject: "VirtualTime", "run() took \(maxSteps) steps and deadlines are still pending (the next in \(nextDeadline.map { DurationText.format($0) } ?? "?")); a repeating timer never runs out: advance(by:) instead")
        }
        return steps
    }

    /// `run(maxSteps:)` on a thread of its own.
    @discardableResult
    public static func run(maxSteps: Int = 10_000) async throws(ChaosError) -> Int {
        let steps = Locked(0)
        try await offloaded { () throws(ChaosError) in
            let taken: Int = try run(maxSteps: maxSteps)
            steps.withLock { $0 = taken }
        }
        return steps.withLock { $0 }
    }

    /// The watchdog period (real time without an advance while something waits, before
    /// the pending deadlines are written to standard error; 30 s by default) and the
    /// settle limit (the real time an advance step waits for what it woke to start; 50 ms
    /// by default).
    public static func setLimits(watchdog: Duration? = nil, settle: Duration? = nil) {
        chaos_vt_set_limits(watchdog?.wholeNanosecondsForPlan ?? 0, settle?.wholeNanosecondsForPlan ?? -1)
    }

    /// Times the watchdog has reported a wait nobody advanced, since the process started.
    public static var watchdogReports: UInt64 { chaos_vt_watchdog_reports() }

    private static func advanceMonotonic(to target: Int64) throws(ChaosError) {
        guard chaos_vt_advance_to(target, -1) >= 0 else { throw notRunning() }
    }

    private static func notRunning() -> ChaosError {
        ChaosError(.notApplied, subject: "VirtualTime", "virtual time does not run; call VirtualTime.start() first")
    }

    private static func saturatingAdd(_ a: Int64, _ b: Int64) -> Int64 {
        let (sum, overflow) = a.addingReportingOverflow(b)
        return overflow ? .max : sum
    }

    /// Runs `body` on a new thread and resumes with its result.
    private static func offloaded(_ body: @escaping @Sendable () throws(ChaosError) -> Void) async throws(ChaosError) {
        let result: Result<Void, ChaosError> = await withCheckedContinuation { continuation in
            let thread = Thread {
                do throws(ChaosError) {
                    try body()
                    continuation.resume(returning: .success(()))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
            thread.start()
        }
        try result.get()
    }
}
