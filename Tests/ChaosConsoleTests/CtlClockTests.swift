// Needs the console's server: runs with `swift test --traits Console`.
#if Console
import ChaosControl
import Foundation
import TestHelpers
import Testing

/// `chaos ctl advance PID` against an in-process program on virtual time (the built
/// ConsoleClockDemo: virtual time is process-wide, so it runs in a process of its own).
@Suite struct CtlClockTests {
    @Test func chaosCtlAdvanceWakesAnInProcessSleepOnlyWhenAdvanced() async throws {
        let demo = try RunningDemo(executable: "ConsoleClockDemo")
        defer { demo.stop() }
        _ = try await demo.line(containing: "2030-01-01T00:00:00Z waiting 1h (1)")
        let endpoint = try ControlEndpoint.find(pid: demo.pid, in: demo.directory)
        let client = ControlClient(endpoint, timeout: testTimeout)
        let time = try await offload { try client.virtualTime() }
        #expect(time.running)
        #expect(time.now == "2030-01-01T00:00:00.000Z")
        #expect((time.pending ?? 0) >= 1, "the hour's sleep waits: \(time)")

        // Real time passes; the virtual hour does not.
        try await Task.sleep(for: .milliseconds(300))
        #expect(!demo.output.contains { $0.contains("woke") }, "\(demo.output)")

        let advanced = try await demo.ctl("advance", "\(demo.pid)", "1h")
        #expect(advanced.status == 0, "\(advanced.errors)")
        #expect(advanced.output.contains("\(demo.pid): virtual time 2030-01-01T01:00:00.000Z after "), "\(advanced)")
        _ = try await demo.line(containing: "2030-01-01T01:00:00Z woke (1)")
        _ = try await demo.line(containing: "2030-01-01T01:00:00Z waiting 1h (2)")
        #expect(!demo.output.contains { $0.contains("woke (2)") })
    }

    /// Reverting every entry keeps the program's virtual time (its hour-long sleep would go
    /// on in real time), says so, and reverts it only when told to (`--include-clock`,
    /// `includeClock=true`).
    @Test func revertingEveryEntryKeepsTheClockUnlessTold() async throws {
        let demo = try RunningDemo(executable: "ConsoleClockDemo")
        defer { demo.stop() }
        _ = try await demo.line(containing: "2030-01-01T00:00:00Z waiting 1h (1)")
        let endpoint = try ControlEndpoint.find(pid: demo.pid, in: demo.directory)
        let client = ControlClient(endpoint, timeout: testTimeout)
        let clock = try #require(try await offload { try client.entries() }.first { $0.point == "system.clock" })
        let other = try await offload {
            try client.apply(
                profile: Data(#"{"entries": [{"point": "clock-demo.later", "provider": "original"}]}"#.utf8))
        }.entries

        let reverted = try await demo.ctl("revert", "\(demo.pid)")
        #expect(reverted.status == 0, "\(reverted.errors)")
        #expect(
            reverted.output.hasPrefix("reverted \(other.map { "#\($0)" }.joined(separator: ", ")); "), "\(reverted)")
        #expect(reverted.output.contains("kept #\(clock.id) system.clock ← "), "\(reverted.output)")
        #expect(reverted.output.contains("its waits go on in real time if it is reverted"), "\(reverted.output)")
        #expect(reverted.output.contains("--include-clock"), "\(reverted.output)")
        #expect(try await offload { try client.entries() }.map(\.id) == [clock.id])

        // Still on virtual time: the hour's sleep ends with an advance, not before.
        #expect(!demo.output.contains { $0.contains("woke") })
        let advanced = try await demo.ctl("advance", "\(demo.pid)", "1h")
        #expect(advanced.status == 0, "\(advanced.errors)")
        _ = try await demo.line(containing: "2030-01-01T01:00:00Z woke (1)")

        // Over the wire the answer names what it kept and why.
        let answer = try await offload { try client.revertAll() }
        #expect(answer.entries.isEmpty && answer.kept == [clock.id], "\(answer)")
        #expect(answer.note?.contains("waits go on in real time") == true, "\(answer)")

        let all = try await demo.ctl("revert", "\(demo.pid)", "--include-clock")
        #expect(all.output == "reverted #\(clock.id)\n", "\(all)")
        #expect(try await offload { try client.virtualTime() }.running == false)
    }

    /// `CHAOS_CONTROL_WAIT` in a program on virtual time: `chaos ctl go` reaches it, and
    /// without a go its bound ends in real time. Neither waits for the clock that stands
    /// still (the wait used to poll with `Task.sleep`, which virtual time holds, and measure
    /// its bound on the virtual clock: it never ended).
    @Test func aProgramOnVirtualTimeGetsItsGoAndItsBound() async throws {
        let demo = try RunningDemo(executable: "ConsoleClockDemo", wait: true)
        defer { demo.stop() }
        var waiting = false
        for _ in 0..<2_000 where !waiting {
            if let endpoint = try? ControlEndpoint.find(pid: demo.pid, in: demo.directory) {
                let client = ControlClient(endpoint, timeout: testTimeout)
                waiting = (try? await offload { try client.status() })?.waiting ?? false
            }
            if !waiting { try await Task.sleep(for: .milliseconds(5)) }
        }
        #expect(waiting, "the demo never waited for go")
        #expect(!demo.output.contains { $0.hasPrefix("ready") }, "it goes on only after the go")
        let go = try await demo.ctl("go", "\(demo.pid)")
        #expect(go.status == 0, "\(go.errors)")
        _ = try await demo.line(containing: "2030-01-01T00:00:00Z waiting 1h (1)")

        let started = ContinuousClock.now
        let alone = try RunningDemo(
            executable: "ConsoleClockDemo",
            environment: ["CHAOS_CONTROL_WAIT": "1", "CHAOS_CONTROL_WAIT_TIMEOUT": "1s"])
        defer { alone.stop() }
        _ = try await alone.line(containing: "2030-01-01T00:00:00Z waiting 1h (1)")
        let waited = ContinuousClock.now - started
        #expect(waited >= .milliseconds(900), "it waited its bound of real time first: \(waited)")
    }

    @Test func chaosCtlAdvanceRefusesAProgramOffVirtualTimeAndSaysHowToTurnItOn() async throws {
        let demo = try RunningDemo(executable: "ConsoleClockDemo", environment: ["CHAOS_DEMO_REAL_TIME": "1"])
        defer { demo.stop() }
        _ = try await demo.line(containing: "waiting 1h (1)")
        let advanced = try await demo.ctl("advance", "\(demo.pid)", "1h")
        #expect(advanced.status != 0)
        #expect(advanced.errors.contains("does not run on virtual time"), "\(advanced)")
        #expect(advanced.errors.contains("VirtualTime.start()"), "\(advanced)")
        #expect(!demo.output.contains { $0.contains("woke") })
    }
}
#endif
