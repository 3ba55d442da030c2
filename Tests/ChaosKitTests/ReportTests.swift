import Foundation
import TestHelpers
import Testing

@testable import ChaosKit

/// `ChaosReport`: what every entry did, with the entries that never acted flagged, in the
/// lines and JSON fields of `chaos run`'s exit report.
@Suite struct ReportTests {
    @Test func aChaosReportsEachEntrysCountsAndFlagsTheOneThatNeverActed() throws {
        let point = InjectionPoint<Int, Int, Never>(uniqueName("acting")) { $0 }
        let quiet = InjectionPoint<Int, Int, Never>(uniqueName("quiet")) { $0 }
        let chaos = Chaos(seed: 42)
        let acting = point.entry(ChaosProvider.constant(-1).times(2))
        let idle = quiet.entry(ChaosProvider.constant(-1).probability(0))
        try chaos.profile(acting, idle).apply()
        defer { chaos.revertAll() }
        for index in 0..<3 { _ = point(index) }
        _ = quiet(0)

        let report = chaos.report
        #expect(report.seed == 42)
        try #require(report.entries.count == 2)
        let (first, second) = (report.entries[0], report.entries[1])
        #expect(first.entry == acting.id.number && first.point == point.name)
        #expect(first.label == "\(acting.id) \(acting)")
        #expect((first.seen, first.acted, first.passed, first.neverActed) == (3, 2, 1, false))
        #expect(second.entry == idle.id.number && second.point == quiet.name)
        #expect((second.seen, second.acted, second.passed, second.neverActed) == (1, 0, 1, true))
        #expect(report.neverActed == [second])
        #expect(
            report.description == """
                seed 42, 2 entries, 1 never acted:
                  \(acting.id) \(acting): seen 3, acted 2
                  \(idle.id) \(idle): seen 1, acted 0  <- NEVER ACTED
                """)
    }

    @Test func theJSONHasTheFieldsOfChaosRunsReport() throws {
        let point = InjectionPoint<Int, Int, Never>(uniqueName()) { $0 }
        let chaos = Chaos(seed: 7)
        let entry = point.entry(.constant(-1))
        try chaos.profile(entry).apply()
        defer { chaos.revertAll() }
        _ = point(1)

        let data = try JSONEncoder().encode(chaos.report)
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(object["seed"] as? Int == 7)
        let entries = try #require(object["entries"] as? [[String: Any]])
        try #require(entries.count == 1)
        #expect(Set(entries[0].keys) == ["entry", "point", "label", "seen", "acted", "passed", "neverActed"])
        #expect(entries[0]["entry"] as? Int == entry.id.number)
        #expect(entries[0]["point"] as? String == point.name)
        #expect(entries[0]["seen"] as? Int == 1 && entries[0]["acted"] as? Int == 1)
        #expect(entries[0]["passed"] as? Int == 0 && entries[0]["neverActed"] as? Bool == false)
        #expect(try JSONDecoder().decode(ChaosReport.self, from: data) == chaos.report)
    }

    @Test func anEntryWaitingForItsPointIsReportedAsNeverActed() throws {
        let name = uniqueName("not-yet")
        let chaos = Chaos(seed: 1, missingPoints: .wait)
        let waiting = ProfileEntry(point: name, .constant(0))
        try chaos.profile(waiting).apply()
        defer { chaos.revertAll() }

        let line = try #require(chaos.report.entries.first)
        #expect(line.entry == waiting.id.number && line.point == name)
        #expect(line.seen == 0 && line.neverActed)
    }

    @Test func aScopeReportsItsEntries() throws {
        let point = InjectionPoint<Int, Int, Never>(uniqueName()) { $0 }
        let entry = point.entry(ChaosProvider.constant(-1).times(1))
        let report = try Chaos.with([entry], seed: 5) { () -> ChaosReport? in
            _ = point(1)
            _ = point(2)
            return Chaos.currentScope?.report
        }
        let line = try #require(report?.entries.first { $0.entry == entry.id.number })
        #expect(report?.seed == 5)
        #expect((line.seen, line.acted, line.passed, line.neverActed) == (2, 1, 1, false))
    }

    @Test func aSessionReportsItsEnabledEntries() throws {
        let name = uniqueName("session")
        let point = InjectionPoint<Void, String, Never>(name) { "real" }
        let session = try #require(
            try Chaos.bootstrap(
                environment: ["CHAOS": #"\#(name)=constant("chaos");\#(name)=constant("other")"#, "CHAOS_SEED": "3"],
                buildConfiguration: .debug, watchProfile: false))
        defer { session.stop() }
        try session.setEnabled(false, at: 1)
        _ = point()
        _ = point()

        let report = session.report
        #expect(report.seed == 3)
        #expect(report.entries.map(\.point) == [name], "a disabled entry is not applied: \(report)")
        #expect(report.entries.map(\.acted) == [2])
        #expect(report.neverActed.isEmpty)
    }
}
