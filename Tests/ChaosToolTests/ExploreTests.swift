import Foundation
import TestHelpers
import Testing

/// `chaos explore` as a user runs it: real programs (C, Python, Go, sqlite through Python)
/// built in a temporary workspace, explored from there with the built `chaos`, and judged by
/// the --report JSON, the table and the replay profiles it leaves.
@Suite struct ExploreTests {
    static let python = "/usr/bin/python3"

    /// The lines of the new state the savers write (the old one, from --setup, is "old").
    static let newLines = ["alpha\n", "beta\n", "gamma\n"]

    /// Puts the old state in place (a fresh scratch directory has no state yet).
    static let saverSetup = "printf 'old\\n' > state"
    /// The state is exactly the old one or exactly the new one: never a mix, never a part.
    static let saverCheck = "printf 'old\\n' | cmp -s - state || printf 'alpha\\nbeta\\ngamma\\n' | cmp -s - state"

    /// Every write to a file of the scratch directory fails with ENOSPC.
    static let writesSpace =
        #"{"entries": [{"point": "system.files", "provider": {"item": "enospc", "parameters": {"path": ".", "operations": ["write"]}}}]}"#

    /// A folder to build programs in and explore them from.
    struct Workspace {
        let folder: String

        init() throws {
            folder =
                FileManager.default.temporaryDirectory.appendingPathComponent("chaos-explore-test-\(UUID().uuidString)")
                .path
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        }

        func remove() { try? FileManager.default.removeItem(atPath: folder) }

        /// Writes `text` to `name` in the workspace and gives its absolute path.
        func file(_ name: String, _ text: String) throws -> String {
            let path = folder + "/" + name
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            return path
        }

        /// Builds the C program `source` into `name`.
        func compile(_ name: String, _ source: String) throws -> String {
            let built = try ReachTests.Workspace(folder: folder).compile(name, source)
            return try #require(built, "cc failed on \(name)")
        }

        /// `chaos explore` of `program` with the space `space` (its JSON), run from the
        /// workspace, with the report and the replays under names of `name`.
        func explore(
            _ name: String, space: String, options: [String] = [], program: [String]
        ) throws -> Explored {
            let spacePath = try file("\(name).space.json", space)
            let report = folder + "/\(name).report.json"
            try? FileManager.default.removeItem(atPath: report)
            let arguments = ["explore", "--profile", spacePath, "--seed", "1", "--report", report, "--out"]
            let outcome = try ReachTests.runIn(
                folder, ChaosToolTests.buildDirectory.appendingPathComponent("chaos").path,
                arguments + [folder + "/\(name)-out"] + options + ["--"] + program,
                environment: ExploreTests.environment)
            let json = FileManager.default.contents(atPath: report).flatMap {
                try? JSONSerialization.jsonObject(with: $0) as? [String: Any]
            }
            return Explored(outcome: outcome, report: json, spacePath: spacePath)
        }

        /// `chaos run --profile profile -- program` in a fresh folder `name` of the workspace,
        /// after `setup` ran there; then `check` there.
        func replay(_ name: String, profile: String, setup: String, program: [String], check: String) throws -> (
            run: ChaosToolTests.Outcome, check: ChaosToolTests.Outcome, directory: String
        ) {
            let directory = folder + "/" + name
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let prepared = try ReachTests.runIn(directory, "/bin/sh", ["-c", setup], environment: [:])
            #expect(prepared.status == 0, "setup: \(prepared)")
            let run = try ReachTests.runIn(
                directory, ChaosToolTests.buildDirectory.appendingPathComponent("chaos").path,
                ["run", "--profile", profile, "--"] + program, environment: ExploreTests.environment)
            let checked = try ReachTests.runIn(directory, "/bin/sh", ["-c", check], environment: [:])
            return (run, checked, directory)
        }
    }

    /// What one `chaos explore` did: its output and its --report (nil when it wrote none).
    struct Explored: CustomStringConvertible {
        let outcome: ChaosToolTests.Outcome
        let report: [String: Any]?
        let spacePath: String

        var status: Int32 { outcome.status }
        var failures: [[String: Any]] { report?["failures"] as? [[String: Any]] ?? [] }
        /// The calls of the failures of entry `entry` (single placements only), in report order.
        func failingCalls(entry: Int = 1) -> [Int] {
            failures.filter { $0["entry"] as? Int == entry && $0["placements"] == nil }.compactMap {
                $0["call"] as? Int
            }
        }
        /// The baseline's call count of each entry, in space order.
        var baselineCalls: [Int] {
            ((report?["baseline"] as? [String: Any])?["calls"] as? [[String: Any]] ?? []).compactMap {
                $0["calls"] as? Int
            }
        }
        var placements: Int? { report?["placements"] as? Int }

        var description: String {
            "exit \(outcome.status)\n--- stdout\n\(outcome.output)--- stderr\n\(outcome.errors)"
        }
    }

    /// What every `chaos` here runs with: the preload library built for the tests.
    static var environment: [String: String] { ["CHAOS_PRELOAD_LIBRARY": ChaosToolTests.preloadLibrary] }

    // MARK: Savers: the old state, replaced by the new one through state.tmp and rename

    /// Writes the new state line by line and renames it over the old one whatever the
    /// writes did: a failed write leaves a state with a line missing.
    static let buggySaverC = """
        #include <fcntl.h>
        #include <stdio.h>
        #include <string.h>
        #include <unistd.h>

        int main(void) {
            const char *lines[] = {"alpha\\n", "beta\\n", "gamma\\n"};
            int fd = open("state.tmp", O_WRONLY | O_CREAT | O_TRUNC, 0644);
            if (fd < 0) { perror("state.tmp"); return 1; }
            for (int i = 0; i < 3; i++) (void)!write(fd, lines[i], strlen(lines[i]));
            close(fd);
            if (rename("state.tmp", "state") != 0) { perror("rename"); return 1; }
            return 0;
        }
        """

    /// The same saver checking each write: on a failure it removes state.tmp and keeps the
    /// old state (and exits 0: it handled the error).
    static let fixedSaverC = """
        #include <fcntl.h>
        #include <stdio.h>
        #include <string.h>
        #include <unistd.h>

        int main(void) {
            const char *lines[] = {"alpha\\n", "beta\\n", "gamma\\n"};
            int fd = open("state.tmp", O_WRONLY | O_CREAT | O_TRUNC, 0644);
            if (fd < 0) { perror("state.tmp"); return 1; }
            for (int i = 0; i < 3; i++) {
                ssize_t length = (ssize_t)strlen(lines[i]);
                if (write(fd, lines[i], (size_t)length) != length) {
                    perror("write state.tmp: keeping the old state");
                    close(fd);
                    unlink("state.tmp");
                    return 0;
                }
            }
            if (close(fd) != 0) { perror("close"); unlink("state.tmp"); return 0; }
            if (rename("state.tmp", "state") != 0) { perror("rename"); return 1; }
            return 0;
        }
        """

    static let buggySaverPython = """
        import os

        fd = os.open("state.tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        for line in [b"alpha\\n", b"beta\\n", b"gamma\\n"]:
            try:
                os.write(fd, line)
            except OSError:
                pass  # the bug: the line is lost and the rename goes ahead
        os.close(fd)
        os.rename("state.tmp", "state")
        """

    static let fixedSaverPython = """
        import os
        import sys

        fd = os.open("state.tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            for line in [b"alpha\\n", b"beta\\n", b"gamma\\n"]:
                if os.write(fd, line) != len(line):
                    raise OSError("short write")
        except OSError as error:
            print(f"write state.tmp: {error}: keeping the old state", file=sys.stderr)
            os.close(fd)
            os.unlink("state.tmp")
            sys.exit(0)
        os.close(fd)
        os.rename("state.tmp", "state")
        """

    /// Both Go savers in one program (one build): `buggy` drops f.Write's error, `fixed`
    /// keeps the old state when a write fails.
    static let saverGo = """
        package main

        import (
            "fmt"
            "os"
        )

        func main() {
            fixed := len(os.Args) > 1 && os.Args[1] == "fixed"
            f, err := os.Create("state.tmp")
            if err != nil {
                fmt.Fprintln(os.Stderr, err)
                os.Exit(1)
            }
            for _, line := range []string{"alpha\\n", "beta\\n", "gamma\\n"} {
                _, err := f.Write([]byte(line))
                if err != nil && fixed {
                    fmt.Fprintln(os.Stderr, "keeping the old state:", err)
                    f.Close()
                    os.Remove("state.tmp")
                    os.Exit(0)
                }
            }
            f.Close()
            if err := os.Rename("state.tmp", "state"); err != nil {
                fmt.Fprintln(os.Stderr, err)
                os.Exit(1)
            }
        }
        """

    /// Explores the buggy and the fixed saver: the buggy one breaks the state at every
    /// write, the fixed one never.
    static func expectSaverTwins(
        _ workspace: Workspace, buggy: [String], fixed: [String], _ language: String
    ) throws -> Explored {
        let options = ["--setup", saverSetup, "--check", saverCheck]
        let found = try workspace.explore("\(language)-buggy", space: writesSpace, options: options, program: buggy)
        #expect(found.status == 1, "\(language) buggy: \(found)")
        #expect(found.baselineCalls == [3], "\(language): one write per line: \(found)")
        #expect(found.placements == 3, "\(language): \(found)")
        // The baseline's time is measured (it was once always 0) and sets the default timeout.
        let baselineSeconds = (found.report?["baseline"] as? [String: Any])?["seconds"] as? Double ?? 0
        #expect(baselineSeconds > 0, "\(language): \(found)")
        #expect(found.report?["timeoutSeconds"] as? Double == max(10, 10 * baselineSeconds), "\(language): \(found)")
        #expect(found.failingCalls() == [1, 2, 3], "\(language): every write breaks the state: \(found)")
        for failure in found.failures {
            #expect(failure["of"] as? Int == 3, "\(language): \(failure)")
            #expect(failure["point"] as? String == "system.files", "\(language): \(failure)")
            #expect((failure["outcome"] as? String)?.contains("the check failed") == true, "\(language): \(failure)")
            #expect(failure["exitStatus"] as? Int == 0, "\(language): the program itself saw nothing: \(failure)")
            #expect(failure["flaky"] as? Bool == false, "\(language): \(failure)")
            #expect(failure["timedOut"] as? Bool == false, "\(language): \(failure)")
            // What the call was, as the engine noted it, relative to the run's directory.
            #expect(failure["what"] as? String == "write ./state.tmp", "\(language): \(failure)")
        }
        #expect(found.outcome.output.contains("3 failing"), "\(language): \(found)")
        #expect(found.outcome.output.contains("call 2 of 3: write ./state.tmp"), "\(language): \(found)")
        #expect(
            found.outcome.output.contains("(replay in a fresh directory after running --setup there"),
            "\(language): \(found)")

        let clean = try workspace.explore("\(language)-fixed", space: writesSpace, options: options, program: fixed)
        #expect(clean.status == 0, "\(language) fixed: \(clean)")
        #expect(clean.baselineCalls == [3], "\(language) fixed: \(clean)")
        #expect(clean.placements == 3, "\(language) fixed: \(clean)")
        #expect(clean.report?["failures"] as? [Any] != nil && clean.failures.isEmpty, "\(language) fixed: \(clean)")
        #expect(clean.report?["notReached"] as? Int == 0, "\(language) fixed: \(clean)")
        #expect(clean.outcome.output.contains("0 failing"), "\(language) fixed: \(clean)")
        return found
    }

    /// Replays each failure of `found` in a fresh folder: the same line goes missing.
    static func expectExactReplays(
        _ workspace: Workspace, _ found: Explored, program: [String], _ language: String
    ) throws {
        for failure in found.failures {
            let call = try #require(failure["call"] as? Int)
            let profile = try #require(failure["replayProfile"] as? String)
            #expect(profile == workspace.folder + "/\(language)-buggy-out/failure-\(call).json", "\(failure)")
            let command = (["chaos", "run", "--profile", profile, "--"] + program).joined(separator: " ")
            #expect(failure["replay"] as? String == command, "\(failure)")
            let replayed = try workspace.replay(
                "\(language)-replay-\(call)", profile: profile, setup: saverSetup, program: program, check: saverCheck)
            #expect(replayed.run.status == 0, "\(language) call \(call): \(replayed.run)")
            #expect(replayed.check.status != 0, "\(language) call \(call): the check fails as in explore")
            var expected = newLines
            expected.remove(at: call - 1)
            let state = try String(contentsOfFile: replayed.directory + "/state", encoding: .utf8)
            #expect(state == expected.joined(), "\(language) call \(call): write \(call) and only it failed")
        }
    }

    @Test(.enabled(if: ReachTests.which("cc") != nil, "no C compiler (cc)"))
    func aCSaverThatIgnoresWriteErrorsIsCaughtAtEachWriteAndItsFixIsClean() throws {
        let workspace = try Workspace()
        defer { workspace.remove() }
        let buggy = try workspace.compile("saver-buggy", Self.buggySaverC)
        let fixed = try workspace.compile("saver-fixed", Self.fixedSaverC)
        let found = try Self.expectSaverTwins(workspace, buggy: [buggy], fixed: [fixed], "c")
        try Self.expectExactReplays(workspace, found, program: [buggy], "c")
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: python), "no /usr/bin/python3"))
    func aPythonSaverThatSwallowsWriteErrorsIsCaughtAndItsFixIsClean() throws {
        let workspace = try Workspace()
        defer { workspace.remove() }
        let buggy = [Self.python, try workspace.file("saver-buggy.py", Self.buggySaverPython)]
        let fixed = [Self.python, try workspace.file("saver-fixed.py", Self.fixedSaverPython)]
        let found = try Self.expectSaverTwins(workspace, buggy: buggy, fixed: fixed, "python")
        try Self.expectExactReplays(workspace, found, program: buggy, "python")
    }

    // MARK: Power loss: every crash point of a save through a temporary file and rename

    /// The save acknowledges (`ack`, outside the files that lose power, as a reply to a
    /// client would be) once it is done; after an acknowledgement the new state must
    /// survive, before it the old or the new one.
    static let ackedCheck =
        #"if [ -e ack ]; then [ "$(cat data/f)" = new ]; else c=$(cat data/f); [ "$c" = old ] || [ "$c" = new ]; fi"#

    @Test func powerLossAtEveryCrashPointFindsTheUnsyncedRenameAndNothingInTheSyncedOne() throws {
        let workspace = try Workspace()
        defer { workspace.remove() }
        let space =
            #"{"entries": [{"point": "system.files", "provider": {"item": "power-loss", "parameters": {"path": "data"}}}]}"#
        let setup = ["--setup", "mkdir data && printf old > data/f", "--check", Self.ackedCheck]
        let unsafe = try workspace.explore(
            "unsynced", space: space, options: setup,
            program: [
                "/bin/sh", "-c",
                "printf new > data/f.tmp && mv data/f.tmp data/f && echo done > ack && echo x > data/after",
            ])
        #expect(unsafe.status == 1, "\(unsafe)")
        // Power lost after the acknowledgement: the rename was never made durable.
        #expect(!unsafe.failingCalls().isEmpty, "\(unsafe)")
        #expect(unsafe.outcome.output.contains("power lost at change"), "\(unsafe)")
        #expect(unsafe.outcome.output.contains("rename"), "\(unsafe)")
        let safe = try workspace.explore(
            "synced", space: space, options: setup,
            program: [
                "/bin/sh", "-c",
                "printf new > data/f.tmp && sync data/f.tmp && mv data/f.tmp data/f && sync data && echo done > ack && echo x > data/after",
            ])
        #expect(safe.status == 0, "\(safe)")
        #expect(safe.failures.isEmpty, "\(safe)")
        // Every change of the save is a crash point, the syncs make none; and one more: the
        // program has ended.
        #expect((safe.baselineCalls.first ?? 0) >= 5, "\(safe)")
        #expect(safe.placements == (safe.baselineCalls.first ?? 0) + 1, "\(safe)")
    }

    /// A save that acknowledges after its last change: only a power loss once the program
    /// has ended shows that the acknowledged rename was never made durable.
    @Test func powerLossAfterTheProgramEndedFindsAnAcknowledgementPastTheLastChange() throws {
        let workspace = try Workspace()
        defer { workspace.remove() }
        let space =
            #"{"entries": [{"point": "system.files", "provider": {"item": "power-loss", "parameters": {"path": "data"}}}]}"#
        let explored = try workspace.explore(
            "acknowledged-last", space: space,
            options: ["--setup", "mkdir data && printf old > data/f", "--check", Self.ackedCheck],
            program: ["/bin/sh", "-c", "printf new > data/f.tmp && mv data/f.tmp data/f && echo done > ack"])
        #expect(explored.status == 1, "\(explored)")
        let changes = explored.baselineCalls.first ?? 0
        #expect(explored.failingCalls() == [changes + 1], "\(explored)")
        #expect(explored.outcome.output.contains("after the program ended"), "\(explored)")
    }

    @Test func aPowerLossSpaceWithoutACheckIsRefused() throws {
        let workspace = try Workspace()
        defer { workspace.remove() }
        let explored = try workspace.explore(
            "unchecked",
            space:
                #"{"entries": [{"point": "system.files", "provider": {"item": "power-loss", "parameters": {"path": "."}}}]}"#,
            program: ["/bin/sh", "-c", "echo x > f"])
        #expect(explored.status == 125, "\(explored)")
        #expect(explored.outcome.errors.contains("give --check"), "\(explored)")
    }

    /// A static Go program: the seccomp delivery carries every placement.
    @Test(.enabled(if: ReachTests.which("go") != nil, "no Go toolchain (apt install golang-go)"))
    func aStaticGoSaverThatDropsWriteErrorsIsCaughtAndItsFixIsClean() throws {
        let workspace = try Workspace()
        defer { workspace.remove() }
        let program = try #require(
            try SeccompDeliveryTests.buildGo(
                in: workspace.folder, "saver", source: Self.saverGo, flags: [], environment: ["CGO_ENABLED": "0"]))
        let found = try Self.expectSaverTwins(workspace, buggy: [program, "buggy"], fixed: [program, "fixed"], "go")
        try Self.expectExactReplays(workspace, found, program: [program, "buggy"], "go")
    }

    // MARK: sqlite

    /// Inserts 20 rows in one transaction; an sqlite error is reported and handled (exit 0).
    /// With `unsafe` it turns the rollback journal off, which a failed write can corrupt.
    static let sqliteWriter = """
        import sqlite3
        import sys

        try:
            db = sqlite3.connect("db")
            if len(sys.argv) > 1 and sys.argv[1] == "unsafe":
                db.execute("PRAGMA journal_mode=OFF")
            with db:
                for i in range(20):
                    db.execute("insert into t values (?, ?)", (i, "x" * 200))
            db.close()
        except sqlite3.Error as error:
            print("sqlite error:", error, file=sys.stderr)
        """

    static let sqliteSpace = """
        {"entries": [
          {"point": "system.files", "provider": {"item": "enospc", "parameters": {"path": ".", "operations": ["write", "sync"]}}},
          {"point": "system.files", "provider": {"item": "eio", "parameters": {"path": ".", "operations": ["write", "sync"]}}}
        ]}
        """

    /// sqlite's journal keeps the database whole at every failed write or sync: the
    /// integrity check passes and the transaction is all there or not at all. The same
    /// writer with the journal off is caught corrupting it, so the check does catch it.
    @Test(
        .enabled(
            if: ReachTests.which("sqlite3") != nil && FileManager.default.isExecutableFile(atPath: python),
            "no sqlite3 CLI or /usr/bin/python3"))
    func sqliteWithItsJournalSurvivesEveryFailedWriteAndSync() throws {
        let workspace = try Workspace()
        defer { workspace.remove() }
        let writer = try workspace.file("writer.py", Self.sqliteWriter)
        let setup = #"sqlite3 db "create table t(k integer, v text); insert into t values (-1, 'old')""#
        let check = """
            test "$(sqlite3 db 'PRAGMA integrity_check')" = ok && rows=$(sqlite3 db 'select count(*) from t') \
            && { test "$rows" = 1 || test "$rows" = 21; }
            """
        let options = ["--setup", setup, "--check", check]
        let safe = try workspace.explore(
            "sqlite", space: Self.sqliteSpace, options: options, program: [Self.python, writer])
        #expect(safe.status == 0, "\(safe)")
        #expect(safe.report?["failures"] as? [Any] != nil && safe.failures.isEmpty, "\(safe)")
        let calls = safe.baselineCalls
        #expect(calls.count == 2 && calls[0] > 0 && calls[0] == calls[1], "both entries see the same calls: \(safe)")
        #expect(safe.placements == calls.reduce(0, +), "\(safe)")

        let unsafe = try workspace.explore(
            "sqlite-unsafe", space: Self.sqliteSpace, options: options, program: [Self.python, writer, "unsafe"])
        #expect(unsafe.status == 1, "\(unsafe)")
        #expect(!unsafe.failures.isEmpty, "\(unsafe)")
        for failure in unsafe.failures {
            #expect((failure["outcome"] as? String)?.contains("the check failed") == true, "\(failure)")
        }
    }

    // MARK: Explore's own errors

    @Test func explorersOwnErrorsExit125AndSayWhy() throws {
        let workspace = try Workspace()
        defer { workspace.remove() }
        let failing = try workspace.explore(
            "baseline", space: Self.writesSpace, program: ["/bin/sh", "-c", "echo broken >&2; exit 1"])
        #expect(failing.status == 125, "\(failing)")
        #expect(failing.outcome.errors.contains("fails without chaos (exit 1: broken)"), "\(failing)")
        #expect(failing.report == nil, "no report of an exploration that never began")

        let placed = try workspace.explore(
            "placed",
            space: """
                {"entries": [
                  {"point": "system.files", "provider": {"item": "enospc", "parameters": {"path": "."}}},
                  {"point": "system.files", "provider": {"item": "eio", "at": 2, "parameters": {"path": "."}}}
                ]}
                """, program: ["/bin/true"])
        #expect(placed.status == 125, "\(placed)")
        #expect(placed.outcome.errors.contains("\(placed.spacePath):3:"), "located in the space: \(placed)")
        #expect(placed.outcome.errors.contains("$.entries[1]"), "\(placed)")
        #expect(placed.outcome.errors.contains("remove \"at\""), "\(placed)")

        let nowhere = try workspace.explore(
            "nowhere",
            space:
                #"{"entries": [{"point": "system.files", "provider": {"item": "enospc", "parameters": {"path": "/nonexistent/chaos-explore"}}}]}"#,
            program: ["/bin/sh", "-c", "echo data > out"])
        #expect(nowhere.status == 125, "\(nowhere)")
        #expect(nowhere.outcome.errors.contains("entry #1"), "the entry that targets nothing is named: \(nowhere)")
        #expect(nowhere.outcome.errors.contains("nothing to explore"), "\(nowhere)")
    }

    // MARK: Budget, depth, flaky, timeout, jobs

    /// Twenty one-byte writes; the first that fails ends the program with exit 1.
    static let twentyWrites = """
        #include <fcntl.h>
        #include <stdio.h>
        #include <unistd.h>

        int main(void) {
            int fd = open("out", O_WRONLY | O_CREAT | O_TRUNC, 0644);
            if (fd < 0) { perror("out"); return 1; }
            for (int i = 1; i <= 20; i++) {
                if (write(fd, "x", 1) != 1) { fprintf(stderr, "write %d failed\\n", i); return 1; }
            }
            return close(fd) != 0;
        }
        """

    @Test(.enabled(if: ReachTests.which("cc") != nil, "no C compiler (cc)"))
    func aBudgetSpreadsItsPlacementsOverTheCalls() throws {
        let workspace = try Workspace()
        defer { workspace.remove() }
        let program = try workspace.compile("twenty", Self.twentyWrites)
        let spread = try workspace.explore(
            "budget", space: Self.writesSpace, options: ["--budget", "5"], program: [program])
        #expect(spread.status == 1, "\(spread)")
        #expect(spread.baselineCalls == [20], "\(spread)")
        #expect(spread.placements == 5, "\(spread)")
        #expect(spread.report?["runs"] as? Int == 1 + 5 + 5, "the baseline, the placements, the re-runs: \(spread)")
        let calls = spread.failingCalls()
        #expect(calls.count == 5 && Set(calls).count == 5, "every placement fails this program: \(spread)")
        #expect(calls.contains(1) && calls.contains(20), "the first and the last call: \(calls)")
        #expect(calls != [1, 2, 3, 4, 5], "\(calls)")
        #expect(calls.allSatisfy { (1...20).contains($0) }, "\(calls)")
        for failure in spread.failures {
            #expect(failure["of"] as? Int == 20, "\(failure)")
            let call = failure["call"] as? Int ?? 0
            #expect(failure["outcome"] as? String == "exit 1: write \(call) failed", "\(failure)")
        }
    }

    /// Four one-byte writes, each retried once: one failed write is survived, a second ends
    /// the program with exit 1.
    static let retryingWriter = """
        #include <fcntl.h>
        #include <stdio.h>
        #include <unistd.h>

        int main(void) {
            int fd = open("out", O_WRONLY | O_CREAT | O_TRUNC, 0644);
            if (fd < 0) { perror("out"); return 1; }
            int failed = 0;
            for (int i = 0; i < 4; i++) {
                while (write(fd, "x", 1) != 1) {
                    if (++failed == 2) { fprintf(stderr, "two writes failed\\n"); return 1; }
                }
            }
            return close(fd) != 0;
        }
        """

    @Test(.enabled(if: ReachTests.which("cc") != nil, "no C compiler (cc)"))
    func depthTwoFindsThePairsThatBreakAProgramNoSingleFaultBreaks() throws {
        let workspace = try Workspace()
        defer { workspace.remove() }
        let program = try workspace.compile("retrying", Self.retryingWriter)
        let single = try workspace.explore("depth1", space: Self.writesSpace, program: [program])
        #expect(single.status == 0 && single.failures.isEmpty, "one failed write is survived: \(single)")
        #expect(single.baselineCalls == [4], "\(single)")

        let paired = try workspace.explore(
            "depth2", space: Self.writesSpace, options: ["--depth", "2"], program: [program])
        #expect(paired.status == 1, "\(paired)")
        #expect(paired.placements == 4 + 6, "four singles and their six pairs: \(paired)")
        #expect(paired.failingCalls().isEmpty, "no single placement fails: \(paired)")
        var pairs: Set<[Int]> = []
        for failure in paired.failures {
            let placements = failure["placements"] as? [[String: Any]] ?? []
            #expect(placements.count == 2, "\(failure)")
            #expect(placements.allSatisfy { $0["entry"] as? Int == 1 && $0["of"] as? Int == 4 }, "\(failure)")
            #expect(failure["outcome"] as? String == "exit 1: two writes failed", "\(failure)")
            pairs.insert(placements.compactMap { $0["call"] as? Int }.sorted())
        }
        #expect(paired.failures.count == 6, "\(paired)")
        #expect(pairs == [[1, 2], [1, 3], [1, 4], [2, 3], [2, 4], [3, 4]], "\(paired)")
        // A pair replays as one entry placed at both its calls.
        let first = try #require(paired.failures.first)
        let calls = (first["placements"] as? [[String: Any]] ?? []).compactMap { $0["call"] as? Int }.sorted()
        let replay = try String(contentsOfFile: try #require(first["replayProfile"] as? String), encoding: .utf8)
        try #require(calls.count == 2, "\(first)")
        #expect(replay.contains(#""at":[\#(calls[0]),\#(calls[1])]"#), "\(replay)")
    }

    /// One write; when it fails, exit 1 the first time (marked by creating the file named
    /// by the first argument, outside the scratch directory) and 0 afterwards.
    static let failsOnce = """
        #include <fcntl.h>
        #include <stdio.h>
        #include <unistd.h>

        int main(int argc, char **argv) {
            int fd = open("out", O_WRONLY | O_CREAT | O_TRUNC, 0644);
            if (fd < 0) { perror("out"); return 1; }
            if (write(fd, "x", 1) == 1) return 0;
            if (open(argv[1], O_WRONLY | O_CREAT | O_EXCL, 0644) >= 0) { fprintf(stderr, "first failure\\n"); return 1; }
            return 0;
        }
        """

    /// One write; when it fails, the program hangs.
    static let hangs = """
        #include <fcntl.h>
        #include <stdio.h>
        #include <unistd.h>

        int main(void) {
            int fd = open("out", O_WRONLY | O_CREAT | O_TRUNC, 0644);
            if (fd < 0) { perror("out"); return 1; }
            if (write(fd, "x", 1) != 1) { fprintf(stderr, "hanging\\n"); sleep(60); return 1; }
            return 0;
        }
        """

    @Test(.enabled(if: ReachTests.which("cc") != nil, "no C compiler (cc)"))
    func aFailureThatPassesOnItsSecondRunIsFlaky() throws {
        let workspace = try Workspace()
        defer { workspace.remove() }
        let program = try workspace.compile("fails-once", Self.failsOnce)
        let marker = workspace.folder + "/failed-once"
        let found = try workspace.explore("flaky", space: Self.writesSpace, program: [program, marker])
        #expect(found.status == 1, "a flaky failure is still a failure: \(found)")
        #expect(FileManager.default.fileExists(atPath: marker), "the program failed once")
        #expect(found.failures.count == 1, "\(found)")
        #expect(found.failures.first?["flaky"] as? Bool == true, "\(found)")
        #expect(found.failures.first?["outcome"] as? String == "exit 1: first failure", "\(found)")
        #expect(found.report?["runs"] as? Int == 3, "baseline, placement, re-run: \(found)")
        #expect(found.outcome.output.contains("0 failing, 1 flaky"), "\(found)")
        #expect(found.outcome.output.contains("(flaky)"), "\(found)")
    }

    @Test(.enabled(if: ReachTests.which("cc") != nil, "no C compiler (cc)"))
    func aPlacementThatHangsTimesOut() throws {
        let workspace = try Workspace()
        defer { workspace.remove() }
        let program = try workspace.compile("hangs", Self.hangs)
        let found = try workspace.explore(
            "timeout", space: Self.writesSpace, options: ["--timeout", "2s"], program: [program])
        #expect(found.status == 1, "\(found)")
        #expect(found.report?["timeoutSeconds"] as? Double == 2, "\(found)")
        #expect(found.failures.count == 1, "\(found)")
        let failure = try #require(found.failures.first)
        #expect(failure["timedOut"] as? Bool == true, "\(failure)")
        #expect(failure["flaky"] as? Bool == false, "it hangs again on its second run: \(failure)")
        #expect((failure["outcome"] as? String)?.hasPrefix("timed out after 2.0 s") == true, "\(failure)")
        #expect(failure["exitStatus"] is NSNull, "\(failure)")
        #expect(found.outcome.output.contains("timed out"), "\(found)")
    }

    @Test(.enabled(if: ReachTests.which("cc") != nil, "no C compiler (cc)"))
    func parallelRunsFindWhatOneAtATimeFinds() throws {
        let workspace = try Workspace()
        defer { workspace.remove() }
        let saver = try workspace.compile("saver-buggy", Self.buggySaverC)
        let twenty = try workspace.compile("twenty", Self.twentyWrites)
        for (name, program, options) in [
            ("saver", saver, ["--setup", Self.saverSetup, "--check", Self.saverCheck]), ("twenty", twenty, []),
        ] {
            let one = try workspace.explore(
                "\(name)-jobs1", space: Self.writesSpace, options: options + ["--jobs", "1"], program: [program])
            let two = try workspace.explore(
                "\(name)-jobs2", space: Self.writesSpace, options: options + ["--jobs", "2"], program: [program])
            #expect(one.status == 1 && two.status == 1, "\(name): \(one)\n\(two)")
            #expect(!one.failures.isEmpty, "\(name): \(one)")
            func found(_ explored: Explored) -> [String] {
                explored.failures.map { "\($0["entry"] ?? "") \($0["call"] ?? "") \($0["outcome"] ?? "")" }
            }
            #expect(found(one) == found(two), "\(name): the same failures in the same order")
            #expect(one.placements == two.placements, "\(name)")
        }
    }

    @Test(.enabled(if: ReachTests.which("cc") != nil, "no C compiler (cc)"))
    func everyFindsTheTypicalFilesFaultsWithoutASpace() throws {
        let workspace = try Workspace()
        defer { workspace.remove() }
        let buggy = try workspace.compile("saver-every", Self.buggySaverC)
        let report = workspace.folder + "/every.report.json"
        let outcome = try ReachTests.runIn(
            workspace.folder, ChaosToolTests.buildDirectory.appendingPathComponent("chaos").path,
            [
                "explore", "--every", "system.files", "--seed", "1", "--report", report, "--out",
                workspace.folder + "/every-out", "--setup", Self.saverSetup, "--check", Self.saverCheck, "--", buggy,
            ],
            environment: ExploreTests.environment)
        #expect(outcome.status == 1, "\(outcome)")
        let json = try #require(
            FileManager.default.contents(atPath: report).flatMap {
                try? JSONSerialization.jsonObject(with: $0) as? [String: Any]
            })
        let calls = (json["baseline"] as? [String: Any])?["calls"] as? [[String: Any]] ?? []
        // enospc and eio, each at the saver's three writes.
        #expect(calls.compactMap { $0["provider"] as? String } == ["enospc", "eio"], "\(calls)")
        #expect(calls.compactMap { $0["calls"] as? Int } == [3, 3], "\(calls)")
        #expect((json["failures"] as? [Any])?.count == 6, "\(outcome)")
        let wrong = try ReachTests.runIn(
            workspace.folder, ChaosToolTests.buildDirectory.appendingPathComponent("chaos").path,
            ["explore", "--every", "system.filez", "--", buggy], environment: ExploreTests.environment)
        #expect(wrong.status == 125 && wrong.errors.contains("did you mean 'system.files'"), "\(wrong)")
    }
}
