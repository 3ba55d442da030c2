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

    /// Only a name that could be a point's waits: 100,000 characters (or junk) is refused at
    /// once, located at the name, with what a point name looks like, quoting an excerpt.
    @Test(.timeLimit(.minutes(1))) func aNameNoPointCouldHaveIsRefusedNotKeptPending() throws {
        let huge = String(repeating: "x", count: 100_000)
        for name in [huge, "pending-tests.has space", "pending-tests.{x}", ""] {
            let chaos = Chaos(missingPoints: .wait)
            #expect {
                try chaos.profile(ProfileEntry(point: name, .original)).apply()
            } throws: { error in
                guard let error = error as? ChaosError else { return false }
                return error.kind == .unknownPoint && error.message.contains("a point name is 1 to 200 letters")
                    && error.description.count < 1_000
            }
            #expect(chaos.waitingEntries.isEmpty && chaos.appliedEntries.isEmpty)
        }
        #expect(!Chaos.liveEntries.contains { $0.entry.pointName == huge })

        // In a profile, the error is located at the name.
        let profile = try ChaosProfile.decode(
            json: Data(#"{"entries": [{"point": "\#(huge)", "provider": "original"}]}"#.utf8), file: "huge.json")
        for check in [
            { _ = try profile.apply(missingPoints: .wait) }, { _ = try profile.validate(missingPoints: .wait) },
        ] {
            #expect {
                try check()
            } throws: { error in
                guard let error = error as? ChaosError else { return false }
                return error.kind == .unknownPoint && error.subject == "huge.json:1:24 at $.entries[0].point"
                    && error.message.contains("a point name is") && error.description.count < 1_000
            }
        }
        // 200 letters, digits, '.', '-' and '_' may still wait.
        let longest = "pending-tests.long_" + String(repeating: "9", count: 200 - 19)
        let waiting = Chaos(missingPoints: .wait)
        try waiting.profile(ProfileEntry(point: longest, .original)).apply()
        #expect(waiting.waitingEntries.count == 1)
        waiting.revertAll()
        #expect {
            try Chaos(missingPoints: .wait).profile(ProfileEntry(point: longest + "9", .original)).apply()
        } throws: { ($0 as? ChaosError)?.message.contains("a point name is") == true }
    }

    /// A `CHAOS` line naming a point no point could have refuses the session, located in
    /// the line, rather than leaving an entry pending forever.
    @Test(.timeLimit(.minutes(1))) func aCHAOSLineWithAHugePointNameIsRefused() throws {
        let (logger, log) = RecordingLogHandler.logger()
        let huge = String(repeating: "y", count: 100_000)
        #expect {
            try Chaos.bootstrap(
                environment: ["CHAOS": "pending-tests.unused=original;\(huge)=original"], buildConfiguration: .debug,
                watchProfile: false, logger: logger)
        } throws: { error in
            guard let error = error as? ChaosError else { return false }
            return error.kind == .unknownPoint && error.subject?.hasPrefix("CHAOS") == true
                && error.message.contains("a point name is") && error.description.count < 1_000
        }
        #expect(
            !Chaos.liveEntries.contains { $0.entry.pointName == huge || $0.entry.pointName == "pending-tests.unused" })
        #expect(log.all.allSatisfy { "\($0.message) \($0.metadata)".count < 1_000 }, "log lines quote excerpts")
    }

    /// A person's profile naming a point two letters off a live one is refused with "did you
    /// mean", whole, under `waitUnlessMisspelt`; under `wait` the same entry waits, and a name
    /// further off waits under either.
    @Test func aNameTwoEditsFromALivePointIsRefusedUnlessItMayWait() throws {
        _ = livePoint
        let misspelt = try ChaosProfile.decode(
            json: #"""
                {"entries": [{"point": "pending-tests.live", "provider": {"constant": 1}},
                             {"point": "pending-tests.lvie", "provider": {"constant": 2}}]}
                """#, file: "typo.json")
        for check in [
            { _ = try misspelt.apply(missingPoints: .waitUnlessMisspelt) },
            { _ = try misspelt.validate(missingPoints: .waitUnlessMisspelt) },
        ] {
            #expect {
                try check()
            } throws: { error in
                guard let error = error as? ChaosError else { return false }
                return error.kind == .unknownPoint && error.subject?.hasPrefix("typo.json:2:") == true
                    && error.subject?.hasSuffix(" at $.entries[1].point") == true
                    && error.message.contains("did you mean 'pending-tests.live'?")
                    && error.message.contains("allow pending entries")
            }
        }
        #expect(livePoint() == 0, "nothing of the refused profile applied")
        #expect(
            !Chaos.liveEntries.contains { ["pending-tests.live", "pending-tests.lvie"].contains($0.entry.pointName) })

        let waiting = try misspelt.apply(missingPoints: .wait)
        defer { waiting.revertAll() }
        #expect(waiting.waitingEntries.map(\.pointName) == ["pending-tests.lvie"])

        // Three edits away is not taken for a misspelling.
        let far = try ChaosProfile.decode(
            json: #"{"entries": [{"point": "pending-tests.lxxxe", "provider": {"constant": 2}}]}"#)
        #expect(try far.validate(missingPoints: .waitUnlessMisspelt).map(\.pointName) == ["pending-tests.lxxxe"])
        let farChaos = try far.apply(missingPoints: .waitUnlessMisspelt)
        #expect(farChaos.waitingEntries.count == 1)
        farChaos.revertAll()
    }

    /// A `CHAOS` line that leaves an entry waiting for a name two letters off a live point's
    /// says so when it is applied, not only when the session ends.
    @Test func bootstrapWarnsAtOnceOfAWaitingEntryNamedNearALivePoint() throws {
        _ = livePoint
        let (logger, log) = RecordingLogHandler.logger()
        let session = try #require(
            try Chaos.bootstrap(
                environment: ["CHAOS": "pending-tests.liev=original;pending-tests.far-from-all=original"],
                buildConfiguration: .debug, watchProfile: false, logger: logger))
        defer { session.stop() }
        let warnings = log.all.filter { $0.level == .warning }
        #expect(warnings.count == 1, "\(warnings.map(\.message))")
        let warning = try #require(warnings.first)
        #expect(
            warning.message.contains("'pending-tests.liev'; did you mean 'pending-tests.live'?"), "\(warning.message)")
        #expect("\(warning.metadata)".contains("pending-tests.liev ← original"), "\(warning.metadata)")
        #expect(session.entries.map(\.isPending) == [true, true])
    }

    /// Code holds the points it names: by default a missing one is still refused.
    @Test func codeStillRefusesAMissingPointByDefault() {
        #expect { try Chaos().profile(ProfileEntry(point: "pending-tests.nowhere", .original)).apply() } throws: {
            ($0 as? ChaosError)?.kind == .unknownPoint
        }
    }
}
