public import Foundation

/// How far to move a clock: calendar years and months (Gregorian, UTC) plus seconds.
///
/// Written as text in the grammar of ``DurationText``, signed as a whole: `"-1d"`,
/// `"+30y"`, `"90m"`, `"1d12h"`, `"-2mo"`, `"1.5h"`. Every point that moves a clock —
/// `clock.now` and `system.clock` — takes its `offset` the same way.
public struct ClockOffset: Sendable, Hashable, CustomStringConvertible {
    /// Calendar years to add (negative to go back).
    public var years: Int
    /// Calendar months to add.
    public var months: Int
    /// Seconds to add (weeks, days, hours and minutes are folded in here; a day is 86,400 s).
    public var seconds: Double

    /// An offset made of calendar years and months and fixed-length days, hours, minutes, seconds.
    public init(
        years: Int = 0, months: Int = 0, days: Double = 0, hours: Double = 0, minutes: Double = 0, seconds: Double = 0
    ) {
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

    /// The offset in seconds as it stands at `now` (calendar years and months vary in length):
    /// "-30y" is today's date thirty years ago, leap days included.
    public func seconds(from now: Date) -> TimeInterval {
        applied(to: now).timeIntervalSince(now)
    }

    /// A readable rendering for logs, e.g. `"-30y"`, `"1d12h"`, `"-5s"`.
    public var description: String { text }

    /// The offset in the grammar ``parse(_:)`` reads (exact when its parts share one sign,
    /// as every parsed offset does).
    public var text: String {
        let negative = years < 0 || months < 0 || seconds < 0
        let sign: Int = negative ? -1 : 1
        var parts = ""
        if years != 0 { parts += "\(years * sign)y" }
        if months != 0 { parts += "\(months * sign)mo" }
        if seconds != 0 || parts.isEmpty {
            let magnitude = abs(seconds)
            let duration = Duration.nanoseconds(Int64((magnitude * 1e9).rounded()))
            parts += DurationText.format(duration)
        }
        return (negative ? "-" : "") + parts
    }

    private static let calendar: Calendar = {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(secondsFromGMT: 0)!
        return calendar
    }()

    /// Reads the text form (`"-1d"`, `"+30y"`, `"90m"`, `"1d12h"`); the error says what is wrong.
    public static func parse(_ text: String) throws(ChaosError) -> ClockOffset {
        let span = try TimeSpanSyntax.parse(text, example: example)
        let sign = span.negative ? -1 : 1
        let (whole, attoseconds) = span.fixed.components
        return ClockOffset(
            years: span.years * sign, months: span.months * sign,
            seconds: Double(sign) * (Double(whole) + Double(attoseconds) * 1e-18)
        )
    }

    /// The parameters every `offset` catalogue item takes (`clock.now`, `system.clock`):
    /// `by` (text such as `"-30y"`), or any of `years`, `months`, `days`, `hours`,
    /// `minutes`, `seconds` as numbers.
    public static let catalogueParameters: [CatalogueParameter] = [
        .offset("by", "how far to move the clock, e.g. \"-30y\", \"+1d12h\", \"90m\"", optional: true),
        .integer("years", "calendar years to add", optional: true),
        .integer("months", "calendar months to add", optional: true),
        .number("days", "days of 86,400 s to add", optional: true),
        .number("hours", "hours to add", optional: true),
        .number("minutes", "minutes to add", optional: true),
        .number("seconds", "seconds to add", optional: true),
    ]

    /// The offset given by parameters checked against ``catalogueParameters``: `by`, or the
    /// sum of the numeric parts (one of them is required).
    public init(parameters: ProfileParameters) throws(ChaosError) {
        let parts = ["years", "months", "days", "hours", "minutes", "seconds"]
        if parameters.has("by") {
            if let extra = parts.first(where: parameters.has) {
                throw parameters.invalid(
                    "give either 'by' or numeric parts such as '\(extra)', not both", parameter: extra)
            }
            self = try parameters.offset("by")
            return
        }
        guard parts.contains(where: parameters.has) else {
            throw parameters.invalid(
                "give 'by' (e.g. \"-1d\", \"+30y\", \"90m\") or any of \(parts.joined(separator: ", ")) as numbers")
        }
        self.init(
            years: try parameters.int("years", default: 0), months: try parameters.int("months", default: 0),
            days: try parameters.double("days", default: 0), hours: try parameters.double("hours", default: 0),
            minutes: try parameters.double("minutes", default: 0), seconds: try parameters.double("seconds", default: 0)
        )
    }

    static let example = "write e.g. \"-1d\", \"+30y\", \"90m\" or \"1d12h\" (units y, mo, w, d, h, m, s, ms)"
}
