import Foundation
import TestHelpers
import Testing

@testable import ChaosKit

/// Points for profile tests, with unique names so parallel suites do not collide.
private enum ProfilePoints {
    static let number = InjectionPoint<Int, Int, Never>(
        "profile-tests.number",
        catalogue: PointCatalogue(
            [
                CatalogueItem("plus", "adds a number", parameters: [.integer("value", "how much to add", default: 1)]) {
                    parameters in
                    let amount = try parameters.int("value")
                    return .block { env in env.arguments + amount }
                }
            ],
            matcher: ArgumentMatcher(conditions: [.integer("above", "calls with a larger argument")]) { conditions in
                let above = try conditions.int("above")
                return { $0 > above }
            }
        )
    ) { $0 }
    static let text = InjectionPoint<Void, String?, Never>("profile-tests.text") { "real" }
    static let date = InjectionPoint<Void, Date, Never>("profile-tests.date") { Date(timeIntervalSince1970: 0) }
    static let registered: Bool = {
        // Static lets are lazy: a point exists (and profiles can find it) once touched.
        _ = (number, text, date)
        return true
    }()
}

/// Global apply is process-wide: these tests take turns.
@Suite(.serialized) struct ProfileTests {
    init() { _ = ProfilePoints.registered }

    @Test func decodesEveryProviderFormAndApplies() throws {
        let profile = try ChaosProfile.decode(
            json: """
                { "seed": 7,
                  "entries": [
                    { "point": "profile-tests.number", "provider": { "sequential": [ {"constant": 100, "times": 2}, {"item": "plus", "parameters": {"value": 5}} ] } },
                    { "point": "profile-tests.text", "provider": "nil" },
                    { "point": "profile-tests.date", "provider": {"constant": "2000-01-01T00:00:00Z"}, "enabled": true }
                  ] }
                """)
        #expect(profile.seed == 7)
        let chaos = try profile.apply()
        defer { chaos.revertAll() }
        // A step carrying times: 2 covers two calls; then the last step repeats.
        #expect(ProfilePoints.number(1) == 100)
        #expect(ProfilePoints.number(1) == 100)
        #expect(ProfilePoints.number(1) == 6)
        #expect(ProfilePoints.number(2) == 7)
        #expect(ProfilePoints.text() == nil)
        #expect(ProfilePoints.date() == ISO8601DateFormatter().date(from: "2000-01-01T00:00:00Z"))
    }

    @Test func matchNarrowsAnEntryToSomeCalls() throws {
        let profile = try ChaosProfile.decode(
            json: """
                {"entries": [{"point": "profile-tests.number", "match": {"above": 10}, "provider": {"constant": -1}}]}
                """)
        let chaos = try profile.apply()
        defer { chaos.revertAll() }
        #expect(ProfilePoints.number(5) == 5)
        #expect(ProfilePoints.number(50) == -1)
    }

    @Test func disabledEntriesAreNotApplied() throws {
        let profile = try ChaosProfile.decode(
            json: """
                {"entries": [{"point": "profile-tests.number", "provider": {"constant": 9}, "enabled": false}]}
                """)
        let chaos = try profile.apply()
        defer { chaos.revertAll() }
        #expect(ProfilePoints.number(3) == 3)
    }

    @Test func roundTripsThroughJSON() throws {
        let text = """
            {"seed": 99, "entries": [
              {"point": "profile-tests.number", "provider": {"sequential": [{"item": "plus", "parameters": {"value": 2}, "times": 3, "probability": 0.5}, "original"], "delay": 20}},
              {"point": "profile-tests.text", "provider": "nil", "enabled": false},
              {"point": "profile-tests.number", "match": {"above": 3}, "provider": {"constant": 1}}
            ]}
            """
        let first = try ChaosProfile.decode(json: text)
        let second = try ChaosProfile.decode(json: try first.jsonText())
        #expect(second.seed == first.seed)
        #expect(second.entries.map(\.description) == first.entries.map(\.description))
        #expect(second.entries.map(\.enabled) == first.entries.map(\.enabled))
        #expect(try second.jsonText() == first.jsonText())
    }

    /// A refused apply and a check use up no entry id. Other suites make entries meanwhile,
    /// so a try may see a gap: one clean try of a few proves it (before, none could).
    @Test func aRefusedApplyOrACheckUsesUpNoEntryID() throws {
        let bad = ChaosProfile(entries: [
            .init(pointName: "profile-tests.number", provider: .original),
            .init(pointName: "profile-tests.no-such-point", provider: .original),
        ])
        var gaps: [Int] = []
        for _ in 0..<8 {
            let before = ProfileEntry(point: "profile-tests.number", .original).id.number
            #expect(throws: ChaosError.self) { _ = try bad.apply() }
            #expect(throws: ChaosError.self) { try bad.validate() }
            let after = ProfileEntry(point: "profile-tests.number", .original).id.number
            gaps.append(after - before)
            if after == before + 1 { break }
        }
        #expect(gaps.last == 1, "the ids made around a refused apply and a check: gaps \(gaps)")
    }

    /// Each malformed profile, the error kind, and a fragment its message or location must contain.
    static let malformed: [(json: String, kind: ChaosError.Kind, fragment: String)] = [
        ("", .invalidProfile, "value is missing"),
        ("{", .invalidProfile, "member name"),
        ("[]", .invalidProfile, "expected an object"),
        ("{\"entries\": 3}", .invalidProfile, "$.entries"),
        ("{}", .invalidProfile, "needs an \"entries\""),
        ("{\"entries\": [], \"extra\": 1}", .invalidProfile, "unknown member 'extra'"),
        ("{\"seed\": -1, \"entries\": []}", .invalidProfile, "$.seed"),
        ("{\"seed\": 1.5, \"entries\": []}", .invalidProfile, "whole number"),
        ("{\"seed\": \"7\", \"entries\": []}", .invalidProfile, "$.seed"),
        ("{\"entries\": [1]}", .invalidProfile, "$.entries[0]"),
        ("{\"entries\": [{}]}", .invalidProfile, "needs \"point\""),
        ("{\"entries\": [{\"point\": 3, \"provider\": \"original\"}]}", .invalidProfile, "$.entries[1].point"),
        ("{\"entries\": [{\"point\": \"\", \"provider\": \"original\"}]}", .invalidProfile, "non-empty"),
        ("{\"entries\": [{\"point\": \"profile-tests.number\"}]}", .invalidProfile, "needs \"provider\""),
        (
            "{\"entries\": [{\"point\": \"profile-tests.number\", \"provider\": 3}]}", .invalidProfile,
            "$.entries[1].provider"
        ),
        (
            "{\"entries\": [{\"point\": \"profile-tests.number\", \"provider\": \"\"}]}", .invalidProfile,
            "empty provider"
        ),
        ("{\"entries\": [{\"point\": \"profile-tests.number\", \"provider\": {}}]}", .invalidProfile, "exactly one of"),
        (
            "{\"entries\": [{\"point\": \"profile-tests.number\", \"provider\": {\"constant\": 1, \"item\": \"plus\"}}]}",
            .invalidProfile, "constant and item"
        ),
        (
            "{\"entries\": [{\"point\": \"profile-tests.number\", \"provider\": {\"sequential\": []}}]}",
            .invalidProfile, "at least one"
        ),
        (
            "{\"entries\": [{\"point\": \"profile-tests.number\", \"provider\": {\"sequential\": 1}}]}",
            .invalidProfile, "array of providers"
        ),
        (
            "{\"entries\": [{\"point\": \"profile-tests.number\", \"provider\": {\"constant\": 1, \"probability\": 1.5}}]}",
            .invalidProfile, "probability"
        ),
        (
            "{\"entries\": [{\"point\": \"profile-tests.number\", \"provider\": {\"constant\": 1, \"times\": 0}}]}",
            .invalidProfile, "times"
        ),
        (
            "{\"entries\": [{\"point\": \"profile-tests.number\", \"provider\": {\"constant\": 1, \"delay\": \"soon\"}}]}",
            .invalidProfile, "delay"
        ),
        (
            "{\"entries\": [{\"point\": \"profile-tests.number\", \"provider\": {\"constant\": 1, \"parameters\": {}}}]}",
            .invalidProfile, "belong to an item"
        ),
        (
            "{\"entries\": [{\"point\": \"profile-tests.number\", \"provider\": {\"item\": 3}}]}", .invalidProfile,
            "$.entries[1].provider.item"
        ),
        (
            "{\"entries\": [{\"point\": \"profile-tests.number\", \"provider\": {\"item\": \"plus\", \"parameters\": 3}}]}",
            .invalidProfile, "parameters must be an object"
        ),
        (
            "{\"entries\": [{\"point\": \"profile-tests.number\", \"provider\": \"original\", \"enabled\": \"yes\"}]}",
            .invalidProfile, "true or false"
        ),
        (
            "{\"entries\": [{\"point\": \"profile-tests.number\", \"provider\": \"original\", \"match\": 3}]}",
            .invalidProfile, "match"
        ),
        (
            "{\"entries\": [{\"point\": \"profile-tests.number\", \"provider\": \"original\"},]}", .invalidProfile,
            "trailing comma"
        ),
        (
            "{\"entries\": [{\"point\": \"profile-tests.number\" \"provider\": \"original\"}]}", .invalidProfile,
            "expected ',' or '}'"
        ),
        ("{\"entries\": [{'point': 1}]}", .invalidProfile, "double quotes"),
        (
            "{\"entries\": [{\"point\": \"profile-tests.number\", \"provider\": \"original\", \"point\": \"x\"}]}",
            .invalidProfile, "appears twice"
        ),
        // Well-formed JSON that does not fit the live points: found when applying.
        (
            "{\"entries\": [{\"point\": \"profile-tests.nope\", \"provider\": \"original\"}]}", .unknownPoint,
            "no live injection point"
        ),
        (
            "{\"entries\": [{\"point\": \"profile-tests.number\", \"provider\": {\"constant\": \"x\"}}]}",
            .valueTypeMismatch, "not a Int"
        ),
        (
            "{\"entries\": [{\"point\": \"profile-tests.number\", \"provider\": \"nil\"}]}", .valueTypeMismatch,
            "cannot be nil"
        ),
        (
            "{\"entries\": [{\"point\": \"profile-tests.number\", \"provider\": \"teleport\"}]}", .invalidProvider,
            "choose one of: plus"
        ),
        (
            "{\"entries\": [{\"point\": \"profile-tests.number\", \"provider\": {\"item\": \"plus\", \"parameters\": {\"value\": \"two\"}}}]}",
            .invalidProvider, "parameter 'value'"
        ),
        (
            "{\"entries\": [{\"point\": \"profile-tests.text\", \"match\": {}, \"provider\": \"original\"}]}",
            .invalidProvider, "takes no match"
        ),
        (
            "{\"entries\": [{\"point\": \"profile-tests.number\", \"match\": {\"above\": \"x\"}, \"provider\": \"original\"}]}",
            .invalidProvider, "above"
        ),
    ]

    @Test func everyMalformedProfileGivesItsErrorAndAppliesNothing() {
        #expect(Self.malformed.count >= 30)
        for (index, sample) in Self.malformed.enumerated() {
            // A valid entry first: it must not stay applied when a later one fails.
            let json = sample.json.replacingOccurrences(
                of: "{\"entries\": [{",
                with:
                    "{\"entries\": [{\"point\": \"profile-tests.date\", \"provider\": {\"constant\": \"1999-01-01T00:00:00Z\"}}, {"
            )
            do {
                let chaos = try ChaosProfile.decode(json: json, file: "sample\(index).json").apply()
                chaos.revertAll()
                Issue.record("sample \(index) was accepted: \(sample.json)")
            } catch {
                #expect(error.kind == sample.kind, "sample \(index): \(error)")
                #expect(error.description.contains(sample.fragment), "sample \(index): \(error)")
                if error.kind == .invalidProfile, !json.isEmpty {
                    #expect(
                        error.description.contains("sample\(index).json:"), "sample \(index) names no file: \(error)")
                }
            }
            #expect(ProfilePoints.date() == Date(timeIntervalSince1970: 0), "sample \(index) left chaos applied")
            #expect(ProfilePoints.number(4) == 4, "sample \(index) left chaos applied")
        }
    }

    @Test func syntaxErrorsGiveLineAndColumn() {
        let json = "{\n  \"entries\": [\n    {\"point\": \"x\", \"provider\": tru}\n  ]\n}"
        #expect {
            try ChaosProfile.decode(json: json, file: "bad.json")
        } throws: { error in
            (error as? ChaosError)?.subject == "bad.json:3:32"
        }
    }

    @Test func semanticErrorsGiveTheEntrysLocation() {
        let json =
            "{\"entries\": [\n  {\"point\": \"profile-tests.number\", \"provider\": \"original\"},\n  {\"point\": \"profile-tests.number\", \"provider\": {\"constant\": true}}\n]}"
        #expect {
            _ = try ChaosProfile.decode(json: json, file: "p.json").apply()
        } throws: { error in
            (error as? ChaosError)?.subject == "p.json:3:3 at $.entries[1]"
        }
    }

    @Test func loadNamesAMissingFile() {
        #expect {
            try ChaosProfile.load(contentsOfFile: "/nonexistent/chaos.json")
        } throws: { error in
            (error as? ChaosError)?.kind == .invalidProfile && "\(error)".contains("/nonexistent/chaos.json")
        }
    }
}

/// In the same serialized suite: these apply globally too.
extension ProfileTests {
    @Test func grammarChainsCountsProbabilitiesAndItems() throws {
        let entries = try ChaosGrammar.parse("profile-tests.number=2*constant(7)->plus(10);profile-tests.text=nil")
        #expect(entries.count == 2)
        let chaos = try ChaosProfile(seed: 1, entries: entries).apply()
        defer { chaos.revertAll() }
        #expect(ProfilePoints.number(1) == 7)
        #expect(ProfilePoints.number(1) == 7)
        #expect(ProfilePoints.number(1) == 11)
        #expect(ProfilePoints.number(2) == 12)
        #expect(ProfilePoints.text() == nil)
    }

    @Test func grammarProbabilityIsSeeded() throws {
        func run(seed: UInt64) throws -> [Int] {
            let chaos = try ChaosProfile(seed: seed, entries: ChaosGrammar.parse("profile-tests.number=50%constant(0)"))
                .apply()
            defer { chaos.revertAll() }
            return (0..<64).map { _ in ProfilePoints.number(1) }
        }
        let first = try run(seed: 3)
        #expect(first == (try run(seed: 3)))
        #expect(first.contains(0) && first.contains(1))
        #expect(first != (try run(seed: 4)))
    }

    @Test(arguments: [
        ("profile-tests.number", "point=provider"),
        ("=original", "point name"),
        ("profile-tests.number=original->plus", "never ends"),
        ("profile-tests.number=150%plus", "not a probability"),
        ("profile-tests.number=0*plus", "not a count"),
        ("profile-tests.number=plus@soon", "not a delay"),
        ("profile-tests.number=constant", "needs a JSON value"),
        ("profile-tests.number=plus(1", "does not end"),
        ("profile-tests.number=a b", "not a provider"),
        ("profile-tests.number=1*plus->", "empty step"),
    ])
    func grammarErrorsSayWhatToWrite(text: String, fragment: String) {
        #expect {
            try ChaosGrammar.parse(text)
        } throws: { error in
            (error as? ChaosError)?.kind == .invalidProfile && "\(error)".contains(fragment)
        }
    }

    @Test func bootstrapAppliesFileAndLineAndStops() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("chaos-\(UUID().uuidString).json").path
        try #"{"seed": 5, "entries": [{"point": "profile-tests.text", "provider": {"constant": "from file"}}]}"#
            .write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let session = try #require(
            try Chaos.bootstrap(
                environment: ["CHAOS_PROFILE": path, "CHAOS": "profile-tests.number=constant(3)"],
                buildConfiguration: .debug, watchProfile: false
            ))
        #expect(session.seed == 5)
        #expect(ProfilePoints.text() == "from file")
        #expect(ProfilePoints.number(9) == 3)
        #expect(session.entries.map(\.pointName) == ["profile-tests.text", "profile-tests.number"])

        try session.setEnabled(false, at: 1)
        #expect(ProfilePoints.number(9) == 9)
        #expect(session.entries[1].enabled == false)
        #expect(throws: ChaosError.self) { try session.setEnabled(true, at: 7) }

        try #"{"entries": [{"point": "profile-tests.text", "provider": {"constant": "changed"}}]}"#
            .write(toFile: path, atomically: true, encoding: .utf8)
        try session.reload()
        #expect(ProfilePoints.text() == "changed")

        try "{ broken".write(toFile: path, atomically: true, encoding: .utf8)
        #expect(throws: ChaosError.self) { try session.reload() }
        #expect(ProfilePoints.text() == "changed", "a bad file keeps the previous profile")

        session.stop()
        #expect(ProfilePoints.text() == "real")
        #expect(ProfilePoints.number(9) == 9)
    }

    /// Waits (up to 20 s, polling) for `condition`; a lower-bound wait, never a timing assertion.
    private func eventually(_ condition: () -> Bool) async -> Bool {
        for _ in 0..<400 {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return condition()
    }

    @Test func aWatchedSessionReloadsOnFileChangeAndOnSIGHUP() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(
            "chaos-watch-\(UUID().uuidString).json"
        ).path
        func write(_ text: String) throws {
            try #"{"entries": [{"point": "profile-tests.text", "provider": {"constant": "\#(text)"}}]}"#
                .write(toFile: path, atomically: true, encoding: .utf8)
        }
        try write("first")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let session = try #require(
            try Chaos.bootstrap(environment: ["CHAOS_PROFILE": path], buildConfiguration: .debug, watchProfile: false))
        defer { session.stop() }
        session.watch(every: .milliseconds(50))
        #expect(ProfilePoints.text() == "first")

        // A change of size is seen whatever the file system's time resolution.
        try write("second, longer")
        #expect(await eventually { ProfilePoints.text() == "second, longer" })

        // SIGHUP re-reads even when the watcher could not tell the file changed.
        session.watch(every: .seconds(3600))
        try write("third, by SIGHUP")
        kill(getpid(), SIGHUP)
        #expect(await eventually { ProfilePoints.text() == "third, by SIGHUP" })
    }

    @Test func bootstrapRefusesInReleaseBuildsUnlessOptedIn() throws {
        let environment = ["CHAOS": "profile-tests.number=constant(3)"]
        #expect(try Chaos.bootstrap(environment: environment, buildConfiguration: .release) == nil)
        #expect(ProfilePoints.number(9) == 9)
        let session = try #require(
            try Chaos.bootstrap(
                environment: environment, allowInReleaseBuilds: true, buildConfiguration: .release, watchProfile: false
            ))
        #expect(ProfilePoints.number(9) == 3)
        session.stop()
        #expect(ProfilePoints.number(9) == 9)
    }

    @Test func bootstrapWithNothingSetDoesNothing() throws {
        #expect(try Chaos.bootstrap(environment: [:], buildConfiguration: .debug) == nil)
    }

    /// A point that does not exist yet is no error (its entry waits: PendingPointTests);
    /// a provider that does not fit a live point is, and refuses the whole line.
    @Test func badProfileAtBootstrapAppliesNothing() {
        #expect(throws: ChaosError.self) {
            try Chaos.bootstrap(
                environment: [
                    "CHAOS":
                        #"profile-tests.number=constant(3);profile-tests.nope=original;profile-tests.date=constant("x")"#
                ],
                buildConfiguration: .debug, watchProfile: false
            )
        }
        #expect(ProfilePoints.number(9) == 9)
    }
}
