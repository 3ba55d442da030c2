import CChaosClock
public import ChaosKit
public import Foundation

/// The C function a wall-clock reading comes from.
public enum ClockFunction: Int32, Sendable, Hashable {
    /// `clock_gettime(CLOCK_REALTIME / CLOCK_REALTIME_COARSE, …)` (what `Date()` uses).
    case clockGettime = 0
    /// `gettimeofday`.
    case gettimeofday = 1
    /// `time`.
    case time = 2
}

/// One wall-clock reading, as the `system.clock` point sees it.
public struct ClockReading: Sendable, Hashable {
    /// Which function is reading the clock.
    public let function: ClockFunction
    /// The `clockid_t` asked for (`CLOCK_REALTIME` for `gettimeofday` and `time`).
    public let clock: Int32
    /// The real time, in nanoseconds since 1970.
    public let realNanoseconds: Int64

    /// The real time as a `Date`.
    public var realDate: Date { Date(timeIntervalSince1970: Double(realNanoseconds) / 1e9) }
}

/// What the `system.clock` point answers for a reading: which time to report.
///
/// A global `.constant(rule)` runs entirely in C (no Swift, no libffi per call); every other
/// provider — blocks, sequences, modifiers, task scopes — is asked per reading.
public enum ClockRule: Sendable, Hashable, RandomChaosValue, CustomStringConvertible {
    /// The real time.
    case real
    /// The real time plus this many nanoseconds (negative: the past).
    case offset(nanoseconds: Int64)
    /// Always this instant (nanoseconds since 1970).
    case frozen(nanosecondsSince1970: Int64)
    /// Time runs `factor` times as fast from the real instant `since` (ns since 1970) on.
    case speed(factor: Double, since: Int64)

    /// The real time shifted by `seconds`.
    public static func offset(seconds: Double) -> ClockRule { .offset(nanoseconds: Int64(seconds * 1e9)) }

    /// Always `date`.
    public static func frozen(at date: Date) -> ClockRule {
        .frozen(nanosecondsSince1970: Int64((date.timeIntervalSince1970 * 1e9).rounded()))
    }

    /// Time runs `factor` times as fast from now on (0.5: half speed, 60: a minute a second).
    public static func speed(_ factor: Double) -> ClockRule { .speed(factor: factor, since: chaos_clock_real_ns()) }

    /// The time to report for the real time `real` (ns since 1970).
    public func reported(forReal real: Int64) -> Int64 {
        switch self {
        case .real: real
        case .offset(let offset): real &+ offset
        case .frozen(let instant): instant
        case .speed(let factor, let since): since &+ Int64((Double(real &- since) * factor).rounded())
        }
    }

    /// A frozen instant within ±10,000 days of 2025-01-01 (as random `Date`s are).
    public static func randomChaosValue(using source: inout SeededRandom) -> ClockRule {
        .frozen(at: Date.randomChaosValue(using: &source))
    }

    /// E.g. `offset(-3600.0s)`.
    public var description: String {
        switch self {
        case .real: "real"
        case .offset(let ns): "offset(\(Double(ns) / 1e9)s)"
        case .frozen(let ns): "frozen(\(Date(timeIntervalSince1970: Double(ns) / 1e9)))"
        case .speed(let factor, _): "speed(×\(factor))"
        }
    }
}

extension SystemPoints {
    /// Builds the `system.clock` point and its catalogue (the same parameters as
    /// `clock.now`'s items of the same names).
    static func makeClock() -> InjectionPoint<ClockReading, ClockRule, Never> {
        InjectionPoint<ClockReading, ClockRule, Never>("system.clock", catalogue: [
            CatalogueItem("offset", "the real time, moved", parameters: ClockOffset.catalogueParameters) { parameters in
                SystemClockProvider.offset(by: try ClockOffset(parameters: parameters))
            },
            CatalogueItem("frozen", "time stands still", parameters: [.date("date", "the instant the clock shows")]) { parameters in
                SystemClockProvider.frozen(at: try parameters.date("date"))
            },
            CatalogueItem("speed", "time runs faster or slower from the apply instant", parameters: [
                .number("factor", "how many times as fast as real time (0 stops it, negative runs it back)"),
            ]) { parameters in
                SystemClockProvider.speed(try parameters.double("factor"))
            },
            CatalogueItem("jump", "the real time, then a jump after some readings", parameters: [
                .offset("by", "how far the clock jumps, e.g. \"+2h\""),
                .integer("after", "how many readings stay real first", default: 1, range: 0...1_000_000_000),
            ]) { parameters in
                SystemClockProvider.jump(by: try parameters.offset("by"), after: try parameters.int("after"))
            },
        ], activation: ClockActivation()) { _ in .real }
    }
}

/// Typed providers for `system.clock`, the same as its catalogue items:
/// `SystemPoints.clock.entry(.offset(by: try ClockOffset.parse("-30y")))`.
public typealias SystemClockProvider = ChaosProvider<ClockReading, ClockRule, Never>

extension ChaosProvider where Arguments == ClockReading, Result == ClockRule, Failure == Never {
    /// The real time moved by `offset`, as it stands when the entry is made (calendar
    /// years and months vary in length): item `offset`. Runs in C, without Swift per call.
    public static func offset(by offset: ClockOffset) -> Self {
        .constant(.offset(seconds: offset.seconds(from: Date())))
    }

    /// Time stands still at `date`: item `frozen`.
    public static func frozen(at date: Date) -> Self {
        .constant(.frozen(at: date))
    }

    /// Time runs `factor` times as fast from now on: item `speed`.
    public static func speed(_ factor: Double) -> Self {
        .constant(.speed(factor))
    }

    /// The real time for `after` readings, then moved by `offset`: item `jump`.
    public static func jump(by offset: ClockOffset, after readings: Int) -> Self {
        let rule = ClockRule.offset(seconds: offset.seconds(from: Date()))
        return .block { env in env.callIndex < readings ? .real : rule }
    }
}

/// Patches `clock_gettime`, `gettimeofday` and `time` to CChaosELF's typed C hooks while
/// `system.clock` is in use, and mirrors the point into their configuration: a global
/// constant rule is published as such; anything else makes them ask Swift per reading.
final class ClockActivation: PointActivation {
    /// Created on first activation, then kept (the point is process-wide and immortal).
    private let binder = Locked<BinderGroup?>(nil)

    func activate() throws(ChaosError) {
        try binder.withLock { (binder: inout BinderGroup?) throws(ChaosError) in
            let group: BinderGroup
            if let existing = binder { group = existing } else { group = try Self.makeBinder() }
            binder = group
            chaos_clock_configure(Int32(CHAOS_CLOCK_REAL), 0, 0, 1)
            chaos_clock_set_ask(clockAsk)
            try group.bind()
        }
    }

    func deactivate() {
        let group = binder.withLock { $0 }
        chaos_clock_configure(Int32(CHAOS_CLOCK_REAL), 0, 0, 1)
        do throws(ChaosError) {
            try group?.unbind()
        } catch {
            HookActivation.logger.warning("system.clock revert reported a problem", metadata: ["error": "\(error)"])
        }
    }

    func changed() {
        switch SystemPoints.clock.currentBehaviour {
        case .original, .constant(.real):
            chaos_clock_configure(Int32(CHAOS_CLOCK_REAL), 0, 0, 1)
        case .constant(.offset(let offset)):
            let (seconds, nanoseconds) = offset.quotientAndRemainder(dividingBy: 1_000_000_000)
            let positive = nanoseconds < 0 ? (seconds - 1, nanoseconds + 1_000_000_000) : (seconds, nanoseconds)
            chaos_clock_configure(Int32(CHAOS_CLOCK_OFFSET), positive.0, positive.1, 1)
        case .constant(.frozen(let instant)):
            chaos_clock_configure(Int32(CHAOS_CLOCK_FROZEN), instant, 0, 1)
        case .constant(.speed(let factor, let since)):
            chaos_clock_configure(Int32(CHAOS_CLOCK_SPEED), since, since, factor)
        case .varying:
            chaos_clock_configure(Int32(CHAOS_CLOCK_ASK), 0, 0, 1)
        }
    }

    private static func makeBinder() throws(ChaosError) -> BinderGroup {
        guard chaos_clock_init() == 0 else {
            throw ChaosError(.unsupportedPlatform, subject: "system.clock", "the real clock functions could not be found (needs Linux/glibc); use a protocol injection point for time instead")
        }
        var members: [(binder: any HookBinder, optional: Bool)] = []
        for (symbol, function) in [("clock_gettime", CHAOS_CLOCK_FN_CLOCK_GETTIME), ("gettimeofday", CHAOS_CLOCK_FN_GETTIMEOFDAY), ("time", CHAOS_CLOCK_FN_TIME)] {
            guard let target = chaos_clock_hook(Int32(function)) else { continue }
            members.append((try SymbolRebinding(symbol: symbol, rawTarget: target), true))
        }
        return BinderGroup(subject: "system.clock", members)
    }
}

/// Called by the C clock hooks in "ask" mode: the point decides the reading.
private let clockAsk: chaos_clock_ask_fn = { function, clock, real in
    let reading = ClockReading(function: ClockFunction(rawValue: function) ?? .clockGettime, clock: clock, realNanoseconds: real)
    return SystemPoints.clock(reading).reported(forReal: real)
}

/// The C fast path's state, for tests and diagnostics.
enum ClockFastPath {
    /// The real CLOCK_REALTIME in ns since 1970, whatever is hooked.
    static var realNanoseconds: Int64 { chaos_clock_real_ns() }
    /// Whether the C hooks currently report the real time without asking anything.
    static var isReal: Bool { chaos_clock_mode() == Int32(CHAOS_CLOCK_REAL) }
}
