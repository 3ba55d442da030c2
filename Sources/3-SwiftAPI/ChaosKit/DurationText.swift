import CChaosRules

/// The one way ChaosKit writes spans of time as text: delays, latencies, timeouts and
/// clock offsets all read this grammar.
///
/// A span is one or more *number unit* parts, optionally signed as a whole:
/// `250ms`, `1.5s`, `2m`, `1h30m`, `1d`, `2w`, `-30y`, `+1mo`.
///
/// | unit | meaning |
/// |---|---|
/// | `ns`, `us` (`µs`), `ms`, `s` | nano-, micro-, milliseconds, seconds |
/// | `m`, `h`, `d`, `w` | minutes, hours, days (86,400 s), weeks |
/// | `mo`, `y` | calendar months and years (clock offsets only) |
///
/// A **duration** (a delay, a latency, a timeout) is a fixed length of zero or more: no
/// sign, no calendar units. A **clock offset** (``ClockOffset``) may be negative and may use
/// calendar years and months, whose length depends on the date they are added to.
public enum DurationText {
    /// The duration `text` stands for, or nil when it is not one (see ``duration(_:)`` for why).
    public static func parse(_ text: String) -> Duration? {
        try? duration(text)
    }

    /// The duration `text` stands for; the error says what is wrong and how to write it.
    public static func duration(_ text: String) throws(ChaosError) -> Duration {
        let span = try TimeSpanSyntax.parse(text, example: durationExample)
        if span.negative {
            throw ChaosError(
                .invalidProvider,
                "'\(InputExcerpt.of(text))' is negative; a duration is zero or more, \(durationExample)")
        }
        if span.years != 0 || span.months != 0 {
            throw ChaosError(
                .invalidProvider,
                "'\(InputExcerpt.of(text))' uses calendar units (y, mo), whose length depends on the date; a duration needs a fixed length such as 30d, \(durationExample)"
            )
        }
        return span.fixed
    }

    /// `duration` written in this grammar, exactly when it can be (`"250ms"`, `"1h30m"`,
    /// `"1.5s"`, `"0s"`).
    public static func format(_ duration: Duration) -> String {
        var (seconds, attoseconds) = duration.components
        let negative = seconds < 0 || attoseconds < 0
        if negative {
            seconds = -seconds
            attoseconds = -attoseconds
        }
        var nanoseconds = attoseconds / 1_000_000_000
        var parts = ""
        if seconds == 0 && nanoseconds == 0 { return "0s" }
        if nanoseconds == 0 {
            for (unit, size) in [("d", Int64(86_400)), ("h", 3_600), ("m", 60), ("s", 1)] where seconds >= size {
                parts += "\(seconds / size)\(unit)"
                seconds %= size
            }
        } else if seconds == 0 && nanoseconds % 1_000_000 == 0 {
            parts = "\(nanoseconds / 1_000_000)ms"
        } else if seconds == 0 && nanoseconds % 1_000 == 0 {
            parts = "\(nanoseconds / 1_000)us"
        } else if seconds == 0 {
            parts = "\(nanoseconds)ns"
        } else {
            // Whole nanoseconds as milliseconds with a fraction keeps the text exact.
            nanoseconds += seconds * 1_000_000_000
            parts = nanoseconds % 1_000_000 == 0 ? "\(nanoseconds / 1_000_000)ms" : "\(nanoseconds)ns"
        }
        return (negative ? "-" : "") + parts
    }

    /// The fixed-length units of this grammar, with their length in nanoseconds; `mo` and
    /// `y`, calendar units, have no fixed length. The grammar's own table (CChaosRules),
    /// which the C engine's plan text and control endpoints read too.
    public static let fixedUnits: [(name: String, nanoseconds: Int64)] = {
        var units: [(name: String, nanoseconds: Int64)] = []
        while let unit = chaos_rules_unit_at(units.count) {
            units.append((String(cString: unit.pointee.name), unit.pointee.nanoseconds))
        }
        return units
    }()

    /// A regular expression for a duration string, for JSON Schemas.
    public static let schemaPattern =
        "^\\s*[0-9]+(\\.[0-9]+)?(ns|us|µs|ms|s|m|h|d|w)([0-9]+(\\.[0-9]+)?(ns|us|µs|ms|s|m|h|d|w))*\\s*$"

    static let durationExample = "e.g. \"250ms\", \"2s\", \"1m\" or \"1h30m\""
}

extension Duration {
    /// The duration in whole nanoseconds (saturating past ±292 years).
    var wholeNanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        return scaled &+ attoseconds / 1_000_000_000
    }
}

/// A parsed span of time: the grammar of ``DurationText``, shared by durations and offsets.
struct TimeSpanSyntax {
    var negative = false
    var years = 0
    var months = 0
    /// The fixed-length part (weeks, days, hours … nanoseconds), unsigned.
    var fixed = Duration.zero

    /// Reads `text` with the grammar's one reader (CChaosRules' chaos_rules_parse_span);
    /// `example` ends every error message.
    static func parse(_ text: String, example: String) throws(ChaosError) -> TimeSpanSyntax {
        let quoted = InputExcerpt.of(text)
        var read = chaos_span()
        var utf8 = Array(text.utf8)
        utf8.append(0)
        let fault = utf8.withUnsafeBufferPointer { bytes in
            bytes.withMemoryRebound(to: CChar.self) { chaos_rules_parse_span($0.baseAddress, bytes.count - 1, &read) }
        }
        let atFault = withUnsafeBytes(of: read.at_fault) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        switch fault {
        case CHAOS_SPAN_OK:
            return TimeSpanSyntax(
                negative: read.negative != 0, years: Int(read.years), months: Int(read.months),
                fixed: .nanoseconds(read.fixed_ns))
        case CHAOS_SPAN_EMPTY:
            throw ChaosError(.invalidProvider, "'\(quoted)' is empty; \(example)")
        case CHAOS_SPAN_NO_UNIT:
            throw ChaosError(.invalidProvider, "'\(quoted)' needs a unit after \(atFault); \(example)")
        case CHAOS_SPAN_UNKNOWN_UNIT:
            let units = DurationText.fixedUnits.map(\.name).filter { $0.utf8.allSatisfy { $0 < 0x80 } } + ["mo", "y"]
            throw ChaosError(
                .invalidProvider,
                "'\(quoted)' has an unknown unit '\(InputExcerpt.of(atFault))'\(Suggestions.hint(for: atFault, in: units)); units are \(units.joined(separator: ", "))"
            )
        case CHAOS_SPAN_CALENDAR_FRACTION:
            throw ChaosError(.invalidProvider, "'\(quoted)': years and months must be whole numbers; \(example)")
        case CHAOS_SPAN_TOO_LONG:
            throw ChaosError(.invalidProvider, "'\(quoted)' is too long; keep a span under 290 years")
        default:
            throw ChaosError(.invalidProvider, "'\(quoted)' is not a span of time; \(example)")
        }
    }
}

extension String {
    /// The text without leading and trailing spaces, tabs and newlines.
    var trimmingWhitespace: Substring {
        let start = firstIndex { !$0.isWhitespace } ?? endIndex
        let end = lastIndex { !$0.isWhitespace }.map(index(after:)) ?? start
        return self[start..<end]
    }
}
