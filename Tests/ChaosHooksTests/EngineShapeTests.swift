import CChaosFaults
import CChaosRules
import ChaosKit
import Foundation
import Testing

@testable import ChaosHooks

/// The C engine's table of names (names.c) is the one both sides spell plan text with:
/// the Swift names of points, operations, families, roles, clocks, node kinds, units and
/// errnos must be the table's, in its order and with its values.
@Suite struct SharedNameTableTests {
    /// The table `table` as (name, value) pairs, in order.
    static func table(_ table: chaos_table) -> [(name: String, value: Int64)] {
        var rows: [(name: String, value: Int64)] = []
        var value: Int64 = 0
        while let name = chaos_fault_table_name(Int32(table.rawValue), Int32(rows.count), &value) {
            rows.append((String(cString: name), value))
        }
        return rows
    }

    @Test func pointsAreTheTables() {
        let rows = Self.table(CHAOS_TABLE_POINTS)
        #expect(rows.count == Int(CHAOS_POINT_COUNT.rawValue))
        #expect(rows.map(\.name) == SystemPointKind.allCases.map(\.planName))
        #expect(rows.map(\.name) == SystemPointKind.allCases.map { String(describing: $0) })
        #expect(rows.map(\.value) == SystemPointKind.allCases.map { Int64($0.rawValue) })
        let publicNames = Self.table(CHAOS_TABLE_PUBLIC_POINTS)
        #expect(publicNames.map(\.name) == SystemPointKind.allCases.map(\.pointName))
        #expect(
            publicNames.map(\.name)
                == SystemPointKind.allCases.map { "system." + ($0 == .dns ? "getaddrinfo" : $0.planName) })
    }

    @Test func operationsAreTheTables() {
        let rows = Self.table(CHAOS_TABLE_OPERATIONS)
        #expect(rows.map(\.name) == FileOperationKind.allCases.map(\.rawValue))
        #expect(rows.map(\.value) == FileOperationKind.allCases.map { Int64($0.bit) })
        #expect(FileOperationKind.allCases.allSatisfy { String(cString: chaos_fault_op_name($0.bit)) == $0.rawValue })
    }

    @Test func familiesRolesAndClocksAreTheTables() {
        let families = Self.table(CHAOS_TABLE_FAMILIES)
        #expect(families.map(\.name) == SocketFamily.allCases.map(\.rawValue))
        #expect(families.map(\.value) == SocketFamily.allCases.map { Int64($0.bit) })
        let roles = Self.table(CHAOS_TABLE_ROLES)
        #expect(roles.map(\.name) == SocketRole.allCases.map(\.rawValue))
        #expect(roles.map(\.value) == SocketRole.allCases.map { Int64($0.bit) })
        let clocks = Self.table(CHAOS_TABLE_CLOCKS)
        #expect(clocks.map(\.name) == ClockSource.allCases.map(\.rawValue))
        #expect(clocks.map(\.value) == ClockSource.allCases.map { Int64($0.bit) })
        let kinds = Self.table(CHAOS_TABLE_DESCRIPTOR_KINDS)
        #expect(kinds.map(\.name) == DescriptorKind.allCases.map(\.rawValue))
        #expect(kinds.map(\.value) == DescriptorKind.allCases.map { Int64($0.bit) })
    }

    @Test func nodeKindsAreTheTables() {
        let rows = Self.table(CHAOS_TABLE_NODE_KINDS)
        #expect(rows.map(\.name) == PlanNodeKind.allCases.map(\.rawValue))
        #expect(rows.map(\.value) == PlanNodeKind.allCases.indices.map { Int64($0) })
        #expect(rows.last?.value == Int64(CHAOS_NODE_LINGER.rawValue))
    }

    @Test func unitsAreDurationTexts() {
        let units = Self.table(CHAOS_TABLE_UNITS)
        #expect(units.map(\.name) == DurationText.fixedUnits.map(\.name))
        #expect(units.map(\.value) == DurationText.fixedUnits.map(\.nanoseconds))
        // Plan text takes a subset, with the same lengths.
        let plan = Self.table(CHAOS_TABLE_PLAN_UNITS)
        #expect(!plan.isEmpty)
        #expect(plan.allSatisfy { row in units.contains { $0.name == row.name && $0.value == row.value } })
    }

    @Test func errnoNamesRoundTrip() {
        let rows = Self.table(CHAOS_TABLE_ERRNOS)
        #expect(rows.count > 60)
        for row in rows {
            #expect(SystemErrno.value(row.name).map(Int64.init) == row.value, "\(row.name)")
            // A value has one name: the first the table lists (EAGAIN, not EWOULDBLOCK).
            #expect(rows.first { $0.value == row.value }?.name == SystemErrno.name(Int32(row.value)))
        }
        // Every errno a system point offers is one the table names.
        for point in SystemPointKind.allCases {
            for name in SystemFunctions.errnoNames(of: point) {
                #expect(rows.contains { $0.name == name }, "\(point): \(name)")
            }
        }
        #expect(SystemErrno.value("ENOSPC") == ENOSPC && SystemErrno.value("EIO") == EIO)
    }
}

/// One duration grammar, read by one reader (CChaosRules' span.c): what it takes and refuses,
/// and that the control endpoint's `?by=` and a profile's DurationText see the same.
@Suite struct DurationGrammarTests {
    /// 200 texts: compound units, fractions, signs, spaces, overflow and junk, from a fixed
    /// seed so a failure names a text that fails again.
    static let inputs: [String] = {
        var fixed = [
            "1h30m", "1h 30m", " 2m ", "250ms", "1.5s", "1.5d", "2w", "1d12h", "90m", "0s", "0", "", " ", "+",
            "-", "+1h", "-1h", "-0s", "1", "1.", ".5s", "1.s", "..5s", "1.2.3s", "1e3s", "1 e3s", "30y", "1mo",
            "1h-30m", "1h+30m", "µs", "1µs", "3µs5ns", "1us", "1 us", "1\u{00A0}s", "1\u{2003}h", "1\ts\n",
            "9223372036854775807ns", "9223372036854775808ns", "8999999999999999999ns", "9000000000000000000ns",
            "106751d", "106752d", "15250w", "15251w", "292y", "5000000000000000000ns5000000000000000000ns",
            "0.0000000001s", "0.0000000005s", "0.0000000015s", "0.5ns", "1.5ns", "2.5ns", "h", "ms", "1H", "1S",
            "1sec", "1min", "1hr", "1 h 2 m 3 s", "1h1h", "00010s", "1,5s", "1_000s", "１s", "1ｓ", "0x10s",
            "inf", "nan", "1infs", "1s€", "€1s", "1s\u{301}", "NaNs", "1m30", "30 s", "1.5h30m0.5s",
            String(repeating: "9", count: 400) + "s", "0." + String(repeating: "0", count: 40) + "1h",
        ]
        var random = SeededRandom(seed: 0x5EED_D0_2A7E)
        let units = ["ns", "us", "µs", "ms", "s", "m", "h", "d", "w", "mo", "y", "x", "", "S"]
        while fixed.count < 200 {
            var text = ["", "", "", "+", "-", " "][Int(random.next() % 6)]
            for _ in 0..<(1 + Int(random.next() % 3)) {
                let digits = Int(random.next() % 22) + 1
                var number = (0..<digits).map { _ in String(random.next() % 10) }.joined()
                if random.next() % 3 == 0 { number += "." + String(random.next() % 1000) }
                text += number + units[Int(random.next() % UInt64(units.count))]
                if random.next() % 5 == 0 { text += " " }
            }
            fixed.append(text)
        }
        return fixed
    }()

    /// Texts and what they mean (nil: refused).
    static let expected: [(text: String, nanoseconds: Int64?)] = [
        ("1h30m", 5_400_000_000_000), ("1h 30m", 5_400_000_000_000), (" 2m ", 120_000_000_000),
        ("250ms", 250_000_000), ("1.5s", 1_500_000_000), ("1.5d", 129_600_000_000_000),
        ("2w", 1_209_600_000_000_000), ("+1h", 3_600_000_000_000), ("0s", 0), ("1µs", 1_000), ("1us", 1_000),
        ("1\u{00A0}s", 1_000_000_000), ("1\u{2003}h", 3_600_000_000_000), ("0.5ns", 1), ("0.0000000004s", 0),
        ("104166d", 8_999_942_400_000_000_000), ("104167d", nil), ("1h1h", 7_200_000_000_000),
        // Refused: no unit, a sign other than +, calendar units, unknown units, junk, too long.
        ("", nil), (" ", nil), ("+", nil), ("1", nil), ("-1h", nil), ("-0s", nil), ("30y", nil), ("1mo", nil),
        ("1sec", nil), ("1H", nil), ("1,5s", nil), ("1.2.3s", nil), ("1e3s", nil), ("１s", nil), ("inf", nil),
        ("1s€", nil), ("9000000000000000000ns", nil), ("5000000000000000000ns5000000000000000000ns", nil),
    ]

    @Test func theGrammarTakesWhatItDocumentsAndRefusesTheRest() {
        for (text, nanoseconds) in Self.expected {
            var read: Int64 = -1
            let status = chaos_rules_parse_duration(text, &read)
            #expect((status == 0 ? read : nil) == nanoseconds, "'\(text)'")
            #expect(DurationText.parse(text) == nanoseconds.map { .nanoseconds($0) }, "'\(text)'")
        }
    }

    @Test func offsetsTakeSignsAndCalendarUnitsThatDurationsRefuse() throws {
        var span = chaos_span()
        #expect(chaos_rules_parse_span("-1y2mo3d", 8, &span) == CHAOS_SPAN_OK)
        #expect(span.negative == 1 && span.years == 1 && span.months == 2 && span.fixed_ns == 259_200_000_000_000)
        #expect(chaos_rules_parse_span("1.5y", 4, &span) == CHAOS_SPAN_CALENDAR_FRACTION)
        #expect(chaos_rules_parse_span("3 fortnights", 12, &span) == CHAOS_SPAN_UNKNOWN_UNIT)
        let atFault = withUnsafeBytes(of: span.at_fault) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        #expect(atFault == "fortnights")
        #expect(chaos_rules_parse_span("12", 2, &span) == CHAOS_SPAN_NO_UNIT)
        // The Swift errors name what the reader found at fault.
        #expect(throws: ChaosError.self) { try DurationText.duration("3 fortnights") }
        do {
            _ = try DurationText.duration("3fortnight")
        } catch {
            #expect(error.message.contains("unknown unit 'fortnight'"), "\(error.message)")
        }
    }

    @Test func theEndpointReadsDurationsAsProfilesDo() {
        #expect(Self.inputs.count == 200)
        var accepted = 0
        for text in Self.inputs {
            var nanoseconds: Int64 = 0
            let c = chaos_rules_parse_duration(text, &nanoseconds) == 0 ? nanoseconds : nil
            let swift = DurationText.parse(text)
            #expect(
                c.map { Duration.nanoseconds($0) } == swift,
                "'\(text)': Swift \(swift.map { "\($0)" } ?? "refuses"), C \(c.map(String.init) ?? "refuses")")
            if swift != nil { accepted += 1 }
        }
        // The generated texts are not all junk.
        #expect(accepted >= 40)
    }
}

/// The C engine keeps to one job per file: no source of it grows past 600 lines.
@Suite struct EngineFileSizeTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    @Test func noEngineFileExceedsSixHundredLines() throws {
        var checked = 0
        for folder in [
            "Sources/1-Engine/CChaosFaults", "Sources/2-Deliveries/CChaosIntercept",
            "Sources/2-Deliveries/Interceptors",
            "Sources/2-Deliveries/CChaosPreload", "Sources/1-Engine/CChaosControl",
            "Sources/2-Deliveries/chaos",
        ] {
            let directory = Self.root.appendingPathComponent(folder)
            let files = try #require(FileManager.default.enumerator(atPath: directory.path)).compactMap {
                $0 as? String
            }
            for file in files where [".c", ".h", ".inc"].contains(where: file.hasSuffix) {
                let text = try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
                let lines =
                    text.split(separator: "\n", omittingEmptySubsequences: false).count - (text.hasSuffix("\n") ? 1 : 0)
                #expect(lines <= 600, "\(folder)/\(file) has \(lines) lines; split it by job")
                checked += 1
            }
        }
        #expect(checked > 20)
    }
}
