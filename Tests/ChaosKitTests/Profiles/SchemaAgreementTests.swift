import Foundation
import TestHelpers
import Testing

@testable import ChaosKit

/// The published JSON Schema and the decoder must agree: every example profile is valid
/// under both, and every document the decoder rejects for its structure the schema rejects too.
///
/// Needs Python's jsonschema (CI installs it); without it the suite is skipped, by name.
@Suite(
    .enabled(
        if: PythonModule.isInstalled("jsonschema"), "Python's jsonschema is not installed (pip install jsonschema)"))
struct SchemaAgreementTests {
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static var exampleProfiles: [URL] {
        let folder = root.appendingPathComponent("Examples/Profiles")
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        return names.filter { $0.hasSuffix(".json") }.sorted().map { folder.appendingPathComponent($0) }
    }

    /// Runs the schema checker (python3 with jsonschema, which CI installs) over `documents`.
    static func schemaVerdicts(_ documents: [String]) throws -> [String] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "python3", root.appendingPathComponent("Scripts/check-profile-schema.py").path,
            root.appendingPathComponent("Docs/profile.schema.json").path, "-",
        ]
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.runWithSignalsUnblocked()
        input.fileHandleForWriting.write(
            Data(documents.map { $0.replacingOccurrences(of: "\n", with: " ") }.joined(separator: "\n").utf8))
        try input.fileHandleForWriting.close()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "the schema checker failed; is python3-jsonschema installed?")
        return String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
    }

    @Test func everyExampleProfileDecodesAndMatchesTheSchema() throws {
        let files = Self.exampleProfiles
        #expect(!files.isEmpty, "Examples/Profiles has no profiles")
        let texts = try files.map { try String(contentsOf: $0, encoding: .utf8) }
        for (file, text) in zip(files, texts) {
            #expect(throws: Never.self, "\(file.lastPathComponent)") {
                try ChaosProfile.decode(json: text, file: file.path)
            }
        }
        let verdicts = try Self.schemaVerdicts(texts)
        #expect(verdicts.count == files.count)
        for (file, verdict) in zip(files, verdicts) {
            #expect(verdict == "valid", "\(file.lastPathComponent): \(verdict)")
        }
    }

    @Test func structurallyMalformedProfilesAreRejectedByBoth() throws {
        // The decoder's structural rejections (kind .invalidProfile) from ProfileTests, minus
        // duplicate member names, which JSON parsers (and so the schema) silently collapse.
        let samples = ProfileTests.malformed
            .filter { $0.kind == .invalidProfile && !$0.fragment.contains("appears twice") }
            .map(\.json)
        let decoderRejects = samples.map { text in
            (try? ChaosProfile.decode(json: text)) == nil
        }
        let verdicts = try Self.schemaVerdicts(samples.map { $0.isEmpty ? "<empty>" : $0 })
        #expect(verdicts.count == samples.count)
        for (index, sample) in samples.enumerated() {
            #expect(decoderRejects[index], "decoder accepted: \(sample)")
            #expect(verdicts[index].hasPrefix("invalid"), "schema accepted: \(sample)")
        }
    }

    @Test func wellFormedProfilesAreAcceptedByBoth() throws {
        let samples = [
            #"{"entries": []}"#,
            #"{"seed": 3, "entries": [{"point": "a.b", "provider": "original"}]}"#,
            #"{"entries": [{"point": "a", "provider": {"sequential": ["nil", {"constant": [1, 2]}], "probability": 0.5, "delay": "2s"}}]}"#,
            #"{"entries": [{"point": "a", "provider": {"item": "offset", "parameters": {"days": -1}, "times": 2, "delay": 10}, "enabled": false, "match": {"host": "x"}}]}"#,
        ]
        let verdicts = try Self.schemaVerdicts(samples)
        for (sample, verdict) in zip(samples, verdicts) {
            #expect(throws: Never.self) { try ChaosProfile.decode(json: sample) }
            #expect(verdict == "valid", "\(sample): \(verdict)")
        }
    }

    /// The schema is made from the built-in points' declarations, so it refuses what their
    /// catalogues refuse: unknown items and parameters, wrong types, missing values.
    @Test func theSchemaKnowsTheBuiltInCatalogues() throws {
        let rejected = [
            #"{"entries": [{"point": "system.connect", "provider": {"item": "refused", "parameters": {"port": 70000}}}]}"#,
            #"{"entries": [{"point": "system.files", "provider": {"item": "enospc", "parameters": {"operation": ["write"]}}}]}"#,
            #"{"entries": [{"point": "system.files", "provider": {"item": "enospc", "parameters": {"operations": "w"}}}]}"#,
            #"{"entries": [{"point": "system.clock", "provider": "ofset"}]}"#,
            #"{"entries": [{"point": "clock.now", "provider": {"item": "frozen"}}]}"#,
            #"{"entries": [{"point": "network.send", "provider": {"item": "status", "parameters": {"code": 700}}}]}"#,
            #"{"entries": [{"point": "network.send", "match": {"port": 80}, "provider": "offline"}]}"#,
        ]
        for (document, verdict) in zip(rejected, try Self.schemaVerdicts(rejected)) {
            #expect(verdict.hasPrefix("invalid"), "schema accepted: \(document)")
        }
        let accepted = [
            #"{"entries": [{"point": "system.clock", "provider": {"item": "offset", "parameters": {"by": "-30y"}}}]}"#,
            #"{"entries": [{"point": "network.send", "match": {"host": "x"}, "provider": {"item": "latency", "parameters": {"delay": "250ms"}}}]}"#,
            #"{"entries": [{"point": "my.own.point", "provider": {"item": "anything", "parameters": {"k": 1}}}]}"#,
        ]
        for (document, verdict) in zip(accepted, try Self.schemaVerdicts(accepted)) {
            #expect(verdict == "valid", "\(document): \(verdict)")
        }
    }
}
