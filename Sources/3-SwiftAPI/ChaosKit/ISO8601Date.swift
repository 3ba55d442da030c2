public import Foundation

/// ISO-8601 dates as profiles and GPX files write them, parsed without formatters (which
/// differ between platforms and are not all `Sendable`).
///
/// Accepted: `2026-03-29`, `2026-03-29T01:00:00Z`, `2026-03-29T01:00:00.123456Z`,
/// `2026-03-29T02:00:00+01:00` (or `+0100`, `+01`), and a date-time without a zone, which
/// is read as UTC (as GPX requires). A space may stand for the `T`.
public enum ISO8601Date {
    /// The date `text` names, or nil when it is not ISO-8601 (or names no real day, like Feb 30).
    public static func parse(_ text: String) -> Date? {
        var scanner = Scanner8(Array(text.trimmingCharacters(in: .whitespacesAndNewlines).utf8))
        guard let year = scanner.digits(4), scanner.take(UInt8(ascii: "-")),
            let month = scanner.digits(2), scanner.take(UInt8(ascii: "-")),
            let day = scanner.digits(2),
            (1...12).contains(month), (1...daysIn(month: month, year: year)).contains(day)
        else { return nil }
        var seconds = Double(daysFromCivil(year: year, month: month, day: day)) * 86_400
        if scanner.atEnd { return Date(timeIntervalSince1970: seconds) }
        guard scanner.take(UInt8(ascii: "T")) || scanner.take(UInt8(ascii: "t")) || scanner.take(UInt8(ascii: " ")),
            let hour = scanner.digits(2), scanner.take(UInt8(ascii: ":")), let minute = scanner.digits(2),
            hour <= 24, minute <= 59
        else { return nil }
        var second = 0.0
        if scanner.take(UInt8(ascii: ":")) {
            guard let whole = scanner.digits(2), whole <= 60 else { return nil }
            second = Double(whole)
            if scanner.take(UInt8(ascii: ".")) || scanner.take(UInt8(ascii: ",")) {
                var scale = 0.1
                var any = false
                while let digit = scanner.digit() {
                    second += Double(digit) * scale
                    scale /= 10
                    any = true
                }
                guard any else { return nil }
            }
        }
        seconds += Double(hour * 3600 + minute * 60) + second
        if scanner.atEnd { return Date(timeIntervalSince1970: seconds) }
        if scanner.take(UInt8(ascii: "Z")) || scanner.take(UInt8(ascii: "z")) {
            return scanner.atEnd ? Date(timeIntervalSince1970: seconds) : nil
        }
        let sign: Double
        if scanner.take(UInt8(ascii: "+")) {
            sign = 1
        } else if scanner.take(UInt8(ascii: "-")) {
            sign = -1
        } else {
            return nil
        }
        guard let offsetHours = scanner.digits(2), offsetHours <= 18 else { return nil }
        var offsetMinutes = 0
        if !scanner.atEnd {
            _ = scanner.take(UInt8(ascii: ":"))
            guard let minutes = scanner.digits(2), minutes <= 59 else { return nil }
            offsetMinutes = minutes
        }
        guard scanner.atEnd else { return nil }
        return Date(timeIntervalSince1970: seconds - sign * Double(offsetHours * 3600 + offsetMinutes * 60))
    }

    /// `date` as `yyyy-MM-ddTHH:mm:ssZ` (UTC, fractions dropped).
    public static func format(_ date: Date) -> String {
        let total = Int(date.timeIntervalSince1970.rounded(.down))
        var days = total / 86_400
        var rest = total % 86_400
        if rest < 0 {
            rest += 86_400
            days -= 1
        }
        let (year, month, day) = civilFromDays(days)
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
        let yearText = String(repeating: "0", count: max(0, 4 - String(year).count)) + String(year)
        return "\(yearText)-\(two(month))-\(two(day))T\(two(rest / 3600)):\(two(rest / 60 % 60)):\(two(rest % 60))Z"
    }

    static func isLeap(_ year: Int) -> Bool { year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) }

    static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: isLeap(year) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
    static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    static func civilFromDays(_ days: Int) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}

/// A tiny cursor over ASCII bytes.
private struct Scanner8 {
    let bytes: [UInt8]
    var index = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var atEnd: Bool { index == bytes.count }

    mutating func take(_ byte: UInt8) -> Bool {
        guard index < bytes.count, bytes[index] == byte else { return false }
        index += 1
        return true
    }

    mutating func digit() -> Int? {
        guard index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) else { return nil }
        defer { index += 1 }
        return Int(bytes[index] - UInt8(ascii: "0"))
    }

    mutating func digits(_ count: Int) -> Int? {
        var value = 0
        for _ in 0..<count {
            guard let d = digit() else { return nil }
            value = value * 10 + d
        }
        return value
    }
}
