// The `.virtualTime(start:)` trait under Swift Testing's own runner, in this process of
// its own (the `trait` scenario runs it): virtual time would stop the clocks and sleeps of
// every suite running beside it in the test process.
import ChaosHooks
import ChaosTesting
import Foundation
import Testing

let traitStart = Date(timeIntervalSince1970: 2_000_000_000)  // 2033-05-18T03:33:20Z

@Suite(.serialized) struct VirtualTimeTraitTests {
    @Test(.virtualTime(start: traitStart)) func anHourOfTaskSleepUnderTheTrait() async throws {
        #expect(VirtualTime.isRunning)
        #expect(Date() == traitStart, "the clock stands still at the trait's start")
        let woke = Shared<Date?>(nil)
        let sleeper = Task {
            try await Task.sleep(for: .seconds(3600))
            woke.with { $0 = Date() }
        }
        waitForDeadline("Task.sleep", atLeast: 3600)
        try await VirtualTime.advance(by: .seconds(3600))
        try await sleeper.value
        let elapsed = try #require(woke.current).timeIntervalSince(traitStart)
        #expect(elapsed >= 3600 && elapsed < 3601, "woke at +\(elapsed) s")
    }

    @Test(.virtualTime(start: traitStart, flowing: true)) func flowingTimeUnderTheTrait() async throws {
        let first = Date()
        VirtualTime.sleepInRealTime(.milliseconds(50))
        let moved = Date().timeIntervalSince(first)
        #expect(first.timeIntervalSince(traitStart) >= 0 && first.timeIntervalSince(traitStart) < 60)
        #expect(moved >= 0.04 && moved < 30, "flowing time moved \(moved) s in 50 ms")
    }
}
