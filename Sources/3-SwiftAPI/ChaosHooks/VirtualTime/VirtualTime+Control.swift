import CChaosFaults
import ChaosKit

#if canImport(Glibc)
import Glibc
#endif

/// This process's virtual time, as the control endpoint reads and steps it
/// (`Chaos.virtualClock`): registered when the `system.clock` point is made, which is how
/// both ``VirtualTime/start(at:flowing:)`` and a profile's `virtual` item switch it on.
struct VirtualTimeControl: VirtualClockControl {
    func sleepInRealTime(_ duration: Duration) {
        VirtualTime.sleepInRealTime(duration)
    }

    func reading() -> VirtualClockReading? {
        guard VirtualTime.isRunning else { return nil }
        let now = chaos_vt_reading_ns(CLOCK_REALTIME)
        return VirtualClockReading(
            nanosecondsSince1970: now, offsetNanoseconds: now &- chaos_fault_real_ns(CLOCK_REALTIME),
            pending: Int(chaos_vt_pending_count()), stepsTaken: chaos_vt_steps())
    }

    func advance(byNanoseconds nanoseconds: Int64, maxSteps: Int?, shouldStop: @escaping @Sendable () -> Bool)
        throws(ChaosError) -> VirtualClockAdvance
    {
        guard nanoseconds >= 0 else {
            throw ChaosError(
                .invalidProvider, subject: "VirtualTime", "an advance goes back; virtual time only moves forward")
        }
        guard VirtualTime.isRunning else {
            throw ChaosError(.notApplied, subject: "VirtualTime", "virtual time does not run")
        }
        let now = chaos_vt_monotonic_ns()
        let (sum, overflow) = now.addingReportingOverflow(nanoseconds)
        let target = overflow ? Int64.max : sum
        let stop = StopQuestion(shouldStop)
        let taken = withExtendedLifetime(stop) {
            chaos_vt_advance_to_unless(
                target, Int64(maxSteps ?? -1),
                { context in
                    guard let context else { return 0 }
                    return Unmanaged<StopQuestion>.fromOpaque(context).takeUnretainedValue().ask() ? 1 : 0
                }, Unmanaged.passUnretained(stop).toOpaque())
        }
        guard taken >= 0 else { throw ChaosError(.notApplied, subject: "VirtualTime", "virtual time does not run") }
        return VirtualClockAdvance(
            steps: Int(taken), reachedTarget: !VirtualTime.isRunning || chaos_vt_monotonic_ns() >= target)
    }
}

/// The `shouldStop` of one advance, passed to C as its context.
private final class StopQuestion: Sendable {
    let ask: @Sendable () -> Bool
    init(_ ask: @escaping @Sendable () -> Bool) { self.ask = ask }
}

extension VirtualTime {
    /// Registers this process's virtual time with `Chaos.virtualClock` (once).
    static let registerControl: Void = Chaos.register(virtualClock: VirtualTimeControl())
}
