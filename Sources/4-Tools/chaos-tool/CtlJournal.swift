import ArgumentParser
import ChaosControl
import Foundation

/// `chaos ctl journal PID [--point P] [--follow]`: the call journal of a Swift program, as
/// the console's page shows it.
struct CtlJournal: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "journal",
        abstract:
            "A process's call journal: each call through a journaled point, its arguments, what it returned, and whether chaos acted.",
        discussion: """
            The journal is off until points are chosen: --record NAME (repeatable) records those \
            points, --record-all every point whose arguments hold no secrets (network points must be \
            named), --off records none. Only Swift programs with ChaosConsole keep a journal.
            """
    )

    @OptionGroup var options: CtlOptions
    @Argument(help: "The process id.") var pid: Int32
    @Option(help: "Show only the calls of this point.") var point: String?
    @Option(help: "Show only the newest this many calls.") var limit: Int?
    @Flag(help: "Keep printing calls as they are journaled.") var follow = false
    @Option(help: "Stop following after this many calls.") var count: Int?
    @Option(help: "Record this point's calls from now on (repeatable).") var record: [String] = []
    @Flag(help: "Record every point whose arguments hold no secrets.") var recordAll = false
    @Flag(help: "Stop recording (the calls kept stay).") var off = false
    @Flag(help: "Print JSON (one call per line when following).") var json = false

    func validate() throws {
        if let limit, limit < 0 { throw ValidationError("--limit must be 0 or more") }
        if off, recordAll || !record.isEmpty { throw ValidationError("--off cannot be given with --record") }
    }

    func run() throws {
        try ctl {
            let endpoint = try options.endpoint(pid: pid)
            let client = options.client(endpoint)
            guard !endpoint.isChaosRun, try client.status().features.contains("journal") else {
                throw CtlFailure(
                    description:
                        "pid \(pid) (\(endpoint.program)) keeps no call journal: only Swift programs with ChaosConsole do (a chaos run child serves status, entries, time and go; `chaos ctl status \(pid)` shows its counters and last acts)"
                )
            }
            if off || recordAll || !record.isEmpty {
                let selection = try client.setJournal(
                    ControlAPI.JournalSelection(everyPoint: recordAll, points: off ? [] : record))
                warn("journal of \(pid): \(Self.describe(selection.selection))")
            }
            let encoder = ControlAPI.encoder()
            func line(_ call: ControlAPI.Call) -> TerminalText {
                json
                    ? "\(safe: TerminalText.json((try? encoder.encode(call)) ?? Data()))"
                    : "\(call.date.formatted(.iso8601))  \(call.line)"
            }
            guard follow else {
                let journal = try client.journal(point: point, limit: limit)
                if json {
                    print(TerminalText.json(try encoder.encode(journal)))
                    return
                }
                say(
                    "\(journal.calls.count) calls shown of \(journal.recorded) journaled (keeps the newest \(journal.capacity)); \(Self.describe(journal.selection))"
                )
                for call in journal.calls { say(line(call)) }
                return
            }
            var seen = 0
            try client.followJournal(
                point: point, limit: limit,
                onOpen: {
                    warn("following the call journal of \(pid) (\(client.url))")
                }
            ) { call in
                // Written at once, not through print's buffer: followers see each call as it comes.
                FileHandle.standardOutput.write(Data((line(call).description + "\n").utf8))
                seen += 1
                return count.map { seen < $0 } ?? true
            }
        }
    }

    static func describe(_ selection: ControlAPI.JournalSelection) -> String {
        if !selection.everyPoint, selection.points.isEmpty {
            return "recording nothing (chaos ctl journal PID --record NAME or --record-all starts it)"
        }
        var parts: [String] = []
        if selection.everyPoint { parts.append("every point without secrets") }
        if !selection.points.isEmpty { parts.append(selection.points.joined(separator: ", ")) }
        return "recording " + parts.joined(separator: " and ")
    }
}
