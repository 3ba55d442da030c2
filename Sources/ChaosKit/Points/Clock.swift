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

// MARK: - Offsets

/// How far to move the clock: calendar years and months (Gregorian, UTC) plus seconds.
///
/// Parse the compact form profiles use with ``parse(_:)``: `"-1d"`, `"+30y"`, `"90m"`,
/// `"1d12h"`, `"-2mo"`, `"1.5h"` (units `y`, `mo`, `w`, `d`, `h`, `m`, `s`; one sign for all).
public struct ClockOffset: Sendable, Hashable, CustomStringConvertible {
    /// Calendar years to add (negative to go back).
    public var years: Int
    /// Calendar months to add.
    public var months: Int
    /// Seconds to add (days, hours and minutes are folded in here; a day is 86,400 s).
    public var seconds: Double

    /// An offset made of calendar years and months and fixed-length days, hours, minutes, seconds.
    public init(years: Int = 0, months: Int = 0, days: Double = 0, hours: Double = 0, minutes: Double = 0, seconds: Double = 0) {
        self.years = years
        self.months = months
        self.seconds = days * 86_400 + hours * 3_600 + minutes * 60 + seconds
    }

    /// `date` moved by this offset (years and months first, on the Gregorian calendar in UTC).
    public func applied(to date: Date) -> Date {
        var moved = date
        if years != 0 || months != 0 {
            moved = Self.calendar.date(byAdding: DateComponents(year: years, month: months), to: date) ?? date
        }
        return moved.addingTimeInterval(seconds)
    }

    /// The offset in seconds as it stands at `now` (calendar years and months vary in length).
    public func seconds(from now: Date) -> TimeInterval {
        applied(to: now).timeIntervalSince(now)
    }

    /// The compact offset in parameter `name` (e.g. `"value": "-30y"`) in seconds as it
    /// stands at `now`: "-30y" is today's date thirty years ago, leap days included.
    public static func seconds(
        _ name: String, in parameters: ProfileParameters, from now: Date = Date()
    ) throws(ChaosError) -> TimeInterval {
        let text = try parameters.string(name)
        do {
            return try parse(text).seconds(from: now)
        } catch {
            throw ChaosError(.invalidProvider, subject: parameters.context, "'\(name)' is \"\(text)\": \(error.message)")
        }
    }

    /// A readable rendering for logs, e.g. `"30y 0mo -5.0s"`.
    public var description: String { "\(years)y \(months)mo \(seconds)s" }

    private static let calendar: Calendar = {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(secondsFromGMT: 0)!
        return calendar
    }()

    /// Reads the compact form (`"-1d"`, `"+30y"`, `"90m"`, `"1d12h"`); the error says what is wrong.
    public static func parse(_ text: String) throws(ChaosError) -> ClockOffset {
        let example = "write e.g. \"-1d\", \"+30y\", \"90m\" or \"1d12h\" (units y, mo, w, d, h, m, s)"
        var rest = Substring(text.filter { !$0.isWhitespace })
        var sign = 1.0
        if rest.first == "-" { sign = -1; rest = rest.dropFirst() } else if rest.first == "+" { rest = rest.dropFirst() }
        guard !rest.isEmpty else { throw ChaosError(.invalidProvider, "offset '\(text)' is empty; \(example)") }
        var offset = ClockOffset()
        while !rest.isEmpty {
            let number = rest.prefix { $0.isNumber || $0 == "." }
            rest = rest.dropFirst(number.count)
            let unit = rest.prefix { $0.isLetter }
            rest = rest.dropFirst(unit.count)
            guard let value = Double(number), value.isFinite, !unit.isEmpty else {
                throw ChaosError(.invalidProvider, "offset '\(text)' is not understood; \(example)")
            }
            let signed = sign * value
            switch unit.lowercased() {
            case "y", "mo":
                guard value.rounded() == value, value < 1_000_000 else {
                    throw ChaosError(.invalidProvider, "offset '\(text)': years and months must be whole numbers; \(example)")
                }
                if unit.lowercased() == "y" { offset.years += Int(signed) } else { offset.months += Int(signed) }
            case "w": offset.seconds += signed * 7 * 86_400
            case "d": offset.seconds += signed * 86_400
            case "h": offset.seconds += signed * 3_600
            case "m": offset.seconds += signed * 60
            case "s": offset.seconds += signed
            default:
                throw ChaosError(.invalidProvider, "offset '\(text)' has unknown unit '\(unit)'; \(example)")
            }
        }
        return offset
    }
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
        let text = switch self {
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
        let request = SleepRequest(duration: base.now.duration(to: deadline), tolerance: tolerance) { duration, tolerance in
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
/// | `clock.now` | `frozen` (date), `offset` (by \| seconds, minutes, hours, days, months, years), `speed` (factor), `random-date` (days = 10000, around = 2025-01-01), `backwards` (step = 1), `edge` (name, lead = 0, running = false) |
/// | `clock.timeZone` | `timezone` (identifier), `random-timezone` |
/// | `clock.sleep` | `skip`, `stretch` (factor), `fail` (cancellation = false) |
///
/// Dates in parameters are ISO-8601 strings (or seconds since 1970). The first-named
/// parameter of each item is its main one: the one-line `CHAOS` grammar's positional value
/// (`clock.now=offset(-1d)`, `clock.now=edge(y2038)`) fills it.
public enum ChaosClock {
    /// Providers of `clock.now`.
    public typealias NowProvider = ChaosProvider<Void, Date, Never>
    /// Providers of `clock.timeZone`.
    public typealias TimeZoneProvider = ChaosProvider<Void, TimeZone, Never>
    /// Providers of `clock.sleep`.
    public typealias SleepProvider = AsyncChaosProvider<SleepRequest, Void, any Error>

    /// `clock.now`: the current date; the original is `Date()`.
    public static let now: InjectionPoint<Void, Date, Never> = {
        let point = InjectionPoint<Void, Date, Never>("clock.now") { Date() }
        point.addCatalogueItem("frozen", parameters: "date: ISO-8601 string") { parameters throws(ChaosError) in
            frozen(at: try parameters.naming("date").date("date"))
        }
        point.addCatalogueItem(
            "offset", parameters: "by: string like \"-1d\", \"+30y\", \"90m\" | years, months, days, hours, minutes, seconds: number"
        ) { parameters throws(ChaosError) in
            try offset(by: offset(from: parameters.naming("by")))
        }
        point.addCatalogueItem("speed", parameters: "factor: number") { parameters throws(ChaosError) in
            speed(factor: try parameters.naming("factor").finite("factor"))
        }
        point.addCatalogueItem("random-date", parameters: "days: number = 10000, around: ISO-8601 string = 2025-01-01") { parameters throws(ChaosError) in
            let parameters = parameters.naming("days")
            let days = try parameters.int("days", default: 10_000)
            guard days >= 0 else { throw parameters.invalid("parameter 'days' is \(days); give a number of days of 0 or more") }
            return randomDate(withinDays: days, of: try parameters.date("around", default: randomDateCentre))
        }
        point.addCatalogueItem("backwards", parameters: "step: seconds = 1") { parameters throws(ChaosError) in
            let step = try parameters.naming("step").finite("step", default: 1)
            guard step > 0 else { throw parameters.invalid("parameter 'step' is \(step); give a number of seconds above 0") }
            return backwards(step: step)
        }
        point.addCatalogueItem(
            "edge", parameters: "name: \(ClockEdge.allCases.map(\.rawValue).joined(separator: " | ")), lead: seconds = 0, running: bool = false"
        ) { parameters throws(ChaosError) in
            let parameters = parameters.naming("name")
            let name = try parameters.string("name")
            guard let edge = ClockEdge(rawValue: name) else {
                throw parameters.invalid(
                    "there is no edge date named '\(name)'; choose one of: \(ClockEdge.allCases.map(\.rawValue).joined(separator: ", "))"
                )
            }
            return ChaosClock.edge(edge, lead: try parameters.finite("lead", default: 0), running: try parameters.bool("running", default: false))
        }
        return point
    }()

    /// `clock.timeZone`: the time zone; the original is `TimeZone.current`.
    public static let timeZone: InjectionPoint<Void, TimeZone, Never> = {
        let point = InjectionPoint<Void, TimeZone, Never>("clock.timeZone") { TimeZone.current }
        point.addCatalogueItem("timezone", parameters: "identifier: IANA time zone") { parameters throws(ChaosError) in
            let identifier = try parameters.naming("identifier").string("identifier")
            guard let zone = TimeZone(identifier: identifier) else {
                throw parameters.invalid(
                    "'\(identifier)' is not a known time zone; give an IANA identifier such as \"Asia/Kathmandu\" or \"Pacific/Kiritimati\""
                )
            }
            return timeZone(zone)
        }
        point.addCatalogueItem("random-timezone") { _ throws(ChaosError) in randomTimeZone }
        return point
    }()

    /// `clock.sleep`: every sleep of a ``ChaosSleepClock``; the original really sleeps.
    public static let sleep: AsyncInjectionPoint<SleepRequest, Void, any Error> = {
        let point = AsyncInjectionPoint<SleepRequest, Void, any Error>("clock.sleep") { request in
            try await request.perform(request.duration, request.tolerance)
        }
        point.addCatalogueItem("skip") { _ throws(ChaosError) in skippedSleeps }
        point.addCatalogueItem("stretch", parameters: "factor: number") { parameters throws(ChaosError) in
            let factor = try parameters.naming("factor").finite("factor")
            guard factor >= 0 else { throw parameters.invalid("parameter 'factor' is \(factor); give 0 or more (2 sleeps twice as long)") }
            return stretchedSleeps(factor: factor)
        }
        point.addCatalogueItem("fail", parameters: "cancellation: bool = false") { parameters throws(ChaosError) in
            try parameters.bool("cancellation", default: false) ? failingSleeps(CancellationError()) : failingSleeps()
        }
        return point
    }()

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
    /// "now", so that a seed gives the same dates on every run (as `Date.randomChaosValue` does).
    public static let randomDateCentre = Date(timeIntervalSince1970: 1_735_689_600)

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

    /// Reads the `offset` item's parameters: `by` (compact text) or numeric parts.
    static func offset(from parameters: ProfileParameters) throws(ChaosError) -> ClockOffset {
        if parameters.has("by") {
            do {
                return try ClockOffset.parse(try parameters.string("by"))
            } catch {
                throw parameters.invalid(error.message)
            }
        }
        let parts = ["years", "months", "days", "hours", "minutes", "seconds"]
        guard parts.contains(where: parameters.has) else {
            throw parameters.invalid("give 'by' (e.g. \"-1d\", \"+30y\", \"90m\") or any of \(parts.joined(separator: ", ")) as numbers")
        }
        return ClockOffset(
            years: try parameters.int("years", default: 0), months: try parameters.int("months", default: 0),
            days: try parameters.finite("days", default: 0), hours: try parameters.finite("hours", default: 0),
            minutes: try parameters.finite("minutes", default: 0), seconds: try parameters.finite("seconds", default: 0)
        )
    }

    // MARK: clock.timeZone providers

    /// The program lives in `zone` (`"timezone"`).
    public static func timeZone(_ zone: TimeZone) -> TimeZoneProvider { .constant(zone) }

    /// A random known time zone on every read, from the seeded source (`"random-timezone"`).
    public static var randomTimeZone: TimeZoneProvider {
        let identifiers = TimeZone.knownTimeZoneIdentifiers.sorted()
        return .random(RandomGenerator { source in
            identifiers.isEmpty ? TimeZone(secondsFromGMT: 0)!
                : TimeZone(identifier: identifiers[Int.random(in: 0..<identifiers.count, using: &source)]) ?? TimeZone(secondsFromGMT: 0)!
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
