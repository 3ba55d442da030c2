import ChaosKit
import Foundation
import TestHelpers
import Testing

/// An app's points as users declare them: `static let`, which Swift makes on first touch.
/// Each is touched by one test only, after that test applied its profile.
private enum LazyApp {
    static let fetch = InjectionPoint<Void, String, Never>("pending-tests.fetch") { "network" }
    static let count = InjectionPoint<Void, Int, Never>("pending-tests.count") { 1 }
    static let refused = InjectionPoint<Void, Int, Never>("pending-tests.refused") { 1 }
    static let reverted = InjectionPoint<Void, Int, Never>("pending-tests.reverted") { 1 }
}

/// A point the tests know exists, to mix live and pending entries.
private let livePoint = InjectionPoint<Void, Int, Never>("pending-tests.live") { 0 }

/// Entries for points that do not exist yet wait for them, as the README's bootstrap says.
@Suite struct PendingPointTests {
    @Test func aCHAOSLineNamingALazyPointAppliesWhenThePointIsFirstTouched() throws {
        let (logger, log) = RecordingLogHandler.logger()
        let session = try #require(
            try Chaos.bootstrap(
                environment: ["CHAOS": #"pending-tests.fetch=constant("offline");pending-tests.fecth=nil"#],
                buildConfiguration: .debug, watchProfile: false, logger: logger))
        #expect(session.entries.map(\.isPending) == [true, true], "\(session.entries)")
        let listed = Chaos.liveEntries.filter { $0.entry.pointName == "pending-tests.fetch" }
        #expect(listed.map(\.isPending) == [true])

        #expect(LazyApp.fetch() == "offline")  // the first touch creates the point; the call acts
        #expect(session.entries.map(\.isPending) == [false, true], "\(session.entries)")
        #expect(session.counters.first { $0.pointName == "pending-tests.fetch" }?.acted == 1)

        session.stop()
        #expect(LazyApp.fetch() == "network")
        let warnings = log.all.filter { $0.level == .warning }.map(\.message)
        #expect(warnings.count == 1, "\(warnings)")
        #expect(warnings.first?.contains("no point named 'pending-tests.fecth'") == true, "\(warnings)")
        #expect(warnings.first?.contains("did you mean 'pending-tests.fetch'?") == true, "\(warnings)")
    }

    /// Its parameters cannot be checked before the point exists: when it appears and the
    /// provider does not fit, the entry never acts and says why, where it was written.
    @Test func aPendingEntryThatDoesNotFitItsPointIsALocatedProblem() throws {
        let profile = try ChaosProfile.decode(
            json: #"{"entries": [{"point": "pending-tests.count", "provider": {"constant": "many"}}]}"#,
            file: "count.json")
        let chaos = try profile.apply(missingPoints: .wait)
        defer { chaos.revertAll() }
        #expect(LazyApp.count() == 1)
        let entry = try #require(Chaos.liveEntries.first { $0.entry.pointName == "pending-tests.count" })
        #expect(!entry.isPending)
        let problem = try #require(entry.problem)
        #expect(problem.kind == .valueTypeMismatch, "\(problem)")
        #expect(problem.description.hasPrefix("count.json:1:14 at $.entries[0]"), "\(problem)")
    }

    /// All or nothing still: a real error refuses the whole profile, and the entry that
    /// would have waited never applies.
    @Test func aProfileWithARealErrorRefusesItsPendingEntriesToo() throws {
        _ = livePoint
        let profile = try ChaosProfile.decode(
            json: #"""
                {"entries": [{"point": "pending-tests.refused", "provider": {"constant": 5}},
                             {"point": "pending-tests.live", "provider": {"constant": "five"}}]}
                """#)
        #expect(throws: ChaosError.self) { try profile.apply(missingPoints: .wait) }
        #expect(LazyApp.refused() == 1)
        #expect(!Chaos.liveEntries.contains { $0.entry.pointName == "pending-tests.refused" })
    }

    @Test func aRevertedPendingEntryNeverApplies() throws {
        let chaos = Chaos(missingPoints: .wait)
        try chaos.profile(ProfileEntry(point: "pending-tests.reverted", .constantValue(7))).apply()
        #expect(chaos.waitingEntries.count == 1)
        chaos.revertAll()
        #expect(LazyApp.reverted() == 1)
        #expect(chaos.appliedEntries.isEmpty && chaos.waitingEntries.isEmpty)
    }

    /// Code holds the points it names: by default a missing one is still refused.
    @Test func codeStillRefusesAMissingPointByDefault() {
        #expect { try Chaos().profile(ProfileEntry(point: "pending-tests.nowhere", .original)).apply() } throws: {
            ($0 as? ChaosError)?.kind == .unknownPoint
        }
    }
}
