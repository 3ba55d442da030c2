import ChaosKit
import Foundation
import TestHelpers
import Testing

@testable import ChaosControl

#if canImport(Glibc)
import Glibc
#endif

/// A Python loop started by the built `chaos run` with CHAOS_CONTROL set: it connects to a
/// listener of its own every 20 ms and prints `ok` or `refused`, so what `chaos ctl` changes
/// in libChaosPreload.so shows in its output.
final class PreloadChild: Sendable {
    let process: Process
    let directory: URL
    private let lines = Recorder<String>()

    static let loop = """
        import socket, sys, time
        server = socket.socket()
        server.bind(("127.0.0.1", 0))
        server.listen(128)
        server.setblocking(False)
        port = server.getsockname()[1]
        print("port", port, flush=True)
        while True:
            client = socket.socket()
            try:
                client.connect(("127.0.0.1", port))
                print("ok", flush=True)
            except OSError as error:
                print("refused", error.errno, flush=True)
            finally:
                client.close()
            try:
                while True:
                    server.accept()[0].close()
            except BlockingIOError:
                pass
            time.sleep(0.02)
        """

    /// Starts `chaos run --profile PROFILE -- COMMAND…` (the loop when no command is given),
    /// with CHAOS_CONTROL_DIR a fresh directory of mode `directoryMode` (when given).
    init(profile: String, command: [String] = ["python3", "-c", PreloadChild.loop], directoryMode: mode_t? = nil) throws
    {
        // Short: the socket's path must stay under 104 bytes.
        directory = URL(fileURLWithPath: "/tmp/pctl-\(getpid())-\(UUID().uuidString.prefix(8))", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        if let directoryMode { chmod(directory.path, directoryMode) }
        let profileFile = directory.appendingPathComponent("start.json")
        try Data(profile.utf8).write(to: profileFile)
        process = Process()
        process.executableURL = TestHelpers.buildDirectory(holding: "chaos").appendingPathComponent("chaos")
        process.arguments = ["run", "--no-cache", "--profile", profileFile.path, "--"] + command
        var environment = ProcessInfo.processInfo.environment
        environment["CHAOS_CONTROL"] = "unix"
        environment["CHAOS_CONTROL_DIR"] = directory.path
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        let lines = self.lines
        // A read may end inside a line: only whole lines are recorded.
        let pending = Locked(Data())
        output.fileHandleForReading.readabilityHandler = { handle in
            let data = handle.availableData
            guard !data.isEmpty else {
                handle.readabilityHandler = nil
                return
            }
            pending.withLock { buffer in
                buffer.append(data)
                while let end = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                    lines.record(String(decoding: buffer[buffer.startIndex..<end], as: UTF8.self))
                    buffer.removeSubrange(buffer.startIndex...end)
                }
            }
        }
        try process.runWithSignalsUnblocked()
    }

    var pid: Int32 { process.processIdentifier }
    var output: [String] { lines.values }

    /// Waits (at most `timeout`) for a line starting with `prefix` after the first `skip` lines.
    @discardableResult
    func line(startingWith prefix: String, after skip: Int = 0, timeout: Duration = .seconds(30)) async throws -> String
    {
        let deadline = ContinuousClock.now + timeout
        while true {
            // Looked at once more after the deadline: a busy machine may run this task late.
            let late = ContinuousClock.now >= deadline
            let all = output
            if all.count > skip, let found = all[skip...].first(where: { $0.hasPrefix(prefix) }) { return found }
            if late { break }
            try await Task.sleep(for: .milliseconds(5))
        }
        throw TestFailure(
            "the program printed no line starting with '\(prefix)' in time; it printed: \(output.suffix(5))")
    }

    /// The endpoint file the preload library wrote for `pid` (by default the program's, which
    /// names chaos run's pid as its runner), once it is there.
    func endpoint(of pid: Int32? = nil, timeout: Duration = .seconds(30)) async throws -> ControlEndpoint {
        let pid = pid ?? self.pid
        let deadline = ContinuousClock.now + timeout
        while true {
            let late = ContinuousClock.now >= deadline
            if let found = ControlEndpoint.all(in: directory).first(where: { $0.pid == pid || $0.runner == pid }) {
                return found
            }
            if late { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw TestFailure(
            "no endpoint file for pid \(pid) in \(directory.path): \((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []); chaos run \(process.isRunning ? "runs" : "ended"), and printed: \(output.suffix(10))"
        )
    }

    /// Runs `chaos ctl ARGS --directory DIR`.
    func ctl(_ arguments: String...) async throws -> (status: Int32, output: String, errors: String) {
        let arguments = ["ctl"] + arguments + ["--directory", directory.path, "--timeout", "30"]
        return try await offload { try ChaosToolRun.chaos(arguments) }
    }

    func file(_ name: String, _ text: String) throws -> String {
        let file = directory.appendingPathComponent(name)
        try Data(text.utf8).write(to: file)
        return file.path
    }

    func stop() {
        if process.isRunning {
            // SIGKILL: a program `chaos run` starts after compiling its profile (--no-cache)
            // inherits chaos-tool's signal mask, which blocks SIGTERM; these tests are not
            // about signals.
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: directory)
    }
}

@Suite(.disabled(if: Sanitizers.thread, Sanitizers.preloadReason)) struct PreloadControlTests {
    /// A start entry nobody meets (nothing listens on port 1 here): it shows that the plan
    /// a program starts with is listed like applied entries.
    static let harmless =
        #"{"entries": [{"point": "system.connect", "provider": {"item": "refused", "parameters": {"port": 1}}}]}"#

    @Test func chaosCtlSteersAChaosRunChild() async throws {
        let child = try PreloadChild(profile: Self.harmless)
        defer { child.stop() }
        let portLine = try await child.line(startingWith: "port ")
        let port = try #require(Int(portLine.dropFirst(5)))
        try await child.line(startingWith: "ok")
        let endpoint = try await child.endpoint()
        #expect(endpoint.kind == "preload")
        #expect(endpoint.url.hasPrefix("unix:/"))
        let client = ControlClient(endpoint, timeout: .seconds(30))

        let listed = try await child.ctl("list")
        #expect(listed.status == 0, "\(listed.errors)")
        #expect(listed.output.contains("(chaos run \(child.pid))  python3  unix:"))
        #expect(listed.output.contains("  preload  chaos ON (1 of 1 entries active)"))
        #expect(listed.output.contains("#1 system.connect ← refused"))

        let refusedProfile = try child.file(
            "refused.json",
            #"{"entries": [{"point": "system.connect", "provider": {"item": "refused", "parameters": {"port": \#(port)}}}]}"#
        )
        var seen = child.output.count
        let applied = try await child.ctl("apply", "\(child.pid)", refusedProfile)
        #expect(applied.status == 0, "\(applied.errors)")
        #expect(applied.output.hasPrefix("applied #2 (seed "))
        try await child.line(startingWith: "refused", after: seen)

        let status = try await child.ctl("status", "\(child.pid)")
        #expect(status.output.contains("chaos ON"))
        #expect(status.output.contains("#1 system.connect ← refused"))
        #expect(status.output.contains("#2 system.connect ← refused"))
        let entries = try await offload { try client.entries() }
        let added = try #require(entries.first { $0.id == 2 })
        #expect(added.acted > 0 && added.seen >= added.acted)
        #expect(added.lastAct != nil)

        // Off and on again keeps the entry and its counts.
        seen = child.output.count
        let disabled = try await child.ctl("disable", "\(child.pid)", "2")
        #expect(disabled.output.contains("(disabled)"), "\(disabled.errors)")
        try await child.line(startingWith: "ok", after: seen)
        let afterDisable = try await offload { try client.entries() }
        #expect((afterDisable.first { $0.id == 2 }?.acted ?? 0) >= added.acted)
        seen = child.output.count
        _ = try await child.ctl("enable", "\(child.pid)", "#2")
        try await child.line(startingWith: "refused", after: seen)

        seen = child.output.count
        let reverted = try await child.ctl("revert", "\(child.pid)", "2")
        #expect(reverted.output == "reverted #2\n", "\(reverted.errors)")
        try await child.line(startingWith: "ok", after: seen)
        #expect(try await offload { try client.entries() }.map(\.id) == [1])

        let events = try await child.ctl("events", "\(child.pid)")
        #expect(events.status != 0)
        #expect(events.errors.contains("serves no events"))

        // No call journal there: the tool says so, and the endpoint's 404 names what it serves.
        let journal = try await child.ctl("journal", "\(child.pid)")
        #expect(journal.status != 0)
        #expect(journal.errors.contains("keeps no call journal"), "\(journal.errors)")
        let missing = await #expect(throws: ControlError.self) { _ = try await offload { try client.journal() } }
        #expect(missing?.status == 404)
        #expect(
            "\(missing.map { "\($0)" } ?? "")".contains("response sets, events, call journal or console"))
    }

    /// A `chaos run` child's endpoint (C) reverts every entry when asked for all: `chaos ctl
    /// revert` keeps its virtual clock all the same, as for a Swift program, and says so;
    /// `--include-clock` reverts it too.
    @Test func chaosCtlRevertKeepsAChaosRunChildsClockUnlessTold() async throws {
        let profile = #"""
            {"entries": [
              {"point": "system.clock", "provider": {"item": "virtual", "parameters": {"start": "2030-01-01T00:00:00Z"}}},
              {"point": "system.connect", "provider": {"item": "refused", "parameters": {"port": 1}}}
            ]}
            """#
        let child = try PreloadChild(profile: profile, command: ["sleep", "600"])
        defer { child.stop() }
        let endpoint = try await child.endpoint()
        let client = ControlClient(endpoint, timeout: .seconds(30))
        let entries = try await offload { try client.entries() }
        let clock = try #require(entries.first { $0.point == "system.clock" })
        let connect = try #require(entries.first { $0.point == "system.connect" })

        let reverted = try await child.ctl("revert", "\(child.pid)")
        #expect(reverted.status == 0, "\(reverted.errors)")
        #expect(reverted.output.hasPrefix("reverted #\(connect.id); kept #\(clock.id) system.clock ← "), "\(reverted)")
        #expect(reverted.output.contains("waits go on in real time"), "\(reverted.output)")
        #expect(try await offload { try client.entries() }.map(\.id) == [clock.id])

        let all = try await child.ctl("revert", "\(child.pid)", "--include-clock")
        #expect(all.output == "reverted #\(clock.id)\n", "\(all)")
        #expect(try await offload { try client.entries() }.isEmpty)
    }

    /// Entries `chaos ctl` applies to a preloaded program have no place in the file its
    /// report counts from: the report says how many there were, rather than leave them out
    /// without a word.
    @Test func theReportSaysWhatChaosCtlAppliedThatItCouldNotCount() async throws {
        let flag = "/tmp/pctl-end-\(getpid())-\(UUID().uuidString.prefix(8))"
        let script = """
            import os, time
            print("ready", flush=True)
            while not os.path.exists("\(flag)"):
                time.sleep(0.02)
            """
        let child = try PreloadChild(profile: Self.harmless, command: ["python3", "-c", script])
        defer {
            child.stop()
            unlink(flag)
        }
        try await child.line(startingWith: "ready")
        _ = try await child.endpoint()
        let later = try child.file(
            "later.json",
            #"{"entries": [{"point": "system.connect", "provider": {"item": "refused", "parameters": {"port": 2}}}, "#
                + #"{"point": "system.connect", "provider": {"item": "refused", "parameters": {"port": 3}}}]}"#)
        let applied = try await child.ctl("apply", "\(child.pid)", later)
        #expect(applied.status == 0, "\(applied.errors)")
        #expect(FileManager.default.createFile(atPath: flag, contents: nil))
        let said = try await child.line(startingWith: "  and 2 entries applied through chaos ctl while it ran")
        #expect(said.hasSuffix("not counted in this report"))
        #expect(child.output.contains { $0.hasPrefix("  #1 system.connect") && $0.contains("seen 0") })
    }

    @Test func refusalsChangeNothing() async throws {
        let child = try PreloadChild(profile: Self.harmless)
        defer { child.stop() }
        try await child.line(startingWith: "ok")
        let endpoint = try await child.endpoint()
        let client = ControlClient(endpoint, timeout: .seconds(30))

        // No token, a wrong token, a foreign Host: refused before anything is read.
        for token in ["", String(repeating: "0", count: 64)] {
            let stranger = ControlClient(url: endpoint.url, token: token, timeout: .seconds(30))
            let response = try await offload {
                try stranger.send(
                    "POST", "/v1/entries", body: Data("chaos-plan 1\n".utf8),
                    headers: [("Content-Type", "text/x-chaos-plan")])
            }
            #expect(response.status == 401)
            #expect(response.headers["www-authenticate"] == "Bearer")
            #expect(String(decoding: response.body, as: UTF8.self).contains(#""kind":"unauthorized""#))
        }
        let rebinding = try await offload {
            try client.send("GET", "/v1/status", headers: [("Host", "attacker.example")])
        }
        #expect(rebinding.status == 403)

        // A plan that does not parse: 422 with the parser's line and column.
        do {
            _ = try await offload {
                try client.apply(plan: "chaos-plan 1\nentry connect\nnode 0 fail errno=ENOTANERRNO\n", source: "typed")
            }
            Issue.record("a bad plan was applied")
        } catch let error as ControlError {
            #expect(error.status == 422)
            #expect(error.subject?.hasPrefix("typed:3:") == true, "\(error)")
        }
        // JSON is for Swift endpoints: the preload says what it takes.
        let json = try await offload { try client.send("POST", "/v1/entries", body: Data(#"{"entries": []}"#.utf8)) }
        #expect(json.status == 415)
        // A profile chaos run cannot apply: the located error, and nothing is sent.
        let bad = try child.file("bad.json", #"{"entries": [{"point": "clock.now", "provider": "frozen"}]}"#)
        let refused = try await child.ctl("apply", "\(child.pid)", bad)
        #expect(refused.status != 0)
        #expect(refused.errors.contains("\(bad):1:"), "\(refused.errors)")
        // The profile editor's routes are the Swift endpoint's: the preload names what it serves,
        // and chaos ctl export says why it cannot.
        let export = try await offload { try client.send("GET", "/v1/profile") }
        #expect(export.status == 404)
        #expect(String(decoding: export.body, as: UTF8.self).contains("no points, profile validation or export"))
        let exported = try await child.ctl("export", "\(child.pid)")
        #expect(exported.status != 0)
        #expect(exported.errors.contains("a chaos run child holds compiled plans"), "\(exported.errors)")

        let status = try await offload { try client.status() }
        #expect(status.entries == 1 && status.enabledEntries == 1)
        #expect(try await offload { try client.entries() }.map(\.id) == [1])
        try await child.line(startingWith: "ok", after: child.output.count)
    }

    @Test func laterEntriesDecideFirstAsInProcess() async throws {
        // Every connection refused from the start; the endpoint is reached all the same.
        let child = try PreloadChild(
            profile: #"{"entries": [{"point": "system.connect", "provider": {"item": "refused"}}]}"#)
        defer { child.stop() }
        let portLine = try await child.line(startingWith: "port ")
        let port = try #require(Int(portLine.dropFirst(5)))
        try await child.line(startingWith: "refused")
        _ = try await child.endpoint()
        let allow = try child.file(
            "allow.json",
            #"{"entries": [{"point": "system.connect", "provider": "original", "match": {"port": \#(port)}}]}"#)
        let seen = child.output.count
        let applied = try await child.ctl("apply", "\(child.pid)", allow)
        #expect(applied.status == 0, "\(applied.errors)")
        try await child.line(startingWith: "ok", after: seen)
    }

    @Test func programsThatForkAndExecRunAsBefore() async throws {
        let script =
            #"python3 -c 'import subprocess; print("child said", subprocess.run(["echo", "hi"], capture_output=True, text=True).stdout.strip(), flush=True)'"#
        let child = try PreloadChild(profile: Self.harmless, command: ["sh", "-c", script])
        defer { child.stop() }
        try await child.line(startingWith: "child said hi")
        try await offload { child.process.waitUntilExit() }
        #expect(child.process.terminationStatus == 0)
        // Every process of the tree served and left: no endpoint file or socket stays once
        // the files of processes that ended with _exit (dash does) are cleared.
        #expect(ControlEndpoint.all(in: child.directory).isEmpty)
        let left = (try? FileManager.default.contentsOfDirectory(atPath: child.directory.path)) ?? []
        #expect(left.filter { $0.hasSuffix(".json") && $0 != "start.json" || $0.hasSuffix(".sock") } == [])
    }

    // MARK: Counters

    /// Connects to a listener of its own as fast as it can, from the moment `GO` exists until
    /// `STOP` does, and then prints how many connects it made and how many were refused.
    static let counting = """
        import os, signal, socket, sys, time
        go, stop = sys.argv[1], sys.argv[2]
        server = socket.socket()
        server.bind(("127.0.0.1", 0))
        server.listen(1024)
        server.setblocking(False)
        print("port", server.getsockname()[1], flush=True)
        while not os.path.exists(go):
            time.sleep(0.01)
        made = refused = other = 0
        while not os.path.exists(stop):
            for _ in range(20):
                client = socket.socket()
                try:
                    client.connect(server.getsockname())
                except ConnectionRefusedError:
                    refused += 1
                except OSError:
                    other += 1
                finally:
                    client.close()
                made += 1
            try:
                while True:
                    server.accept()[0].close()
            except BlockingIOError:
                pass
        print("done", made, refused, other, flush=True)
        signal.pause()
        """

    /// What one client saw: entries whose counters did not add up, and how often it read them.
    struct CounterReport: Sendable {
        var reads = 0
        var badReads = 0
        var examples: [String] = []
    }

    /// Applies, disables, enables and reverts an entry of its own until `deadline` (and at
    /// least five times), reading every entry after each step. Its entries pass every call
    /// on, so that the persistent entry, which they decide before, still sees every call.
    static func churn(_ client: ControlClient, persistent: Int, until deadline: ContinuousClock.Instant) throws
        -> CounterReport
    {
        var report = CounterReport()
        var lastSeen = 0
        func check(_ entries: [ControlAPI.Entry]) {
            var wrong = entries.filter { $0.seen != $0.acted + $0.passed }.map {
                "#\($0.id): seen \($0.seen), acted \($0.acted), passed \($0.passed)"
            }
            if let kept = entries.first(where: { $0.id == persistent }) {
                if kept.seen < lastSeen { wrong.append("#\(persistent): seen fell from \(lastSeen) to \(kept.seen)") }
                lastSeen = kept.seen
            }
            report.reads += 1
            if !wrong.isEmpty { report.badReads += 1 }
            if report.examples.count < 3 { report.examples += wrong.prefix(3 - report.examples.count) }
        }
        let plan =
            "chaos-plan 1\nentry connect label=\"churn\"\nnode 0 composite\ncase 1 port=1\nnode 1 fail errno=ECONNREFUSED\n"
        // At least a few rounds, however long they take: on a loaded machine the deadline
        // once passed before a client had finished its first, and nothing was checked.
        var rounds = 0
        while rounds < 5 || ContinuousClock.now < deadline {
            rounds += 1
            let id = try client.apply(plan: plan, source: "churn").entries[0]
            check(try client.entries())
            check([try client.setEnabled(false, entry: id)])
            check(try client.entries())
            check([try client.setEnabled(true, entry: id)])
            check(try client.entries())
            try client.revert(entry: id)
            check(try client.entries())
        }
        return report
    }

    @Test func countersAddUpWhileEightClientsChangeTheEntries() async throws {
        let folder = URL(fileURLWithPath: "/tmp/cnt-\(getpid())-\(UUID().uuidString.prefix(8))", isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let go = folder.appendingPathComponent("go")
        let stop = folder.appendingPathComponent("stop")
        let child = try PreloadChild(
            profile: Self.harmless, command: ["python3", "-c", Self.counting, go.path, stop.path])
        defer { child.stop() }
        try await child.line(startingWith: "port ")
        let client = ControlClient(try await child.endpoint(), timeout: .seconds(30))
        // Installed before the first connect and never changed: it sees every call.
        let persistent = try await offload {
            try client.apply(
                plan:
                    "chaos-plan 1\nseed 7\nentry connect label=\"persistent\"\nnode 0 probability p=0.5 child=1\nnode 1 fail errno=ECONNREFUSED\n",
                source: "persistent")
        }.entries[0]
        try Data().write(to: go)
        let deadline = ContinuousClock.now + .seconds(4)
        let reports = try await withThrowingTaskGroup(of: CounterReport.self) { group in
            for _ in 0..<8 {
                group.addTask { try await offload { try Self.churn(client, persistent: persistent, until: deadline) } }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        try Data().write(to: stop)
        let done = try await child.line(startingWith: "done ").split(separator: " ").compactMap { Int($0) }
        try #require(done.count == 3)
        let (made, refused, other) = (done[0], done[1], done[2])
        let entries = try await offload { try client.entries() }
        let final = try #require(entries.first { $0.id == persistent })
        let start = try #require(entries.first { $0.id == 1 })
        let reads = reports.map(\.reads).reduce(0, +)
        let badReads = reports.map(\.badReads).reduce(0, +)
        #expect(other == 0, "connects that failed otherwise than refused: \(other)")
        #expect(made > 1000 && reads > 100, "too little happened to show anything: \(made) connects, \(reads) reads")
        #expect(
            badReads == 0,
            "\(badReads) of \(reads) reads did not add up, e.g. \(reports.flatMap(\.examples).prefix(5))")
        #expect(
            final.seen == made && final.acted == refused && final.passed == made - refused,
            "the program made \(made) connects, \(refused) refused; the entry counted seen \(final.seen), acted \(final.acted), passed \(final.passed)"
        )
        // The start entry targets port 1, which the program never connects to: none of the
        // calls the persistent entry passes on is its call, so it counts none.
        #expect(start.seen == 0 && start.acted == 0, "the start entry counts only the calls it targets: \(start)")
    }

    // MARK: Virtual time

    static let virtualProfile =
        #"{"entries": [{"point": "system.clock", "provider": {"item": "virtual", "parameters": {"start": "2030-01-01T00:00:00Z"}}}]}"#

    /// Steps a `chaos run` child's virtual time a minute at a time and checks that each
    /// minute-long sleep ended at its own minute, with the wall and monotonic clocks agreeing.
    func stepThroughThreeMinutes(_ child: PreloadChild) async throws {
        let start = try await child.line(startingWith: "start ")
        #expect(start.hasPrefix("start 1893456000"), "the wall clock starts where the profile says: \(start)")
        for minute in 1...3 {
            // A tick printed before this advance would be a sleep that did not wait for it.
            #expect(
                !child.output.contains { $0.hasPrefix("tick \(minute) ") },
                "minute \(minute) passed before it was advanced")
            let advanced = try await child.ctl("advance", "\(child.pid)", "60s")
            // The last minute lets the program finish, which may close its endpoint as the
            // advance answers: it succeeds all the same.
            #expect(advanced.status == 0, "\(advanced.errors)")
            let tick = try await child.line(startingWith: "tick \(minute) ")
            #expect(
                tick == "tick \(minute) \(minute * 60) \(minute * 60)",
                "wall and monotonic both moved by the minute: \(tick)")
        }
    }

    @Test func chaosCtlAdvanceStepsAPythonProgramsSleepSelectAndEpollWaits() async throws {
        // Three ways to wait a minute: time.sleep (clock_nanosleep), select.select's timeout
        // and epoll's (epoll_wait), none of which any descriptor ends.
        let program = """
            import select, time
            w0, m0 = time.time(), time.monotonic()
            print("start", int(w0), flush=True)
            poller = select.epoll()
            waits = [lambda: time.sleep(60), lambda: select.select([], [], [], 60), lambda: poller.poll(60)]
            for minute in range(1, 4):
                waits[minute - 1]()
                print("tick", minute, round(time.time() - w0), round(time.monotonic() - m0), flush=True)
            """
        let child = try PreloadChild(profile: Self.virtualProfile, command: ["python3", "-c", program])
        defer { child.stop() }
        try await stepThroughThreeMinutes(child)
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/cc"), "no C compiler (cc)"))
    func chaosCtlAdvanceStepsACProgramsWallAndMonotonicClocks() async throws {
        let folder = URL(fileURLWithPath: "/tmp/vtc-\(getpid())-\(UUID().uuidString.prefix(8))", isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let source = folder.appendingPathComponent("ticks.c")
        try Data(
            """
            #include <stdio.h>
            #include <time.h>
            #include <unistd.h>
            static double mono(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }
            int main(void) {
                time_t w0 = time(NULL);
                double m0 = mono();
                printf("start %lld\\n", (long long)w0);
                fflush(stdout);
                for (int minute = 1; minute <= 3; minute++) {
                    sleep(60);
                    printf("tick %d %lld %.0f\\n", minute, (long long)(time(NULL) - w0), mono() - m0);
                    fflush(stdout);
                }
                return 0;
            }
            """.utf8
        ).write(to: source)
        let binary = folder.appendingPathComponent("ticks").path
        let compiled = try #require(runProgram("/usr/bin/cc", ["-O1", "-o", binary, source.path]))
        try #require(compiled.status == 0, "cc failed: \(compiled.stderr)")
        let child = try PreloadChild(profile: Self.virtualProfile, command: [binary])
        defer { child.stop() }
        try await stepThroughThreeMinutes(child)
    }

    @Test func advanceOutsideVirtualTimeIsRefusedWithWhatToDo() async throws {
        let child = try PreloadChild(profile: Self.harmless)
        defer { child.stop() }
        try await child.line(startingWith: "ok")
        _ = try await child.endpoint()
        let advanced = try await child.ctl("advance", "\(child.pid)", "1h")
        #expect(advanced.status != 0)
        #expect(advanced.errors.contains("system.clock item virtual"), "\(advanced.errors)")
        let malformed = try await child.ctl("advance", "\(child.pid)", "soon")
        #expect(malformed.status != 0)
        #expect(malformed.errors.contains("e.g. 1h"), "\(malformed.errors)")
    }
}

// MARK: - Directories (issue #21)

#if os(Linux)
extension PreloadControlTests {
    @Test func aSharedStickyDirectoryKeepsItsModeAndHoldsAPrivateOne() async throws {
        let child = try PreloadChild(profile: Self.harmless, directoryMode: 0o1777)
        defer { child.stop() }
        try await child.line(startingWith: "ok")
        let endpoint = try await child.endpoint()
        var info = stat()
        #expect(lstat(child.directory.path, &info) == 0 && info.st_mode & 0o7777 == 0o1777, "chmod'ed: \(info.st_mode)")
        let own = child.directory.appendingPathComponent("chaoskit-\(geteuid())")
        #expect(lstat(own.path, &info) == 0 && info.st_mode & 0o7777 == 0o700 && info.st_uid == geteuid())
        #expect(endpoint.url == "unix:\(own.path)/\(endpoint.pid).sock" && endpoint.runner == child.pid)
        // Both sides choose the same directory, so chaos ctl finds the file there.
        #expect(ControlEndpoint.directory(environment: ["CHAOS_CONTROL_DIR": child.directory.path]) == own)
        let listed = try await child.ctl("list")
        #expect(listed.output.contains("(chaos run \(child.pid))  python3  unix:\(own.path)/"), "\(listed.errors)")
        let status = try await child.ctl("status", "\(child.pid)")
        #expect(status.status == 0, "\(status.errors)")
    }

    @Test func aDirectoryOthersMayWriteToWithoutTheStickyBitIsRefused() async throws {
        let child = try PreloadChild(profile: Self.harmless, directoryMode: 0o777)
        defer { child.stop() }
        let said = try await child.line(startingWith: "chaos preload: no control endpoint")
        #expect(said.contains("chmod go-w"), "\(said)")
        try await child.line(startingWith: "ok")
        var info = stat()
        #expect(lstat(child.directory.path, &info) == 0 && info.st_mode & 0o7777 == 0o777)
        let files = try FileManager.default.contentsOfDirectory(atPath: child.directory.path)
        #expect(files == ["start.json"])
    }
}

/// Runs the built `chaos` tool.
enum ChaosToolRun {
    static func chaos(_ arguments: [String]) throws -> (status: Int32, output: String, errors: String) {
        let path = TestHelpers.buildDirectory(holding: "chaos").appendingPathComponent("chaos").path
        guard let ran = runProgram(path, arguments) else { throw TestFailure("\(path) could not be started") }
        return (ran.status, String(decoding: ran.stdout, as: UTF8.self), ran.stderr)
    }
}
#endif

// MARK: - Text and trust (issue #21)

#if os(Linux)

/// Sends `request` as it is to the Unix socket at `path` and returns the whole answer (the
/// endpoint closes after one). With `halfClose`, the write side is shut once the request is
/// sent, as `nc -N` and socat do.
func exchange(_ path: String, _ request: [UInt8], halfClose: Bool = false) throws -> [UInt8] {
    let fd = try PreloadEndpointLoadTests.connectUnix(path)
    defer { close(fd) }
    var limit = timeval(tv_sec: 10, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
    var sent = 0
    while sent < request.count {
        let count = request[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        guard count > 0 else { break }  // the endpoint may answer and close before the end
        sent += count
    }
    if halfClose { shutdown(fd, Int32(SHUT_WR)) }
    var answer: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { break }
        answer += chunk[..<count]
    }
    return answer
}

extension PreloadControlTests {
    /// A copy of /bin/sleep named `name` in a fresh folder (removed by the caller): the
    /// kernel names a process by its program's file, cut to 15 bytes.
    func sleeper(named name: String) throws -> (folder: URL, path: String) {
        let folder = URL(fileURLWithPath: "/tmp/pname-\(getpid())-\(UUID().uuidString.prefix(8))", isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let path = folder.appendingPathComponent(name).path
        try FileManager.default.copyItem(atPath: "/bin/sleep", toPath: path)
        return (folder, path)
    }

    @Test func aRequestWhoseClientShutItsWriteSideIsCarriedOutAndAnswered() async throws {
        let child = try PreloadChild(profile: Self.harmless)
        defer { child.stop() }
        try await child.line(startingWith: "ok")
        let endpoint = try await child.endpoint()
        let socket = String(endpoint.url.dropFirst(5))
        func request(_ line: String, _ body: String = "", type: String = "text/x-chaos-plan") -> [UInt8] {
            var head = "\(line) HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer \(endpoint.token)\r\n"
            if !body.isEmpty { head += "Content-Type: \(type)\r\nContent-Length: \(body.utf8.count)\r\n" }
            return Array((head + "\r\n" + body).utf8)
        }
        let plan =
            "chaos-plan 1\nentry connect label=\"half\"\nnode 0 composite\ncase 1 port=2\nnode 1 fail errno=ECONNREFUSED\n"
        let apply = request("POST /v1/entries", plan)
        let applied = try await offload { try exchange(socket, apply, halfClose: true) }
        let appliedText = String(decoding: applied, as: UTF8.self)
        #expect(appliedText.hasPrefix("HTTP/1.1 2"), "\(appliedText)")
        let listed = try await child.ctl("status", "\(child.pid)")
        #expect(listed.output.contains("← half"), "the entry was applied: \(listed.output)")
        let go = request("POST /v1/go")
        let went = try await offload { try exchange(socket, go, halfClose: true) }
        #expect(String(decoding: went, as: UTF8.self).hasPrefix("HTTP/1.1 200"), "\(went)")
        let revert = request("DELETE /v1/entries")
        let reverted = try await offload { try exchange(socket, revert, halfClose: true) }
        #expect(String(decoding: reverted, as: UTF8.self).hasPrefix("HTTP/1.1 200"), "\(reverted)")
        let after = try await child.ctl("status", "\(child.pid)")
        #expect(!after.output.contains("← half"), "every entry was reverted: \(after.output)")
    }

    @Test func answersAreValidUTF8WhateverBytesTheRequestsHold() async throws {
        let child = try PreloadChild(profile: Self.harmless)
        defer { child.stop() }
        try await child.line(startingWith: "ok")
        let endpoint = try await child.endpoint()
        let socket = String(endpoint.url.dropFirst(5))
        let token = Array(endpoint.token.utf8)
        var random = SeededRandom(seed: 0x21_0003)  // a failing input can be made again
        // Bytes that end nothing early: no space or line break (the request line splits at
        // them), with every byte from 0x80 up, where UTF-8 goes wrong.
        let anyByte: [UInt8] = Array(0x21...0xFF).filter { $0 != UInt8(ascii: "?") && $0 != UInt8(ascii: "%") }
        func junk(_ range: ClosedRange<Int> = 1...120) -> [UInt8] {
            (0..<Int.random(in: range, using: &random)).map { _ in anyByte.randomElement(using: &random)! }
        }
        func percent(_ bytes: [UInt8]) -> [UInt8] {
            Array(bytes.map { String(format: "%%%02X", $0) }.joined().utf8)
        }
        func request(_ line: String, _ target: [UInt8], headers: [[UInt8]] = [], body: [UInt8] = []) -> [UInt8] {
            var head = Array("\(line) ".utf8) + target + Array(" HTTP/1.1\r\n".utf8)
            var named = headers
            if !named.contains(where: { $0.starts(with: Array("Host:".utf8)) }) {
                named.append(Array("Host: localhost".utf8))
            }
            named.append(Array("Authorization: Bearer ".utf8) + token)
            if !body.isEmpty { named.append(Array("Content-Length: \(body.count)".utf8)) }
            for header in named { head += header + Array("\r\n".utf8) }
            return head + Array("\r\n".utf8) + body
        }
        let plan = Array("Content-Type: text/x-chaos-plan".utf8)
        var kinds: [String: Int] = [:]
        var checked = 0
        for round in 0..<1_000 {
            let kind = round % 8
            let bytes: [UInt8]
            switch kind {
            case 0: bytes = request("GET", Array("/".utf8) + junk())
            case 1: bytes = request("GET", Array("/v1/status".utf8), headers: [Array("Host: ".utf8) + junk()])
            case 2: bytes = request("GET", Array("/v1/status".utf8), headers: [Array("Origin: ".utf8) + junk()])
            case 3:
                bytes = request(
                    "POST", Array("/v1/entries".utf8), headers: [Array("Content-Type: ".utf8) + junk()], body: [0x41])
            case 4: bytes = request("GET", Array("/v1/entries/".utf8) + junk())
            case 5:
                // A plan that does not parse, quoted back in the message, from a named source.
                bytes = request(
                    "POST", Array("/v1/entries?source=".utf8) + percent(junk(1...200)), headers: [plan],
                    body: Array("chaos-plan 1\nentry ".utf8) + junk() + Array("\nnode 0 original\n".utf8))
            case 6: bytes = request("POST", Array("/v1/time/advance?by=".utf8) + percent(junk(1...60)))
            default:
                // A label of any bytes, escaped as plan text writes them.
                let label = junk(1...40).map { String(format: "\\x%02x", $0) }.joined()
                bytes = request(
                    "POST", Array("/v1/entries?source=fuzz".utf8), headers: [plan],
                    body: Array("chaos-plan 1\nentry connect label=\"\(label)\"\nnode 0 original\n".utf8))
            }
            // Every other round of eight half-closed, but for advances: a client that hangs up
            // stops an advance.
            let halfClose = round % 16 >= 8 && kind != 6
            let answer = try await offload { try exchange(socket, bytes, halfClose: halfClose) }
            let split = try #require(
                answer.indices.first { answer[$0...].starts(with: Array("\r\n\r\n".utf8)) }, "no head: \(answer)")
            let body = Array(answer[(split + 4)...])
            let text = String(validating: body, as: UTF8.self)
            #expect(text != nil, "not UTF-8 (request \(round), kind \(kind)): \(body)")
            #expect(
                (try? JSONSerialization.jsonObject(with: Data(body))) != nil,
                "not JSON (request \(round)): \(String(decoding: body, as: UTF8.self))")
            let status = String(decoding: answer.prefix(12), as: UTF8.self)
            kinds[status, default: 0] += 1
            checked += 1
        }
        #expect(checked == 1_000)
        // Each kind of subject was reached: the errors, and labels that happened to be text.
        for status in ["HTTP/1.1 404", "HTTP/1.1 403", "HTTP/1.1 415", "HTTP/1.1 422", "HTTP/1.1 400"] {
            #expect(kinds[status, default: 0] > 0, "\(kinds)")
        }
        // What was applied is listed, and every answer about it is text.
        let listing = request("GET", Array("/v1/entries".utf8))
        let entries = try await offload { try exchange(socket, listing) }
        #expect(String(validating: entries, as: UTF8.self) != nil)
        let listed = try await child.ctl("list")
        #expect(listed.output.contains("(chaos run \(child.pid))  python3  unix:"), "\(listed.errors)")
    }

    @Test func aPlanLabelThatIsNotUTF8IsRefusedAndTheProcessStaysListed() async throws {
        let child = try PreloadChild(profile: Self.harmless)
        defer { child.stop() }
        try await child.line(startingWith: "ok")
        let endpoint = try await child.endpoint()
        let client = ControlClient(endpoint, timeout: .seconds(30))
        do {
            _ = try await offload {
                try client.apply(
                    plan: "chaos-plan 1\nentry connect label=\"x\\xff\"\nnode 0 original\n", source: "typed")
            }
            Issue.record("a label that is not UTF-8 was applied")
        } catch let error as ControlError {
            #expect(error.status == 422)
            #expect(error.subject == "typed:2:23", "\(error)")
            #expect(error.message.contains("not UTF-8"), "\(error)")
        }
        // A label that is text but steers a terminal is taken, and shown escaped.
        _ = try await offload {
            try client.apply(
                plan: "chaos-plan 1\nentry connect label=\"\\x1b[31mred\"\nnode 0 original\n", source: "typed")
        }
        let status = try await child.ctl("status", "\(child.pid)")
        #expect(status.status == 0, "\(status.errors)")
        #expect(status.output.contains(#"← \u{1B}[31mred"#), "\(status.output)")
        #expect(!status.output.contains("\u{1B}"))
        let listed = try await child.ctl("list")
        #expect(listed.output.contains("(chaos run \(child.pid))  python3  unix:"), "\(listed.errors)")
        #expect(!listed.output.contains("\u{1B}"))
        let json = try await child.ctl("list", "--json")
        #expect(json.output.contains(#"\u001b[31mred"#), "\(json.output)")
    }

    @Test func programNamesAreCutAtCharactersAndPrintedEscaped() async throws {
        let enye = try sleeper(named: String(repeating: "ñ", count: 9))
        defer { try? FileManager.default.removeItem(at: enye.folder) }
        let escape = try sleeper(named: "\u{1B}[31mevil\u{9B}")
        defer { try? FileManager.default.removeItem(at: escape.folder) }
        let spanish = try PreloadChild(profile: Self.harmless, command: [enye.path, "600"])
        defer { spanish.stop() }
        let evil = try PreloadChild(profile: Self.harmless, command: [escape.path, "600"])
        defer { evil.stop() }

        // 15 bytes of 18: seven ñ, and the half of the eighth is dropped, not sent.
        let file = try await spanish.endpoint()
        #expect(file.program == String(repeating: "ñ", count: 7))
        let listed = try await spanish.ctl("list")
        #expect(
            listed.output.contains("(chaos run \(spanish.pid))  ñññññññ  unix:"), "\(listed.output) \(listed.errors)")
        let status = try await spanish.ctl("status", "\(spanish.pid)")
        #expect(status.status == 0 && status.output.hasPrefix("\(file.pid)  ñññññññ  "), "\(status.errors)")

        _ = try await evil.endpoint()
        let shown = try await evil.ctl("list")
        #expect(shown.output.contains(#"(chaos run \#(evil.pid))  \u{1B}[31mevil\u{9B}  unix:"#), "\(shown.output)")
        #expect(!shown.output.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x9B })
        let json = try await evil.ctl("list", "--json")
        #expect(!json.output.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x9B })
        #expect(json.output.contains(#""program":"\u001b[31mevil\u009b""#), "\(json.output)")
    }

    /// Root's `chaos ctl` and a process of `nobody`: the endpoint file's owner and the
    /// socket's peer are both checked, so nothing is sent to a socket of another user.
    @Test(
        .enabled(
            if: geteuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv"),
            "needs root and setpriv to run a program as nobody"))
    func chaosCtlTalksOnlyToProcessesOfItsOwnUser() async throws {
        let nobody: uid_t = 65534
        let directory = URL(fileURLWithPath: "/tmp/pown-\(getpid())-\(UUID().uuidString.prefix(8))", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        chown(directory.path, nobody, gid_t(nobody))
        chmod(directory.path, 0o700)
        // A copy nobody can read: the build folder may sit in a directory only root enters
        // (a clone in `mktemp -d`), and then the loader skips the library and nothing starts.
        let built = TestHelpers.buildDirectory(holding: "chaos").appendingPathComponent("libChaosPreload.so").path
        let library = directory.appendingPathComponent("libChaosPreload.so").path
        try FileManager.default.copyItem(atPath: built, toPath: library)
        chown(library, nobody, gid_t(nobody))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        process.arguments = [
            "--reuid=\(nobody)", "--regid=\(nobody)", "--clear-groups", "/usr/bin/env", "LD_PRELOAD=\(library)",
            "CHAOS_CONTROL=unix", "CHAOS_CONTROL_DIR=\(directory.path)", "/bin/sleep", "600",
        ]
        try process.runWithSignalsUnblocked()
        defer {
            // SIGKILL: the program may have inherited a mask that blocks SIGTERM.
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        let pid = process.processIdentifier
        let file = directory.appendingPathComponent("\(pid).json")
        let deadline = ContinuousClock.now + .seconds(30)
        while !FileManager.default.fileExists(atPath: file.path) && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        let record = try #require(
            try? ControlEndpoint.read(file.path, allowingOtherUsers: true),
            "no endpoint file \(file.lastPathComponent) in 30 s: \((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []); the program \(process.isRunning ? "runs" : "ended (\(process.terminationStatus))")"
        )

        // The file is another user's: refused, typed, with what to do.
        let refused = caught { () throws(ControlError) in try ControlEndpoint.find(pid: pid, in: directory) }
        #expect(refused?.kind == "untrustedEndpoint" && refused?.message.contains("--allow-other-users") == true)
        #expect(ControlEndpoint.all(in: directory).isEmpty)
        let options = ["--directory", directory.path, "--timeout", "30"]
        let status = try ChaosToolRun.chaos(["ctl", "status", "\(pid)"] + options)
        #expect(status.status != 0 && status.errors.contains("belongs to uid \(nobody)"), "\(status.errors)")
        let listed = try ChaosToolRun.chaos(["ctl", "list"] + options)
        #expect(!listed.output.contains("\(pid)"))
        #expect(listed.errors.contains("skipped"), "\(listed.errors)")

        // A file of root's own naming nobody's socket: the peer's user is checked before
        // anything is sent.
        let client = ControlClient(record, timeout: .seconds(30))
        let peer = await caught { () async throws(ControlError) in
            do { _ = try await offload { try client.status() } } catch let error as ControlError { throw error } catch {
            }
        }
        #expect(peer?.kind == "untrustedEndpoint", "\(String(describing: peer))")
        #expect(peer?.message.contains("runs as uid \(nobody)") == true, "\(String(describing: peer))")
        // Allowed, the client sends; the endpoint itself turns root away (its SO_PEERCRED).
        let allowed = ControlClient(record, timeout: .seconds(30), allowsOtherUsers: true)
        let answer = await caught { () async throws(ControlError) in
            do { _ = try await offload { try allowed.status() } } catch let error as ControlError { throw error } catch
            {}
        }
        #expect(answer?.kind != "untrustedEndpoint")
    }
}
#endif
