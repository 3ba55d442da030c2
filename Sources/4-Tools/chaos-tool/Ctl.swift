import ArgumentParser
import ChaosControl
import ChaosHooks
import ChaosKit
import Foundation

/// `chaos ctl`: steers the chaos of running processes through their control endpoints —
/// Swift programs with ChaosConsole, and `chaos run` children started with CHAOS_CONTROL
/// set — found by the endpoint files in the per-user directory.
struct Ctl: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "Steer the chaos of running processes: list, status, console, apply, export, revert, enable, disable, select, events, requests, journal, go, advance.",
        discussion: """
            Processes are found by their endpoint files (CHAOS_CONTROL_DIR, else $XDG_RUNTIME_DIR/chaoskit, \
            else ~/.chaoskit/control). A Swift program gets an endpoint with ChaosConsole, e.g. \
            CHAOS_CONTROL=127.0.0.1:0 and Chaos.bootstrap(control: .environment); a program started \
            by `chaos run` gets one with CHAOS_CONTROL=unix (its profiles are compiled here). \
            Only your own processes are steered: an endpoint file or a socket of another user is \
            refused unless --allow-other-users is given. What processes send is printed with its \
            control characters escaped.
            """,
        subcommands: [
            CtlList.self, CtlStatus.self, CtlConsole.self, CtlApply.self, CtlExport.self, CtlRevert.self,
            CtlEnable.self, CtlDisable.self, CtlSelect.self, CtlEvents.self, CtlRequests.self, CtlJournal.self,
            CtlGo.self, CtlAdvance.self,
        ]
    )
}

/// Options every `chaos ctl` verb shares.
struct CtlOptions: ParsableArguments {
    @Option(
        help:
            "The directory of endpoint files (default: CHAOS_CONTROL_DIR, $XDG_RUNTIME_DIR/chaoskit or ~/.chaoskit/control)."
    )
    var directory: String?

    @Option(help: "Seconds to wait for an answer.")
    var timeout: Double = 5

    @Flag(
        help: """
            Also talk to processes of other users. Without it, an endpoint file another user owns, \
            or a socket whose process runs as another user, is refused: that process could answer \
            anything and would learn every profile sent to it. Give it only for users you trust.
            """)
    var allowOtherUsers = false

    /// Where the endpoint files are (a shared sticky directory such as /tmp stands for its
    /// private subdirectory, as where the endpoints write them).
    var endpointDirectory: URL {
        ControlEndpoint.filesDirectory(
            for: directory.map { URL(fileURLWithPath: $0, isDirectory: true) } ?? ControlEndpoint.directory())
    }

    func client(pid: Int32) throws -> ControlClient {
        client(try endpoint(pid: pid))
    }

    func endpoint(pid: Int32) throws -> ControlEndpoint {
        try ControlEndpoint.find(pid: pid, in: endpointDirectory, allowingOtherUsers: allowOtherUsers)
    }

    /// The endpoint of `pid`, or with `tree`, the endpoints of every process of the `chaos
    /// run` tree `pid` is in (the runner's pid or any of its processes').
    func endpoints(pid: Int32, tree: Bool) throws -> [ControlEndpoint] {
        let endpoint = try ctl { try self.endpoint(pid: pid) }
        guard tree else { return [endpoint] }
        guard let runner = endpoint.runner else {
            throw CtlFailure(
                description:
                    "pid \(pid) (\(TerminalText.escaped(endpoint.program))) is not under chaos run: --tree acts on the processes of a chaos run tree"
            )
        }
        return ControlEndpoint.tree(ofRunner: runner, in: endpointDirectory, allowingOtherUsers: allowOtherUsers)
    }

    func client(_ endpoint: ControlEndpoint) -> ControlClient {
        ControlClient(endpoint, timeout: .milliseconds(Int(timeout * 1_000)), allowsOtherUsers: allowOtherUsers)
    }

    /// The live endpoints; each file of another user that is skipped is said on stderr.
    func endpoints() -> [ControlEndpoint] {
        ControlEndpoint.all(in: endpointDirectory, allowingOtherUsers: allowOtherUsers) { refusal in
            warn("skipped: \(refusal.description)")
        }
    }
}

/// A control error as the tool reports it (ArgumentParser prints the description), with
/// what came from a process or a file escaped.
struct CtlFailure: Error, CustomStringConvertible {
    let description: String

    init(description: TerminalText) {
        self.description = description.description
    }
}

/// Runs `body`, turning a ControlError into a one-line report.
func ctl<T>(_ body: () throws -> T) throws -> T {
    do {
        return try body()
    } catch let error as ControlError {
        throw CtlFailure(description: "\(error.description)")
    }
}

/// `#3` or `3` → 3.
func entryNumber(_ text: String) throws -> Int {
    let digits = text.hasPrefix("#") ? String(text.dropFirst()) : text
    guard let number = Int(digits), number > 0 else {
        throw ValidationError(
            "'\(text.prefix(80))' is not an entry id; give the number `chaos ctl status PID` shows, e.g. 3 or #3")
    }
    return number
}

extension ControlAPI.Entry {
    /// `#3 clock.now ← offset(…)  seen 12, acted 12, passed 0 (off)`.
    var line: String {
        var text = "#\(id) \(point) ← \(provider)  seen \(seen), acted \(acted), passed \(passed)"
        if !enabled { text += " (disabled)" }
        if pending == true { text += " (pending: the program has not created this point yet)" }
        if let problem { text += " (not applied: \(problem))" }
        if let lastAct { text += "; last act: call \(lastAct.callIndex), entry seed \(lastAct.entrySeed)" }
        if let leaseEnds { text += "; lease ends \(leaseEnds.formatted(.iso8601))" }
        return text
    }
}

struct CtlList: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "The controllable processes on this machine, with what is applied.")

    @OptionGroup var options: CtlOptions
    @Flag(help: "Print JSON: one status object per process, with its entries.")
    var json = false

    func run() throws {
        var rows: [(endpoint: ControlEndpoint, status: ControlAPI.Status, entries: [ControlAPI.Entry])] = []
        for endpoint in options.endpoints() {
            var client = options.client(endpoint)
            client.timeout = .seconds(1)
            // Skip processes that do not answer, or a recycled pid's endpoint; say which
            // were refused for their user.
            let status: ControlAPI.Status
            let entries: [ControlAPI.Entry]
            do {
                status = try client.status()
                guard status.pid == endpoint.pid else { continue }
                entries = try client.entries()
            } catch let error where error.kind == "untrustedEndpoint" {
                warn("skipped pid \(endpoint.pid): \(error.description)")
                continue
            } catch {
                continue
            }
            rows.append((endpoint, status, entries))
        }
        if json {
            struct Row: Encodable {
                let pid: Int32, runner: Int32?, program: String, url: String, kind: String, waiting: Bool
                let entries: [ControlAPI.Entry]
            }
            let data = try ControlAPI.encoder().encode(
                rows.map {
                    Row(
                        pid: $0.endpoint.pid, runner: $0.endpoint.runner, program: $0.status.program,
                        url: $0.endpoint.url, kind: $0.status.kind, waiting: $0.status.waiting, entries: $0.entries)
                })
            print(TerminalText.json(data))
            return
        }
        guard !rows.isEmpty else {
            say("no controllable processes (endpoint files in \(options.endpointDirectory.path))")
            return
        }
        for row in rows {
            let on = row.status.enabledEntries > 0 ? "chaos ON (\(row.status.entriesSummary))" : "no chaos"
            // The program's own pid first, as ps and its pidfile know it; chaos run's beside it.
            let runner = row.endpoint.runner.map { " (chaos run \($0))" } ?? ""
            say(
                "\(row.endpoint.pid)\(runner)  \(row.status.program)  \(row.endpoint.url)  \(row.status.kind)  \(on)\(row.status.waiting ? "  waiting for go" : "")"
            )
            for entry in row.entries { say("    \(entry.line)") }
        }
    }
}

struct CtlConsole: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "console",
        abstract:
            "The web console's URL, token included, of one process; without a pid, the page of every process and each one's console.",
        discussion: """
            Without a pid, the first line is the page that lists every process (/console/processes, \
            served by any Swift program with ChaosConsole, behind its token like its console), then one \
            line per process: its console's URL, or, for a `chaos run` child, that it serves none.
            """
    )

    @OptionGroup var options: CtlOptions
    @Argument(help: "The process id (default: every process).") var pid: Int32?
    @Flag(help: "Also open the page in the browser (xdg-open).") var open = false

    func run() throws {
        guard let pid else {
            let endpoints = options.endpoints()
            // Any Swift program's console serves the page of every process.
            let server = endpoints.first { endpoint in
                guard endpoint.processesURL != nil else { return false }
                var client = options.client(endpoint)
                client.timeout = .seconds(1)
                return (try? client.status())?.features.contains("processes") == true
            }
            if let server, let url = server.processesURL {
                say("every process: \(url)  (served by \(server.pid) \(server.program))")
            } else if !endpoints.isEmpty {
                say("no Swift program with ChaosConsole runs to serve the page of every process; they are:")
            }
            if endpoints.isEmpty {
                say("no process serves a web console (endpoint files in \(options.endpointDirectory.path))")
            }
            for endpoint in endpoints {
                if let url = endpoint.consoleURL {
                    say("\(endpoint.pid)  \(endpoint.program)  \(url)")
                } else {
                    say(
                        "\(endpoint.pid)  \(endpoint.program)  no web console (\(endpoint.kind), \(endpoint.url)): chaos ctl status \(endpoint.pid)"
                    )
                }
            }
            if open, let url = server?.processesURL { try Self.openInBrowser(url) }
            return
        }
        let endpoint = try ctl { try options.endpoint(pid: pid) }
        guard let url = endpoint.consoleURL else {
            throw CtlFailure(
                description:
                    "process \(pid) (\(endpoint.program)) serves no web console: its endpoint is \(endpoint.url) (\(endpoint.kind)); steer it with chaos ctl status/apply/revert"
            )
        }
        say("\(url)")
        if open { try Self.openInBrowser(url) }
    }

    /// Hands `url` to the desktop's browser.
    static func openInBrowser(_ url: String) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["xdg-open", url]
        do {
            try process.run()
        } catch {
            throw CtlFailure(description: "cannot run xdg-open (\(error)); open the URL above yourself")
        }
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw CtlFailure(description: "xdg-open could not open a browser; open the URL above yourself")
        }
    }
}

struct CtlStatus: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status", abstract: "One process: its entries with counters, and its response sets.")

    @OptionGroup var options: CtlOptions
    @Argument(help: "The process id.") var pid: Int32
    @Flag(help: "Print JSON.") var json = false

    func run() throws {
        try ctl {
            let client = try options.client(pid: pid)
            let status = try client.status()
            let entries = try client.entries()
            let sets = status.features.contains("response-sets") ? try client.responseSets() : []
            if json {
                struct Report: Encodable {
                    let status: ControlAPI.Status, entries: [ControlAPI.Entry], responseSets: [ControlAPI.ResponseSet]
                }
                print(
                    TerminalText.json(
                        try ControlAPI.encoder().encode(Report(status: status, entries: entries, responseSets: sets))))
                return
            }
            say(
                "\(status.pid)  \(status.program)  \(client.url)  \(status.enabledEntries > 0 ? "chaos ON (\(status.entriesSummary))" : "no chaos")\(status.waiting ? "  waiting for go" : "")\(status.advance.map { "  advancing: \($0.steps) steps so far, \(DurationText.format(.nanoseconds($0.remainingNanoseconds))) to go" } ?? "")"
            )
            say(entries.isEmpty ? "entries: none" : "entries:")
            for entry in entries { say("  \(entry.line)") }
            if !sets.isEmpty {
                say("response sets:")
                for set in sets {
                    say(
                        "  \(set.name) (\(set.matcher)): \(set.responses.map { $0 == set.selected ? "[\($0)]" : $0 }.joined(separator: ", "))"
                    )
                }
            }
        }
    }
}

struct CtlApply: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apply", abstract: "Apply a JSON profile to a process, all or nothing.")

    @OptionGroup var options: CtlOptions
    @Argument(help: "The process id: the program's own, or the pid of the chaos run that started it.") var pid: Int32
    @Argument(help: "The JSON profile: a file, - for standard input, or /dev/fd/N.") var file: String
    @Flag(help: "Apply it to every process of the chaos run tree the process is in, each on its own.")
    var tree = false
    @Flag(
        help: """
            Let an entry wait for a point the program has not made yet even when its name is a couple of \
            letters off a live point's. Without it such a profile is refused as misspelt, with "did you mean".
            """)
    var allowPending = false

    func run() throws {
        let data: Data
        do {
            data = try ChaosProfile.contents(ofFile: file)
        } catch {
            throw CtlFailure(description: "\(error)")
        }
        let endpoints = try options.endpoints(pid: pid, tree: tree)
        // A `chaos run` child has no profile compiler (it is plain C): the profile is
        // compiled here, as `chaos run` does, and only the plan is sent (one plan, one seed,
        // for every process of a tree).
        let plan: String? = endpoints.contains(where: \.isChaosRun) ? try compiledPlan(data) : nil
        for endpoint in endpoints {
            try ctl {
                let client = options.client(endpoint)
                let applied: ControlAPI.Applied
                if let plan, endpoint.isChaosRun {
                    applied = try client.apply(plan: plan, source: file)
                } else {
                    applied = try client.apply(profile: data, source: file, allowPending: allowPending)
                }
                let which = tree ? "\(endpoint.pid): " : ""
                say(
                    "\(which)applied \(applied.entries.map { "#\($0)" }.joined(separator: ", ")) (seed \(applied.seed))"
                )
            }
        }
    }

    /// The profile's plan with its seed (a fresh one when it names none); a located error
    /// (exit status 1) when it cannot be compiled for a `chaos run` child.
    private func compiledPlan(_ data: Data) throws -> String {
        do {
            let compiled = try SystemRunPlan.compile(try ChaosProfile.decode(json: data, file: file))
            return compiled.text(seed: compiled.seed ?? UInt64.random(in: .min ... .max))
        } catch {
            throw CtlFailure(description: "\(error)")
        }
    }
}

struct CtlExport: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Print what is applied in a process as a JSON profile, which chaos ctl apply applies again.",
        discussion: """
            An entry no profile can spell (made in code from a typed provider) refuses the export; \
            --partial exports the rest, and the profile's description names what it left out. \
            Disabled entries are exported with "enabled": false, which an apply keeps but does not apply.
            """
    )

    @OptionGroup var options: CtlOptions
    @Argument(help: "The process id.") var pid: Int32
    @Flag(help: "Export the entries a profile can spell, naming the others in its description.")
    var partial = false
    @Option(name: .shortAndLong, help: "Write the profile to this file instead of standard output.")
    var output: String?

    func run() throws {
        try ctl {
            let endpoint = try options.endpoint(pid: pid)
            let client = options.client(endpoint)
            guard !endpoint.isChaosRun, try client.status().features.contains("profile") else {
                throw CtlFailure(
                    description:
                        "pid \(pid) (\(endpoint.program)) cannot export its entries as a profile: \(endpoint.isChaosRun ? "a chaos run child holds compiled plans, not profiles; the profiles given to chaos run and chaos ctl apply are the source" : "its endpoint is older than export (it does not list the profile feature)")"
                )
            }
            let profile = try client.exportProfile(partial: partial)
            if let output {
                do {
                    try profile.write(to: URL(fileURLWithPath: output))
                } catch {
                    throw CtlFailure(description: "cannot write \(output) (\(error.localizedDescription))")
                }
                return
            }
            print(TerminalText.json(profile))
        }
    }
}

struct CtlRevert: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "revert", abstract: "Revert one entry, or every entry when none is named.",
        discussion: """
            Reverting every entry keeps those on system.clock (a program on virtual time waits on it, and \
            its waits would go on in real time), and says so; --include-clock reverts them too, as does \
            naming one by its id.
            """)

    @OptionGroup var options: CtlOptions
    @Argument(help: "The process id: the program's own, or the pid of the chaos run that started it.") var pid: Int32
    @Argument(help: "The entry id (as status shows it); omit to revert all.") var entry: String?
    @Flag(help: "Revert in every process of the chaos run tree the process is in.")
    var tree = false
    @Flag(help: "When reverting every entry, revert those on system.clock too.")
    var includeClock = false

    func validate() throws {
        if includeClock && entry != nil {
            throw ValidationError(
                "--include-clock is for reverting every entry; a named entry is reverted whatever it is")
        }
    }

    func run() throws {
        let number = try entry.map(entryNumber)
        for endpoint in try options.endpoints(pid: pid, tree: tree) {
            try ctl {
                let client = options.client(endpoint)
                let reverted =
                    try number.map { try client.revert(entry: $0) } ?? client.revertAll(includingClock: includeClock)
                let which = tree ? "\(endpoint.pid): " : ""
                var what =
                    reverted.entries.isEmpty
                    ? "nothing to revert" : "reverted \(reverted.entries.map { "#\($0)" }.joined(separator: ", "))"
                if let note = reverted.note { what += "; \(note)" }
                say("\(which)\(what)")
            }
        }
    }
}

struct CtlEnable: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "enable", abstract: "Switch an applied entry back on.")

    @OptionGroup var options: CtlOptions
    @Argument(help: "The process id.") var pid: Int32
    @Argument(help: "The entry id.") var entry: String

    func run() throws {
        let number = try entryNumber(entry)
        try ctl { say("\(try options.client(pid: pid).setEnabled(true, entry: number).line)") }
    }
}

struct CtlDisable: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "disable", abstract: "Switch an applied entry off (it stays listed, with its counters).")

    @OptionGroup var options: CtlOptions
    @Argument(help: "The process id.") var pid: Int32
    @Argument(help: "The entry id.") var entry: String

    func run() throws {
        let number = try entryNumber(entry)
        try ctl { say("\(try options.client(pid: pid).setEnabled(false, entry: number).line)") }
    }
}

struct CtlEvents: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "events", abstract: "Follow a process's events: what fired, where, and the seed that replays it.")

    @OptionGroup var options: CtlOptions
    @Argument(help: "The process id.") var pid: Int32
    @Option(help: "Stop after this many events.") var count: Int?
    @Flag(help: "Print each event as a JSON line.") var json = false

    func run() throws {
        var seen = 0
        try ctl {
            let endpoint = try options.endpoint(pid: pid)
            guard !endpoint.isChaosRun else {
                throw CtlFailure(
                    description:
                        "pid \(pid): a chaos run child (preload endpoint) serves no events; `chaos ctl status \(pid)` shows its counters and last acts"
                )
            }
            let client = options.client(endpoint)
            let encoder = ControlAPI.encoder()
            try client.events(onOpen: {
                warn("following the events of \(pid) (\(client.url))")
            }) { event in
                // Written at once (not through print's buffer): followers such as tests and
                // `| grep` see each event as it comes.
                let line: TerminalText =
                    json
                    ? "\(safe: TerminalText.json((try? encoder.encode(event)) ?? Data()))\n"
                    : "\(event.date.formatted(.iso8601))  \(event.entry.map { "#\($0) " } ?? "")\(event.point) ← \(event.provider)  call \(event.callIndex)  entry seed \(event.entrySeed)\n"
                FileHandle.standardOutput.write(Data(line.description.utf8))
                seen += 1
                return count.map { seen < $0 } ?? true
            }
        }
    }
}

struct CtlRequests: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "requests",
        abstract:
            "A process's network requests: what answered each (stub, response set, chaos, pass-through, refusal), and why a refused one missed the nearest stubs."
    )

    @OptionGroup var options: CtlOptions
    @Argument(help: "The process id.") var pid: Int32
    @Option(help: "Show only the newest this many requests.") var limit: Int?
    @Option(
        help:
            "Show only requests answered so: stub, responseSet, responder, chaos, passedThrough, refused or client."
    )
    var answer: String?
    @Flag(help: "Print JSON.") var json = false

    func validate() throws {
        if let limit, limit < 0 { throw ValidationError("--limit must be 0 or more") }
    }

    func run() throws {
        try ctl {
            let endpoint = try options.endpoint(pid: pid)
            let client = options.client(endpoint)
            guard try client.status().features.contains("requests") else {
                throw CtlFailure(
                    description:
                        "pid \(pid) (\(endpoint.program)) keeps no request journal: only Swift programs with ChaosConsole do (ChaosNetwork's RequestJournal)"
                )
            }
            let journal = try client.requests(limit: limit, answer: answer)
            if json {
                print(TerminalText.json(try ControlAPI.encoder().encode(journal)))
                return
            }
            for line in Self.lines(journal) { say(line) }
        }
    }

    /// The journal as the tool prints it: a header, then one line per request and one per
    /// near miss (indented), each difference in words.
    static func lines(_ journal: ControlAPI.Requests) -> [TerminalText] {
        guard journal.capacity > 0 else { return ["the request journal is off (its capacity is 0)"] }
        var lines: [TerminalText] = [
            "\(journal.requests.count) of \(journal.recorded) requests (the journal keeps the newest \(journal.capacity))"
        ]
        for request in journal.requests {
            var line =
                "#\(request.number) \(request.date.formatted(.iso8601)) \(request.method) \(request.url) → \(request.summary)"
            if !request.conditions.isEmpty { line += " [\(request.conditions.joined(separator: ", "))]" }
            if let status = request.status { line += "  \(status)" }
            if let bytes = request.bytes { line += " \(bytes) bytes" }
            // A refusal's message lists the near misses, which follow on lines of their own.
            if let error = request.error, request.nearMisses == nil { line += "  failed: \(error)" }
            line += String(format: "  %.1f ms", request.milliseconds)
            lines.append("\(line)")
            for (rank, miss) in (request.nearMisses ?? []).enumerated() {
                lines.append(
                    "    near miss \(rank + 1): '\(miss.stub)' (\(miss.matcher)), \(miss.satisfied) of \(miss.criteria) criteria met"
                )
                for difference in miss.differences { lines.append("      \(difference.description)") }
            }
        }
        return lines
    }
}

struct CtlSelect: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "select", abstract: "Select a response in one of a process's response sets.")

    @OptionGroup var options: CtlOptions
    @Argument(help: "The process id.") var pid: Int32
    @Argument(help: "The response set's name.") var set: String
    @Argument(help: "The response's name.") var response: String

    func run() throws {
        try ctl {
            let selected = try options.client(pid: pid).select(response, in: set)
            say(
                "\(selected.name): \(selected.responses.map { $0 == selected.selected ? "[\($0)]" : $0 }.joined(separator: ", "))"
            )
        }
    }
}

struct CtlGo: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "go", abstract: "Let a process waiting in bootstrap (CHAOS_CONTROL_WAIT=1) go on.")

    @OptionGroup var options: CtlOptions
    @Argument(help: "The process id.") var pid: Int32

    func run() throws {
        try ctl {
            try options.client(pid: pid).go()
            say("go sent to \(pid)")
        }
    }
}

struct CtlAdvance: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "advance",
        abstract:
            "Move a process's virtual time forward: a `chaos run` child whose profile has the system.clock item virtual, or a Swift program on VirtualTime.",
        discussion: """
            Every sleep and timer due on the way wakes at its own instant, in order; the command returns once the \
            last has been taken, however long that takes (--timeout does not apply). Meanwhile the process answers \
            other requests, and `chaos ctl status` shows how far the advance has got. Interrupting this command, \
            a second advance, or `chaos ctl advance PID --cancel` stops it where it is: virtual time stays there.
            """
    )

    @OptionGroup var options: CtlOptions
    @Argument(help: "The process id.") var pid: Int32
    @Argument(help: "How far: 1h, 90m, 30s, 250ms, 1.5d.") var duration: String?
    @Flag(help: "Stop the advance under way instead, once it has stopped.") var cancel = false
    @Option(
        help: "The most steps (deadlines woken) the advance may take (default: a million); it stops there and says so."
    )
    var maxSteps: Int?

    func validate() throws {
        if cancel && duration != nil { throw ValidationError("give either a duration or --cancel, not both") }
        if !cancel && duration == nil { throw ValidationError("give how far to advance (e.g. 1h), or --cancel") }
        if let maxSteps, maxSteps <= 0 { throw ValidationError("--max-steps must be a positive number") }
    }

    /// Whether process `pid` has ended (gone, or a zombie its parent has not yet reaped),
    /// looking for up to a second: a process closes its descriptors before it is a zombie.
    static func hasEnded(_ pid: Int32) -> Bool {
        for _ in 0..<100 {
            // Read to its end: /proc files report a size of 0.
            guard let file = FileHandle(forReadingAtPath: "/proc/\(pid)/stat") else { return true }
            let text = String(decoding: file.readDataToEndOfFile(), as: UTF8.self)
            try? file.close()
            guard let close = text.lastIndex(of: ")") else { return true }
            if text[close...].hasPrefix(") Z") || text[close...].hasPrefix(") X") { return true }
            usleep(10_000)
        }
        return false
    }

    func run() throws {
        try ctl {
            let client = try options.client(pid: pid)
            guard let duration else {
                let time = try client.stopAdvance()
                say(
                    "\(pid): \(time.stopped == true ? "advance stopped" : "no advance was running"); virtual time \(time.now ?? "?")"
                )
                return
            }
            let time: ControlAPI.VirtualTime
            do {
                time = try client.advance(by: duration, maxSteps: maxSteps)
            } catch  where Self.hasEnded(pid) {
                // The advance let the program end without calling exit (a signal, or _exit):
                // its work is done, and only the program's parent can know the status.
                say(
                    "\(pid): the program ended during the advance (not through exit: its status is its parent's to report)"
                )
                return
            }
            if let exited = time.exited {
                say(
                    "\(pid): virtual time \(time.now ?? "?") after \(time.steps ?? 0) steps; the program exited with status \(exited.status)"
                )
                return
            }
            say(
                "\(pid): virtual time \(time.now ?? "?") after \(time.steps ?? 0) steps, \(time.pending ?? 0) waits pending"
            )
        }
    }
}
