import Foundation
import TestHelpers
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `system.stat` against programs that act on what stat says: `ls -l` prints it, `make`
/// rebuilds by it, `tail -f` notices a file that shrank, Python reads it through `os.stat`,
/// `os.fstat` and `os.lstat`. Each runs plainly first, then under an entry, under both
/// deliveries, which must agree.
@Suite(.serialized, .disabled(if: Sanitizers.thread, Sanitizers.preloadReason)) struct StatAttributesTests {
    static let deliveries = ["preload", "seccomp"]

    /// A folder of its own, with profiles written into it.
    struct Workspace {
        let folder: String

        init() throws {
            folder =
                FileManager.default.temporaryDirectory.appendingPathComponent("chaos-stat-\(UUID().uuidString)").path
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        }

        func remove() { try? FileManager.default.removeItem(atPath: folder) }

        /// A profile of the given entries (JSON objects).
        func profile(_ entries: String...) throws -> String {
            let path = folder + "/profile-\(UUID().uuidString.prefix(6)).json"
            try #"{"entries": [\#(entries.joined(separator: ", "))]}"#.write(
                toFile: path, atomically: true, encoding: .utf8)
            return path
        }

        /// A `system.stat` entry of `item` with `parameters` (JSON members) and `modifiers`.
        func stat(_ item: String, _ parameters: String, _ modifiers: String = "") -> String {
            #"{"point": "system.stat", "provider": {"item": "\#(item)", "parameters": {\#(parameters)}\#(modifiers)}}"#
        }

        func run(_ profile: String, delivery: String, _ program: [String]) throws -> ChaosToolTests.Outcome {
            try ReachTests.runIn(
                folder, ChaosToolTests.buildDirectory.appendingPathComponent("chaos").path,
                ["run", "--delivery", delivery, "--seed", "1", "--profile", profile, "--"] + program,
                environment: ["CHAOS_PRELOAD_LIBRARY": ChaosToolTests.preloadLibrary])
        }

        func plain(_ program: [String]) throws -> ChaosToolTests.Outcome {
            try ReachTests.runIn(folder, program[0], Array(program.dropFirst()), environment: [:])
        }

        func write(_ name: String, _ text: String) throws {
            try text.write(toFile: folder + "/" + name, atomically: false, encoding: .utf8)
        }

        /// Sets the modification time of `name` to `seconds` since 1970.
        func touch(_ name: String, _ seconds: Int) throws {
            try FileManager.default.setAttributes(
                [.modificationDate: Date(timeIntervalSince1970: TimeInterval(seconds))],
                ofItemAtPath: folder + "/" + name)
        }
    }

    @Test func lsPrintsTheAttributesAnEntryNamesAndNoOthers() throws {
        let workspace = try Workspace()
        defer { workspace.remove() }
        try workspace.write("named", "six b\n")
        try workspace.write("beside", "six b\n")
        let plain = try workspace.plain(["/bin/ls", "-l", "--time-style=+%Y-%m-%d", "named", "beside"])
        #expect(plain.output.contains(" 1 ") && !plain.output.contains("123456"), "\(plain.output)")
        let profile = try workspace.profile(
            workspace.stat(
                "attributes",
                #""path": "\#(workspace.folder)/named", "size": 123456, "mtime": "2001-02-03T04:05:06Z", "mode": "600", "nlink": 7"#
            ))
        for delivery in Self.deliveries {
            let listed = try workspace.run(
                profile, delivery: delivery, ["/bin/ls", "-l", "--time-style=+%Y-%m-%d", "named", "beside"])
            #expect(listed.status == 0, "\(delivery): \(listed.errors)")
            let lines = listed.output.split(separator: "\n")
            let named = lines.first { $0.hasSuffix(" named") } ?? ""
            let beside = lines.first { $0.hasSuffix(" beside") } ?? ""
            #expect(named.hasPrefix("-rw------- 7 "), "\(delivery): \(named)")
            #expect(named.contains(" 123456 2001-02-03 "), "\(delivery): \(named)")
            #expect(beside.contains(" 1 ") && beside.contains(" 6 "), "\(delivery): \(beside)")
            #expect(listed.errors.contains("system.stat") && listed.errors.contains("acted 1"), "\(listed.errors)")
        }
    }

    @Test(.enabled(if: ReachTests.which("make") != nil, "no make"))
    func makeRebuildsByTheModificationTimeStatAnswers() throws {
        let workspace = try Workspace()
        defer { workspace.remove() }
        try workspace.write("Makefile", "out: in\n\tcp in out\n")
        try workspace.write("in", "a\n")
        try workspace.write("out", "a\n")
        try workspace.touch("in", 1_000_000_000)
        try workspace.touch("out", 1_500_000_000)
        let make = ["/usr/bin/make", "-f", "Makefile"]
        #expect(try workspace.plain(make).output.contains("up to date"))
        // `in` looks newer than `out`: make copies it again.
        let newer = try workspace.profile(
            workspace.stat("attributes", #""path": "\#(workspace.folder)/in", "mtime": "2020-01-01T00:00:00Z""#))
        // `in` looks missing: make has no rule for it.
        let missing = try workspace.profile(workspace.stat("enoent", #""path": "\#(workspace.folder)/in""#))
        for delivery in Self.deliveries {
            let rebuilt = try workspace.run(newer, delivery: delivery, make)
            #expect(rebuilt.status == 0 && rebuilt.output.contains("cp in out"), "\(delivery): \(rebuilt.output)")
            try workspace.touch("out", 1_500_000_000)
            let gone = try workspace.run(missing, delivery: delivery, make)
            #expect(
                gone.status == 2 && gone.errors.contains("No rule to make target 'in'"), "\(delivery): \(gone.errors)")
        }
        // And the opposite: an `in` newer than `out` looks older, and nothing is rebuilt.
        try workspace.touch("in", 1_600_000_000)
        let older = try workspace.profile(
            workspace.stat("attributes", #""path": "\#(workspace.folder)/in", "mtime": "2000-01-01T00:00:00Z""#))
        for delivery in Self.deliveries {
            let kept = try workspace.run(older, delivery: delivery, make)
            #expect(kept.output.contains("up to date"), "\(delivery): \(kept.output)")
            try workspace.touch("out", 1_500_000_000)
        }
        #expect(try workspace.plain(make).output.contains("cp in out"))
    }

    @Test func tailFollowingAFileSaysItWasTruncatedWhenItsSizeDrops() throws {
        let workspace = try Workspace()
        defer { workspace.remove() }
        try workspace.write("log", "first\nsecond\n")
        let follow = [
            "/usr/bin/timeout", "-s", "INT", "2", "/usr/bin/tail", "---disable-inotify", "-s", "0.1", "-f", "log",
        ]
        #expect(!(try workspace.plain(follow).errors.contains("truncated")))
        // The fourth stat tail makes says the file is empty: it has shrunk.
        let profile = try workspace.profile(
            workspace.stat("attributes", #""path": "\#(workspace.folder)/log", "size": 0"#, #", "at": [4]"#))
        for delivery in Self.deliveries {
            let followed = try workspace.run(profile, delivery: delivery, follow)
            #expect(followed.errors.contains("log: file truncated"), "\(delivery): \(followed.errors)")
            // Having reread it from the start, tail prints the lines twice.
            #expect(followed.output.components(separatedBy: "first").count == 3, "\(delivery): \(followed.output)")
        }
    }

    @Test(.enabled(if: ReachTests.which("python3") != nil, "no python3"))
    func pythonSeesTheSameAttributesThroughStatFstatAndLstatUnderBothDeliveries() throws {
        let workspace = try Workspace()
        defer { workspace.remove() }
        try workspace.write("data", "0123456789")
        symlink(workspace.folder + "/data", workspace.folder + "/link")
        let script = """
            import os
            s = os.stat("data"); f = open("data"); d = os.fstat(f.fileno()); l = os.lstat("link")
            print(s.st_size, oct(s.st_mode), s.st_nlink, int(s.st_mtime), d.st_size, int(d.st_mtime), oct(l.st_mode)[:4])
            print(int(s.st_ctime))
            """
        let plain = try workspace.plain(["/usr/bin/python3", "-c", script])
        #expect(plain.output.hasPrefix("10 0o100644 1 "), "\(plain.output)")
        let realChange = try #require(plain.output.split(separator: "\n").last.flatMap { Int($0) })
        // Modes and links named; a clock a year ahead shifts the change time, but not the
        // modification time the entry names.
        let profile = try workspace.profile(
            workspace.stat(
                "attributes",
                #""path": "\#(workspace.folder)/data", "size": 42, "mtime": "2001-02-03T04:05:06Z", "mode": "4755", "nlink": 3"#
            ),
            #"{"point": "system.clock", "provider": {"item": "offset", "parameters": {"by": "+365d"}}}"#)
        var answers: [String] = []
        for delivery in Self.deliveries {
            let seen = try workspace.run(profile, delivery: delivery, ["/usr/bin/python3", "-c", script])
            #expect(seen.status == 0, "\(delivery): \(seen.errors)")
            let lines = seen.output.split(separator: "\n").map(String.init)
            #expect(lines.first == "42 0o104755 3 981173106 42 981173106 0o12", "\(delivery): \(seen.output)")
            #expect(lines.last.flatMap { Int($0) }.map { $0 - realChange } == 365 * 86400, "\(seen.output)")
            answers.append(seen.output)
        }
        #expect(Set(answers).count == 1, "the deliveries agree: \(answers)")
    }

    @Test func anEntryThatNamesNoAttributeIsRefusedWhereItIsWritten() throws {
        let workspace = try Workspace()
        defer { workspace.remove() }
        for (parameters, message) in [
            (#""path": "/tmp""#, "at least one of size"),
            (#""mode": "999""#, "not permission bits"),
            (#""size": -1"#, "size"),
        ] {
            let profile = try workspace.profile(workspace.stat("attributes", parameters))
            let refused = try workspace.run(profile, delivery: "seccomp", ["/bin/true"])
            #expect(refused.status != 0, "\(parameters)")
            #expect(refused.errors.contains(message), "\(parameters): \(refused.errors)")
        }
    }
}
