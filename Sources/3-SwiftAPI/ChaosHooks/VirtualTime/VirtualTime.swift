import CChaosFaults
public import ChaosKit
public import Foundation

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
            throw ChaosError(
                .invalidProvider, subject: "VirtualTime",
                "virtual time starts after 1970; \(start.map { ISO8601Date.format($0) } ?? "") is not")
        }
        try applied.withLock { (chaos: inout Chaos?) throws(ChaosError) in
            guard chaos == nil, chaos_vt_running() == 0 else {
                throw ChaosError(.alreadyApplied, subject: "VirtualTime", "virtual time already runs; stop it first")
            }
            let made = Chaos(seed: 0)  // nothing in it draws
            try made.profile(
                ProfileEntry(
                    SystemPoints.clock, .constant(.virtual(startNanosecondsSince1970: nanoseconds, flowing: flowing)))
            ).apply()
            guard chaos_vt_running() != 0 else {
                made.revertAll()
                throw ChaosError(
                    .systemFailure, subject: "VirtualTime",
                    "the clock point did not start virtual time (is a scoped clock entry live?)")
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
        Date(
            timeIntervalSince1970: Double(
                isRunning ? chaos_vt_reading_ns(CLOCK_REALTIME) : chaos_fault_real_ns(CLOCK_REALTIME)) / 1e9)
    }

    /// How far ahead of now the earliest pending sleep or timer is due (nil: none).
    public static var nextDeadline: Duration? {
        let next = chaos_vt_next_deadline()
        guard next != Int64.max else { return nil }
        return .nanoseconds(max(0, next - chaos_vt_monotonic_ns()))
    }

    /// How far ahead of now the latest pending sleep or timer is due (nil: none). Before
    /// advancing, a test waits until the deadline its work arms shows here, so that the
    /// work is not still on its way to the wait when time moves past it:
    ///
    /// ```swift
    /// while (VirtualTime.latestDeadline ?? .zero) < .seconds(3600) { await Task.yield() }
    /// ```
    public static var latestDeadline: Duration? {
        let latest = chaos_vt_latest_deadline()
        guard latest != Int64.min else { return nil }
        return .nanoseconds(max(0, latest - chaos_vt_monotonic_ns()))
    }

    /// Waits begun on virtual time since the process started: sleeps, deadlines given to
    /// libdispatch (`Task.sleep`, `asyncAfter`, timer sources), timed waits and timers
    /// armed by others. Foundation's own timed waits count too, so to know that the work
    /// under test has armed its wait, ``latestDeadline`` is the surer sign.
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
            throw ChaosError(
                .invalidProvider, subject: "VirtualTime",
                "advance(by: \(duration)) goes back; virtual time only moves forward")
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
            throw ChaosError(
                .invalidProvider, subject: "VirtualTime",
                "advance(to: \(ISO8601Date.format(date))) is before the virtual now \(ISO8601Date.format(now)); virtual time only moves forward"
            )
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
            throw ChaosError(
                .invalidProvider, subject: "VirtualTime",
                "run() took \(maxSteps) steps and deadlines are still pending (the next in \(nextDeadline.map { DurationText.format($0) } ?? "?")); a repeating timer never runs out: advance(by:) instead"
            )
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
            Thread.startWithoutSignals {
                do throws(ChaosError) {
                    try body()
                    continuation.resume(returning: .success(()))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
        }
        try result.get()
    }
}

// MARK: - Threads on real time

extension VirtualTime {
    /// A thread of this process by its kernel id: what `gettid()` returns and
    /// `/proc/self/task` lists.
    public typealias ThreadID = Int32

    /// The calling thread's id.
    public static var currentThread: ThreadID { chaos_vt_current_thread() }

    /// Keeps `thread` on real time while virtual time runs, now and after a later
    /// ``start(at:flowing:)``: its clock readings are real, its own sleeps, timed waits and
    /// timerfds wait in real time, and an advance does not wait for it to go idle. For
    /// threads the test did not start and that must keep working: a server's event loop,
    /// a heartbeat, a log flusher.
    ///
    /// libdispatch's timers (`asyncAfter`, `Task.sleep`, timer sources) are shared by the
    /// whole process and follow virtual time whichever thread sets them.
    ///
    /// Throws when no thread of this process has that id, or when 64 are exempt already.
    public static func exempt(_ thread: ThreadID) throws(ChaosError) {
        switch chaos_vt_set_thread_exempt(thread, 1) {
        case 0: return
        case ENOSPC:
            throw ChaosError(
                .invalidProvider, subject: "VirtualTime",
                "64 threads are exempt from virtual time already; remove an exemption first")
        default:
            throw ChaosError(
                .invalidProvider, subject: "VirtualTime",
                "no thread of this process has id \(thread); use VirtualTime.currentThread or threads(named:)")
        }
    }

    /// Puts `thread` back under virtual time (nothing when it was not exempt).
    public static func removeExemption(_ thread: ThreadID) {
        _ = chaos_vt_set_thread_exempt(thread, 0)
    }

    /// The exempt threads (those of ``exempt(_:)``; not those inside ``inRealTime(_:)``).
    public static var exemptThreads: [ThreadID] {
        var ids = [ThreadID](repeating: 0, count: Int(chaos_vt_exempt_threads(nil, 0)))
        let count = ids.withUnsafeMutableBufferPointer { chaos_vt_exempt_threads($0.baseAddress, Int32($0.count)) }
        return Array(ids.prefix(Int(max(0, count))))
    }

    /// The threads of this process whose name is `name`, as the kernel keeps it: its first
    /// 15 bytes (so is `name` compared). `pthread_setname_np` sets it, and so does a
    /// `Thread`'s `name` set on that thread (on Linux, one set before `start()` is not
    /// passed on).
    public static func threads(named name: String) -> [ThreadID] {
        let kept = String(decoding: Array(name.utf8.prefix(15)), as: UTF8.self)
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.compactMap { entry -> ThreadID? in
            // Read to the end: /proc files report a size of 0, which whole-file readers
            // may take at its word.
            guard let id = ThreadID(entry),
                let file = FileHandle(forReadingAtPath: "/proc/self/task/\(entry)/comm"),
                String(decoding: file.readDataToEndOfFile(), as: UTF8.self).trimmingCharacters(in: .newlines) == kept
            else { return nil }
            return id
        }.sorted()
    }

    /// Runs `body` with the calling thread on real time, as ``exempt(_:)`` would put it;
    /// scopes nest, and take no place among the 64 exempt threads.
    public static func inRealTime<Result, Failure: Error>(_ body: () throws(Failure) -> Result) throws(Failure)
        -> Result
    {
        chaos_vt_real_time_scope(1)
        defer { chaos_vt_real_time_scope(0) }
        return try body()
    }
}
