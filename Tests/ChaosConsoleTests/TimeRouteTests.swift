// Needs the console's server: runs with `swift test --traits Console`.
#if Console
@testable import ChaosControl
import ChaosKit
import Foundation
import TestHelpers
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A virtual clock of the test's own, registered as `Chaos.virtualClock`: the routes are
/// checked here without stopping this process's real clocks (real virtual time runs in
/// ConsoleClockDemo, a process of its own: CtlClockTests).
final class FakeVirtualClock: VirtualClockControl {
    /// 2030-01-01T00:00:00Z.
    static let start: Int64 = 1_893_456_000 * 1_000_000_000
    private let state = Locked((now: FakeVirtualClock.start, steps: UInt64(0), running: true))
    /// When true, an advance takes no step until it is asked to stop.
    let blocks: Bool

    init(blocks: Bool = false, running: Bool = true) {
        self.blocks = blocks
        state.withLock { $0.running = running }
    }

    func reading() -> VirtualClockReading? {
        state.withLock { state in
            guard state.running else { return nil }
            return VirtualClockReading(
                nanosecondsSince1970: state.now,
                offsetNanoseconds: state.now - Int64(Date().timeIntervalSince1970 * 1e9),
                pending: 2, stepsTaken: state.steps)
        }
    }

    func advance(byNanoseconds nanoseconds: Int64, maxSteps: Int?, shouldStop: @escaping @Sendable () -> Bool)
        throws(ChaosError) -> VirtualClockAdvance
    {
        guard state.withLock({ $0.running }) else { throw ChaosError(.notApplied, "off") }
        if blocks {
            while !shouldStop() { usleep(1_000) }
            return VirtualClockAdvance(steps: 0, reachedTarget: false)
        }
        if let maxSteps, maxSteps < 3 {
            state.withLock { $0.steps += UInt64(maxSteps) }
            return VirtualClockAdvance(steps: maxSteps, reachedTarget: false)
        }
        state.withLock {
            $0.now += nanoseconds
            $0.steps += 3
        }
        return VirtualClockAdvance(steps: 3, reachedTarget: true)
    }
}

/// `/v1/time` and `/v1/time/advance` of an in-process endpoint, against a registered clock.
/// Serialized: the registered clock is process-wide.
@Suite(.serialized) struct TimeRouteTests {
    @Test func withoutVirtualTimeTheRoutesSayHowToTurnItOn() async throws {
        Chaos.register(virtualClock: nil)
        let endpoint = try await TestEndpoint.start()
        let client = endpoint.client
        let time = try await offload { try client.virtualTime() }
        #expect(time == ControlAPI.VirtualTime(running: false))
        #expect(try await offload { try client.status() }.features.contains("time") == false)
        for clock in [nil, FakeVirtualClock(running: false)] as [FakeVirtualClock?] {
            Chaos.register(virtualClock: clock)
            let error = await #expect(throws: ControlError.self) { try await offload { try client.advance(by: "1h") } }
            #expect(error?.status == 409)
            #expect(error?.kind == "notRunning")
            #expect(error?.message.contains("VirtualTime.start()") == true, "\(String(describing: error))")
            #expect(error?.message.contains("system.clock item virtual") == true)
        }
        Chaos.register(virtualClock: nil)
        await endpoint.finish()
    }

    @Test func readsAndAdvancesVirtualTimeAsAChaosRunChildAnswers() async throws {
        let clock = FakeVirtualClock()
        Chaos.register(virtualClock: clock)
        defer { Chaos.register(virtualClock: nil) }
        let endpoint = try await TestEndpoint.start()
        let client = endpoint.client
        let time = try await offload { try client.virtualTime() }
        #expect(time.running)
        #expect(time.now == "2030-01-01T00:00:00.000Z")
        #expect(time.nanosecondsSince1970 == FakeVirtualClock.start)
        #expect((time.offsetNanoseconds ?? 0) > 0)
        #expect(time.pending == 2)
        #expect(try await offload { try client.status() }.features.contains("time"))

        let advanced = try await offload { try client.advance(by: "1h30m") }
        #expect(advanced.now == "2030-01-01T01:30:00.000Z")
        #expect(advanced.steps == 3)
        #expect(try await offload { try client.virtualTime() }.now == "2030-01-01T01:30:00.000Z")

        // A step limit that cuts the advance short says where virtual time stays.
        let limited = await #expect(throws: ControlError.self) {
            try await offload { try client.advance(by: "1h", maxSteps: 2) }
        }
        #expect(limited?.status == 409)
        #expect(limited?.kind == "stepLimit")
        #expect(limited?.message.contains("stays at 2030-01-01T01:30:00.000Z") == true)

        // Bad input is refused where it is, and moves nothing.
        let url = endpoint.console.url
        let host = String(url.dropFirst("http://".count))
        let token = endpoint.console.token
        let cases: [(String, Int, String)] = [
            ("POST /v1/time/advance?by=soon", 400, "badRequest"),
            ("POST /v1/time/advance?by=-1h", 400, "badRequest"),
            ("POST /v1/time/advance", 400, "badRequest"),
            ("POST /v1/time/advance?by=1h&steps=0", 400, "badRequest"),
            ("GET /v1/time/advance", 405, "methodNotAllowed"),
            ("POST /v1/time", 405, "methodNotAllowed"),
            ("GET /v1/time/back", 404, "notFound"),
        ]
        for (line, status, kind) in cases {
            let response = try await offload {
                try rawRequest(url, ["\(line) HTTP/1.1", "Host: \(host)", "Authorization: Bearer \(token)"])
            }
            #expect(response.status == status, "\(line)")
            #expect(errorKind(response) == kind, "\(line)")
        }
        #expect(try await offload { try client.virtualTime() }.now == "2030-01-01T01:30:00.000Z")
        await endpoint.finish()
    }

    @Test(.timeLimit(.minutes(2))) func anAdvanceUnderWayShowsItsProgressAndStopsOnRequest() async throws {
        Chaos.register(virtualClock: FakeVirtualClock(blocks: true))
        defer { Chaos.register(virtualClock: nil) }
        let endpoint = try await TestEndpoint.start()
        let client = endpoint.client
        let advance = Task { try await offload { try client.advance(by: "1d") } }
        while try await offload({ try client.status() }).advance == nil { try await Task.sleep(for: .milliseconds(5)) }
        let during = try await offload { try client.virtualTime() }
        let remaining = try #require(during.advance).remainingNanoseconds
        #expect(remaining == 86_400_000_000_000, "a day to go: the fake takes no step")

        let stopped = try await offload { try client.stopAdvance() }
        #expect(stopped.stopped == true)
        let error = await #expect(throws: ControlError.self) { try await advance.value }
        #expect(error?.status == 409)
        #expect(error?.kind == "advanceStopped")
        #expect(try await offload { try client.status() }.advance == nil)
        #expect(try await offload { try client.stopAdvance() }.stopped == false)
        await endpoint.finish()
    }
}
#endif
