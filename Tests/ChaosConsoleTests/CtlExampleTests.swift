// Needs the console's server: runs with `swift test --traits Console`.
#if Console
import ChaosControl
import Foundation
import TestHelpers
import Testing

/// The built ConsoleDemo example, run as a separate process, steered by the built `chaos
/// ctl` as a person would.
final class RunningDemo: Sendable {
    let process: Process
    let directory: URL
    private let lines = Recorder<String>()

    /// The build folder holding this test bundle, ConsoleDemo and chaos.
    static var buildDirectory: URL { TestHelpers.buildDirectory(holding: "ConsoleDemo") }

    /// Starts the example `executable` (one built beside ConsoleDemo) with `environment`
    /// added, its endpoint file in `directory` (default: a fresh one).
    init(
        executable: String = "ConsoleDemo", environment added: [String: String] = [:], directory: URL? = nil,
        wait: Bool = false, label: String = #function
    ) throws {
        self.directory = directory ?? temporaryDirectory(label)
        process = Process()
        process.executableURL = Self.buildDirectory.appendingPathComponent(executable)
        var environment = ProcessInfo.processInfo.environment.merging(added) { _, new in new }
        environment["CHAOS_CONTROL"] = "127.0.0.1:0"
        environment["CHAOS_CONTROL_DIR"] = self.directory.path
        environment["CHAOS_DEMO_QUIET"] = "1"
        if wait {
            environment["CHAOS_CONTROL_WAIT"] = "1"
            // Longer than any test waits for it: the wait must end by `go`, never by its bound.
            environment["CHAOS_CONTROL_WAIT_TIMEOUT"] = "5m"
        }
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        let lines = self.lines
        output.fileHandleForReading.readabilityHandler = { handle in
            let data = handle.availableData
            guard !data.isEmpty else {
                handle.readabilityHandler = nil
                return
            }
            for line in String(decoding: data, as: UTF8.self).split(separator: "\n") { lines.record(String(line)) }
        }
        try process.runWithSignalsUnblocked()
    }

    var pid: Int32 { process.processIdentifier }
    var output: [String] { lines.values }

    /// Waits (at most `timeout`) for a line containing `text` after the first `skip` lines;
    /// returns its index and the unix milliseconds the demo printed with it.
    func line(containing text: String, after skip: Int = 0, timeout: Duration = .seconds(10)) async throws -> (
        index: Int, milliseconds: Int
    ) {
        let deadline = ContinuousClock.now + timeout
        while true {
            // Looked at once more after the deadline: on a busy machine this task may first
            // run again after it, with the line long printed.
            let late = ContinuousClock.now >= deadline
            let all = output
            if all.count > skip, let index = all[skip...].firstIndex(where: { $0.contains(text) }) {
                return (index, Int(all[index].split(separator: " ").first ?? "") ?? 0)
            }
            if late { break }
            try await Task.sleep(for: .milliseconds(2))
        }
        throw TestFailure("ConsoleDemo printed no line containing '\(text)' in time; it printed: \(output.suffix(5))")
    }

    /// Runs `chaos ctl ARGS --directory DIR`.
    func ctl(_ arguments: String...) async throws -> (status: Int32, output: String, errors: String) {
        let directory = self.directory
        return try await offload {
            let process = Process()
            process.executableURL = RunningDemo.buildDirectory.appendingPathComponent("chaos")
            process.arguments = ["ctl"] + arguments + ["--directory", directory.path]
            let output = Pipe()
            let errors = Pipe()
            process.standardOutput = output
            process.standardError = errors
            try process.runWithSignalsUnblocked()
            let outputData = output.fileHandleForReading.readDataToEndOfFile()
            let errorData = errors.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return (
                process.terminationStatus, String(decoding: outputData, as: UTF8.self),
                String(decoding: errorData, as: UTF8.self)
            )
        }
    }

    func profile(_ json: String) throws -> String {
        let file = directory.appendingPathComponent("\(UUID().uuidString).json")
        try Data(json.utf8).write(to: file)
        return file.path
    }

    func stop() {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: directory)
    }
}

@Suite struct CtlExampleTests {
    // How fast a change reaches the program is measured by the benchmarks
    // (`console_apply_ms`), not asserted here: on a loaded two-core machine a process start
    // alone can take longer than the 100 ms the endpoint answers in.
    @Test func chaosCtlChangesARunningSwiftProgram() async throws {
        let demo = try RunningDemo()
        defer { demo.stop() }
        _ = try await demo.line(containing: "greeting: hello, world")
        let shout = try demo.profile(#"{"entries": [{"point": "demo.greeting", "provider": {"item": "shout"}}]}"#)

        let listed = try await demo.ctl("list")
        #expect(listed.output.contains("\(demo.pid)  ConsoleDemo  http://127.0.0.1:"))
        #expect(listed.output.contains("no chaos"))

        // The URL `chaos ctl console` prints is the one the program printed, and it opens the page.
        let console = try await demo.ctl("console", "\(demo.pid)")
        let consoleURL = console.output.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(console.status == 0, "\(console.errors)")
        let ready = try #require(demo.output.first { $0.hasPrefix("ready ") })
        #expect(ready.split(separator: " ").last.map(String.init) == consoleURL)
        let page = try await offload {
            runPython([
                "-c", "import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1]).read().decode())",
                consoleURL,
            ])
        }
        #expect(
            page?.status == 0 && String(decoding: page?.stdout ?? Data(), as: UTF8.self).contains("<html"),
            "\(page?.stderr ?? "python3 did not start")")
        let everyConsole = try await demo.ctl("console")
        #expect(everyConsole.output.contains("\(demo.pid)  ConsoleDemo  \(consoleURL)"))

        var seen = demo.output.count
        let applied = try await demo.ctl("apply", "\(demo.pid)", shout)
        #expect(applied.status == 0, "\(applied.errors)")
        #expect(applied.output.hasPrefix("applied #"))
        _ = try await demo.line(containing: "greeting: HELLO, WORLD", after: seen)
        let id = String(applied.output.dropFirst("applied #".count).prefix { $0.isNumber })

        let status = try await demo.ctl("status", "\(demo.pid)")
        #expect(status.output.contains("chaos ON"))
        #expect(status.output.contains("#\(id) demo.greeting ← shout"))
        #expect(status.output.contains("[sunny], storm, server down"))

        // The demo makes a request with a typo in its path every few seconds: refused, with the stub it nearly matched.
        let requests = try await demo.ctl("requests", "\(demo.pid)", "--answer", "refused")
        #expect(requests.status == 0, "\(requests.errors)")
        #expect(requests.output.contains("GET https://weather.example/forcast/monday → refused  "))
        #expect(!requests.output.contains("failed: no stub matches"), "the near misses are not said twice")
        #expect(
            requests.output.contains(
                "    near miss 1: 'forecast' (GET any host template /forecast/:day), 1 of 2 criteria met"))
        #expect(requests.output.contains("      path: expected template /forecast/:day, got /forcast/monday"))
        #expect(!requests.output.contains("/today"), "only the refused requests are listed")
        let sunny = try await demo.ctl("requests", "\(demo.pid)", "--limit", "3")
        #expect(
            sunny.output.contains("GET https://weather.example/today → response set 'weather' → sunny  200 12 bytes"))
        let newest = try await demo.ctl("requests", "\(demo.pid)", "--limit", "1", "--json")
        let journal = try ControlAPI.decoder().decode(ControlAPI.Requests.self, from: Data(newest.output.utf8))
        #expect(journal.requests.count == 1 && journal.requests[0].answeredBy == "weather")

        let events = try await demo.ctl("events", "\(demo.pid)", "--count", "2")
        #expect(events.status == 0)
        #expect(events.output.split(separator: "\n").count == 2)
        #expect(events.output.contains("#\(id) demo.greeting ← shout  call "))

        seen = demo.output.count
        #expect(try await demo.ctl("disable", "\(demo.pid)", id).output.contains("(disabled)"))
        _ = try await demo.line(containing: "greeting: hello, world", after: seen)
        seen = demo.output.count
        _ = try await demo.ctl("enable", "\(demo.pid)", "#\(id)")
        _ = try await demo.line(containing: "greeting: HELLO, WORLD", after: seen)

        seen = demo.output.count
        let selected = try await demo.ctl("select", "\(demo.pid)", "weather", "storm")
        #expect(selected.output.contains("[storm]"))
        _ = try await demo.line(containing: "weather: storm warning", after: seen)

        seen = demo.output.count
        let reverted = try await demo.ctl("revert", "\(demo.pid)")
        #expect(reverted.output == "reverted #\(id)\n")
        _ = try await demo.line(containing: "greeting: hello, world", after: seen)

        // A bad profile: the located error, exit status 1, nothing applied.
        let bad = try demo.profile(
            #"{"entries": [{"point": "demo.greeting", "provider": {"item": "stutter", "parameters": {"times": 50}}}]}"#)
        let refused = try await demo.ctl("apply", "\(demo.pid)", bad)
        #expect(refused.status != 0)
        #expect(refused.errors.contains("\(bad):1:"))
        #expect(refused.errors.contains("at $.entries[0].provider.parameters.times"))
        #expect(refused.errors.contains("outside 1…20"))
        #expect(try await demo.ctl("status", "\(demo.pid)").output.contains("entries: none"))
    }

    /// `demo.greting` beside the live `demo.greeting` is a typo: `chaos ctl apply` (the same
    /// route as the console's editor) refuses the whole profile with "did you mean", unless
    /// `--allow-pending`; then the entry waits, and list and status count it as waiting, not
    /// as active.
    @Test func chaosCtlRefusesAMisspeltPointUnlessAllowedToWaitAndNeverCountsItActive() async throws {
        let demo = try RunningDemo()
        defer { demo.stop() }
        _ = try await demo.line(containing: "greeting: hello, world")
        let typo = try demo.profile(
            #"""
            {"entries": [{"point": "demo.greeting", "provider": {"item": "shout"}},
                         {"point": "demo.greting", "provider": {"item": "shout"}}]}
            """#)
        let refused = try await demo.ctl("apply", "\(demo.pid)", typo)
        #expect(refused.status != 0)
        #expect(refused.errors.contains("\(typo):2:"), "\(refused.errors)")
        #expect(refused.errors.contains("at $.entries[1].point"), "\(refused.errors)")
        #expect(refused.errors.contains("did you mean 'demo.greeting'?"), "\(refused.errors)")
        #expect(refused.errors.contains("--allow-pending"), "\(refused.errors)")
        let nothing = try await demo.ctl("status", "\(demo.pid)")
        #expect(nothing.output.contains("no chaos") && nothing.output.contains("entries: none"), "\(nothing.output)")

        let waitsOnly = try demo.profile(#"{"entries": [{"point": "demo.greting", "provider": {"item": "shout"}}]}"#)
        let applied = try await demo.ctl("apply", "\(demo.pid)", "--allow-pending", waitsOnly)
        #expect(applied.status == 0, "\(applied.errors)")
        let status = try await demo.ctl("status", "\(demo.pid)")
        #expect(
            status.output.contains("chaos ON (0 of 1 entries active, 1 waiting for its point)"), "\(status.output)")
        #expect(status.output.contains("demo.greting ← shout"))
        let listed = try await demo.ctl("list")
        #expect(
            listed.output.contains("\(demo.pid)  ConsoleDemo  http://127.0.0.1:")
                && listed.output.contains("chaos ON (0 of 1 entries active, 1 waiting for its point)"),
            "\(listed.output)")

        let shout = try demo.profile(#"{"entries": [{"point": "demo.greeting", "provider": {"item": "shout"}}]}"#)
        let seen = demo.output.count
        #expect(try await demo.ctl("apply", "\(demo.pid)", shout).status == 0)
        _ = try await demo.line(containing: "greeting: HELLO, WORLD", after: seen)
        let both = try await demo.ctl("status", "\(demo.pid)")
        #expect(both.output.contains("chaos ON (1 of 2 entries active, 1 waiting for its point)"), "\(both.output)")
    }

    /// `chaos ctl export` writes what is applied as a profile; reverted and applied again,
    /// it brings the same chaos back, and exports to the same profile.
    @Test func chaosCtlExportsAProfileThatAppliesAgain() async throws {
        let demo = try RunningDemo()
        defer { demo.stop() }
        _ = try await demo.line(containing: "greeting: hello, world")
        let profile = try demo.profile(
            #"""
            {"entries": [
              {"point": "demo.greeting",
               "provider": {"sequential": [{"item": "stutter", "parameters": {"times": 2}, "times": 1}, "shout"]}},
              {"point": "network.send", "match": {"path": "/today"}, "provider": {"item": "status", "parameters": {"code": 503}}}
            ]}
            """#)
        var seen = demo.output.count
        let applied = try await demo.ctl("apply", "\(demo.pid)", profile)
        #expect(applied.status == 0, "\(applied.errors)")
        _ = try await demo.line(containing: "weather: HTTP 503", after: seen)
        _ = try await demo.line(containing: "greeting: HELLO, WORLD", after: seen)

        let file = demo.directory.appendingPathComponent("exported.json").path
        let exported = try await demo.ctl("export", "\(demo.pid)", "--output", file)
        #expect(exported.status == 0, "\(exported.errors)")
        let first = try String(contentsOfFile: file, encoding: .utf8)
        #expect(first.contains(#""match":{"path":"/today"}"#), "\(first)")
        #expect(first.contains(#""sequential":["#), "\(first)")

        seen = demo.output.count
        #expect(try await demo.ctl("revert", "\(demo.pid)").status == 0)
        _ = try await demo.line(containing: "greeting: hello, world", after: seen)
        seen = demo.output.count
        let again = try await demo.ctl("apply", "\(demo.pid)", file)
        #expect(again.status == 0, "\(again.errors)")
        _ = try await demo.line(containing: "weather: HTTP 503", after: seen)
        _ = try await demo.line(containing: "greeting: hello, world-world", after: seen)
        _ = try await demo.line(containing: "greeting: HELLO, WORLD", after: seen)
        let second = try await demo.ctl("export", "\(demo.pid)")
        #expect(second.output.trimmingCharacters(in: .newlines) == first, "\(second.errors)")
    }

    @Test func aWaitingProgramGoesOnWhenTheControllerSaysGo() async throws {
        let demo = try RunningDemo(wait: true)
        defer { demo.stop() }
        // Waiting: the endpoint answers, the program has not started its loop.
        var listed = ""
        for _ in 0..<3_000 {  // counted, not timed: suites beside this one may move the clocks
            listed = try await demo.ctl("list").output
            if listed.contains("waiting for go") { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(listed.contains("\(demo.pid)  ConsoleDemo"))
        #expect(listed.contains("waiting for go"))
        #expect(!demo.output.contains { $0.contains("greeting:") })
        // Chaos set before the first call: the program's first greeting is already changed.
        let stutter = try demo.profile(
            #"{"entries": [{"point": "demo.greeting", "provider": {"item": "stutter", "parameters": {"times": 2}}}]}"#)
        #expect(try await demo.ctl("apply", "\(demo.pid)", stutter).status == 0)
        #expect(try await demo.ctl("go", "\(demo.pid)").status == 0)
        let first = try await demo.line(containing: "greeting:")
        #expect(demo.output[first.index].hasSuffix("greeting: hello, world-world"))
    }

    @Test func listSkipsProcessesThatDied() async throws {
        let demo = try RunningDemo()
        defer { demo.stop() }
        _ = try await demo.line(containing: "greeting:")
        let pid = demo.pid
        // SIGKILL: the program cannot remove its endpoint file.
        kill(pid, SIGKILL)
        demo.process.waitUntilExit()
        #expect(FileManager.default.fileExists(atPath: demo.directory.appendingPathComponent("\(pid).json").path))
        let listed = try await demo.ctl("list")
        #expect(!listed.output.contains("\(pid)"))
        #expect(!FileManager.default.fileExists(atPath: demo.directory.appendingPathComponent("\(pid).json").path))
        let status = try await demo.ctl("status", "\(pid)")
        #expect(status.status != 0)
        #expect(status.errors.contains("no controllable process has this pid"))
    }
}
#endif
