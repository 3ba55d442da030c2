import CSystemProbes
import Foundation
import TestHelpers
import Testing

#if canImport(Glibc)
import Glibc
#endif

#if os(Linux)
/// Debian's programs under `chaos run --profile` (profiles, not hand-written plans: the
/// preload tests cover those). Nothing here changes this process, so these run in parallel.
@Suite(.disabled(if: Sanitizers.thread, Sanitizers.preloadReason)) struct ProgramConformanceTests {
    /// `chaos run --profile <profile> [--seed] -- arguments…`, the profile written to a file
    /// next to `folder`.
    func chaosRun(
        _ profile: String, _ arguments: [String], folder: String, seed: UInt64? = nil, input: String? = nil,
        environment: [String: String] = [:], delivery: String? = nil
    ) throws -> Outcome {
        try Build.requirePreload()
        let file = folder + "-\(UUID().uuidString.prefix(8)).json"
        try profile.write(toFile: file, atomically: true, encoding: .utf8)
        defer { remove(file) }
        // --quiet: what the program printed is compared, not chaos run's report.
        var command = [Build.chaos, "run", "--quiet", "--profile", file]
        if let seed { command += ["--seed", String(seed)] }
        if let delivery { command += ["--delivery", delivery] }
        return try Command.run(command + ["--"] + arguments, environment: environment, in: folder, input: input)
    }

    private func enospc(_ path: String, operations: [String] = ["write", "sync"]) -> String {
        let list = operations.map { "\"\($0)\"" }.joined(separator: ", ")
        return
            #"{"entries": [{"point": "system.files", "provider": {"item": "enospc", "parameters": {"path": "\#(path)", "operations": [\#(list)]}}}]}"#
    }

    @Test(.enabled(if: Needs.program("sqlite3"), "sqlite3 is not installed (.ci/install-system-test-deps installs it)"))
    func sqlite3InsertFailsWithDiskFullAndTheDatabaseKeepsRowsOneTwoThree() throws {
        let folder = try workspace("sqlite3", folders: ["db"])
        defer { remove(folder) }
        let database = folder + "/db/shop.db"
        let setup = try Command.run(["sqlite3", database, "create table t(x); insert into t values (1), (2), (3);"])
        #expect(setup.status == 0, "\(setup)")
        let insert = try chaosRun(
            enospc(folder + "/db"), ["sqlite3", database, "insert into t values (4);"], folder: folder)
        #expect(insert.status != 0, "\(insert)")
        #expect(insert.errors.contains("database or disk is full"), "\(insert)")
        let check = try Command.run(["sqlite3", database, "pragma integrity_check; select x from t order by x;"])
        #expect(check.lines == ["ok", "1", "2", "3"], "\(check)")
        // The same profile on a sibling folder leaves the insert alone.
        let sibling = try chaosRun(
            enospc(folder + "/d"), ["sqlite3", database, "insert into t values (4);"], folder: folder)
        #expect(sibling.status == 0, "\(sibling)")
        #expect(try Command.run(["sqlite3", database, "select count(*) from t;"]).lines == ["4"])
    }

    @Test(.enabled(if: Needs.coreutils, "coreutils (cp, dd, tee) or sh is missing"))
    func cpDdTeeAndShellRedirectionsFailInTheFaultyFolderAndWorkInItsSibling() throws {
        let folder = try workspace("coreutils", folders: ["io", "io2"], files: ["source"])
        defer { remove(folder) }
        let profile = enospc(folder + "/io")
        for target in ["io", "io2"] {
            let faulty = target == "io"
            let cp = try chaosRun(profile, ["cp", "source", "\(target)/copy"], folder: folder)
            let dd = try chaosRun(
                profile, ["dd", "if=/dev/zero", "of=\(target)/dd", "bs=4096", "count=4", "status=none"], folder: folder)
            let tee = try chaosRun(profile, ["tee", "\(target)/tee"], folder: folder, input: "hello\n")
            let shell = try chaosRun(profile, ["sh", "-c", "echo x > \(target)/shell"], folder: folder)
            for (name, outcome) in [("cp", cp), ("dd", dd), ("tee", tee), ("sh", shell)] {
                if faulty {
                    #expect(outcome.status != 0, "\(name) into \(target): \(outcome)")
                    #expect(
                        name == "sh" || outcome.errors.contains("No space left on device"),
                        "\(name) into \(target): \(outcome)")
                } else {
                    #expect(outcome.status == 0 && outcome.errors.isEmpty, "\(name) into \(target): \(outcome)")
                }
            }
            #expect(tee.output == "hello\n", "tee's own stdout (a pipe) is outside the profile's path")
            let sizes = ["copy", "dd", "tee", "shell"].map { file in
                (try? FileManager.default.attributesOfItem(atPath: "\(folder)/\(target)/\(file)")[.size] as? Int) ?? -1
            }
            // cp and dd create before they write, tee and the shell open: every file exists.
            #expect(sizes == (faulty ? [0, 0, 0, 0] : [1, 16384, 6, 2]), "\(target): \(sizes)")
        }
    }

    /// A shell loop writing 100 files under a probability profile: which writes failed.
    private static let loop =
        #"for i in $(seq 1 100); do if echo x > "io/f$i" 2>/dev/null; then printf 1; else printf 0; fi; done"#
    private static let halfOfTheWrites =
        #"{"entries": [{"point": "system.files", "provider": {"item": "enospc", "parameters": {"path": "io", "operations": ["write"]}, "probability": 0.5}}]}"#

    @Test(.enabled(if: Needs.program("sh") && Needs.program("seq"), "sh or seq is missing"))
    func aSeededRunReplaysExactlyAndAnUnseededOnePrintsTheSeedThatReplaysIt() throws {
        let folder = try workspace("replay", folders: ["io"])
        defer { remove(folder) }
        func run(seed: UInt64? = nil, environment: [String: String] = [:]) throws -> Outcome {
            try chaosRun(
                Self.halfOfTheWrites, ["sh", "-c", Self.loop], folder: folder, seed: seed, environment: environment)
        }
        let first = try run(seed: 42)
        let second = try run(seed: 42)
        #expect(first.status == 0 && first.output.count == 100, "\(first)")
        #expect(first.output == second.output, "--seed 42 replays exactly")
        #expect((25...75).contains(first.output.filter { $0 == "0" }.count), "p=0.5 over 100 writes: \(first.output)")
        #expect(!first.errors.contains("replay with"), "a given seed is not announced: \(first)")

        let unseeded = try run()
        let announced = try #require(
            unseeded.errors.firstMatch(of: /chaos run: seed (\d+) \(replay with --seed \1 or CHAOS_SEED=\1\)/),
            "\(unseeded)")
        let seed = try #require(UInt64(announced.1))
        #expect(try run(seed: seed).output == unseeded.output, "--seed \(seed) replays the unseeded run")
        #expect(
            try run(environment: ["CHAOS_SEED": String(seed)]).output == unseeded.output,
            "CHAOS_SEED=\(seed) replays it too")
    }

    @Test(.enabled(if: Needs.program("python3"), "python3 is not installed (.ci/install-system-test-deps installs it)"))
    func python3SeesTheClockOffset() throws {
        let folder = try workspace("python", folders: [])
        defer { remove(folder) }
        let profile =
            #"{"entries": [{"point": "system.clock", "provider": {"item": "offset", "parameters": {"by": "-1d"}}}]}"#
        let outcome = try chaosRun(profile, ["python3", "-c", "import time; print(int(time.time()))"], folder: folder)
        let seen = try #require(Double(outcome.line), "\(outcome)")
        // The real now, which the in-process clock scenario (running meanwhile) cannot move.
        let now = Double(chaos_probe_real_ns()) / 1e9
        #expect(abs(seen - (now - 86_400)) < 10, "python3 printed \(seen), 1d before \(now) expected")
    }

    @Test(.enabled(if: Needs.program("sh"), "sh is missing"))
    func aRelativePathIsTakenFromTheFolderEachRunStartsIn() throws {
        let first = try workspace("relative-first", folders: ["io"])
        let second = try workspace("relative-second", folders: ["io"])
        defer {
            remove(first)
            remove(second)
        }
        // The same profile text, so the second run may find the plan the first one compiled.
        let profile =
            #"{"entries": [{"point": "system.files", "provider": {"item": "enospc", "parameters": {"path": "io"}}}]}"#
        for folder in [first, second, first] {
            remove(folder + "/io/f")
            let outcome = try chaosRun(profile, ["sh", "-c", "echo x > io/f"], folder: folder)
            // The shell's own failure (not chaos run's 125): it made the file and could not write.
            #expect(outcome.status != 0 && outcome.status != 125, "\(folder)/io is the profile's io there: \(outcome)")
            #expect(
                (try? FileManager.default.attributesOfItem(atPath: folder + "/io/f")[.size] as? Int) == 0, "\(outcome)")
        }
    }

    /// The interpreter `python3` runs (a pyenv shim is a shell script, which would fork first).
    private func realPython() throws -> String {
        try #require(Command.run(["python3", "-c", "import sys; print(sys.executable)"]).lines.first)
    }

    @Test(.enabled(if: Needs.program("bash"), "bash is missing"), arguments: ["preload", "seccomp"])
    func bashRetriesAForkThatFailsWithEAGAINAndGoesOn(delivery: String) throws {
        let folder = try workspace("bash-fork", folders: [])
        defer { remove(folder) }
        let script = "/bin/true && echo one; /bin/true && echo two"
        let plain = try chaosRun(
            #"{"entries": [{"point": "system.files", "provider": {"item": "eio", "parameters": {"path": "/nowhere"}}}]}"#,
            ["bash", "-c", script], folder: folder, delivery: delivery)
        #expect(plain.output == "one\ntwo\n" && !plain.errors.contains("fork"), "without the entry: \(plain)")
        let once = #"{"entries": [{"point": "system.process", "provider": {"item": "eagain", "times": 1}}]}"#
        let outcome = try chaosRun(once, ["bash", "-c", script], folder: folder, delivery: delivery)
        #expect(outcome.status == 0 && outcome.output == "one\ntwo\n", "\(delivery): \(outcome)")
        #expect(outcome.errors.contains("fork: retry: Resource temporarily unavailable"), "\(delivery): \(outcome)")
    }

    @Test(.enabled(if: Needs.program("python3"), "python3 is missing"), arguments: ["preload", "seccomp"])
    func pythonSeesBlockingIOErrorFromForkSubprocessAndPosixSpawn(delivery: String) throws {
        let folder = try workspace("python-fork", folders: [])
        defer { remove(folder) }
        let program = """
            import os, subprocess, threading
            for name, start in [("fork", os.fork), ("subprocess", lambda: subprocess.run(["/bin/true"]).returncode),
                                ("spawn", lambda: os.waitpid(os.posix_spawn("/bin/true", ["true"], os.environ), 0))]:
                try:
                    if start() == 0: os._exit(0)
                    print(name, "ok")
                except BlockingIOError:
                    print(name, "BlockingIOError")
            thread = threading.Thread(target=lambda: print("thread ok")); thread.start(); thread.join()
            """
        let profile = #"{"entries": [{"point": "system.process", "provider": "eagain"}]}"#
        let python = try realPython()
        let outcome = try chaosRun(profile, [python, "-c", program], folder: folder, delivery: delivery)
        #expect(
            outcome.lines == [
                "fork BlockingIOError", "subprocess BlockingIOError", "spawn BlockingIOError", "thread ok",
            ],
            "\(delivery): \(outcome)")
    }

    @Test(
        .enabled(
            if: Needs.program("ls") && Needs.program("find") && Needs.program("python3"),
            "ls, find or python3 is missing"),
        arguments: ["preload", "seccomp"])
    func lsFindAndPythonListingsLeaveEntriesOutAndFailOnAGoneDirectory(delivery: String) throws {
        let folder = try workspace(
            "listings", folders: ["io/sub", "io2"], files: ["io/a.txt", "io/b.tmp", "io/sub/c.tmp", "io2/d.tmp"])
        defer { remove(folder) }
        let python = try realPython()
        let lister = """
            import os, sys
            for path in sys.argv[1:]:
                try: print(" ".join(sorted(os.listdir(path))), "|", " ".join(sorted(e.name for e in os.scandir(path))))
                except OSError as error: print(type(error).__name__, error.errno)
            """
        let omit =
            #"{"entries": [{"point": "system.dir", "provider": {"item": "omit", "parameters": {"name": "*.tmp", "path": "io"}}}]}"#
        let gone =
            #"{"entries": [{"point": "system.dir", "provider": {"item": "enoent", "parameters": {"path": "io/sub"}}}]}"#
        let ls = try chaosRun(omit, ["ls", "io", "io/sub", "io2"], folder: folder, delivery: delivery)
        #expect(ls.output == "io:\na.txt\nsub\n\nio/sub:\n\nio2:\nd.tmp\n", "\(delivery): \(ls)")
        let find = try chaosRun(omit, ["find", "io", "io2"], folder: folder, delivery: delivery)
        #expect(find.lines.sorted() == ["io", "io/a.txt", "io/sub", "io2", "io2/d.tmp"], "\(delivery): \(find)")
        let listed = try chaosRun(omit, [python, "-c", lister, "io", "io2"], folder: folder, delivery: delivery)
        #expect(listed.lines == ["a.txt sub | a.txt sub", "d.tmp | d.tmp"], "\(delivery): \(listed)")
        let failed = try chaosRun(gone, ["ls", "io/sub"], folder: folder, delivery: delivery)
        #expect(failed.status != 0 && failed.errors.contains("No such file or directory"), "\(delivery): \(failed)")
        let findGone = try chaosRun(gone, ["find", "io"], folder: folder, delivery: delivery)
        #expect(findGone.lines.sorted() == ["io", "io/a.txt", "io/b.tmp", "io/sub"], "\(delivery): \(findGone)")
        let pythonGone = try chaosRun(gone, [python, "-c", lister, "io/sub", "io"], folder: folder, delivery: delivery)
        #expect(
            pythonGone.lines == ["FileNotFoundError 2", "a.txt b.tmp sub | a.txt b.tmp sub"],
            "\(delivery): \(pythonGone)")
        // Without chaos every name is listed: the entries were the profile's.
        #expect(try Command.run(["find", "io", "io2"], in: folder).lines.count == 7)
    }

    @Test func aMissingProgramExits127() throws {
        let folder = try workspace("missing", folders: [])
        defer { remove(folder) }
        let outcome = try chaosRun(enospc(folder), ["chaos-conformance-no-such-program"], folder: folder)
        #expect(outcome.status == 127, "\(outcome)")
        #expect(outcome.errors.contains("chaos-conformance-no-such-program: command not found"), "\(outcome)")
    }
}
#endif
