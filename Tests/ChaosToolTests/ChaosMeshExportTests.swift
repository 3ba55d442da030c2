import Foundation
import Testing

/// `chaos export --chaos-mesh`: manifests that Chaos Mesh's own CRD schemas accept
/// (Tests/Fixtures/ChaosMesh, validated by Scripts/validate-chaos-mesh.py), and a loud
/// refusal, entry by entry, of what Chaos Mesh cannot express.
@Suite struct ChaosMeshExportTests {
    static let validator = ChaosToolTests.root.appendingPathComponent("Scripts/validate-chaos-mesh.py").path

    /// Whether python3 has the modules the validator reads with.
    static let canValidate: Bool = {
        (try? ChaosToolTests.run("/usr/bin/env", ["python3", "-c", "import jsonschema, yaml"]).status) == 0
    }()

    /// One entry of every kind the export writes, and one of each kind it must refuse.
    static let profile = """
        {"entries": [
          {"point": "system.clock", "provider": {"item": "offset", "parameters": {"by": "-10d"}}},
          {"point": "system.files", "provider": {"item": "enospc", "parameters": {"path": "/data/db"}}},
          {"point": "system.files", "provider": {"item": "latency", "parameters": {"delay": "150ms", "path": "/data"}}},
          {"point": "system.files", "provider": {"item": "eio", "probability": 0.25}},
          {"point": "system.connect", "provider": {"item": "latency", "parameters": {"delay": "1.5s", "host": "10.0.0.0/8"}}},
          {"point": "system.connect", "provider": {"item": "refused"}},
          {"point": "system.files", "provider": {"item": "eio", "times": 3}},
          {"point": "system.clock", "provider": {"item": "frozen", "parameters": {"date": "2001-01-01T00:00:00Z"}}},
          {"point": "clock.now", "provider": {"item": "offset", "parameters": {"by": "1h"}}},
          {"point": "system.files", "provider": {"sequential": ["original", {"item": "eio"}]}}
        ]}
        """

    static func export(_ profile: String, _ options: [String]) throws -> ChaosToolTests.Outcome {
        let file = try ChaosToolTests.temporaryFile(profile)
        defer { try? FileManager.default.removeItem(atPath: file) }
        return try ChaosToolTests.chaos(["export", "--chaos-mesh"] + options + [file])
    }

    static func validate(_ manifests: String) throws -> ChaosToolTests.Outcome {
        let file = try ChaosToolTests.temporaryFile(manifests, suffix: ".yaml")
        defer { try? FileManager.default.removeItem(atPath: file) }
        return try ChaosToolTests.run("/usr/bin/env", ["python3", validator, file])
    }

    @Test(.enabled(if: canValidate, "python3 lacks jsonschema or yaml (pip install jsonschema pyyaml)"))
    func manifestsValidateAgainstChaosMeshsSchemasAndRefusalsAreNamed() throws {
        let outcome = try Self.export(
            Self.profile,
            [
                "--selector", "app=api,app.kubernetes.io/part-of=shop", "--namespace", "shop",
                "--volume-path", "/data",
            ])
        #expect(outcome.status == 1, "refused entries make the export fail without --allow-partial: \(outcome)")
        let kinds = outcome.output.split(separator: "\n").filter { $0.hasPrefix("kind: ") }
        #expect(
            kinds == [
                "kind: \"TimeChaos\"", "kind: \"IOChaos\"", "kind: \"IOChaos\"", "kind: \"IOChaos\"",
                "kind: \"NetworkChaos\"",
            ], "\(outcome.output)")
        for expected in [
            "timeOffset: \"-240h\"", "errno: 28", "path: \"/data/db/**/*\"", "delay: \"150ms\"", "percent: 25",
            "latency: \"1500ms\"", "- \"10.0.0.0/8\"", "volumePath: \"/data\"",
        ] {
            #expect(outcome.output.contains(expected), "\(expected) missing from \(outcome.output)")
        }
        for (entry, reason) in [
            ("entry #6 (system.connect)", "ECONNREFUSED"), ("entry #7 (system.files)", "times"),
            ("entry #8 (system.clock)", "frozen"), ("entry #9 (clock.now)", "not a system point"),
            ("entry #10 (system.files)", "a sequence"),
        ] {
            let line = outcome.errors.split(separator: "\n").first { $0.contains(entry) }
            #expect(line?.contains(reason) == true, "\(entry): \(outcome.errors)")
        }
        let validated = try Self.validate(outcome.output)
        #expect(validated.status == 0, "\(validated)")
        #expect(validated.output.contains("5 manifests valid"), "\(validated)")
    }

    @Test(.enabled(if: canValidate, "python3 lacks jsonschema or yaml (pip install jsonschema pyyaml)"))
    func theExampleProfilesExportToValidManifests() throws {
        let folder = ChaosToolTests.root.appendingPathComponent("Examples/Profiles")
        var manifests = ""
        for name in try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
        where name.hasSuffix(".json") {
            let text = try String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8)
            let outcome = try Self.export(
                text, ["--selector", "app=demo", "--volume-path", "/tmp", "--allow-partial"])
            #expect(outcome.status == 0, "\(name): \(outcome)")
            manifests += outcome.output
        }
        // thirty-years-ago's offset and offline-disk-full's disk at least.
        #expect(manifests.components(separatedBy: "\nkind: ").count - 1 >= 2, "\(manifests)")
        let validated = try Self.validate(manifests)
        #expect(validated.status == 0, "\(validated)")
    }

    /// The check can fail: a manifest Chaos Mesh would refuse is refused here too.
    @Test(.enabled(if: canValidate, "python3 lacks jsonschema or yaml (pip install jsonschema pyyaml)"))
    func theValidatorRefusesWhatChaosMeshWould() throws {
        let broken = """
            apiVersion: chaos-mesh.org/v1alpha1
            kind: TimeChaos
            metadata:
              name: Not_A_Name
            spec:
              mode: sometimes
              selector: {}
              timeOffset: 10d
            ---
            apiVersion: chaos-mesh.org/v1alpha1
            kind: IOChaos
            metadata:
              name: disk
            spec:
              action: fault
              mode: all
              selector: {}
            """
        let validated = try Self.validate(broken)
        #expect(validated.status == 1)
        for problem in ["spec.mode", "Not_A_Name", "'10d' is no Go duration", "'volumePath' is a required property"] {
            #expect(validated.errors.contains(problem), "\(problem): \(validated.errors)")
        }
    }

    /// corrupt becomes IOChaos's mistake where the two mean the same (one byte, drawn, zero
    /// or random bytes), and is refused with the difference otherwise.
    @Test(.enabled(if: canValidate, "python3 lacks jsonschema or yaml (pip install jsonschema pyyaml)"))
    func corruptBecomesAMistakeWhereTheyMeanTheSame() throws {
        let outcome = try Self.export(
            """
            {"entries": [
              {"point": "system.files", "provider": {"item": "corrupt", "parameters": {"path": "/data/db", "with": "zero"}}},
              {"point": "system.files", "provider": {"item": "corrupt", "parameters": {"path": "/data/db"}}},
              {"point": "system.files", "provider": {"item": "corrupt", "parameters": {"path": "/data/db", "with": "random", "bytes": 4}}}
            ]}
            """, ["--selector", "app=db", "--volume-path", "/data", "--allow-partial"])
        #expect(outcome.status == 0, "\(outcome)")
        for expected in ["action: \"mistake\"", "filling: \"zero\"", "maxOccurrences: 1", "maxLength: 1"] {
            #expect(outcome.output.contains(expected), "\(expected) missing from \(outcome.output)")
        }
        #expect(outcome.errors.contains("entry #2") && outcome.errors.contains("flip"), "\(outcome.errors)")
        #expect(outcome.errors.contains("entry #3") && outcome.errors.contains("exactly N bytes"), "\(outcome.errors)")
        let validated = try Self.validate(outcome.output)
        #expect(validated.status == 0 && validated.output.contains("1 manifests valid"), "\(validated)")
    }

    /// A stat entry's attributes become IOChaos's attrOverride (perm as its number, mtime as
    /// seconds and nanoseconds); its failures fail Chaos Mesh's getattr.
    @Test(.enabled(if: canValidate, "python3 lacks jsonschema or yaml (pip install jsonschema pyyaml)"))
    func statAttributesBecomeAnAttrOverride() throws {
        let outcome = try Self.export(
            """
            {"entries": [
              {"point": "system.stat", "provider": {"item": "attributes", "parameters": {"path": "/data/db", "size": 0, "mode": "600", "mtime": "2001-02-03T04:05:06Z", "nlink": 2}}},
              {"point": "system.stat", "provider": {"item": "enoent", "parameters": {"path": "/data/gone"}}}
            ]}
            """, ["--selector", "app=db", "--volume-path", "/data"])
        #expect(outcome.status == 0, "\(outcome)")
        for expected in [
            "action: \"attrOverride\"", "perm: 384", "size: 0", "nlink: 2", "sec: 981173106", "nsec: 0",
            "path: \"/data/db/**/*\"", "action: \"fault\"", "errno: 2", "- \"getattr\"",
        ] {
            #expect(outcome.output.contains(expected), "\(expected) missing from \(outcome.output)")
        }
        let validated = try Self.validate(outcome.output)
        #expect(validated.status == 0 && validated.output.contains("2 manifests valid"), "\(validated)")
    }

    @Test func aBadSelectorOrNoFormatIsRefusedWithWhatToWrite() throws {
        let noFormat = try ChaosToolTests.chaos(["export", "--selector", "app=api", "/dev/null"])
        #expect(noFormat.status != 0 && noFormat.errors.contains("--chaos-mesh"), "\(noFormat)")
        let badLabel = try Self.export(Self.profile, ["--selector", "app"])
        #expect(badLabel.status == 1 && badLabel.errors.contains("name=value"), "\(badLabel)")
        #expect(badLabel.output.isEmpty)
    }
}
