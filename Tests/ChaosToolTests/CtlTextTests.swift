import Foundation
import Testing

@testable import chaos_tool

#if canImport(Glibc)
import Glibc
#endif

/// What `chaos ctl` prints of other programs, and whose endpoint files it reads.
@Suite struct CtlTextTests {
    @Test func everyControlCharacterOfAnInterpolatedValueIsShownNotSent() {
        let name = "a\u{1B}]0;title\u{07}\u{1B}[2J\u{9B}31m\u{7F}\u{202E}b\nc\td"
        let line: TerminalText = "12  \(name)  end\n"
        #expect(
            line.description == #"12  a\u{1B}]0;title\u{7}\u{1B}[2J\u{9B}31m\u{7F}\u{202E}b\u{A}c\u{9}d  end"# + "\n")
        #expect(!line.description.dropLast().unicodeScalars.contains { TerminalText.steers($0) })
        #expect(TerminalText.escaped("ñandú ✓") == "ñandú ✓")
        // JSON keeps its meaning: C0 is JSON's own escape already, the rest becomes \u00XX.
        let json = TerminalText.json(Data("{\"p\":\"\\u001b\u{9B}\u{7F}\"}\n".utf8))
        #expect(json == "{\"p\":\"\\u001b\\u009b\\u007f\"}\n")
        let decoded = try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: String]
        #expect(decoded?["p"] == "\u{1B}\u{9B}\u{7F}")
    }

    /// An endpoint file as a process would write it, for this test process's pid (alive).
    static func endpointFile(in directory: URL, program: String) throws -> URL {
        let file = directory.appendingPathComponent("\(getpid()).json")
        let record: [String: Any] = [
            "version": 1, "pid": Int(getpid()), "program": program, "kind": "swift", "url": "http://127.0.0.1:9",
            "token": String(repeating: "0", count: 64), "started": "2026-01-01T00:00:00.000Z",
        ]
        try JSONSerialization.data(withJSONObject: record).write(to: file)
        return file
    }

    static func privateDirectory() throws -> URL {
        let directory = URL(fileURLWithPath: "/tmp/ctltext-\(getpid())-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        chmod(directory.path, 0o700)
        return directory
    }

    @Test func aProgramNameFromAFileReachesTheTerminalEscaped() throws {
        let directory = try Self.privateDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        _ = try Self.endpointFile(in: directory, program: "evil\u{1B}[31m\u{1B}]0;owned\u{07}\u{9B}1m")
        let shown = try ChaosToolTests.chaos("ctl", "console", "--directory", directory.path)
        #expect(shown.status == 0, "\(shown.errors)")
        #expect(shown.output.contains(#"evil\u{1B}[31m\u{1B}]0;owned\u{7}\u{9B}1m  http://127.0.0.1:9/console"#))
        #expect(!shown.output.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x07 || $0.value == 0x9B })
        let one = try ChaosToolTests.chaos("ctl", "console", "\(getpid())", "--directory", directory.path)
        #expect(
            one.status == 0 && one.output == "http://127.0.0.1:9/console?token=\(String(repeating: "0", count: 64))\n")
    }

    @Test(.enabled(if: geteuid() == 0, "needs root to give a file to another user"))
    func endpointFilesOfAnotherUserAreRefusedUnlessAllowed() throws {
        let directory = try Self.privateDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = try Self.endpointFile(in: directory, program: "theirs")
        chown(file.path, 65534, 65534)
        let status = try ChaosToolTests.chaos("ctl", "status", "\(getpid())", "--directory", directory.path)
        #expect(status.status != 0)
        #expect(status.errors.contains("belongs to uid 65534, not to you"), "\(status.errors)")
        #expect(status.errors.contains("--allow-other-users"), "\(status.errors)")
        let listed = try ChaosToolTests.chaos("ctl", "console", "--directory", directory.path)
        #expect(!listed.output.contains("theirs"))
        #expect(listed.errors.contains("skipped"), "\(listed.errors)")
        let allowed = try ChaosToolTests.chaos(
            "ctl", "console", "--allow-other-users", "--directory", directory.path)
        #expect(allowed.output.contains("\(getpid())  theirs  http://127.0.0.1:9/console"), "\(allowed.errors)")
        // A link in place of a file is not followed, whoever owns what it names.
        try FileManager.default.removeItem(at: file)
        let elsewhere = try Self.endpointFile(in: FileManager.default.temporaryDirectory, program: "linked")
        defer { try? FileManager.default.removeItem(at: elsewhere) }
        try FileManager.default.createSymbolicLink(at: file, withDestinationURL: elsewhere)
        let linked = try ChaosToolTests.chaos("ctl", "console", "--directory", directory.path)
        #expect(!linked.output.contains("linked"))
    }

    @Test func theHelpNamesTheFlagThatAllowsOtherUsers() throws {
        let help = try ChaosToolTests.chaos("ctl", "status", "--help")
        #expect(help.output.contains("--allow-other-users"), "\(help.output)")
        #expect(help.output.contains("Also talk to processes of other users"))
    }
}
