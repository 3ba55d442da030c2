public import ChaosKit
public import Foundation

// MARK: - Wall clock

/// What the program asks of the wall clock. Depend on this instead of calling `Date()`,
/// and give it a ``ChaosWallClock`` so that chaos can change what time it is.
public protocol WallClock: Sendable {
    /// The current date and time.
    var now: Date { get }
    /// The time zone dates are shown in (defaults to `TimeZone.current`).
    var timeZone: TimeZone { get }
}

extension WallClock {
    /// `TimeZone.current`.
    public var timeZone: TimeZone { .current }
}

/// The real wall clock: `Date()` and `TimeZone.current`, without chaos.
public struct LiveWallClock: WallClock {
    /// The real clock.
    public init() {}
    /// `Date()`.
    public var now: Date { Date() }
}

/// A wall clock that reads through the injection points ``ChaosClock/now`` and
/// ``ChaosClock/timeZone``: the real time and zone unless chaos says otherwise.
public struct ChaosWallClock: WallClock {
    /// The chaos-aware clock.
    public init() {}
    /// `clock.now`: `Date()` or what chaos makes of it.
    public var now: Date { ChaosClock.now() }
    /// `clock.timeZone`: `TimeZone.current` or what chaos makes of it.
    public var timeZone: TimeZone { ChaosClock.timeZone() }
}

// MARK: - Edge dates

/// Dates that break date code: leap days, year ends, daylight-saving changes, overflow limits.
public enum ClockEdge: String, CaseIterable, Sendable {
    /// 2024-02-29T12:00:00Z, a leap day.
    case feb29 = "feb29"
    /// 2026-12-31T23:59:59Z, the last second of a year.
    case newYearEve = "new-year-eve"
    /// 2026-03-29T01:00:00Z, when Europe/London springs forward (01:00 GMT → 02:00 BST).
    case dstSpring = "dst-spring"
    /// 2026-10-25T01:00:00Z, when Europe/London falls back (02:00 BST → 01:00 GMT).
    case dstFall = "dst-fall"
    /// 2026-03-08T07:00:00Z, when America/New_York springs forward (02:00 EST → 03:00 EDT).
    case dstSpringUS = "dst-spring-us"
    /// 2026-11-01T06:00:00Z, when America/New_York falls back (02:00 EDT → 01:00 EST).
    case dstFallUS = "dst-fall-us"
    /// 2038-01-19T03:14:08Z, one second past the largest signed 32-bit `time_t`.
    case y2038 = "y2038"
    /// 1970-01-01T00:00:00Z, the Unix epoch (time 0).
    case epoch = "epoch"
    /// 9999-12-31T23:59:59Z, the last second four-digit years can show.
    case year9999 = "year9999"

    /// The edge instant.
    public var date: Date {
        let text =
            switch self {
            case .feb29: "2024-02-29T12:00:00Z"
            case .newYearEve: "2026-12-31T23:59:59Z"
            case .dstSpring: "2026-03-29T01:00:00Z"
            case .dstFall: "2026-10-25T01:00:00Z"
            case .dstSpringUS: "2026-03-08T07:00:00Z"
            case .dstFallUS: "2026-11-01T06:00:00Z"
            case .y2038: "2038-01-19T03:14:08Z"
            case .epoch: "1970-01-01T00:00:00Z"
            case .year9999: "9999-12-31T23:59:59Z"
            }
        return ISO8601Date.parse(text)!
    }

    /// The zone in which the edge is an edge (the DST ones' zones; UTC for the others).
    public var timeZoneIdentifier: String {
        switch self {
        case .dstSpring, .dstFall: "Europe/London"
        case .dstSpringUS, .dstFallUS: "America/New_York"
        default: "UTC"
        }
    }
}

// MARK: - Sleeping

/// One sleep as the `clock.sleep` point sees it: how long, and how to really sleep.
public struct SleepRequest: Sendable {
    /// How long the caller asked to sleep.
    public let duration: Duration
    /// The tolerance the caller gave.
    public let tolerance: Duration?
    let perform: @Sendable (Duration, Duration?) async throws -> Void

    /// A request to sleep `duration`; `perform` really sleeps for the duration it is given.
    public init(
        duration: Duration, tolerance: Duration? = nil,
        perform: @escaping @Sendable (Duration, Duration?) async throws -> Void
    ) {
        self.duration = duration
        self.tolerance = tolerance
        self.perform = perform
    }

    /// Really sleeps, for `duration` instead of the requested length.
    public func sleep(for duration: Duration) async throws {
        try await perform(duration, tolerance)
    }
}

/// What a sleep throws when chaos makes it fail (catalogue item `"fail"`).
public struct SleepChaosError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Why the sleep failed.
    public let message: String
    /// A sleep failure with a message.
    public init(_ message: String = "the sleep failed because chaos made it fail") { self.message = message }
    /// The message.
    public var description: String { message }
}

/// A `Clock` whose sleeps go through the async point ``ChaosClock/sleep`` (`clock.sleep`), so
/// chaos can skip them, stretch them or make them fail. Time itself (`now`) is the base's.
///
/// Use it wherever `any Clock<Duration>` is taken:
/// ```swift
/// let clock: any Clock<Duration> = ChaosSleepClock(ContinuousClock())
/// try await clock.sleep(for: .seconds(30))   // instant under ChaosClock.skippedSleeps
/// ```
public struct ChaosSleepClock<Base: Clock>: Clock where Base.Duration == Swift.Duration {
    /// The clock that tells the time and really sleeps.
    public let base: Base

    /// A chaos-aware clock over `base`.
    public init(_ base: Base) { self.base = base }

    /// The base clock's now.
    public var now: Base.Instant { base.now }

    /// The base clock's resolution.
    public var minimumResolution: Swift.Duration { base.minimumResolution }

    /// Sleeps until `deadline` through the `clock.sleep` point.
    public func sleep(until deadline: Base.Instant, tolerance: Swift.Duration? = nil) async throws {
        let base = self.base
        let request = SleepRequest(duration: base.now.duration(to: deadline), tolerance: tolerance) {
            duration, tolerance in
            try await base.sleep(until: base.now.advanced(by: duration), tolerance: tolerance)
        }
        try await ChaosClock.sleep(request)
    }
}

extension ChaosSleepClock where Base == ContinuousClock {
    /// A chaos-aware `ContinuousClock`.
    public init() { self.init(ContinuousClock()) }
}

// MARK: - Points and catalogue

/// The built-in clock points and their chaos catalogue.
///
/// | point | catalogue items (parameters) |
/// |---|---|
/// | `clock.now` | `frozen` (date), `offset` (by, or years, months, days, hours, minutes, seconds), `speed` (factor), `random-date` (days = 10000, around = 2025-01-01), `backwards` (step = 1), `edge` (name, lead = 0, running = false) |
/// | `clock.timeZone` | `timezone` (identifier), `random-timezone` |
/// | `clock.sleep` | `skip`, `stretch` (factor), `fail` (cancellation = false) |
///
/// Every parameter is declared (`chaos list` shows them, with types, units and defaults).
/// Dates are ISO-8601 strings (or seconds since 1970); offsets and durations use the one
/// grammar of `DurationText`. The first parameter of each item is the one the
/// `CHAOS` grammar's unnamed value fills (`clock.now=offset(-1d)`, `clock.now=edge(y2038)`).
public enum ChaosClock {
    /// Providers of `clock.now`.
    public typealias NowProvider = ChaosProvider<Void, Date, Never>
    /// Providers of `clock.timeZone`.
    public typealias TimeZoneProvider = ChaosProvider<Void, TimeZone, Never>
    /// Providers of `clock.sleep`.
    public typealias SleepProvider = AsyncChaosProvider<SleepRequest, Void, any Error>

    /// `clock.now`: the current date; the original is `Date()`.
    public static let now: InjectionPoint<Void, Date, Never> = InjectionPoint(
        "clock.now",
        catalogue: [
            CatalogueItem("frozen", "time stands still", parameters: [.date("date", "the instant the clock shows")]) {
                parameters in
                frozen(at: try parameters.date("date"))
            },
            CatalogueItem("offset", "the real time, moved", parameters: ClockOffset.catalogueParameters) { parameters in
                offset(by: try ClockOffset(parameters: parameters))
            },
            CatalogueItem(
                "speed", "time runs faster or slower from the apply instant",
                parameters: [
                    .number("factor", "how many times as fast as real time (0 stops it, negative runs it back)")
                ]
            ) { parameters in
                speed(factor: try parameters.double("factor"))
            },
            CatalogueItem(
                "random-date", "a random date on every read, from the seed",
                parameters: [
                    .integer(
                        "days", "how far from the centre, either way", unit: "days", default: 10_000,
                        range: 0...1_000_000),
                    .date("around", "the centre of the range", default: RandomGenerator<Date>.defaultCentre),
                ]
            ) { parameters in
                randomDate(withinDays: try parameters.int("days"), of: try parameters.date("around"))
            },
            CatalogueItem(
                "backwards", "every read earlier than the one before",
                parameters: [
                    .number(
                        "step", "how much earlier each read is", unit: "seconds", default: 1, range: 0.000_001...1e12)
                ]
            ) { parameters in
                backwards(step: try parameters.double("step"))
            },
            CatalogueItem(
                "edge", "a date that breaks date code",
                parameters: [
                    .choice("name", "which edge", ClockEdge.allCases.map(\.rawValue)),
                    .number(
                        "lead", "how long before the edge the clock stands", unit: "seconds", default: 0,
                        range: 0...1e12),
                    .boolean("running", "whether the clock runs on from there at real speed", default: false),
                ]
            ) { parameters in
                edge(
                    ClockEdge(rawValue: try parameters.string("name"))!, lead: try parameters.double("lead"),
                    running: try parameters.bool("running"))
            },
        ]
    ) { Date() }

    /// `clock.timeZone`: the time zone; the original is `TimeZone.current`.
    public static let timeZone: InjectionPoint<Void, TimeZone, Never> = InjectionPoint(
        "clock.timeZone",
        catalogue: [
            CatalogueItem(
                "timezone", "the program lives in another zone",
                parameters: [
                    .string("identifier", "an IANA time zone such as \"Asia/Kathmandu\"")
                ]
            ) { parameters in
                let identifier = try parameters.string("identifier")
                guard let zone = TimeZone(identifier: identifier) else {
                    throw parameters.invalid(
                        "'\(identifier.prefix(80))' is not a known time zone; give an IANA identifier such as \"Asia/Kathmandu\" or \"Pacific/Kiritimati\"",
                        parameter: "identifier"
                    )
                }
                return timeZone(zone)
            },
            CatalogueItem("random-timezone", "a random known zone on every read") { _ in randomTimeZone },
        ]
    ) { TimeZone.current }

    /// `clock.sleep`: every sleep of a ``ChaosSleepClock``; the original really sleeps.
    public static let sleep: AsyncInjectionPoint<SleepRequest, Void, any Error> = AsyncInjectionPoint(
        "clock.sleep",
        catalogue: [
            CatalogueItem("skip", "sleeps return at once") { _ in skippedSleeps },
            CatalogueItem(
                "stretch", "sleeps last longer or shorter",
                parameters: [
                    .number("factor", "how many times as long as asked", range: 0...1_000_000)
                ]
            ) { parameters in
                stretchedSleeps(factor: try parameters.double("factor"))
            },
            CatalogueItem(
                "fail", "sleeps throw at once",
                parameters: [
                    .boolean("cancellation", "throw CancellationError instead of SleepChaosError", default: false)
                ]
            ) { parameters in
                try parameters.bool("cancellation") ? failingSleeps(CancellationError()) : failingSleeps()
            },
        ]
    ) { request in
        try await request.perform(request.duration, request.tolerance)
    }

    // MARK: clock.now providers

    /// Time stands still at `date` (`"frozen"`).
    public static func frozen(at date: Date) -> NowProvider { .constant(date) }

    /// The real time moved by `offset` (`"offset"`).
    public static func offset(by offset: ClockOffset) -> NowProvider {
        .block { env in offset.applied(to: env.callOriginal()) }
    }

    /// The real time moved by `seconds` (`"offset"`).
    public static func offset(by seconds: TimeInterval) -> NowProvider {
        offset(by: ClockOffset(seconds: seconds))
    }

    /// Time runs `factor` times as fast from `start` on (`"speed"`): at `start` the clock is
    /// right, `t` real seconds later it reads `start + factor·t`. 0 stops time; negative runs it back.
    /// The catalogue item starts at the apply instant; the factory at the instant it is called
    /// unless given `start`.
    public static func speed(factor: Double, from start: Date = Date()) -> NowProvider {
        .block { env in start.addingTimeInterval(env.callOriginal().timeIntervalSince(start) * factor) }
    }

    /// The default centre of ``randomDate(withinDays:of:)``: 2025-01-01T00:00:00Z. Fixed, not
    /// "now", so that a seed gives the same dates on every run (see
    /// `RandomGenerator/defaultCentre`).
    public static let randomDateCentre = RandomGenerator<Date>.defaultCentre

    /// A random date within ±`days` days of `reference`, a new one on every read (`"random-date"`;
    /// Dixie's example used ±10,000 days). Drawn from the seeded source.
    public static func randomDate(withinDays days: Int = 10_000, of reference: Date = randomDateCentre) -> NowProvider {
        .random(.date(withinDays: abs(days), of: reference))
    }

    /// Each read is `step` seconds earlier than the one before, starting `step` before `start`
    /// (`"backwards"`).
    public static func backwards(step: TimeInterval, from start: Date = Date()) -> NowProvider {
        let step = abs(step) > 0 ? abs(step) : 1
        return .block { env in start.addingTimeInterval(-Double(env.callIndex + 1) * step) }
    }

    /// Each read a second earlier than the one before (`"backwards"`).
    public static var backwards: NowProvider { backwards(step: 1) }

    /// The clock stands at `lead` seconds before `edge` (`"edge"`); with `running`, it starts
    /// there and runs at real speed, so the program crosses the edge `lead` seconds later.
    public static func edge(_ edge: ClockEdge, lead: TimeInterval = 0, running: Bool = false) -> NowProvider {
        let start = edge.date.addingTimeInterval(-lead)
        guard running else { return .constant(start) }
        let realStart = Date()
        return .block { env in start.addingTimeInterval(env.callOriginal().timeIntervalSince(realStart)) }
    }

    // MARK: clock.timeZone providers

    /// The program lives in `zone` (`"timezone"`).
    public static func timeZone(_ zone: TimeZone) -> TimeZoneProvider { .constant(zone) }

    /// A random known time zone on every read, from the seeded source (`"random-timezone"`).
    public static var randomTimeZone: TimeZoneProvider {
        let identifiers = TimeZone.knownTimeZoneIdentifiers.sorted()
        return .random(
            RandomGenerator { source in
                identifiers.isEmpty
                    ? TimeZone(secondsFromGMT: 0)!
                    : TimeZone(identifier: identifiers[Int.random(in: 0..<identifiers.count, using: &source)])
                        ?? TimeZone(secondsFromGMT: 0)!
            })
    }

    // MARK: clock.sleep providers

    /// Sleeps return at once (`"skip"`).
    public static var skippedSleeps: SleepProvider { .block { _ in } }

    /// Sleeps last `factor` times as long as asked (`"stretch"`).
    public static func stretchedSleeps(factor: Double) -> SleepProvider {
        .block { env in try await env.arguments.sleep(for: env.arguments.duration * factor) }
    }

    /// Sleeps throw `error` at once (`"fail"`; with `cancellation: true` a `CancellationError`).
    public static func failingSleeps(_ error: any Error = SleepChaosError()) -> SleepProvider {
        .throwing(error)
    }
}
