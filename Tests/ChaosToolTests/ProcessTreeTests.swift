import Foundation
import TestHelpers
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A program is a process tree: every exec in it is checked as the first program was,
/// io_uring is refused or said, and the report covers the processes the program leaves
/// running (issue #32).
@Suite struct ProcessTreeTests {
    typealias Workspace = ReachTests.Workspace

    /// Writes "hello" into its last argument and says how that went: "write ok" or "errno=N".
    static let writer = """
        #include <errno.h>
        #include <fcntl.h>
        #include <stdio.h>
        #include <unistd.h>
        int main(int argc, char **argv) {
            int fd = open(argv[argc - 1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
            if (fd < 0) { printf("open errno=%d\\n", errno); return 1; }
            if (write(fd, "hello", 5) < 0) { printf("errno=%d\\n", errno); return 2; }
            printf("write ok\\n");
            return 0;
        }
        """

    /// `chaos run` with the workspace's ENOSPC profile on DIR/out and `options`.
    static func run(_ workspace: Workspace, _ options: [String], _ command: [String]) throws -> ChaosToolTests.Outcome {
        try ChaosToolTests.chaos(
            ["run", "--preload", ChaosToolTests.preloadLibrary] + options + ["--profile", workspace.profile, "--"]
                + command)
    }

    static func makeOut(_ workspace: Workspace) throws -> String {
        let out = workspace.folder + "/out"
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
        return out
    }

    /// A statically linked writer: musl's when musl-gcc is there, else glibc's.
    static func staticWriter(_ workspace: Workspace) throws -> String? {
        if ReachTests.which("musl-gcc") != nil {
            let source = workspace.folder + "/writer.c"
            try writer.write(toFile: source, atomically: true, encoding: .utf8)
            let output = workspace.folder + "/writer-musl"
            let built = try ChaosToolTests.run("/usr/bin/env", ["musl-gcc", "-static", "-o", output, source])
            if built.status == 0 { return output }
        }
        return try workspace.compile("writer-static", writer, flags: ["-static"])
    }

    @Test(.enabled(if: ReachTests.which("cc") != nil && ReachTests.which("bash") != nil, "no C compiler or bash"))
    func aStaticProgramExecdFromBashIsRefusedNamedAndReportedUnlessAllowedOrSupervised() throws {
        let workspace = try Workspace()
        defer { workspace.remove() }
        let out = try Self.makeOut(workspace)
        guard let program = try Self.staticWriter(workspace) else {
            Issue.record("no static build: is libc6-dev's libc.a (or musl-tools) installed?")
            return
        }
        let report = workspace.folder + "/report.json"
        let refused = try Self.run(
            workspace, ["--report", report], ["bash", "-c", "exec \"$0\" \"$1\"", program, out + "/f"])
        #expect(refused.status == 126, "bash cannot exec it: \(refused)")
        #expect(!refused.output.contains("write ok"), "\(refused)")
        #expect(!FileManager.default.fileExists(atPath: out + "/f"), "a refused program never runs")
        #expect(refused.errors.contains("cannot exec \(program)"), "the refusal names the program: \(refused.errors)")
        #expect(refused.errors.contains("statically linked") && refused.errors.contains("--delivery seccomp"))
        #expect(refused.errors.contains("exec refused"), "the report names it: \(refused.errors)")
        let json = try String(contentsOfFile: report, encoding: .utf8)
        #expect(json.contains(#""event":"exec-refused""#) && json.contains(program), "\(json)")

        let allowed = try Self.run(
            workspace, ["--allow-unreached"], ["bash", "-c", "exec \"$0\" \"$1\"", program, out + "/f"])
        #expect(allowed.status == 0 && allowed.output.contains("write ok"), "\(allowed)")
        #expect(allowed.errors.contains("warning: process") && allowed.errors.contains("runs without chaos"))
        #expect(allowed.errors.contains("ran without chaos (--allow-unreached)"), "\(allowed.errors)")

        let supervised = try Self.run(
            workspace, ["--delivery", "seccomp"], ["bash", "-c", "exec \"$0\" \"$1\"", program, out + "/f"])
        #expect(supervised.output.contains("errno=\(ENOSPC)"), "the seccomp delivery reaches it: \(supervised)")
    }

    @Test(.enabled(if: ReachTests.which("go") != nil, "no Go toolchain (apt install golang-go)"))
    func aGoProgramExecdFromAShellIsRefused() throws {
        let workspace = try Workspace()
        defer { workspace.remove() }
        let out = try Self.makeOut(workspace)
        let source = """
            package main

            import (
            \t"fmt"
            \t"os"
            )

            func main() {
            \terr := os.WriteFile(os.Args[1], []byte("hello"), 0o644)
            \tif err != nil {
            \t\tfmt.Println("failed:", err)
            \t\tos.Exit(2)
            \t}
            \tfmt.Println("write ok")
            }
            """
        let program = try #require(
            try SeccompDeliveryTests.buildGo(
                in: workspace.folder, "gowriter", source: source, flags: [], environment: ["CGO_ENABLED": "0"]))
        let refused = try Self.run(workspace, [], ["/bin/sh", "-c", "exec \"$0\" \"$1\"", program, out + "/g"])
        #expect(refused.status != 0 && !refused.output.contains("write ok"), "\(refused)")
        #expect(refused.errors.contains("it is a Go program"), "\(refused.errors)")
        let supervised = try Self.run(
            workspace, ["--delivery", "seccomp"], ["/bin/sh", "-c", "exec \"$0\" \"$1\"", program, out + "/g"])
        #expect(supervised.output.contains("no space left on device"), "\(supervised)")
    }

    @Test(.enabled(if: ReachTests.which("cc") != nil && ReachTests.which("env") != nil, "no C compiler or env"))
    func aChildWhoseEnvironmentWasClearedStaysUnderChaos() throws {
        let workspace = try Workspace()
        defer { workspace.remove() }
        let out = try Self.makeOut(workspace)
        let program = try #require(try workspace.compile("writer", Self.writer))
        let cleared = try Self.run(workspace, [], ["env", "-i", program, out + "/e"])
        #expect(cleared.output.contains("errno=\(ENOSPC)"), "env -i dropped LD_PRELOAD; it came back: \(cleared)")
        #expect(cleared.errors.contains("acted 1"), "\(cleared.errors)")
    }

    // MARK: - io_uring

    @Test(.enabled(if: ReachTests.which("fio") != nil, "no fio (apt install fio)"))
    func fioOnIoUringFailsLoudlyUnlessAllowed() throws {
        let workspace = try Workspace()
        defer { workspace.remove() }
        let out = try Self.makeOut(workspace)
        let fio = [
            "fio", "--name=t", "--ioengine=io_uring", "--rw=write", "--size=256k", "--filename=\(out)/fio.dat",
        ]
        for delivery in ["preload", "seccomp"] {
            let refused = try Self.run(workspace, ["--delivery", delivery], fio)
            #expect(refused.status != 0, "\(delivery): fio cannot write 256k through io_uring: \(refused)")
            #expect(
                refused.errors.contains("asked for io_uring") && refused.errors.contains("refused with ENOSYS"),
                "\(delivery): \(refused.errors)")
            #expect(refused.errors.contains("io_uring refused with ENOSYS"), "the report says it: \(refused.errors)")
        }
        let allowed = try Self.run(workspace, ["--io-uring", "allow"], fio)
        #expect(allowed.status == 0 && allowed.output.contains("err= 0"), "\(allowed)")
        #expect(allowed.errors.contains("warning: process") && allowed.errors.contains("--io-uring allow"))
        #expect(allowed.errors.contains("io_uring allowed"), "\(allowed.errors)")
    }

    @Test(
        .enabled(
            if: ReachTests.which("cc") != nil && FileManager.default.fileExists(atPath: "/usr/include/liburing.h"),
            "no liburing (apt install liburing-dev)"))
    func aLiburingProgramFallsBackToCallsChaosReaches() throws {
        let workspace = try Workspace()
        defer { workspace.remove() }
        let out = try Self.makeOut(workspace)
        let source = """
            #include <errno.h>
            #include <fcntl.h>
            #include <liburing.h>
            #include <stdio.h>
            #include <string.h>
            #include <unistd.h>
            int main(int argc, char **argv) {
                int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
                struct io_uring ring;
                int set_up = io_uring_queue_init(4, &ring, 0);
                if (set_up < 0) {
                    printf("fallback (%s)\\n", strerror(-set_up));
                    if (write(fd, "hello", 5) < 0) { printf("errno=%d\\n", errno); return 2; }
                    printf("write ok\\n");
                    return 0;
                }
                struct io_uring_sqe *entry = io_uring_get_sqe(&ring);
                io_uring_prep_write(entry, fd, "hello", 5, 0);
                io_uring_submit(&ring);
                struct io_uring_cqe *done;
                io_uring_wait_cqe(&ring, &done);
                printf("io_uring res=%d\\n", done->res);
                return 0;
            }
            """
        // liburing makes its system calls itself: only a seccomp filter sees them.
        let sourcePath = workspace.folder + "/uring.c"
        try source.write(toFile: sourcePath, atomically: true, encoding: .utf8)
        let program = workspace.folder + "/uring"
        let built = try ChaosToolTests.run("/usr/bin/env", ["cc", "-o", program, sourcePath, "-luring"])
        try #require(built.status == 0, "\(built)")
        for delivery in ["preload", "seccomp"] {
            let outcome = try Self.run(workspace, ["--delivery", delivery], [program, out + "/u"])
            #expect(outcome.output.contains("fallback (Function not implemented)"), "\(delivery): \(outcome)")
            #expect(outcome.output.contains("errno=\(ENOSPC)"), "\(delivery): the fallback is reached: \(outcome)")
            #expect(outcome.errors.contains("io_uring refused with ENOSYS"), "\(delivery): reported: \(outcome.errors)")
        }
        let allowed = try Self.run(workspace, ["--io-uring", "allow"], [program, out + "/u"])
        #expect(allowed.output.contains("io_uring res=5"), "\(allowed)")
    }

    // MARK: - The tree's report

    /// A daemon that double forks: the program returns at once, and its grandchild writes
    /// `lines` lines into DIR/out/daemon.log `after` seconds later.
    static func daemon(_ workspace: Workspace, lines: Int = 20, after: Double = 0.3) throws -> String {
        let script = workspace.folder + "/daemon-\(after).sh"
        try """
        #!/bin/bash
        ( ( sleep \(after); for i in $(seq \(lines)); do echo "line $i" >> "\(workspace.folder)/out/daemon.log" 2>/dev/null || echo "write $i failed" >&2; done ) & ) &
        exit 0
        """.write(toFile: script, atomically: true, encoding: .utf8)
        chmod(script, 0o755)
        return script
    }

    @Test(arguments: ["preload", "seccomp"])
    func aDaemonsLaterWritesAreNamedOrWaitedFor(delivery: String) throws {
        guard ReachTests.which("bash") != nil else { return }
        let workspace = try Workspace()
        defer { workspace.remove() }
        _ = try Self.makeOut(workspace)
        let script = try Self.daemon(workspace)
        // Late enough that chaos run reports first, however busy the machine.
        let early = try Self.run(workspace, ["--delivery", delivery], [try Self.daemon(workspace, after: 3)])
        #expect(early.status == 0, "\(delivery): \(early)")
        #expect(
            early.errors.contains("of the tree still running") && early.errors.contains("later calls are not counted"),
            "\(delivery): the report names what is left: \(early.errors)")
        Thread.sleep(forTimeInterval: 1)  // the daemon of this run ends before the next starts

        let waited = try Self.run(workspace, ["--delivery", delivery, "--wait-tree"], [script])
        #expect(waited.errors.components(separatedBy: "failed").count - 1 == 20, "\(delivery): \(waited.errors)")
        #expect(!waited.errors.contains("NEVER ACTED") && !waited.errors.contains("still running"), "\(waited.errors)")

        let judged = try Self.run(workspace, ["--delivery", delivery, "--require-fired"], [script])
        #expect(judged.status == 0, "\(delivery): --require-fired waits for the daemon that fires: \(judged)")
        Thread.sleep(forTimeInterval: 1)
    }

    /// A program that leaves `sleep SECONDS` running, detached from every descriptor it was
    /// given (the test reads the run's output to its end).
    static func leavesASleeper(_ seconds: Int) -> [String] {
        [
            "python3", "-c",
            "import subprocess; subprocess.Popen(['sleep', '\(seconds)'], stdin=subprocess.DEVNULL, "
                + "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, close_fds=True)",
        ]
    }

    @Test(.enabled(if: ReachTests.which("python3") != nil, "no python3"))
    func requireFiredIsBoundedByADaemonThatNeverEnds() throws {
        let workspace = try Workspace()
        defer { workspace.remove() }
        _ = try Self.makeOut(workspace)
        let started = Date()
        let outcome = try Self.run(workspace, ["--require-fired"], Self.leavesASleeper(12))
        let took = Date().timeIntervalSince(started)
        #expect(outcome.status == 125, "\(outcome)")
        #expect(outcome.errors.contains("judged while processes of the tree still ran"), "\(outcome.errors)")
        #expect(outcome.errors.contains("after --wait-tree's bound") && outcome.errors.contains("sleep"))
        #expect(took < 11, "bounded at 5 s, not the sleeper's 12: \(took) s")

        let bounded = try Self.run(workspace, ["--wait-tree=300ms"], Self.leavesASleeper(3))
        #expect(bounded.status == 0 && bounded.errors.contains("1 process of the tree still running"), "\(bounded)")
        let wrong = try Self.run(workspace, ["--wait-tree=soon"], ["/bin/true"])
        #expect(wrong.status != 0 && wrong.errors.contains("--wait-tree=soon"), "\(wrong)")
    }

    @Test(
        .enabled(
            if: getuid() == 0 && ReachTests.which("setpriv") != nil && ReachTests.which("cc") != nil,
            "needs root and setpriv"))
    func aProcessThatRunsAsAnotherUserCountsIntoTheReport() throws {
        let workspace = try Workspace()
        defer { workspace.remove() }
        let out = try Self.makeOut(workspace)
        chmod(workspace.folder, 0o755)
        chmod(out, 0o777)
        let program = try #require(try workspace.compile("writer", Self.writer))
        chmod(program, 0o755)
        let outcome = try Self.run(
            workspace, [], ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", program, out + "/n"])
        #expect(outcome.output.contains("errno=\(ENOSPC)"), "\(outcome)")
        #expect(outcome.errors.contains("acted 1"), "counted though it runs as nobody: \(outcome.errors)")
    }
}

extension ProcessTreeTests {
    @Test(
        .enabled(
            if: getuid() == 0 && ReachTests.which("setpriv") != nil && ReachTests.which("cc") != nil,
            "needs root and setpriv"))
    func aSetUserIDProgramIsRefusedByThePreloadAndSaidUnderSeccomp() throws {
        let workspace = try Workspace()
        defer { workspace.remove() }
        let out = try Self.makeOut(workspace)
        chmod(workspace.folder, 0o755)
        chmod(out, 0o777)
        let program = try #require(try workspace.compile("setuid-writer", Self.writer))
        chmod(program, 0o4755)  // root's, run by nobody: it would gain root
        let asNobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", program, out + "/s"]
        let refused = try Self.run(workspace, [], asNobody)
        #expect(refused.status == 126 && refused.errors.contains("set-user-ID"), "\(refused)")
        let supervised = try Self.run(workspace, ["--delivery", "seccomp"], asNobody)
        #expect(supervised.output.contains("errno=\(ENOSPC)"), "\(supervised)")
        #expect(
            supervised.errors.contains("warning: process") && supervised.errors.contains("without its privileges"),
            "said at once, and in the report: \(supervised.errors)")
    }

    @Test(.enabled(if: ReachTests.which("dd") != nil && ReachTests.which("bash") != nil, "no dd or bash"))
    func aPlacementAtTheKthWriteCountsEveryDdOfAShellLoop() throws {
        let workspace = try Workspace()
        defer { workspace.remove() }
        let out = try Self.makeOut(workspace)
        let loop =
            "for i in 1 2 3; do dd if=/dev/zero of=\(out)/dd$i bs=512 count=1 status=none 2>/dev/null || echo \"dd $i failed\"; done"
        for place in 0..<3 {
            let steps = Array(repeating: #""original""#, count: place) + [#"{"item": "enospc"}"#, #""original""#]
            let profile = workspace.folder + "/place-\(place).json"
            try """
            {"entries": [{"point": "system.files", "match": {"path": "\(out)", "operations": ["write"]},
              "provider": {"sequential": [\(steps.joined(separator: ", "))]}}]}
            """.write(toFile: profile, atomically: true, encoding: .utf8)
            let outcome = try ChaosToolTests.chaos(
                ["run", "--preload", ChaosToolTests.preloadLibrary, "--profile", profile, "--", "bash", "-c", loop])
            #expect(outcome.output == "dd \(place + 1) failed\n", "placed at write \(place + 1): \(outcome)")
            #expect(outcome.errors.contains("seen 3, acted 1"), "\(outcome.errors)")
        }
    }
}

extension ProcessTreeTests {
    /// Blocks SIGUSR1, sends itself five, and unblocks it: the handler must run once, on the
    /// main thread, after the unblock. A thread of ChaosKit's with the signal unblocked would
    /// take them as they come, past the program's mask.
    static let signals = """
        #define _GNU_SOURCE
        #include <signal.h>
        #include <stdio.h>
        #include <sys/syscall.h>
        #include <time.h>
        #include <unistd.h>
        static volatile sig_atomic_t caught, foreign;
        static pid_t main_thread;
        static void handler(int signal_number) {
            (void)signal_number;
            caught++;
            if ((pid_t)syscall(SYS_gettid) != main_thread) foreign++;
        }
        int main(void) {
            main_thread = (pid_t)syscall(SYS_gettid);
            struct sigaction action = {0};
            action.sa_handler = handler;
            sigaction(SIGUSR1, &action, NULL);
            sigset_t usr1;
            sigemptyset(&usr1);
            sigaddset(&usr1, SIGUSR1);
            sigprocmask(SIG_BLOCK, &usr1, NULL);
            for (int i = 0; i < 5; i++) kill(getpid(), SIGUSR1);
            struct timespec pause = {0, 50000000};
            nanosleep(&pause, NULL);  // time for a thread that could take them to do so
            int before = caught;
            sigprocmask(SIG_UNBLOCK, &usr1, NULL);
            printf("before %d caught %d foreign %d\\n", before, (int)caught, (int)foreign);
            return 0;
        }
        """

    @Test(.enabled(if: ReachTests.which("cc") != nil, "no C compiler (cc)"))
    func aProcessDirectedSignalNeverLandsOnAThreadOfOurs() throws {
        let workspace = try Workspace()
        defer { workspace.remove() }
        let program = try #require(try workspace.compile("signals", Self.signals))
        let profile = workspace.folder + "/virtual.json"
        try
            #"{"entries": [{"point": "system.clock", "provider": {"item": "virtual", "parameters": {"start": "2030-01-01T00:00:00Z", "flowing": true}}}]}"#
            .write(toFile: profile, atomically: true, encoding: .utf8)
        let outcome = try ChaosToolTests.chaos(
            ["run", "--preload", ChaosToolTests.preloadLibrary, "--profile", profile, "--", program])
        #expect(outcome.output == "before 0 caught 1 foreign 0\n", "\(outcome)")
    }
}

extension ProcessTreeTests {
    /// Defines some of the engine's and the endpoint's internal names, each of which ends the
    /// program if the preload library called it, and writes into its last argument.
    static let namesake = """
        #include <errno.h>
        #include <fcntl.h>
        #include <stdio.h>
        #include <stdlib.h>
        #include <unistd.h>
        void *plan_find(void) { puts("plan_find was called"); exit(70); }
        int plan_set(void) { puts("plan_set was called"); exit(71); }
        int plan_take(void) { puts("plan_take was called"); exit(72); }
        int plan_tokenize(void) { puts("plan_tokenize was called"); exit(73); }
        const char *cf_intern(const char *text) { puts("cf_intern was called"); exit(74); return text; }
        void *chaos_plan_parse(void) { puts("chaos_plan_parse was called"); exit(75); }
        int ctl_route(void) { puts("ctl_route was called"); exit(76); }
        int main(int argc, char **argv) {
            int fd = open(argv[argc - 1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
            if (fd < 0 || write(fd, "x", 1) >= 0) { printf("write ok\\n"); return 0; }
            printf("errno=%d\\n", errno);
            return 0;
        }
        """

    @Test(.enabled(if: ReachTests.which("cc") != nil && ReachTests.which("readelf") != nil, "no cc or readelf"))
    func aProgramThatDefinesTheEnginesNamesRunsUntouched() throws {
        let workspace = try Workspace()
        defer { workspace.remove() }
        let out = try Self.makeOut(workspace)
        let program = try #require(try workspace.compile("namesake", Self.namesake, flags: ["-rdynamic"]))
        let outcome = try Self.run(workspace, [], [program, out + "/n"])
        #expect(outcome.status == 0 && outcome.output == "errno=\(ENOSPC)\n", "\(outcome)")
        // What the library shows a program: libc's names it intercepts and its own entry
        // points, none of the engine's.
        let built = ChaosToolTests.buildDirectory.appendingPathComponent("libChaosPreload.so").path
        for library in [ChaosToolTests.preloadLibrary, built] {
            let symbols = try ChaosToolTests.run("/usr/bin/env", ["readelf", "--dyn-syms", "-W", library]).output
            let exported = symbols.split(separator: "\n").compactMap { line -> String? in
                let fields = line.split(separator: " ", omittingEmptySubsequences: true)
                guard fields.count >= 8, fields[4] == "GLOBAL", fields[6] != "UND" else { return nil }
                return String(fields[7])
            }
            #expect(exported.contains("open") && exported.contains("chaos_preload_chaotic_calls"), "\(library)")
            let ours =
                exported.filter { ["plan_", "cf_", "ctl_", "ix_"].contains(where: $0.hasPrefix) }
                + exported.filter { $0.hasPrefix("chaos_") && !$0.hasPrefix("chaos_preload_") }
            #expect(ours.isEmpty, "\(library) exports the engine's names: \(ours)")
        }
    }
}

/// `chaos ctl` knows a `chaos run` program by the pid users know (ps, its pidfile, its own
/// reports) and by the runner's, and `--tree` reaches every process of the tree.
@Suite struct ProcessTreePidTests {
    /// `chaos` with control files in `directory`.
    static func chaos(_ arguments: [String], directory: String, control: Bool = false) throws
        -> ChaosToolTests.Outcome
    {
        var environment = ["CHAOS_CONTROL_DIR": directory]
        if control { environment["CHAOS_CONTROL"] = "unix" }
        return try ChaosToolTests.run(
            ChaosToolTests.buildDirectory.appendingPathComponent("chaos").path, arguments, environment: environment)
    }

    /// Starts `chaos run` of `command` in the background (its output into `log`).
    static func start(_ command: [String], profile: String, directory: String, log: String) throws -> Process {
        let process = Process()
        process.executableURL = ChaosToolTests.buildDirectory.appendingPathComponent("chaos")
        process.arguments =
            ["run", "--preload", ChaosToolTests.preloadLibrary, "--profile", profile, "--"] + command
        process.environment = ProcessInfo.processInfo.environment.merging([
            "CHAOS_CONTROL": "unix", "CHAOS_CONTROL_DIR": directory,
        ]) { $1 }
        try #require(FileManager.default.createFile(atPath: log, contents: nil), "cannot create \(log)")
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        process.standardOutput = handle
        process.standardError = handle
        try process.runWithSignalsUnblocked()
        return process
    }

    /// Waits up to five seconds for `condition`.
    static func eventually(_ condition: () throws -> Bool) rethrows -> Bool {
        for _ in 0..<100 {
            if try condition() { return true }
            Thread.sleep(forTimeInterval: 0.05)
        }
        return false
    }

    @Test(
        .enabled(
            if: ReachTests.which("redis-server") != nil && ReachTests.which("redis-cli") != nil,
            "no redis (apt install redis-server)"))
    func redisIsSteeredByThePidItReportsAndByTheRunners() throws {
        let workspace = try ReachTests.Workspace()
        defer { workspace.remove() }
        let control = workspace.folder + "/control"
        try FileManager.default.createDirectory(atPath: control, withIntermediateDirectories: true)
        chmod(control, 0o700)
        let clock = workspace.folder + "/clock.json"
        try #"{"entries": [{"point": "system.clock", "provider": {"item": "offset", "parameters": {"by": "+10d"}}}]}"#
            .write(toFile: clock, atomically: true, encoding: .utf8)
        let port = String(Int.random(in: 20_000..<30_000))
        let runner = try Self.start(
            ["redis-server", "--port", port, "--save", "", "--appendonly", "no"], profile: workspace.profile,
            directory: control, log: workspace.folder + "/redis.log")
        defer {
            _ = try? ChaosToolTests.run("/usr/bin/env", ["redis-cli", "-p", port, "shutdown", "nosave"])
            runner.waitUntilExit()
        }
        var info = ""
        let answered = try Self.eventually {
            info = try ChaosToolTests.run("/usr/bin/env", ["redis-cli", "-p", port, "INFO", "server"]).output
            return info.contains("process_id:")
        }
        let log = (try? String(contentsOfFile: workspace.folder + "/redis.log", encoding: .utf8)) ?? ""
        try #require(answered, "redis did not answer: \(log)")
        let line = try #require(info.split(whereSeparator: \.isNewline).first { $0.hasPrefix("process_id:") })
        let redisPID = String(line.dropFirst("process_id:".count)).trimmingCharacters(in: .whitespaces)
        #expect(redisPID != String(runner.processIdentifier), "redis is the runner's child, not the runner")

        let listed = try Self.chaos(["ctl", "list"], directory: control)
        #expect(
            listed.output.hasPrefix("\(redisPID) (chaos run \(runner.processIdentifier))  redis-server"),
            "the program's own pid first: \(listed)")

        let applied = try Self.chaos(["ctl", "apply", redisPID, clock], directory: control)
        #expect(applied.status == 0 && applied.output.contains("applied #2"), "\(applied)")
        let time = try ChaosToolTests.run("/usr/bin/env", ["redis-cli", "-p", port, "TIME"]).output
        let seconds = Double(time.split(whereSeparator: \.isNewline).first.map(String.init) ?? "") ?? 0
        #expect(abs(seconds - Date().timeIntervalSince1970 - 864_000) < 60, "redis sees +10 days: \(time)")

        let byRunner = try Self.chaos(["ctl", "status", String(runner.processIdentifier)], directory: control)
        #expect(byRunner.status == 0 && byRunner.output.hasPrefix("\(redisPID)  redis-server"), "\(byRunner)")
        let reverted = try Self.chaos(["ctl", "revert", String(runner.processIdentifier), "2"], directory: control)
        #expect(reverted.output.contains("reverted #2"), "\(reverted)")
    }

    @Test(.enabled(if: ReachTests.which("bash") != nil && ReachTests.which("sleep") != nil, "no bash"))
    func treeAppliesToEveryProcessAlreadyRunning() throws {
        let workspace = try ReachTests.Workspace()
        defer { workspace.remove() }
        let control = workspace.folder + "/control"
        try FileManager.default.createDirectory(atPath: control, withIntermediateDirectories: true)
        chmod(control, 0o700)
        // Sleeps long enough for a slow machine (or a sanitizer's build of chaos ctl) to list
        // and steer them; ended by the test, with the whole tree.
        let runner = try Self.start(
            ["bash", "-c", "sleep 120 & sleep 120 & wait"], profile: workspace.profile, directory: control,
            log: workspace.folder + "/tree.log")
        var processes: [Substring] = []
        defer {
            for line in processes { if let pid = Int32(line.split(separator: " ").first ?? "") { kill(pid, SIGKILL) } }
            kill(runner.processIdentifier, SIGTERM)
            runner.waitUntilExit()
        }
        _ = try Self.eventually {
            processes = try Self.chaos(["ctl", "list"], directory: control).output.split(separator: "\n")
                .filter { !$0.hasPrefix(" ") }
            return processes.count == 3
        }
        #expect(processes.count == 3, "bash and its two sleeps: \(processes)")
        let bash = try #require(processes.first { $0.contains("bash") }?.split(separator: " ").first)
        let one = try Self.chaos(["ctl", "apply", String(bash), workspace.profile], directory: control)
        #expect(one.output.hasPrefix("applied #2"), "without --tree, only that process: \(one)")
        let all = try Self.chaos(["ctl", "apply", "--tree", String(bash), workspace.profile], directory: control)
        #expect(all.output.split(separator: "\n").count == 3, "every process of the tree: \(all)")
        let listed = try Self.chaos(["ctl", "list"], directory: control).output
        #expect(listed.components(separatedBy: "#3 system.files").count - 1 == 1, "bash has three: \(listed)")
        #expect(listed.components(separatedBy: "#2 system.files").count - 1 == 3, "\(listed)")
        let alone = try Self.chaos(["ctl", "apply", "--tree", "1", workspace.profile], directory: control)
        #expect(alone.status != 0, "\(alone)")
    }
}
