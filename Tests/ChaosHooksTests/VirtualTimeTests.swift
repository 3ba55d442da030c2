import ChaosHooks
import Foundation
import TestHelpers
import Testing

/// Virtual time through real code paths: Task.sleep, DispatchSourceTimer, asyncAfter, a run
/// loop's Timer, Thread.sleep and Foundation's clocks, each in a process of its own (the
/// built `virtual-time-probe`), because virtual time is process-wide and would stop the
/// clocks and sleeps of every other suite in this one.
///
/// Real-time bounds here are liveness bounds (an hour of virtual time must not take an hour);
/// how fast it is, is the `virtual_hour_sleep_ms` benchmark.
@Suite(
    .disabled(if: Sanitizers.thread, "ThreadSanitizer's interceptors hide libc's GOT slots, which virtual time rebinds")
)
struct VirtualTimeTests {
    /// What one scenario printed (`key=value` lines) and its stderr.
    struct Report {
        let values: [String: String]
        let errors: String

        func number(_ key: String) -> Double? { values[key].flatMap(Double.init) }
        func flag(_ key: String) -> Bool? { values[key].map { $0 == "true" } }
    }

    static func probe(_ scenario: String) throws -> Report {
        let path = buildDirectory(holding: "virtual-time-probe").appendingPathComponent("virtual-time-probe").path
        let output = try #require(runProgram(path, [scenario]), "the probe could not be started at \(path)")
        var values: [String: String] = [:]
        for line in String(decoding: output.stdout, as: UTF8.self).split(separator: "\n") {
            guard let equals = line.firstIndex(of: "=") else { continue }
            values[String(line[..<equals])] = String(line[line.index(after: equals)...])
        }
        #expect(
            output.status == 0,
            "\(scenario) exited \(output.status): \(values["error"] ?? "") \(output.stderr.suffix(20000))")
        #expect(
            values["done"] == "true",
            "\(scenario) did not finish: \(values["error"] ?? output.stderr.suffix(2000).description)")
        return Report(values: values, errors: output.stderr)
    }

    @Test func anHourOfTaskSleepEndsWhenAdvancedAndDateShowsTheHour() throws {
        let report = try Self.probe("task-sleep")
        #expect(report.number("woke_after_s") == 3600)
        #expect(
            (report.number("real_ms") ?? .infinity) < 60_000,
            "an advanced hour took \(report.values["real_ms"] ?? "?") ms of real time, not a fraction of the hour")
    }

    @Test func anExponentialBackoffRunsThroughEveryDelayInOrder() throws {
        let report = try Self.probe("backoff")
        #expect(
            report.values["delays"] == "1.000,2.000,4.000,8.000,16.000,32.000,64.000,128.000,256.000",
            "each retry measured its own delay on ContinuousClock")
        #expect(report.number("virtual_elapsed_s") == 511)
        #expect(
            (report.number("real_ms") ?? .infinity) < 120_000,
            "511 s of backoff took \(report.values["real_ms"] ?? "?") ms of real time")
    }

    @Test func aRepeatingDispatchSourceTimerFiresSixtyTimesInOrderInAnHour() throws {
        let report = try Self.probe("dispatch-timer")
        #expect(report.number("fires") == 60)
        #expect(report.values["fired_at_s"] == (1...60).map { String($0 * 60) }.joined(separator: ","))
    }

    @Test func asyncAfterAndARunLoopTimerFireAtTheirDeadlinesAndNotBefore() throws {
        let report = try Self.probe("async-after-and-timer")
        #expect(report.flag("after_fired_at_9s") == false)
        #expect(report.number("after_fired_at_s") == 10)
        #expect(report.flag("timer_fired_at_29s") == false)
        #expect(report.number("timer_fired_at_s") == 30)
    }

    @Test func everyClockMovesByTheHourThreadSleepWaitedAndCPUTimeDoesNot() throws {
        let report = try Self.probe("clocks")
        #expect(report.flag("start_monotonic_whole_second") == true)
        for key in ["date_s", "continuous_s", "suspending_s", "dispatch_s", "uptime_s"] {
            #expect(abs((report.number(key) ?? 0) - 3600) < 0.001, "\(key) = \(report.values[key] ?? "missing")")
        }
        #expect((report.number("cpu_s") ?? .infinity) < 1, "CPU time is not virtual")
        #expect((report.number("gettimeofday_vs_date_s") ?? .infinity) < 0.001)
        #expect((report.number("time_vs_date_s") ?? .infinity) < 1)
    }

    @Test func aWaitOnASocketStillWakesOnDataAndItsTimeoutIsVirtual() throws {
        let report = try Self.probe("socket")
        let woke = try #require(report.number("woke_after_real_ms"))
        #expect(woke >= 0, "poll saw the byte")
        #expect(woke < 60_000, "poll woke on the byte, not at its hour-long timeout")
        #expect(report.flag("poll_returned_at_9s") == false, "a 10 s poll timeout does not end at 9 virtual seconds")
        #expect(report.values["poll_result_at_10s"] == "0", "it times out (0) once 10 virtual seconds have passed")
    }

    @Test func stopRestoresTheRealClocksAndPendingWaitsFinishInRealTime() throws {
        let report = try Self.probe("stop")
        #expect((report.number("real_clock_error_s") ?? .infinity) < 0.01)
        // Virtual time stood still until stop: what remained (1.5 s and 1 s) runs in real time.
        let sleep = try #require(report.number("sleep_real_ms"))
        let timer = try #require(report.number("timer_real_ms"))
        #expect(sleep >= 1_500 && sleep < 30_000, "Thread.sleep(1.5) took \(sleep) ms")
        #expect(timer >= 1_000 && timer < 30_000, "asyncAfter(+1 s) took \(timer) ms")
    }

    @Test func theWatchdogNamesAWaitNobodyAdvances() throws {
        let report = try Self.probe("watchdog")
        #expect((report.number("reports") ?? 0) >= 1)
        #expect(report.errors.contains("virtual time has not been advanced"))
        #expect(
            report.errors.contains("sleeps until +3600"),
            "the report names the pending deadline: \(report.errors.prefix(500))")
    }

    @Test func theProfileItemVirtualStartsItAndRevertingStopsIt() throws {
        let report = try Self.probe("profile")
        #expect(report.flag("running") == true)
        #expect((report.number("start_error_s") ?? .infinity) < 0.001, "the clock starts at the profile's start")
        #expect(report.number("woke_after_s") == 90)
        #expect(report.flag("running_after_revert") == false)
        #expect((report.number("real_clock_error_s") ?? .infinity) < 0.01)
    }

    @Test func flowingVirtualTimeRunsAtRealPaceAndAdvancesAddToIt() throws {
        let report = try Self.probe("flowing")
        let slept = try #require(report.number("sleep_real_ms"))
        #expect(slept >= 200 && slept < 30_000, "a sleep on flowing time takes its real time: \(slept) ms")
        let afterSleep = try #require(report.number("virtual_after_sleep_s"))
        #expect(afterSleep >= 0.2 && afterSleep < 30)
        let afterAdvance = try #require(report.number("virtual_after_advance_s"))
        #expect(afterAdvance >= 3600.2 && afterAdvance < 3630)
    }

    @Test func aConditionWaitsDeadlineIsVirtualAndASignalStillEndsIt() throws {
        let report = try Self.probe("condition")
        #expect(report.flag("returned_at_29s") == false)
        #expect(report.values["timed_out_at_30s"] == "true")
        let signalled = try #require(report.number("signalled_after_real_ms"))
        #expect(signalled >= 0 && signalled < 30_000, "the signal, not the hour, ended the wait: \(signalled) ms")
    }

    @Test func anExemptThreadKeepsRealTimeWhileTheOthersWaitForAnAdvance() throws {
        let report = try Self.probe("threads")
        #expect(report.number("exempt_named") == 1, "threads(named:) found the heartbeat thread")
        #expect(report.flag("exempt_listed") == true)
        // The exempt thread's 5 ms sleeps are real, the other's virtual.
        #expect(report.flag("heartbeat_beat_10_times") == true)
        #expect(report.number("follower_beats_meanwhile") == 0, "a thread under virtual time sleeps until an advance")
        #expect((report.number("heartbeat_date_error_s") ?? .infinity) < 5, "the exempt thread reads the real clock")
        #expect(report.number("virtual_date_error_s") == 0, "the others read the virtual clock, standing still")
        #expect((report.number("scoped_date_error_s") ?? .infinity) < 5, "inRealTime reads the real clock")
        #expect((report.number("scoped_sleep_real_ms") ?? 0) >= 45, "inRealTime sleeps in real time")
        #expect(report.number("after_scope_date_error_s") == 0, "after the scope the thread is virtual again")
        #expect(
            (report.number("follower_beats_after_advance") ?? 0) >= 1, "the advance woke the thread under virtual time")
        #expect(report.values["unknown_thread_error"]?.contains("no thread of this process has id 999999999") == true)
        #expect(report.number("exempt_after_removal") == 0)
    }

    @Test func aURLSessionRequestToALocalServerCompletesWhileTimeStandsStill() throws {
        // Foundation's own URLSession threads, which no test started, keep working: the
        // request's sockets wake its waits, and its timeouts are virtual, not due.
        let report = try Self.probe("url-session")
        #expect(report.values["fetched"] == "still served")
        #expect(report.number("virtual_date_error_s") == 0)
    }

    @Test func theVirtualTimeTraitRunsEachCaseOnVirtualTimeAndStopsItAfter() throws {
        // Swift Testing's own runner, in the probe's process, running TraitTests.swift.
        let report = try Self.probe("trait")
        #expect(report.number("trait_status") == 0, "the trait's test cases failed: \(report.errors.suffix(2000))")
        #expect(report.flag("running_after") == false, "the trait stopped virtual time after the last case")
        #expect((report.number("real_clock_error_s") ?? .infinity) < 1)
    }

    @Test func chaosKitFindsTheSystemPointsByTheirTypeName() {
        // PointRegistry.createLazily looks SystemPoints up by this name: a rename must
        // change both.
        #expect(_mangledTypeName(SystemPoints.self) == "10ChaosHooks12SystemPointsO")
        #expect(SystemPoints.pointNamePrefix == "system.")
        #expect(SystemPointKind.allCases.allSatisfy { $0.pointName.hasPrefix(SystemPoints.pointNamePrefix) })
    }
}
