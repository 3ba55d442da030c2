import Foundation
import TestHelpers
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Virtual time and scaled sleeps under the seccomp delivery: Go built both ways, a static
/// C program and busybox sleep an hour of virtual time, which ends only when `chaos ctl
/// advance` moves it; a frozen clock stands still across a real sleep; file times move
/// with the clock; a sleep under `speed` lasts its scaled length.
@Suite(.serialized) struct SeccompVirtualTimeTests {
    static let virtualProfile =
        #"{"entries": [{"point": "system.clock", "provider": {"item": "virtual", "parameters": {"start": "2030-01-01T00:00:00Z"}}}]}"#

    /// Prints the time, sleeps an hour (a timer: Go waits for it in epoll_pwait), prints
    /// the time and how long the sleep took by its monotonic clock.
    static let goSleeper = """
        package main

        import (
            "fmt"
            "time"
        )

        func main() {
            start := time.Now()
            fmt.Println("start", start.UTC().Format(time.RFC3339))
            time.Sleep(time.Hour)
            fmt.Println("woke", time.Now().UTC().Format(time.RFC3339), "after", time.Since(start).Round(time.Second))
        }
        """

    /// Half an hour in an absolute clock_nanosleep on the monotonic clock, then half an
    /// hour in the timeout of a poll on a pipe nobody writes: both in one advance.
    static let cSleeper = """
        #include <poll.h>
        #include <stdio.h>
        #include <time.h>
        #include <unistd.h>

        int main(void) {
            struct timespec start, target, end;
            clock_gettime(CLOCK_MONOTONIC, &start);
            time_t wall = time(NULL);
            struct tm parts;
            gmtime_r(&wall, &parts);
            printf("start %04d\\n", parts.tm_year + 1900);
            fflush(stdout);
            target = start;
            target.tv_sec += 1800;
            clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &target, NULL);
            int ends[2];
            pipe(ends);
            struct pollfd quiet = { ends[0], POLLIN, 0 };
            int ready = poll(&quiet, 1, 1800 * 1000);
            clock_gettime(CLOCK_MONOTONIC, &end);
            printf("woke after %lds, poll %d\\n", (long)(end.tv_sec - start.tv_sec), ready);
            return 0;
        }
        """

    /// `chaos run` of `program` under the virtual profile with a private control folder,
    /// its output in a file.
    final class Supervised {
        let folder: String
        let control: String
        let process = Process()
        let outputFile: String

        init(_ program: [String], folder: String) throws {
            self.folder = folder
            control = "/tmp/svt-\(getpid())-\(UUID().uuidString.prefix(6))"  // a socket path stays short
            try FileManager.default.createDirectory(atPath: control, withIntermediateDirectories: true)
            chmod(control, 0o700)
            let profile = folder + "/virtual.json"
            try SeccompVirtualTimeTests.virtualProfile.write(toFile: profile, atomically: true, encoding: .utf8)
            outputFile = folder + "/output-\(UUID().uuidString.prefix(6))"
            _ = FileManager.default.createFile(atPath: outputFile, contents: nil)
            process.executableURL = ChaosToolTests.buildDirectory.appendingPathComponent("chaos")
            process.arguments =
                ["run", "--quiet", "--preload", ChaosToolTests.preloadLibrary, "--profile", profile, "--"] + program
            process.environment = ProcessInfo.processInfo.environment.merging([
                "CHAOS_CONTROL": "unix", "CHAOS_CONTROL_DIR": control,
            ]) { $1 }
            process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: outputFile))
            process.standardError = process.standardOutput
            try process.runWithSignalsUnblocked()
        }

        var output: String { (try? String(contentsOfFile: outputFile, encoding: .utf8)) ?? "" }

        /// Waits (at most `seconds`) until the output contains `text`.
        func waitFor(_ text: String, seconds: Double = 30) -> Bool {
            let deadline = Date().addingTimeInterval(seconds)
            while Date() < deadline {
                if output.contains(text) { return true }
                usleep(20_000)
            }
            return output.contains(text)
        }

        func ctl(_ arguments: [String]) throws -> ChaosToolTests.Outcome {
            try ChaosToolTests.run(
                ChaosToolTests.buildDirectory.appendingPathComponent("chaos").path, ["ctl"] + arguments,
                environment: ["CHAOS_CONTROL_DIR": control])
        }

        /// Waits (at most 30 s) for `chaos run` to end; kills it when it does not.
        func finish() -> Bool {
            for _ in 0..<1500 where process.isRunning { usleep(20_000) }
            let ended = !process.isRunning
            if !ended { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
            try? FileManager.default.removeItem(atPath: control)
            return ended
        }
    }

    /// Runs `program`, checks that it is still asleep a while after it started, advances
    /// virtual time by an hour and returns what it printed.
    static func sleepAnHour(_ program: [String], folder: String, started: String, _ name: String) throws -> String {
        let run = try Supervised(program, folder: folder)
        #expect(run.waitFor(started), "\(name) starts: \(run.output)")
        usleep(500_000)
        let before = run.output
        let advanced = try run.ctl(["advance", String(run.process.processIdentifier), "1h"])
        #expect(advanced.status == 0, "\(name): \(advanced)")
        #expect(run.finish(), "\(name) ends once virtual time has moved an hour: \(run.output)")
        #expect(!before.contains("woke") && !before.contains("T01:"), "\(name) slept until the advance: \(before)")
        return run.output
    }

    @Test(.enabled(if: ReachTests.which("go") != nil, "no Go toolchain (apt install golang-go)"))
    func goProgramsSleepAVirtualHourUntilChaosCtlAdvancesIt() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("chaos-svt-\(UUID().uuidString)")
            .path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        var programs: [(String, String?)] = [
            (
                "static",
                try SeccompDeliveryTests.buildGo(
                    in: folder, "static", source: Self.goSleeper, flags: [], environment: ["CGO_ENABLED": "0"])
            )
        ]
        if ReachTests.which("cc") != nil {
            programs.append(
                (
                    "dynamic",
                    try SeccompDeliveryTests.buildGo(
                        in: folder, "dynamic", source: Self.goSleeper, flags: ["-ldflags=-linkmode=external"],
                        environment: [:])
                )
            )
        }
        for case (let name, let program?) in programs {
            let printed = try Self.sleepAnHour([program], folder: folder, started: "start", "Go \(name)")
            #expect(printed.contains("start 2030-01-01T00:00:00Z"), "Go \(name): \(printed)")
            #expect(printed.contains("woke 2030-01-01T01:00:00Z after 1h0m0s"), "Go \(name): \(printed)")
        }
    }

    @Test(.enabled(if: ReachTests.which("cc") != nil, "no C compiler (cc)"))
    func aStaticCProgramsAbsoluteSleepAndPollTimeoutFollowOneAdvance() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("chaos-svt-\(UUID().uuidString)")
            .path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let program = try #require(
            try ReachTests.Workspace(folder: folder).compile("c-sleeper", Self.cSleeper, flags: ["-static"]))
        let printed = try Self.sleepAnHour([program], folder: folder, started: "start", "static C")
        #expect(printed.contains("start 2030"), "\(printed)")
        #expect(printed.contains("woke after 3600s, poll 0"), "both waits ended within the one advance: \(printed)")
    }

    @Test(
        .enabled(if: staticBusybox != nil, "no static /bin/busybox (apt install busybox-static)"))
    func busyboxSleepsAVirtualHourInAProgramItExecs() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("chaos-svt-\(UUID().uuidString)")
            .path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let script = "busybox date -u +start%FT%T; busybox sleep 3600; busybox date -u +woke%FT%T"
        let printed = try Self.sleepAnHour(
            ["/bin/busybox", "sh", "-c", script], folder: folder, started: "start", "busybox")
        #expect(
            printed.contains("start2030-01-01T00:00:00") && printed.contains("woke2030-01-01T01:00:00"), "\(printed)")
    }

    @Test(
        .enabled(if: staticBusybox != nil, "no static /bin/busybox (apt install busybox-static)"))
    func aFrozenClockStandsStillAcrossARealSleep() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("chaos-svt-\(UUID().uuidString)")
            .path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let profile = folder + "/frozen.json"
        try
            #"{"entries": [{"point": "system.clock", "provider": {"item": "frozen", "parameters": {"date": "2001-09-09T01:46:40Z"}}}]}"#
            .write(toFile: profile, atomically: true, encoding: .utf8)
        let outcome = try ChaosToolTests.chaos([
            "run", "--quiet", "--preload", ChaosToolTests.preloadLibrary, "--profile", profile, "--", "/bin/busybox",
            "sh", "-c", "busybox date -u +%s; busybox sleep 1; busybox date -u +%s",
        ])
        // A frozen clock leaves sleeps real: a second passes, and the clock still reads the same.
        #expect(outcome.status == 0 && outcome.output == "1000000000\n1000000000\n", "\(outcome)")
    }

    /// Prints the modification year of the file it is given, by name (fstatat) and through
    /// a descriptor (fstat).
    static let goStat = """
        package main

        import (
            "fmt"
            "os"
        )

        func main() {
            named, err := os.Stat(os.Args[1])
            if err != nil {
                fmt.Println("stat", err)
                return
            }
            file, _ := os.Open(os.Args[1])
            opened, _ := file.Stat()
            fmt.Println("named", named.ModTime().UTC().Year(), "opened", opened.ModTime().UTC().Year())
        }
        """

    @Test(.enabled(if: ReachTests.which("go") != nil, "no Go toolchain (apt install golang-go)"))
    func fileTimesMoveWithTheClockUnlessTheEntryKeepsThem() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("chaos-svt-\(UUID().uuidString)")
            .path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let program = try #require(
            try SeccompDeliveryTests.buildGo(
                in: folder, "stat", source: Self.goStat, flags: [], environment: ["CGO_ENABLED": "0"]))
        let file = folder + "/written"
        try "now".write(toFile: file, atomically: true, encoding: .utf8)
        let year = Calendar(identifier: .gregorian).dateComponents(in: TimeZone(identifier: "UTC")!, from: Date()).year!
        for (keep, expected) in [(false, year - 10), (true, year)] {
            let profile = folder + "/offset-\(keep).json"
            try
                #"{"entries": [{"point": "system.clock", "provider": {"item": "offset", "parameters": {"years": -10, "fileTimes": \#(!keep)}}}]}"#
                .write(toFile: profile, atomically: true, encoding: .utf8)
            let outcome = try ChaosToolTests.chaos([
                "run", "--quiet", "--preload", ChaosToolTests.preloadLibrary, "--profile", profile, "--", program, file,
            ])
            #expect(
                outcome.status == 0 && outcome.output == "named \(expected) opened \(expected)\n",
                "fileTimes \(!keep): \(outcome)")
        }
    }

    @Test(
        .enabled(if: staticBusybox != nil, "no static /bin/busybox (apt install busybox-static)"))
    func aSleepUnderSpeedLastsItsScaledLength() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("chaos-svt-\(UUID().uuidString)")
            .path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let profile = folder + "/speed.json"
        try #"{"entries": [{"point": "system.clock", "provider": {"item": "speed", "parameters": {"factor": 40}}}]}"#
            .write(toFile: profile, atomically: true, encoding: .utf8)
        let started = Date()
        let outcome = try ChaosToolTests.chaos([
            "run", "--quiet", "--delivery", "seccomp", "--preload", ChaosToolTests.preloadLibrary, "--profile", profile,
            "--", "/bin/busybox", "sleep", "20",
        ])
        let took = Date().timeIntervalSince(started)
        #expect(outcome.status == 0, "\(outcome)")
        // Twenty seconds at forty times the pace is half a second; unscaled it is twenty, so
        // any run under twenty seconds was scaled, however loaded the machine.
        #expect(took < 20, "the sleep was not scaled: it took \(took) s")
    }
}
