import Foundation
import TestHelpers
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A thread held under virtual time is still the program's: its signal handlers interrupt
/// the sleep as they would a real one, and once nobody can advance virtual time any more
/// (no control endpoint, or the `chaos run` that served it has ended) the waits it held go
/// on in real time, and the program is told so (issue #33).
@Suite struct HeldWaitTests {
    /// Prints `ready PID`, then sleeps an hour (or `argv[1]` seconds) with nanosleep and
    /// prints how the sleep ended. SIGUSR1's handler does nothing but count.
    static let sleeper = """
        #include <errno.h>
        #include <signal.h>
        #include <stdio.h>
        #include <stdlib.h>
        #include <string.h>
        #include <time.h>
        #include <unistd.h>
        static volatile sig_atomic_t handled;
        static void count(int signal) { (void)signal; handled++; }
        int main(int argc, char **argv) {
            struct sigaction action;
            memset(&action, 0, sizeof action);
            action.sa_handler = count;
            sigaction(SIGUSR1, &action, NULL);
            printf("ready %d\\n", (int)getpid());
            fflush(stdout);
            struct timespec request = {argc > 1 ? atoi(argv[1]) : 3600, 0}, remaining = {0, 0};
            int result = nanosleep(&request, &remaining);
            printf("%s remaining %ld\\n", result == 0 ? "slept" : errno == EINTR ? "interrupted" : "failed",
                   (long)remaining.tv_sec);
            return 0;
        }
        """

    /// `chaos run` of the sleeper under a virtual clock, with its output read as it comes.
    final class Run: @unchecked Sendable {
        // `lines` and `errors` are guarded by `lock`; the rest is set before the readers start.
        let process = Process()
        private let lock = NSLock()
        private var lines: [String] = []
        private var errorText = ""
        private let group = DispatchGroup()

        private let workspace: ReachTests.Workspace
        private let program: String

        /// Where the program's endpoint file is, under `control`.
        var controlDirectory: String { workspace.folder }

        /// Compiles `source` (the sleeper by default) and runs `command(program)` (the
        /// program itself by default).
        init(source: String = HeldWaitTests.sleeper, control: String?, command: (String) -> [String] = { [$0] }) throws
        {
            workspace = try ReachTests.Workspace()
            program = try #require(try workspace.compile("sleeper", source))
            let profile = workspace.folder + "/virtual.json"
            try #"{"entries": [{"point": "system.clock", "provider": "virtual"}]}"#
                .write(toFile: profile, atomically: true, encoding: .utf8)
            process.executableURL = ChaosToolTests.buildDirectory.appendingPathComponent("chaos")
            process.arguments =
                ["run", "--preload", ChaosToolTests.preloadLibrary, "--profile", profile, "--"] + command(program)
            var environment = ProcessInfo.processInfo.environment
            environment["CHAOS_CONTROL"] = nil
            if let control {
                environment["CHAOS_CONTROL"] = control
                environment["CHAOS_CONTROL_DIR"] = workspace.folder
            }
            process.environment = environment
            let output = Pipe()
            let errors = Pipe()
            process.standardOutput = output
            process.standardError = errors
            process.standardInput = FileHandle.nullDevice
            try process.runWithSignalsUnblocked()
            // The program may outlive the runner: read until it closes its end too.
            for (pipe, isOutput) in [(output, true), (errors, false)] {
                group.enter()
                Thread.detachNewThread { [self] in
                    while case let data = pipe.fileHandleForReading.availableData, !data.isEmpty {
                        let text = String(decoding: data, as: UTF8.self)
                        lock.withLock {
                            if isOutput {
                                lines += text.split(separator: "\n").map(String.init)
                            } else {
                                errorText += text
                            }
                        }
                    }
                    group.leave()
                }
            }
        }

        var output: [String] { lock.withLock { lines } }
        var errors: String { lock.withLock { errorText } }

        /// The first output line with `prefix`, waiting for it up to a liveness bound.
        func line(startingWith prefix: String, within seconds: Double = 60) -> String? {
            let end = Date().addingTimeInterval(seconds)
            while Date() < end {
                if let found = output.first(where: { $0.hasPrefix(prefix) }) { return found }
                usleep(20_000)
            }
            return nil
        }

        /// Waits (at most a liveness bound) until the program and whatever it left have
        /// closed their output: everything they printed has been read.
        func waitForOutputEnd() {
            _ = group.wait(timeout: .now() + 60)
        }

        /// The sleeper's pid, once it has said it is ready.
        func readyPid() throws -> Int32 {
            let ready = try #require(line(startingWith: "ready "), "the program never started: \(errors)")
            return try #require(Int32(ready.dropFirst(6)))
        }

        /// Ends the runner and whatever it left, waits for the readers, and removes the
        /// workspace.
        func finish() {
            if process.isRunning { process.terminate() }
            // Only while that pid is still the program: an ended one's pid is soon another
            // process's (pid_max is 32768 here), and a loaded run saw a test's chaos run killed.
            if let pid = line(startingWith: "ready ", within: 0).flatMap({ Int32($0.dropFirst(6)) }),
                (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/exe")) == program
            {
                kill(pid, SIGKILL)
            }
            _ = group.wait(timeout: .now() + 30)
            workspace.remove()
        }
    }

    @Test(.enabled(if: ReachTests.which("cc") != nil, "no C compiler (cc)"))
    func aSignalHandlerInterruptsASleepHeldByVirtualTime() throws {
        let run = try Run(control: "unix")
        defer { run.finish() }
        let pid = try run.readyPid()
        // Again and again: the first signal may land before the sleep begins.
        var ended: String?
        let end = Date().addingTimeInterval(60)
        while ended == nil && Date() < end {
            kill(pid, SIGUSR1)
            ended = run.line(startingWith: "interrupted", within: 0.2) ?? run.line(startingWith: "slept", within: 0)
        }
        #expect(ended?.hasPrefix("interrupted remaining ") == true, "\(run.output) \(run.errors)")
        // What was left is the virtual hour, nearly all of it: time stood still meanwhile.
        #expect((ended.flatMap { Int($0.split(separator: " ").last ?? "") } ?? 0) > 3500, "\(ended ?? "none")")
    }

    @Test(.enabled(if: ReachTests.which("cc") != nil, "no C compiler (cc)"))
    func aSignalsDefaultActionStillEndsAProgramHeldByVirtualTime() throws {
        let run = try Run(control: "unix")
        defer { run.finish() }
        let pid = try run.readyPid()
        usleep(200_000)
        kill(pid, SIGTERM)
        run.process.waitUntilExit()
        run.waitForOutputEnd()  // the report may still be on its way through the pipe
        #expect(run.errors.contains("killed by signal 15"), "\(run.errors)")
    }

    @Test(.enabled(if: ReachTests.which("cc") != nil, "no C compiler (cc)"))
    func withNoEndpointToAdvanceItAHeldSleepGoesOnInRealTimeAndIsSaid() throws {
        let run = try Run(control: nil) { [$0, "1"] }
        defer { run.finish() }
        #expect(run.line(startingWith: "slept") != nil, "the sleep never ended: \(run.output) \(run.errors)")
        #expect(run.errors.contains("nobody can advance virtual time (no control endpoint serves it"), "\(run.errors)")
    }

    /// A POSIX timer armed for an hour is held by virtual time like a timerfd: it reports
    /// the hour left, and its signal comes when an advance reaches it (the program's clock
    /// then reads an hour later), not after an hour of real time.
    @Test(.enabled(if: ReachTests.which("cc") != nil, "no C compiler (cc)"))
    func aPOSIXTimerExpiresWhenAnAdvanceReachesIt() throws {
        let source = """
            #include <signal.h>
            #include <stdio.h>
            #include <time.h>
            #include <unistd.h>
            int main(void) {
                sigset_t usr1;
                sigemptyset(&usr1);
                sigaddset(&usr1, SIGUSR1);
                sigprocmask(SIG_BLOCK, &usr1, NULL);
                struct sigevent event = {.sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGUSR1};
                timer_t timer;
                timer_create(CLOCK_MONOTONIC, &event, &timer);
                struct itimerspec hour = {{0, 0}, {3600, 0}}, left;
                timer_settime(timer, 0, &hour, NULL);
                timer_gettime(timer, &left);
                struct timespec armed, fired;
                clock_gettime(CLOCK_MONOTONIC, &armed);
                printf("left %ld\\nready %d\\n", (long)left.it_value.tv_sec, (int)getpid());
                fflush(stdout);
                int taken = 0;
                sigwait(&usr1, &taken);
                clock_gettime(CLOCK_MONOTONIC, &fired);
                printf("expired %d after %ld s\\n", taken == SIGUSR1, (long)(fired.tv_sec - armed.tv_sec));
                return 0;
            }
            """
        let run = try Run(source: source, control: "unix")
        defer { run.finish() }
        let pid = try run.readyPid()
        #expect(run.output.first == "left 3600", "\(run.output)")
        let advanced = try ChaosToolTests.chaos(["ctl", "advance", "\(pid)", "1h", "--directory", run.controlDirectory])
        #expect(advanced.status == 0, "\(advanced)")
        let expired = run.line(startingWith: "expired")
        #expect(expired == "expired 1 after 3600 s", "\(run.output) \(run.errors)")
    }

    /// `chaos run` ends with its first program; a process that program left (here started in
    /// the background by sh) is held by virtual time with nobody left to advance it.
    @Test(.enabled(if: ReachTests.which("cc") != nil, "no C compiler (cc)"))
    func aHeldSleepOfAProcessLeftBehindGoesOnInRealTimeOnceChaosRunHasEnded() throws {
        let run = try Run(control: "unix") { ["/bin/sh", "-c", "'\($0)' 2 &"] }
        defer { run.finish() }
        #expect(run.line(startingWith: "slept") != nil, "the sleep never ended: \(run.output) \(run.errors)")
        #expect(run.errors.contains("chaos run, which started the program, has ended"), "\(run.errors)")
    }
}

/// What the tests' own runner does with programs left running.
@Suite struct LeftoverTests {
    /// A program that leaves a process holding its output (here an hour's sleep) would keep
    /// the test waiting for the output's end for the hour: the runner ends it instead, once
    /// the program itself has ended and a grace has passed.
    @Test func aProcessLeftHoldingTheOutputIsEndedNotWaitedFor() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", "echo started; sleep 3600 & echo $!"]
        let ended = try runToEnd(process, leftoverGrace: .seconds(1))
        let lines = String(decoding: ended.stdout, as: UTF8.self).split(separator: "\n")
        #expect(ended.status == 0 && lines.first == "started", "\(lines)")
        let sleeper = try #require(lines.last.flatMap { Int32($0) })
        // Its descriptors close as it dies, a moment before it is seen to have ended.
        let end = Date().addingTimeInterval(30)
        while processIsRunning(sleeper) && Date() < end { usleep(10_000) }
        #expect(!processIsRunning(sleeper), "the sleep the program left still runs")
    }
}
