import ChaosHooks
import ChaosKit
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The `time` group: virtual time. `date_plain_ns` is measured here again, interleaved, so
/// that `date_virtual_ns / date_plain_ns` compares figures of the same moments.
func timeGroup() throws -> Group? {
    #if os(Linux)
    SystemPoints.register()
    return Group(
        name: "time",
        metrics: [
            datePlainMetric(),
            Metric(name: "date_virtual_ns", unit: .nanoseconds, iterations: 2_000_000) { n in
                let start = Date(timeIntervalSince1970: 1_900_000_000)
                try! VirtualTime.start(at: start)
                defer { VirtualTime.stop() }
                var last = Date.distantPast
                let elapsed = timed(n) { last = Date() }
                precondition(last == start, "Date() did not read virtual time")
                blackHole(last)
                return elapsed
            },
            // One iteration: a task sleeps for an hour of virtual time, and the figure is the real
            // time from advance(by: 1 h) until the task has woken (starting and stopping virtual
            // time, and waiting for the sleep to be armed, are outside it).
            Metric(name: "virtual_hour_sleep_ms", unit: .milliseconds, iterations: 1) { n in
                var total: UInt64 = 0
                for _ in 0..<n {
                    try! VirtualTime.start()
                    let armed = VirtualTime.waitsBegun
                    let woke = DispatchSemaphore(value: 0)
                    Task {
                        try? await Task.sleep(for: .seconds(3600))
                        woke.signal()
                    }
                    while VirtualTime.waitsBegun == armed { VirtualTime.sleepInRealTime(.milliseconds(1)) }
                    let began = now()
                    try! VirtualTime.advance(by: .seconds(3600))
                    woke.wait()
                    total += now() - began
                    VirtualTime.stop()
                }
                return total
            },
        ])
    #else
    return nil
    #endif
}
