import Foundation

/// Virtual time as a control endpoint reads and steps it, without knowing who runs it.
///
/// ChaosKit knows nothing of hooks: ChaosHooks runs virtual time (`VirtualTime`) and
/// registers its control here when it makes the `system.clock` point; the control endpoint
/// (ChaosConsole) reads ``Chaos/virtualClock`` to serve `/v1/time` and
/// `/v1/time/advance`. A test may register a control of its own.
public protocol VirtualClockControl: Sendable {
    /// Where virtual time is now; nil when it does not run.
    func reading() -> VirtualClockReading?

    /// Moves virtual time forward by `nanoseconds`, through every deadline on the way, in
    /// at most `maxSteps` steps (nil: no limit), asking `shouldStop` before each step.
    /// Blocks the calling thread until the last step was taken. Throws `notApplied` when
    /// virtual time does not run.
    func advance(byNanoseconds nanoseconds: Int64, maxSteps: Int?, shouldStop: @escaping @Sendable () -> Bool)
        throws(ChaosError) -> VirtualClockAdvance

    /// Blocks the calling thread for `duration` of real time, however virtual time moves:
    /// for the endpoint's own bounds (how long it waits for a controller's go), which must
    /// not wait for the clock the program is steered by.
    func sleepInRealTime(_ duration: Duration)
}

extension VirtualClockControl {
    /// `Thread.sleep`: right for a control whose virtual time leaves the process's sleeps
    /// alone.
    public func sleepInRealTime(_ duration: Duration) {
        threadSleep(duration)
    }
}

private func threadSleep(_ duration: Duration) {
    let (seconds, attoseconds) = duration.components
    Thread.sleep(forTimeInterval: Double(seconds) + Double(attoseconds) / 1e18)
}

/// A reading of virtual time.
public struct VirtualClockReading: Sendable, Hashable {
    /// The virtual wall-clock time.
    public var nanosecondsSince1970: Int64
    /// How far the virtual wall clock is ahead of the real one (negative: behind).
    public var offsetNanoseconds: Int64
    /// Sleeps and timers waiting for virtual time.
    public var pending: Int
    /// Steps every advance has taken since the process started (a progress counter).
    public var stepsTaken: UInt64

    /// A reading.
    public init(nanosecondsSince1970: Int64, offsetNanoseconds: Int64, pending: Int, stepsTaken: UInt64) {
        self.nanosecondsSince1970 = nanosecondsSince1970
        self.offsetNanoseconds = offsetNanoseconds
        self.pending = pending
        self.stepsTaken = stepsTaken
    }
}

/// What an advance of virtual time did.
public struct VirtualClockAdvance: Sendable, Hashable {
    /// The deadlines it stepped through.
    public var steps: Int
    /// Whether it got as far as it was asked (false: stopped, or cut short by its step limit).
    public var reachedTarget: Bool

    /// An advance's outcome.
    public init(steps: Int, reachedTarget: Bool) {
        self.steps = steps
        self.reachedTarget = reachedTarget
    }
}

extension Chaos {
    /// The registered control of this process's virtual time (nil: none registered, e.g.
    /// ChaosHooks is not linked or has not made its clock point yet).
    public static var virtualClock: (any VirtualClockControl)? { VirtualClockRegistry.control.withLock { $0 } }

    /// Blocks the calling thread for `duration` of real time, whatever virtual time does:
    /// through the registered ``virtualClock``, or `Thread.sleep` when none is.
    public static func sleepInRealTime(_ duration: Duration) {
        if let clock = virtualClock { clock.sleepInRealTime(duration) } else { threadSleep(duration) }
    }

    /// Registers the control of this process's virtual time (it replaces the one before);
    /// nil removes it. ChaosHooks registers its own; tests may register another.
    public static func register(virtualClock control: (any VirtualClockControl)?) {
        VirtualClockRegistry.control.withLock { $0 = control }
    }
}

/// Where ``Chaos/register(virtualClock:)`` keeps the control; `Locked` guards it.
private enum VirtualClockRegistry {
    static let control = Locked<(any VirtualClockControl)?>(nil)
}
