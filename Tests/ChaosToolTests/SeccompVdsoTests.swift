import Foundation
import TestHelpers
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The seccomp delivery's patched vDSO: a static Go program reads an offset, a frozen
/// clock and virtual time inside itself, exactly as it reads them when the vDSO is hidden
/// (CHAOS_VDSO=hide, the fallback, which is said); a counted entry still traps and counts
/// exactly; `chaos ctl` changes reach the running program; the programs it execs are
/// patched too; and the report counts the readings answered inside the programs.
@Suite(.serialized) struct SeccompVdsoTests {
    /// Reads the clock N times (its first argument), then prints two more readings, and
    /// (with a second argument) the years of that many readings in a row.
    static let goReader = """
        package main

        import (
            "fmt"
            "os"
            "strconv"
            "time"
        )

        func main() {
            n, _ := strconv.Atoi(os.Args[1])
            for i := 0; i < n; i++ {
                _ = time.Now()
            }
            fmt.Println("now", time.Now().UTC().Format(time.RFC3339Nano))
            fmt.Println("again", time.Now().UTC().Format(time.RFC3339Nano))
            if len(os.Args) > 2 {
                years, _ := strconv.Atoi(os.Args[2])
                for i := 0; i < years; i++ {
                    fmt.Println("year", time.Now().UTC().Year())
                }
            }
        }
        """

    /// Prints the year every 50 ms until it has printed its first argument's year five times,
    /// or, given a second argument, until that file exists (at most 60 s).
    static let goWatcher = """
        package main

        import (
            "fmt"
            "os"
            "strconv"
            "time"
        )

        func main() {
            until, _ := strconv.Atoi(os.Args[1])
            stop := ""
            if len(os.Args) > 2 {
                stop = os.Args[2]
            }
            seen := 0
            for i := 0; i < 1200; i++ {
                year := time.Now().UTC().Year()
                fmt.Println("year", year)
                if year == until {
                    seen++
                }
                if stop == "" && seen >= 5 {
                    break
                }
                if _, err := os.Stat(stop); stop != "" && err == nil {
                    break
                }
                time.Sleep(50 * time.Millisecond)
            }
        }
        """

    static var thisYear: Int { Calendar(identifier: .gregorian).component(.year, from: Date()) }

    static func clockProfile(_ provider: String) -> String {
        #"{"entries": [{"point": "system.clock", "provider": \#(provider)}]}"#
    }

    static let offset = clockProfile(#"{"item": "offset", "parameters": {"years": -10}}"#)
    static let frozen = clockProfile(#"{"item": "frozen", "parameters": {"date": "2001-02-03T04:05:06Z"}}"#)
    static let virtual = clockProfile(#"{"item": "virtual", "parameters": {"start": "2030-01-01T00:00:00Z"}}"#)

    /// A scratch folder with the Go programs built static.
    struct Workspace {
        let folder: String

        init() throws {
            folder =
                FileManager.default.temporaryDirectory.appendingPathComponent("chaos-vdso-\(UUID().uuidString)").path
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        }

        func remove() { try? FileManager.default.removeItem(atPath: folder) }

        func build(_ name: String, _ source: String) throws -> String {
            try #require(
                try SeccompDeliveryTests.buildGo(
                    in: folder, name, source: source, flags: [], environment: ["CGO_ENABLED": "0"]))
        }

        func write(_ name: String, _ text: String) throws -> String {
            let path = folder + "/" + name
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            return path
        }

        /// `chaos run --delivery seccomp` of `program` under `profile`, with the JSON report.
        func run(
            _ profile: String, _ program: [String], hide: Bool = false
        ) throws -> (ChaosToolTests.Outcome, [String: Any]) {
            let report = folder + "/report-\(UUID().uuidString.prefix(6)).json"
            let outcome = try ChaosToolTests.run(
                ChaosToolTests.buildDirectory.appendingPathComponent("chaos").path,
                ["run", "--delivery", "seccomp", "--report", report, "--profile", profile, "--"] + program,
                environment: hide ? ["CHAOS_VDSO": "hide"] : ["CHAOS_VDSO": ""])
            let json =
                (try? JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: report))))
                as? [String: Any] ?? [:]
            return (outcome, json)
        }
    }

    static func lines(_ output: String, _ key: String) -> [String] {
        output.split(separator: "\n").compactMap { line in
            let parts = line.split(separator: " ", maxSplits: 1)
            return parts.count == 2 && parts[0] == key ? String(parts[1]) : nil
        }
    }

    /// The report's count of readings answered inside the programs (nil: nothing was patched).
    static func vdsoReadings(_ json: [String: Any]) -> Int? { (json["vdso"] as? [String: Any])?["readings"] as? Int }
    static func vdsoProcesses(_ json: [String: Any]) -> Int? {
        (json["vdso"] as? [String: Any])?["patchedProcesses"] as? Int
    }
    static func acted(_ json: [String: Any]) -> [Int] {
        ((json["entries"] as? [[String: Any]]) ?? []).map { $0["acted"] as? Int ?? -1 }
    }
    static func events(_ json: [String: Any]) -> [String] {
        ((json["treeEvents"] as? [[String: Any]]) ?? []).compactMap { $0["event"] as? String }
    }

    @Test(.enabled(if: ReachTests.which("go") != nil, "no Go toolchain (apt install golang-go)"))
    func aStaticGoProgramReadsSteadyClocksInsideItselfAsTheSupervisorAnswersThem() throws {
        let workspace = try Workspace()
        defer { workspace.remove() }
        let reader = try workspace.build("reader", Self.goReader)
        let readings = 2000
        for (name, profile) in [("offset", Self.offset), ("frozen", Self.frozen), ("virtual", Self.virtual)] {
            let path = try workspace.write(name + ".json", profile)
            let (patched, patchedReport) = try workspace.run(path, [reader, String(readings)])
            let (hidden, hiddenReport) = try workspace.run(path, [reader, String(readings)], hide: true)
            #expect(patched.status == 0 && hidden.status == 0, "\(name): \(patched) \(hidden)")
            let fast = Self.lines(patched.output, "now").first ?? ""
            let slow = Self.lines(hidden.output, "now").first ?? ""
            switch name {
            case "offset":
                #expect(fast.hasPrefix(String(Self.thisYear - 10)), "offset: \(patched)")
                #expect(slow.hasPrefix(String(Self.thisYear - 10)), "offset, vDSO hidden: \(hidden)")
            case "frozen":
                #expect(fast == "2001-02-03T04:05:06Z" && slow == fast, "frozen: \(fast) and \(slow)")
            default:
                // Virtual time stands still until advanced: both read its start exactly.
                #expect(fast == "2030-01-01T00:00:00Z" && slow == fast, "virtual: \(fast) and \(slow)")
            }
            // Answered inside the program, and counted on the entry all the same.
            let inside = Self.vdsoReadings(patchedReport) ?? 0
            #expect(inside >= readings + 1, "\(name): the readings were answered inside: \(patchedReport)")
            #expect((Self.acted(patchedReport).first ?? 0) >= inside, "\(name): \(patchedReport)")
            #expect(patched.errors.contains("clock readings answered inside the program"), "\(patched.errors)")
            #expect(!patched.errors.contains("cannot patch"), "\(name): \(patched.errors)")
            // The fallback traps every reading, and says so.
            #expect(Self.vdsoReadings(hiddenReport) == nil, "\(name): \(hiddenReport)")
            #expect((Self.acted(hiddenReport).first ?? 0) >= readings + 1, "\(name): \(hiddenReport)")
            #expect(hidden.errors.contains("cannot patch the vDSO"), "\(name): \(hidden.errors)")
            #expect(hidden.errors.contains("CHAOS_VDSO=hide"), "the reason is given: \(hidden.errors)")
            #expect(Self.events(hiddenReport) == ["vdso-hidden"], "\(name): \(hiddenReport)")
        }
    }

    @Test(.enabled(if: ReachTests.which("go") != nil, "no Go toolchain (apt install golang-go)"))
    func aSpeedEntryIsAnsweredInsideToo() throws {
        let workspace = try Workspace()
        defer { workspace.remove() }
        let reader = try workspace.build("reader", Self.goReader)
        // Time stopped at the program's start: every reading is that instant.
        let profile = try workspace.write(
            "stopped.json", Self.clockProfile(#"{"item": "speed", "parameters": {"factor": 0}}"#))
        let (outcome, report) = try workspace.run(profile, [reader, "2000"])
        #expect(outcome.status == 0, "\(outcome)")
        let now = Self.lines(outcome.output, "now").first
        let again = Self.lines(outcome.output, "again").first
        #expect(now != nil && now == again, "\(outcome)")
        #expect(now?.hasPrefix(String(Self.thisYear)) == true, "\(outcome)")
        #expect((Self.vdsoReadings(report) ?? 0) >= 2002, "\(report)")
    }

    @Test(.enabled(if: ReachTests.which("go") != nil, "no Go toolchain (apt install golang-go)"))
    func aCountedEntryStillTrapsAndCountsExactly() throws {
        let workspace = try Workspace()
        defer { workspace.remove() }
        let reader = try workspace.build("reader", Self.goReader)
        let profile = try workspace.write(
            "twice.json", Self.clockProfile(#"{"item": "offset", "parameters": {"years": -10}, "times": 2}"#))
        let (outcome, report) = try workspace.run(profile, [reader, "0", "4"])
        #expect(outcome.status == 0, "\(outcome)")
        // The first two readings ("now" and "again") are ten years back, the rest real.
        #expect(Self.lines(outcome.output, "now").first?.hasPrefix(String(Self.thisYear - 10)) == true, "\(outcome)")
        #expect(Self.lines(outcome.output, "again").first?.hasPrefix(String(Self.thisYear - 10)) == true, "\(outcome)")
        let years = Self.lines(outcome.output, "year")
        #expect(years == Array(repeating: String(Self.thisYear), count: 4), "\(outcome)")
        #expect(Self.acted(report) == [2], "\(report)")
        #expect(Self.vdsoProcesses(report) == 1 && Self.vdsoReadings(report) == 0, "every reading trapped: \(report)")
    }

    /// `chaos run --delivery seccomp` of `program` with a control endpoint of its own, its
    /// output (and standard error) in a file, and its JSON report.
    final class Supervised {
        let control = "/tmp/svd-\(getpid())-\(UUID().uuidString.prefix(6))"  // a socket path stays short
        let process = Process()
        let outputFile: String
        let report: String

        init(_ program: [String], profile: String, workspace: Workspace) throws {
            try FileManager.default.createDirectory(atPath: control, withIntermediateDirectories: true)
            chmod(control, 0o700)
            outputFile = workspace.folder + "/output-\(UUID().uuidString.prefix(6))"
            report = outputFile + ".json"
            _ = FileManager.default.createFile(atPath: outputFile, contents: nil)
            process.executableURL = ChaosToolTests.buildDirectory.appendingPathComponent("chaos")
            process.arguments =
                ["run", "--delivery", "seccomp", "--report", report, "--profile", profile, "--"] + program
            process.environment = ProcessInfo.processInfo.environment.merging([
                "CHAOS_CONTROL": "unix", "CHAOS_CONTROL_DIR": control, "CHAOS_VDSO": "",
            ]) { $1 }
            process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: outputFile))
            process.standardError = process.standardOutput
            try process.runWithSignalsUnblocked()
        }

        var output: String { (try? String(contentsOfFile: outputFile, encoding: .utf8)) ?? "" }
        var pid: String { String(process.processIdentifier) }

        /// Waits (at most 30 s) until the output contains `text`.
        func waitFor(_ text: String) -> Bool {
            for _ in 0..<1500 where !output.contains(text) { usleep(20_000) }
            return output.contains(text)
        }

        func ctl(_ arguments: [String]) throws -> ChaosToolTests.Outcome {
            try ChaosToolTests.run(
                ChaosToolTests.buildDirectory.appendingPathComponent("chaos").path, ["ctl"] + arguments,
                environment: ["CHAOS_CONTROL_DIR": control])
        }

        /// Waits (at most 30 s) for `chaos run` to end, kills it when it does not; its report.
        func finish() -> [String: Any] {
            for _ in 0..<1500 where process.isRunning { usleep(20_000) }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
            try? FileManager.default.removeItem(atPath: control)
            return (try? JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: report))))
                as? [String: Any] ?? [:]
        }
    }

    @Test(.enabled(if: ReachTests.which("go") != nil, "no Go toolchain (apt install golang-go)"))
    func chaosCtlChangesReachTheRunningProgram() throws {
        let workspace = try Workspace()
        defer { workspace.remove() }
        let watcher = try workspace.build("watcher", Self.goWatcher)
        let profile = try workspace.write("offset.json", Self.offset)
        let twenty = try workspace.write(
            "twenty.json", Self.clockProfile(#"{"item": "offset", "parameters": {"years": -20}}"#))
        // It runs until told to stop: a slow machine (ThreadSanitizer) must not end it before
        // the revert has reached it.
        let stop = workspace.folder + "/stop"
        let run = try Supervised(
            [watcher, String(Self.thisYear - 20), stop], profile: profile, workspace: workspace)
        #expect(run.waitFor("year \(Self.thisYear - 10)"), "the program reads the offset: \(run.output)")
        // The new entry first joins the old one (two entries: each reading trapped), then
        // stands alone (answered inside the program again).
        let applied = try run.ctl(["apply", run.pid, twenty])
        #expect(applied.status == 0, "\(applied)")
        let reverted = try run.ctl(["revert", run.pid, "1"])
        #expect(reverted.status == 0, "\(reverted)")
        // Three readings after the revert, then the program stops.
        let twentyAtRevert = Self.lines(run.output, "year").filter { $0 == String(Self.thisYear - 20) }.count
        for _ in 0..<1500
        where Self.lines(run.output, "year").filter({ $0 == String(Self.thisYear - 20) }).count < twentyAtRevert + 3 {
            usleep(20_000)
        }
        _ = FileManager.default.createFile(atPath: stop, contents: nil)
        let json = run.finish()
        #expect(run.process.terminationStatus == 0, "\(run.output)")
        let years = Self.lines(run.output, "year")
        let before = years.filter { $0 == String(Self.thisYear - 10) }.count
        let after = years.filter { $0 == String(Self.thisYear - 20) }.count
        #expect(before > 0 && after >= twentyAtRevert + 3, "\(run.output)")
        #expect(
            years.allSatisfy { $0 == String(Self.thisYear - 10) || $0 == String(Self.thisYear - 20) }, "\(run.output)")
        // Readings after the change were answered inside the program too.
        #expect((Self.vdsoReadings(json) ?? 0) > before, "\(json)")
    }

    @Test(.enabled(if: ReachTests.which("go") != nil, "no Go toolchain (apt install golang-go)"))
    func aProgramExecdWhileTheClockEntryIsDisabledIsReachedWhenItIsEnabled() throws {
        let workspace = try Workspace()
        defer { workspace.remove() }
        let watcher = try workspace.build("watcher", Self.goWatcher)
        let profile = try workspace.write("offset.json", Self.offset)
        let flag = workspace.folder + "/go"
        // The shell waits for the flag, then execs the watcher, which reads the real year
        // until the entry is enabled again.
        let script = "while [ ! -e '\(flag)' ]; do sleep 0.05; done; exec '\(watcher)' \(Self.thisYear - 10)"
        let run = try Supervised(["/bin/sh", "-c", script], profile: profile, workspace: workspace)
        var disabled = try run.ctl(["disable", run.pid, "1"])
        for _ in 0..<100 where disabled.status != 0 {  // until the endpoint is up
            usleep(50_000)
            disabled = try run.ctl(["disable", run.pid, "1"])
        }
        #expect(disabled.status == 0, "\(disabled)")
        _ = FileManager.default.createFile(atPath: flag, contents: nil)
        #expect(run.waitFor("year \(Self.thisYear)"), "the watcher runs with the entry disabled: \(run.output)")
        let enabled = try run.ctl(["enable", run.pid, "1"])
        #expect(enabled.status == 0, "\(enabled)")
        let json = run.finish()
        #expect(Self.lines(run.output, "year").filter { $0 == String(Self.thisYear - 10) }.count == 5, "\(run.output)")
        #expect((Self.vdsoReadings(json) ?? 0) >= 5, "answered inside the watcher: \(json)")
        #expect(!run.output.contains("cannot patch"), "\(run.output)")
    }

    @Test func theProgramsItExecsArePatchedToo() throws {
        guard let date = ReachTests.which("date"), let shell = ReachTests.which("sh") else { return }
        let workspace = try Workspace()
        defer { workspace.remove() }
        let profile = try workspace.write("offset.json", Self.offset)
        var script = "echo year $(\(date) -u +%Y)"
        let python = ReachTests.which("python3")
        if let python { script += "; echo year $(\(python) -c 'import time; print(time.gmtime().tm_year)')" }
        let (outcome, report) = try workspace.run(profile, [shell, "-c", script])
        #expect(outcome.status == 0, "\(outcome)")
        let years = Self.lines(outcome.output, "year")
        #expect(years == Array(repeating: String(Self.thisYear - 10), count: python == nil ? 1 : 2), "\(outcome)")
        // The shell, date and python (each exec; a shim may exec more).
        #expect((Self.vdsoProcesses(report) ?? 0) >= (python == nil ? 2 : 3), "\(report)")
        #expect((Self.vdsoReadings(report) ?? 0) >= years.count, "their readings were answered inside: \(report)")
        #expect(Self.events(report).isEmpty, "\(report)")
    }
}
