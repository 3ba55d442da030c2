import CChaosFaults
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
    }

    @Test func nodeKindsAreTheTables() {
        let rows = Self.table(CHAOS_TABLE_NODE_KINDS)
        #expect(rows.map(\.name) == PlanNodeKind.allCases.map(\.rawValue))
        #expect(rows.map(\.value) == PlanNodeKind.allCases.indices.map { Int64($0) })
        #expect(rows.last?.value == Int64(CHAOS_NODE_AT.rawValue))
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

/// One duration grammar: the control endpoint's `?by=` (C, duration.c) reads a text as
/// DurationText does in a profile, on generated texts and their edge cases.
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

    @Test func theEndpointReadsDurationsAsProfilesDo() {
        #expect(Self.inputs.count == 200)
        var accepted = 0
        for text in Self.inputs {
            var nanoseconds: Int64 = 0
            let c = chaos_parse_duration_text(text, &nanoseconds) == 0 ? nanoseconds : nil
            let swift = DurationText.parse(text)
            guard let swift else {
                #expect(c == nil, "'\(text)': C reads \(c.map(String.init) ?? "-"), Swift refuses it")
                continue
            }
            accepted += 1
            if swift >= .nanoseconds(Int64.max) {
                #expect(c == Int64.max, "'\(text)': Swift reads \(swift), C \(c.map(String.init) ?? "refuses it")")
            } else {
                #expect(
                    c.map { Duration.nanoseconds($0) } == swift,
                    "'\(text)': Swift reads \(swift), C \(c.map(String.init) ?? "refuses it")")
            }
        }
        // The generated texts are not all junk.
        #expect(accepted >= 40)
        var nanoseconds: Int64 = 0
        #expect(chaos_parse_duration_text("1h30m", &nanoseconds) == 0 && nanoseconds == 5_400_000_000_000)
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
