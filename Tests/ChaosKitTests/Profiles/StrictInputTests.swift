import Foundation
import TestHelpers
import Testing

@_spi(Hooks) @testable import ChaosKit

/// A point whose items declare their parameters, as every built-in point does.
private enum StrictPoints {
    static let files = InjectionPoint<String, Int, Never>(
        "strict-tests.files",
        catalogue: PointCatalogue(
            [
                CatalogueItem("refused", "no parameters at all") { _ in .constant(-1) },
                CatalogueItem(
                    "enospc", "fails matching operations",
                    parameters: [
                        .string("operations", "which operations", default: "w"),
                        .string("path", "a path prefix", optional: true),
                    ]
                ) { parameters in .constant(try parameters.string("operations").count) },
                CatalogueItem(
                    "latency", "waits",
                    parameters: [
                        .duration("delay", "how long"), .integer("count", "how many", default: 1, range: 1...10),
                    ]
                ) { _ in .original },
            ],
            matcher: ArgumentMatcher(conditions: [.string("path", "a path prefix", optional: true)]) { conditions in
                let prefix = conditions.has("path") ? try conditions.string("path") : ""
                return { $0.hasPrefix(prefix) }
            }
        )
    ) { $0.count }

    static func profile(_ provider: String, match: String? = nil) -> String {
        """
        {"entries": [
          {"point": "strict-tests.files", \(match.map { "\"match\": \($0), " } ?? "")"provider": \(provider)}
        ]}
        """
    }
}

/// Every profile value is checked: structure, JSON syntax, parameters, and the messages
/// say where and what to fix without echoing huge input.
@Suite struct StrictInputTests {
    init() { _ = StrictPoints.files }

    /// The error decoding and then validating `json` gives.
    private func error(_ json: String, file: String = "p.json") -> ChaosError? {
        do {
            try ChaosProfile.decode(json: json, file: file).validate()
            return nil
        } catch {
            return error
        }
    }

    // MARK: Parameters

    @Test func parametersGivenToAnItemThatTakesNoneAreRefused() throws {
        let found = try #require(error(StrictPoints.profile(#"{"item": "refused", "parameters": {"port": 8080}}"#)))
        #expect(found.kind == .invalidProvider)
        #expect(
            found.message.contains("unknown parameter 'port'")
                && found.message.contains("'refused' takes no parameters"), "\(found)")
        #expect(
            found.subject == "p.json:2:90 at $.entries[0].provider.parameters.port",
            "the parameter's own place: \(found)")
    }

    @Test func aMisspelledParameterNamesTheNearestOne() throws {
        let found = try #require(error(StrictPoints.profile(#"{"item": "enospc", "parameters": {"operation": "w"}}"#)))
        #expect(found.message.contains("unknown parameter 'operation'; did you mean 'operations'?"), "\(found)")
        #expect(found.subject?.hasSuffix("$.entries[0].provider.parameters.operation") == true)
    }

    @Test func mistypedMissingAndOutOfRangeParametersAreLocated() throws {
        let wrongType = try #require(
            error(StrictPoints.profile(#"{"item": "latency", "parameters": {"delay": true}}"#)))
        #expect(wrongType.message.contains("parameter 'delay' must be a duration"), "\(wrongType)")
        let missing = try #require(error(StrictPoints.profile(#"{"item": "latency"}"#)))
        #expect(missing.message.contains("parameter 'delay' is missing: delay: duration — how long"), "\(missing)")
        #expect(missing.subject == "p.json:2:56 at $.entries[0].provider.item", "\(missing)")
        let outOfRange = try #require(
            error(StrictPoints.profile(#"{"item": "latency", "parameters": {"delay": "1s", "count": 11}}"#)))
        #expect(outOfRange.message.contains("parameter 'count' is 11, outside 1…10"), "\(outOfRange)")
    }

    @Test func matchConditionsAreDeclaredParametersToo() throws {
        let found = try #require(error(StrictPoints.profile("\"refused\"", match: #"{"paht": "/tmp"}"#)))
        #expect(found.message.contains("unknown parameter 'paht'; did you mean 'path'?"), "\(found)")
        #expect(found.subject?.hasSuffix("$.entries[0].match.paht") == true, "\(found)")
    }

    @Test func didYouMeanOffersAtMostThreeNearestNames() {
        let candidates = ["delay", "delays", "relay", "decay", "dely", "display"]
        let near = Suggestions.nearest(to: "delya", in: candidates)
        #expect(near.count == 3)
        #expect(near.first == "delay", "a transposition is one edit")
        #expect(Suggestions.nearest(to: "zzzzzz", in: candidates).isEmpty, "nothing near: no suggestion")
    }

    /// What a waiting entry's name is taken for a misspelling of: at most two edits, no
    /// prefixes, and never further than "did you mean" reaches, so a short name is not near
    /// every other short name.
    @Test func aMisspellingIsAtMostTwoEditsAndNoFurtherThanASuggestion() {
        let live = ["demo.greeting", "demo.greetings", "demo.weather", "ab"]
        #expect(Suggestions.within(2, of: "demo.greting", in: live) == ["demo.greeting", "demo.greetings"])
        #expect(Suggestions.within(2, of: "Demo.Graeting", in: live) == ["demo.greeting", "demo.greetings"])
        #expect(Suggestions.within(2, of: "demo.gret", in: live).isEmpty, "four edits, though a prefix")
        #expect(Suggestions.within(2, of: "xy", in: live).isEmpty, "two edits from a two-letter name is anything")
        #expect(Suggestions.within(2, of: "aa", in: live) == ["ab"])
    }

    // MARK: JSON

    @Test(arguments: [
        (#"{"entries": [], "entries": []}"#, "1:17"),
        (#"{"entries": [{"point": "strict-tests.files", "point": "x", "provider": "refused"}]}"#, "1:46"),
        (#"{"entries": [{"point": "strict-tests.files", "provider": {"item": "enospc", "item": "refused"}}]}"#, "1:77"),
        (
            #"{"entries": [{"point": "strict-tests.files", "provider": {"item": "enospc", "parameters": {"path": "/a", "path": "/b"}}}]}"#,
            "1:106"
        ),
        (#"{"entries": [{"point": "strict-tests.files", "provider": {"constant": {"a": 1, "a": 2}}}]}"#, "1:80"),
        (
            #"{"entries": [{"point": "strict-tests.files", "match": {"path": "/a", "path": "/b"}, "provider": "refused"}]}"#,
            "1:70"
        ),
    ])
    func duplicateMembersAreRefusedAtEveryDepth(json: String, position: String) throws {
        let found = try #require(error(json))
        #expect(found.kind == .invalidProfile)
        #expect(found.message.contains("appears twice"), "\(found)")
        #expect(found.subject == "p.json:\(position)", "the second occurrence: \(found)")
    }

    @Test(arguments: [
        "007", "+1", "1.", ".5", "1e", "-", "0x10", "NaN", "Infinity", "-Infinity", "1e400", "01.5", "1.5e+",
    ])
    func numbersFollowRFC8259(number: String) {
        let found = error(#"{"seed": \#(number), "entries": []}"#)
        #expect(found?.kind == .invalidProfile, "\(number) was accepted")
        #expect(found?.subject?.hasPrefix("p.json:1:1") == true, "at the number: \(String(describing: found))")
    }

    @Test(arguments: ["0", "-0", "7", "0.5", "1e3", "1E-2", "-12.25e+1"])
    func validNumbersAreRead(number: String) throws {
        let value = try ProfileValue(json: number)
        #expect(value == .number(Double(number)!))
    }

    @Test func theSeedMustNotHaveLeadingZeros() throws {
        let found = try #require(error(#"{"seed": 007, "entries": []}"#))
        #expect(found.message.contains("no leading zeros"), "\(found)")
    }

    @Test func invalidUTF8IsReportedWithLineColumnAndByteOffset() throws {
        var bytes = Array("{\"entries\": [\n  {\"point\": \"strict-tests.files\", \"provider\": \"refus".utf8)
        let offset = bytes.count
        bytes.append(0xFF)
        bytes += Array("ed\"}\n]}".utf8)
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("strict-\(UUID().uuidString).json")
            .path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let found = try #require(caught { () throws(ChaosError) in _ = try ChaosProfile.load(contentsOfFile: path) })
        #expect(found.kind == .invalidProfile)
        #expect(found.subject == "\(path):2:53", "\(found)")
        #expect(found.message.contains("byte 0xFF at byte offset \(offset) is not valid UTF-8"), "\(found)")
        #expect(!found.message.contains("check the path"), "it was read; it is not UTF-8")
    }

    @Test func columnsCountCharactersNotBytes() throws {
        let found = try #require(error("{\"description\": \"ünïcödé\", \"entries\": [], \"x\": 1}"))
        #expect(found.subject == "p.json:1:43 at $.x", "\(found)")
    }

    // MARK: Messages

    @Test func errorMessagesQuoteAtMostEightyCharactersOfInput() throws {
        let huge = String(repeating: "x", count: 500_000)
        let fiveMegabytes = String(repeating: "z", count: 5_000_000)
        let samples = [
            StrictPoints.profile(#"{"item": "latency", "parameters": {"delay": "\#(fiveMegabytes)"}}"#),
            StrictPoints.profile(#"{"item": "\#(huge)"}"#),
            StrictPoints.profile(#"{"item": "enospc", "parameters": {"\#(huge)": 1}}"#),
            StrictPoints.profile(#"{"item": "latency", "parameters": {"delay": "\#(huge)"}}"#),
            StrictPoints.profile(#"{"constant": "\#(huge)"}"#),
            #"{"entries": [{"point": "\#(huge)", "provider": "original"}]}"#,
            #"{"entries": [], "\#(huge)": 1}"#,
            #"{"entries": [\#(huge)]}"#,
        ]
        for (index, sample) in samples.enumerated() {
            let found = try #require(error(sample), "sample \(index) was accepted")
            #expect(found.description.count < 800, "sample \(index) echoes \(found.description.count) characters")
        }
        let line = String(repeating: "y", count: 1_000_000)
        let grammar = try #require(caught { () throws(ChaosError) in _ = try ChaosGrammar.parse("a.b=\(line)(") })
        #expect(grammar.description.count < 800)
    }

    @Test(arguments: [
        ("strict-tests.files=refused;x.y=bad name", 35, "not a provider"),
        ("strict-tests.files=latency@soon", 27, "not a delay"),
        ("strict-tests.files=150%refused", 20, "not a probability"),
        ("strict-tests.files=constant([1,,2])", 32, "constant"),
        ("strict-tests.files=latency(delay=1s, delay=2s)", 38, "given twice"),
        ("strict-tests.files=enospc(operations=w,)", 40, "empty argument"),
    ])
    func grammarErrorsPointAtTheOffendingCharacter(text: String, column: Int, fragment: String) throws {
        let found = try #require(caught { () throws(ChaosError) in _ = try ChaosGrammar.parse(text) })
        #expect(found.subject == "CHAOS column \(column)", "\(found)")
        #expect(found.message.contains(fragment), "\(found)")
    }

    @Test func grammarParameterErrorsNameTheirColumn() throws {
        let entries = try ChaosGrammar.parse("strict-tests.files=latency(delay=soon)")
        let found = try #require(caught { () throws(ChaosError) in try ChaosProfile(entries: entries).validate() })
        #expect(found.subject == "CHAOS column 34", "\(found)")
        #expect(found.message.contains("parameter 'delay'"), "\(found)")
    }

    @Test func theGrammarsUnnamedValueFillsTheFirstParameter() throws {
        let entries = try ChaosGrammar.parse("strict-tests.files=enospc(owr)")
        try Chaos.with(ChaosProfile(entries: entries).profileEntries, seed: 1) {
            #expect(StrictPoints.files("/a") == 3)
        }
        let none = try ChaosGrammar.parse("strict-tests.files=refused(1)")
        let found = try #require(caught { () throws(ChaosError) in try ChaosProfile(entries: none).validate() })
        #expect(found.message.contains("'refused' takes no parameters"), "\(found)")
    }

    @Test func validationAppliesNothing() throws {
        try ChaosProfile.decode(json: StrictPoints.profile("\"refused\"")).validate()
        #expect(StrictPoints.files("abc") == 3)
        #expect(StrictPoints.files.core.activity.load(ordering: .relaxed) == 0)
    }
}
