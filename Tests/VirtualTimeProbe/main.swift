// One virtual-time scenario per run, named by the first argument. It prints `key=value`
// lines that VirtualTimeTests reads, and exits 0 when the scenario ran to its end (the
// assertions are the test's). Virtual time is process-wide, so each scenario gets a
// process of its own rather than stopping the clocks of the test suites around it.
import CChaosFaults
import ChaosHooks
import ChaosKit
import Dispatch
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

#if canImport(Glibc)
import Glibc
#endif

/// The real monotonic time in ms, read with the system call (no hook changes it).
func realMilliseconds() -> Double { Double(chaos_fault_real_ns(CLOCK_MONOTONIC)) / 1e6 }

/// Waits in real time (every other sleep and timeout follows virtual time).
func realWait(milliseconds: Int32) { VirtualTime.sleepInRealTime(.milliseconds(milliseconds)) }

func report(_ key: String, _ value: Any) {
    FileHandle.standardOutput.write(Data("\(key)=\(value)\n".utf8))
}

/// How long, in real milliseconds, a wait for something the scenario does may last before
/// the run counts as broken. A liveness bound, not a speed figure: each wait ends as soon as
/// its condition holds, and on a two-core machine under a parallel build a thread can wait
/// seconds for its first turn (a 5 s bound once failed there).
/// `VIRTUAL_TIME_PROBE_BOUND_MS` shortens it, to see what a run that gives up prints.
let livenessBoundMs: Double =
    ProcessInfo.processInfo.environment["VIRTUAL_TIME_PROBE_BOUND_MS"].flatMap(Double.init) ?? 120_000

/// Prints every thread's stack to standard error (eu-stack, else gdb), once: a run whose
/// liveness bound ran out shows where each thread waits, which is what finds a hang's cause.
/// Started with posix_spawn and reaped with waitpid, neither of which follows virtual time.
func printStacksOnce() {
    struct Once { nonisolated(unsafe) static var done = false }  // only the thread that gives up calls this, then exits
    guard !Once.done else { return }
    Once.done = true
    let pid = getpid()
    let tools = [
        ["/usr/bin/eu-stack", "-p", "\(pid)"],
        ["/usr/bin/gdb", "-p", "\(pid)", "-batch", "-nx", "-ex", "thread apply all bt"],
    ]
    guard let tool = tools.first(where: { FileManager.default.isExecutableFile(atPath: $0[0]) }) else {
        FileHandle.standardError.write(Data("no eu-stack or gdb here to show the threads' stacks\n".utf8))
        return
    }
    FileHandle.standardError.write(Data("every thread's stack (\(tool[0])):\n".utf8))
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    posix_spawn_file_actions_adddup2(&actions, 2, 1)
    defer { posix_spawn_file_actions_destroy(&actions) }
    let arguments = tool.map { strdup($0) } + [nil]
    defer { arguments.forEach { free($0) } }
    var child: pid_t = 0
    guard posix_spawn(&child, tool[0], &actions, nil, arguments, environ) == 0 else { return }
    var status: Int32 = 0
    while waitpid(child, &status, 0) < 0 && errno == EINTR {}
}

/// Waits (real time, up to the liveness bound) until more than `baseline` waits have begun
/// in virtual time, so that an advance cannot run before the work under test has armed its
/// sleep or timer.
func waitForPending(_ what: String, beyond baseline: UInt64) {
    let start = realMilliseconds()
    while chaos_vt_waits() <= baseline {
        if realMilliseconds() - start > livenessBoundMs {
            report("error", "\(what) armed no virtual deadline within \(Int(livenessBoundMs / 1000)) s")
            printStacksOnce()
            exit(2)
        }
        realWait(milliseconds: 1)
    }
}

/// A value threads and tasks share.
final class Shared<Value: Sendable>: @unchecked Sendable {
    // Guarded by `lock`.
    private var value: Value
    private let lock = NSLock()
    init(_ value: Value) { self.value = value }
    func with<R>(_ body: (inout Value) -> R) -> R {
        lock.lock()
        defer { lock.unlock() }
        return body(&value)
    }
    var current: Value { with { $0 } }
}

/// Waits (real time, up to the liveness bound) until a virtual deadline at least `seconds`
/// ahead is pending: the one the work under test arms. (Counting waits begun is not enough
/// here: Foundation's own timed waits, which follow virtual time too, may begin first.)
func waitForDeadline(_ what: String, atLeast seconds: Double) {
    let start = realMilliseconds()
    while Double(chaos_vt_latest_deadline()) - Double(chaos_vt_monotonic_ns()) < (seconds - 0.25) * 1e9 {
        if realMilliseconds() - start > livenessBoundMs {
            report(
                "error", "\(what) armed no virtual deadline \(seconds) s ahead within \(Int(livenessBoundMs / 1000)) s")
            printStacksOnce()
            exit(2)
        }
        realWait(milliseconds: 1)
    }
}

/// Waits (real time, up to the liveness bound) for `condition`.
func eventually(_ condition: () -> Bool) -> Bool {
    let start = realMilliseconds()
    while !condition() {
        if realMilliseconds() - start > livenessBoundMs {
            printStacksOnce()
            return false
        }
        realWait(milliseconds: 1)
    }
    return true
}

/// How far `Date()` is from the real clock: 0 when it lies between two real readings taken
/// around it, however long this thread was preempted in between.
func realClockError() -> Double {
    let before = Double(chaos_fault_real_ns(CLOCK_REALTIME)) / 1e9
    let date = Date().timeIntervalSince1970
    let after = Double(chaos_fault_real_ns(CLOCK_REALTIME)) / 1e9
    // Date keeps a Double of seconds since 2001: allow its rounding (well under 1 µs).
    return date < before - 1e-6 ? before - date : date > after + 1e-6 ? date - after : 0
}

let start = Date(timeIntervalSince1970: 1_900_000_000)  // 2030-03-17T17:46:40Z

func taskSleep() async throws {
    try VirtualTime.start(at: start)
    let task = Task { () -> Date in
        try await Task.sleep(for: .seconds(3600))
        return Date()
    }
    waitForDeadline("Task.sleep", atLeast: 3600)
    let before = realMilliseconds()
    try await VirtualTime.advance(by: .seconds(3600))
    let woke = try await task.value
    report("real_ms", realMilliseconds() - before)
    report("woke_after_s", woke.timeIntervalSince(start))
    VirtualTime.stop()
}

func backoff() async throws {
    try VirtualTime.start(at: start)
    let baseline = chaos_vt_waits()
    let task = Task { () -> [Double] in
        var delays: [Double] = []
        var delay = Duration.seconds(1)
        for attempt in 1...10 {
            if attempt == 10 { break }  // the tenth attempt succeeds
            let before = ContinuousClock.now
            try await Task.sleep(for: delay)
            let waited = before.duration(to: .now)
            delays.append(Double(waited.components.seconds) + Double(waited.components.attoseconds) / 1e18)
            delay *= 2
        }
        return delays
    }
    waitForPending("the first backoff sleep", beyond: baseline)
    let before = realMilliseconds()
    let steps = try await VirtualTime.run()
    let delays = try await task.value
    report("real_ms", realMilliseconds() - before)
    report("steps", steps)
    report("delays", delays.map { String(format: "%.3f", $0) }.joined(separator: ","))
    report("virtual_elapsed_s", Date().timeIntervalSince(start))
    VirtualTime.stop()
}

func dispatchTimer() async throws {
    try VirtualTime.start(at: start)
    let fires = Shared<[UInt64]>([])
    let queue = DispatchQueue(label: "probe.timer")
    let timer = DispatchSource.makeTimerSource(queue: queue)
    let origin = DispatchTime.now().uptimeNanoseconds
    timer.schedule(deadline: .now() + .seconds(60), repeating: .seconds(60))
    timer.setEventHandler { fires.with { $0.append(DispatchTime.now().uptimeNanoseconds) } }
    timer.resume()
    waitForDeadline("the DispatchSourceTimer", atLeast: 60)
    let before = realMilliseconds()
    try await VirtualTime.advance(by: .seconds(3600))
    _ = eventually { fires.current.count >= 60 }
    report("real_ms", realMilliseconds() - before)
    realWait(milliseconds: 100)  // a 61st firing would show now
    let at = fires.current.map { ($0 - origin) / 1_000_000_000 }
    report("fires", at.count)
    report("fired_at_s", at.map(String.init).joined(separator: ","))
    timer.cancel()
    VirtualTime.stop()
}

func asyncAfterAndTimer() async throws {
    try VirtualTime.start(at: start)
    let baseline = chaos_vt_waits()
    let afterFired = Shared<Date?>(nil)
    DispatchQueue.global().asyncAfter(deadline: .now() + .seconds(10)) { afterFired.with { $0 = Date() } }
    let timerFired = Shared<Date?>(nil)
    let loopThread = Thread {
        // Timer(timeInterval:) first fires at once in swift-corelibs-foundation; fire: sets the date.
        let timer = Timer(fire: Date().addingTimeInterval(30), interval: 0, repeats: false) { _ in
            timerFired.with { $0 = Date() }
        }
        RunLoop.current.add(timer, forMode: .default)
        while timerFired.current == nil {
            _ = RunLoop.current.run(mode: .default, before: Date().addingTimeInterval(3600))
        }
    }
    loopThread.start()
    waitForPending("asyncAfter and the run loop's Timer", beyond: baseline + 1)
    try await VirtualTime.advance(by: .seconds(9))
    realWait(milliseconds: 200)
    report("after_fired_at_9s", afterFired.current != nil)
    try await VirtualTime.advance(by: .seconds(1))
    _ = eventually { afterFired.current != nil }
    report("after_fired_at_s", afterFired.current.map { $0.timeIntervalSince(start) } ?? -1)
    try await VirtualTime.advance(by: .seconds(19))
    realWait(milliseconds: 200)
    report("timer_fired_at_29s", timerFired.current != nil)
    try await VirtualTime.advance(by: .seconds(1))
    _ = eventually { timerFired.current != nil }
    report("timer_fired_at_s", timerFired.current.map { $0.timeIntervalSince(start) } ?? -1)
    VirtualTime.stop()
}

func clocks() async throws {
    try VirtualTime.start(at: start)
    struct Readings: Sendable {
        var date: Date, continuous: ContinuousClock.Instant, suspending: SuspendingClock.Instant
        var dispatch: UInt64, uptime: TimeInterval, cpu: Double
        static func now() -> Readings {
            var cpu = timespec()
            clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu)
            return Readings(
                date: Date(), continuous: .now, suspending: .now, dispatch: DispatchTime.now().uptimeNanoseconds,
                uptime: ProcessInfo.processInfo.systemUptime, cpu: Double(cpu.tv_sec) + Double(cpu.tv_nsec) / 1e9)
        }
    }
    // A whole second: floating-point arithmetic on readings is exact after whole advances.
    report("start_monotonic_whole_second", chaos_vt_monotonic_ns() % 1_000_000_000 == 0)
    let readings = Shared<(Readings, Readings)?>(nil)
    let sleeper = Thread {
        let before = Readings.now()
        Thread.sleep(forTimeInterval: 3600)
        readings.with { $0 = (before, Readings.now()) }
    }
    sleeper.start()
    waitForDeadline("Thread.sleep", atLeast: 3600)
    let realBefore = realMilliseconds()
    try await VirtualTime.advance(by: .seconds(3600))
    _ = eventually { readings.current != nil }
    report("real_ms", realMilliseconds() - realBefore)
    guard let (before, after) = readings.current else {
        report("error", "Thread.sleep never returned")
        exit(2)
    }
    func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
    report("date_s", after.date.timeIntervalSince(before.date))
    report("continuous_s", seconds(before.continuous.duration(to: after.continuous)))
    report("suspending_s", seconds(before.suspending.duration(to: after.suspending)))
    report("dispatch_s", Double(after.dispatch - before.dispatch) / 1e9)
    report("uptime_s", after.uptime - before.uptime)
    report("cpu_s", after.cpu - before.cpu)
    var tv = timeval()
    gettimeofday(&tv, nil)
    report("gettimeofday_vs_date_s", abs(Double(tv.tv_sec) + Double(tv.tv_usec) / 1e6 - Date().timeIntervalSince1970))
    report("time_vs_date_s", abs(Double(time(nil)) - Date().timeIntervalSince1970))
    VirtualTime.stop()
}

func socketWait() async throws {
    try VirtualTime.start(at: start)
    var pair: [Int32] = [0, 0]
    guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0 else {
        report("error", "socketpair: \(errno)")
        exit(2)
    }
    let reader = pair[0]
    let writer = pair[1]
    let woke = Shared<Double?>(nil)
    let waiter = Thread {
        var descriptor = pollfd(fd: reader, events: Int16(POLLIN), revents: 0)
        let began = realMilliseconds()
        let ready = poll(&descriptor, 1, 3_600_000)
        woke.with { $0 = ready == 1 ? realMilliseconds() - began : -1 }
    }
    waiter.start()
    realWait(milliseconds: 50)
    var byte: UInt8 = 1
    _ = write(writer, &byte, 1)
    _ = eventually { woke.current != nil }
    report("woke_after_real_ms", woke.current ?? -1)
    // With nothing to read, the poll's 10 s timeout is virtual: it ends when time is advanced.
    var drained: UInt8 = 0
    _ = read(reader, &drained, 1)
    let timedOut = Shared<Int32?>(nil)
    Thread {
        var descriptor = pollfd(fd: reader, events: Int16(POLLIN), revents: 0)
        let result = poll(&descriptor, 1, 10_000)
        timedOut.with { $0 = result }
    }.start()
    waitForDeadline("poll", atLeast: 10)
    try await VirtualTime.advance(by: .seconds(9))
    realWait(milliseconds: 100)
    report("poll_returned_at_9s", timedOut.current != nil)
    try await VirtualTime.advance(by: .seconds(1))
    _ = eventually { timedOut.current != nil }
    report("poll_result_at_10s", timedOut.current.map(String.init) ?? "none")
    close(reader)
    close(writer)
    VirtualTime.stop()
}

func stopResumesRealTiming() async throws {
    try VirtualTime.start(at: start)
    let done = Shared<Double?>(nil)
    let sleeper = Thread {
        let began = realMilliseconds()
        Thread.sleep(forTimeInterval: 1.5)
        done.with { $0 = realMilliseconds() - began }
    }
    sleeper.start()
    waitForDeadline("Thread.sleep", atLeast: 1.5)
    let timerDone = Shared<Double?>(nil)
    let armed = realMilliseconds()
    DispatchQueue.global().asyncAfter(deadline: .now() + .seconds(1)) {
        timerDone.with { $0 = realMilliseconds() - armed }
    }
    realWait(milliseconds: 300)
    report("virtual_before_stop_s", Date().timeIntervalSince(start))
    VirtualTime.stop()
    report("real_clock_error_s", realClockError())
    _ = eventually { done.current != nil && timerDone.current != nil }
    report("sleep_real_ms", done.current ?? -1)
    report("timer_real_ms", timerDone.current ?? -1)
}

func watchdog() async throws {
    VirtualTime.setLimits(watchdog: .milliseconds(400))
    try VirtualTime.start(at: start)
    let sleeper = Thread { Thread.sleep(forTimeInterval: 3600) }
    sleeper.start()
    waitForDeadline("Thread.sleep", atLeast: 3600)
    realWait(milliseconds: 1_500)
    report("reports", VirtualTime.watchdogReports)
    try await VirtualTime.advance(by: .seconds(3600))
    VirtualTime.stop()
}

/// The profile spelling (what `.virtualTime(start:)` applies, by point name): a JSON
/// profile's `system.clock` item `virtual` starts virtual time, reverting it stops it.
func profile() async throws {
    SystemPoints.register()
    let profile = try ChaosProfile.decode(
        json:
            #"{"entries": [{"point": "system.clock", "provider": {"item": "virtual", "parameters": {"start": "2030-03-17T17:46:40Z"}}}]}"#
    )
    let chaos = try profile.apply()
    report("running", VirtualTime.isRunning)
    report("start_error_s", abs(Date().timeIntervalSince(start)))
    let woke = Shared<Date?>(nil)
    Thread {
        Thread.sleep(forTimeInterval: 90)
        woke.with { $0 = Date() }
    }.start()
    waitForDeadline("Thread.sleep", atLeast: 90)
    try await VirtualTime.advance(by: .seconds(90))
    _ = eventually { woke.current != nil }
    report("woke_after_s", woke.current.map { $0.timeIntervalSince(start) } ?? -1)
    chaos.revertAll()
    report("running_after_revert", VirtualTime.isRunning)
    report("real_clock_error_s", realClockError())
}

/// Flowing virtual time runs at real pace from its start, and an advance adds to it.
func flowing() async throws {
    try VirtualTime.start(at: start, flowing: true)
    let before = realMilliseconds()
    usleep(200_000)  // Thread.sleep is unavailable here; both end in the intercepted sleeps
    report("sleep_real_ms", realMilliseconds() - before)
    report("virtual_after_sleep_s", Date().timeIntervalSince(start))
    try await VirtualTime.advance(by: .seconds(3600))
    report("virtual_after_advance_s", Date().timeIntervalSince(start))
    VirtualTime.stop()
}

/// Sets `flag` and signals `condition` (outside the async context, where NSCondition's
/// lock is unavailable).
func signal(_ condition: NSCondition, setting flag: Shared<Bool>) {
    condition.lock()
    flag.with { $0 = true }
    condition.signal()
    condition.unlock()
}

/// NSCondition.wait(until:) is pthread_cond_timedwait: its deadline is virtual, and a
/// signal still ends it at once.
func condition() async throws {
    try VirtualTime.start(at: start)
    let condition = NSCondition()
    let timedOut = Shared<Bool?>(nil)
    Thread {
        condition.lock()
        let signalled = condition.wait(until: Date().addingTimeInterval(30))
        condition.unlock()
        timedOut.with { $0 = !signalled }
    }.start()
    waitForDeadline("NSCondition.wait(until:)", atLeast: 30)
    try await VirtualTime.advance(by: .seconds(29))
    realWait(milliseconds: 100)
    report("returned_at_29s", timedOut.current != nil)
    try await VirtualTime.advance(by: .seconds(1))
    _ = eventually { timedOut.current != nil }
    report("timed_out_at_30s", timedOut.current.map(String.init) ?? "none")

    let signalled = Shared<Double?>(nil)
    let flag = Shared(false)
    Thread {
        let began = realMilliseconds()
        condition.lock()
        var ended = true
        while !flag.current, ended { ended = condition.wait(until: Date().addingTimeInterval(3600)) }
        condition.unlock()
        signalled.with { $0 = ended ? realMilliseconds() - began : -1 }
    }.start()
    waitForDeadline("the second wait", atLeast: 3600)
    signal(condition, setting: flag)
    _ = eventually { signalled.current != nil }
    report("signalled_after_real_ms", signalled.current ?? -2)
    VirtualTime.stop()
}

/// A thread that beats every 5 ms (usleep) and keeps the `Date()` of its last beat; `started`
/// counts the beats begun, `beats` those ended.
func beatingThread(
    named name: String, beats: Shared<Int>, started: Shared<Int> = Shared(0), lastDate: Shared<Date?>,
    until done: Shared<Bool>
) {
    let thread = Thread {
        // Named through the kernel's file, on the thread itself. Foundation's `name` setter reaches
        // the kernel only when the Thread already knows its pthread, which its start() records
        // after the thread may have begun: under load the name was lost and the heartbeat
        // was never found (this scenario's "never ran" in four stops).
        let comm = open("/proc/thread-self/comm", O_WRONLY)
        if comm >= 0 {
            _ = write(comm, name, strlen(name))
            close(comm)
        }
        while !done.current {
            started.with { $0 += 1 }
            usleep(5_000)
            let now = Date()
            beats.with { $0 += 1 }
            lastDate.with { $0 = now }
        }
    }
    thread.start()
}

func exemptThreads() async throws {
    let done = Shared(false)
    let heartbeat = Shared(0)
    let follower = Shared(0)
    let followerStarted = Shared(0)
    let heartbeatDate = Shared<Date?>(nil)
    let followerDate = Shared<Date?>(nil)
    beatingThread(named: "chaos-heartbeat", beats: heartbeat, lastDate: heartbeatDate, until: done)
    beatingThread(
        named: "chaos-follower", beats: follower, started: followerStarted, lastDate: followerDate, until: done)
    guard eventually({ !VirtualTime.threads(named: "chaos-heartbeat").isEmpty && heartbeat.current > 0 }) else {
        report(
            "error",
            "the heartbeat thread never ran or was never found: \(heartbeat.current) beats, threads named chaos-heartbeat: \(VirtualTime.threads(named: "chaos-heartbeat"))"
        )
        exit(2)
    }
    // Exempt before the start: no beat of it can begin a virtual sleep in between.
    let named = VirtualTime.threads(named: "chaos-heartbeat")
    for thread in named { try VirtualTime.exempt(thread) }
    report("exempt_named", named.count)
    report("exempt_listed", VirtualTime.exemptThreads == named)
    try VirtualTime.start(at: start)
    // A follower beat begun before the start sleeps in real time and ends, however late the
    // machine lets it; each one begun after is a virtual sleep, held until an advance. So the
    // follower may end at most the beats begun by now (no fixed real wait can tell: under
    // load a beat in flight ended 50 ms after the start).
    let followerBefore = followerStarted.current
    let heartbeatBefore = heartbeat.current
    // Ten real 5 ms sleeps of the exempt thread, however long the machine makes them take;
    // all the while the follower, under virtual time, must not beat once.
    report("heartbeat_beat_10_times", eventually { heartbeat.current - heartbeatBefore >= 10 })
    report("follower_beats_meanwhile", max(0, follower.current - followerBefore))
    let realNow = Double(chaos_fault_real_ns(CLOCK_REALTIME)) / 1e9
    report("heartbeat_date_error_s", abs((heartbeatDate.current?.timeIntervalSince1970 ?? 0) - realNow))
    report("virtual_date_error_s", abs(Date().timeIntervalSince1970 - start.timeIntervalSince1970))
    // A scope on the calling thread: real clock and real sleeps inside, virtual outside.
    let (scopedDate, scopedSleepMs) = VirtualTime.inRealTime { () -> (Date, Double) in
        let began = realMilliseconds()
        Thread.sleep(forTimeInterval: 0.05)
        return (Date(), realMilliseconds() - began)
    }
    report(
        "scoped_date_error_s", abs(scopedDate.timeIntervalSince1970 - Double(chaos_fault_real_ns(CLOCK_REALTIME)) / 1e9)
    )
    report("scoped_sleep_real_ms", scopedSleepMs)
    report("after_scope_date_error_s", abs(Date().timeIntervalSince1970 - start.timeIntervalSince1970))
    // Advancing does not wait for the busy exempt thread to go idle; the follower moves on.
    let followerEnded = follower.current
    try await VirtualTime.advance(by: .milliseconds(50))
    _ = eventually { follower.current > followerEnded }
    report("follower_beats_after_advance", follower.current - followerEnded)
    do {
        try VirtualTime.exempt(999_999_999)
        report("unknown_thread_error", "none")
    } catch {
        report("unknown_thread_error", error.message)
    }
    for thread in named { VirtualTime.removeExemption(thread) }
    report("exempt_after_removal", VirtualTime.exemptThreads.count)
    VirtualTime.stop()
    done.with { $0 = true }
}

/// Serves one HTTP response on 127.0.0.1 from a thread of plain sockets; returns the port.
func serveOneResponse(body: String) -> UInt16 {
    let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) }
    }
    _ = listen(listener, 4)
    _ = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
    }
    Thread {
        let client = accept(listener, nil, nil)
        var request = [UInt8](repeating: 0, count: 4096)
        _ = recv(client, &request, request.count, 0)
        let response = "HTTP/1.1 200 OK\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)"
        _ = response.withCString { send(client, $0, strlen($0), 0) }
        close(client)
        close(listener)
    }.start()
    return UInt16(bigEndian: address.sin_port)
}

func urlSession() async throws {
    try VirtualTime.start(at: start)
    let port = serveOneResponse(body: "still served")
    let began = realMilliseconds()
    let fetched = Shared<String?>(nil)
    let task = URLSession.shared.dataTask(with: URL(string: "http://127.0.0.1:\(port)/")!) { data, _, error in
        fetched.with {
            $0 = data.map { String(decoding: $0, as: UTF8.self) } ?? "error: \(error.map { "\($0)" } ?? "none")"
        }
    }
    task.resume()
    _ = eventually { fetched.current != nil }
    report("fetched", fetched.current ?? "nothing")
    report("fetch_real_ms", realMilliseconds() - began)
    report("virtual_date_error_s", abs(Date().timeIntervalSince1970 - start.timeIntervalSince1970))
    VirtualTime.stop()
}

/// The `.virtualTime` trait, run by Swift Testing's runner (TraitTests.swift).
func trait() async throws {
    var arguments = __CommandLineArguments_v0()
    arguments.filter = ["VirtualTimeTraitTests"]
    arguments.parallel = false
    let status: CInt = await __swiftPMEntryPoint(passing: arguments)
    report("trait_status", status)
    report("running_after", VirtualTime.isRunning)
    report("real_clock_error_s", realClockError())
}

let scenarios: [String: () async throws -> Void] = [
    "trait": trait,
    "url-session": urlSession,
    "threads": exemptThreads,
    "condition": condition, "profile": profile, "flowing": flowing,
    "task-sleep": taskSleep, "backoff": backoff, "dispatch-timer": dispatchTimer,
    "async-after-and-timer": asyncAfterAndTimer,
    "clocks": clocks, "socket": socketWait, "stop": stopResumesRealTiming, "watchdog": watchdog,
]

let name = CommandLine.arguments.dropFirst().first ?? ""
guard let scenario = scenarios[name] else {
    FileHandle.standardError.write(
        Data("usage: virtual-time-probe \(scenarios.keys.sorted().joined(separator: "|"))\n".utf8))
    exit(64)
}
do {
    try await scenario()
    report("done", true)
} catch {
    report("error", error)
    exit(1)
}
