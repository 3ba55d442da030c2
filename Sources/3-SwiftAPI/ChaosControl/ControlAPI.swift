public import ChaosKit
public import Foundation

/// The control protocol's JSON bodies, version 1: what an endpoint answers and accepts.
///
/// Every endpoint — the in-process one that ChaosConsole serves in Swift programs, and the
/// control socket of `chaos run` children — speaks HTTP/1.1 with these bodies; Docs/Console.md
/// writes the routes down. Dates are ISO-8601 text; seeds are decimal text (a JSON number
/// cannot hold every 64-bit seed exactly).
public enum ControlAPI {
    /// The protocol version this module speaks (the `/v1/` of every route).
    public static let version = 1

    /// `GET /v1/status`: who the process is and what is applied.
    public struct Status: Codable, Sendable, Hashable {
        /// The protocol version.
        public var version: Int
        /// The process id: the program's own.
        public var pid: Int32
        /// For a program under `chaos run`: the pid of `chaos run`.
        public var runner: Int32?
        /// The program's name.
        public var program: String
        /// `"swift"` for an in-process endpoint, `"preload"` or `"seccomp"` for a `chaos run`
        /// program (served by its preload library, or by chaos run's supervisor).
        public var kind: String
        /// Live entries, enabled or not.
        public var entries: Int
        /// Live entries that are switched on: chaos is on when this is above zero. Those that
        /// wait for their point (``pendingEntries``) or never act (``notAppliedEntries``)
        /// are among them; ``activeEntries`` leaves them out.
        public var enabledEntries: Int
        /// Switched-on entries that wait for their point to be created: armed, acting on
        /// nothing yet. Absent from endpoints whose entries cannot wait (`chaos run` children).
        public var pendingEntries: Int?
        /// Switched-on entries whose point appeared and did not fit their provider: they never
        /// act. Absent where that cannot happen.
        public var notAppliedEntries: Int?
        /// Whether the program is waiting for `POST /v1/go` (`CHAOS_CONTROL_WAIT=1`).
        public var waiting: Bool
        /// The optional routes this endpoint serves (`"points"`, `"response-sets"`,
        /// `"requests"`, `"events"`, `"console"`, `"profile"`: validating and exporting
        /// profiles); the entry routes and `go` are always there.
        public var features: [String]
        /// The advance of virtual time under way, if one is.
        public var advance: AdvanceProgress?

        /// A status.
        public init(
            version: Int = ControlAPI.version, pid: Int32, program: String, kind: String, entries: Int,
            enabledEntries: Int, pendingEntries: Int? = nil, notAppliedEntries: Int? = nil, waiting: Bool,
            features: [String], advance: AdvanceProgress? = nil
        ) {
            self.pendingEntries = pendingEntries
            self.notAppliedEntries = notAppliedEntries
            self.advance = advance
            self.version = version
            self.pid = pid
            self.program = program
            self.kind = kind
            self.entries = entries
            self.enabledEntries = enabledEntries
            self.waiting = waiting
            self.features = features
        }

        /// Switched-on entries that act on their point: neither waiting for it nor unfit.
        public var activeEntries: Int {
            max(0, enabledEntries - (pendingEntries ?? 0) - (notAppliedEntries ?? 0))
        }

        /// `0 of 1 entries active, 1 waiting for its point`: what tools and the console say
        /// while chaos is on, never counting an entry that cannot act as active.
        public var entriesSummary: String {
            var text = "\(activeEntries) of \(entries) entries active"
            if let pending = pendingEntries, pending > 0 {
                text += ", \(pending) waiting for \(pending == 1 ? "its point" : "their points")"
            }
            if let unfit = notAppliedEntries, unfit > 0 {
                text += ", \(unfit) not applied (the point did not fit)"
            }
            return text
        }
    }

    /// One declared parameter of a catalogue item (or a match condition).
    public struct Parameter: Codable, Sendable, Hashable {
        /// Its name in profiles.
        public var name: String
        /// `number`, `integer`, `boolean`, `string`, `choice`, `duration`, `offset`,
        /// `date` or `strings`.
        public var kind: String
        /// The choices of a `choice`.
        public var choices: [String]?
        /// The unit of a number (or of a duration given as a number).
        public var unit: String?
        /// `required`, `optional` or `defaulted`.
        public var requirement: String
        /// The default of a `defaulted` parameter, as JSON.
        public var defaultValue: ProfileValue?
        /// The smallest allowed number.
        public var minimum: Double?
        /// The largest allowed number.
        public var maximum: Double?
        /// What it means.
        public var summary: String
        /// One line, as `chaos list` shows it.
        public var description: String

        /// A parameter.
        public init(
            name: String, kind: String, choices: [String]? = nil, unit: String? = nil, requirement: String,
            defaultValue: ProfileValue? = nil, minimum: Double? = nil, maximum: Double? = nil, summary: String,
            description: String
        ) {
            self.name = name
            self.kind = kind
            self.choices = choices
            self.unit = unit
            self.requirement = requirement
            self.defaultValue = defaultValue
            self.minimum = minimum
            self.maximum = maximum
            self.summary = summary
            self.description = description
        }

        enum CodingKeys: String, CodingKey {
            case name, kind, choices, unit, requirement
            case defaultValue = "default"
            case minimum, maximum, summary, description
        }
    }

    /// A catalogue item a point offers.
    public struct CatalogueItem: Codable, Sendable, Hashable {
        /// The name profiles use (`"item": name`).
        public var name: String
        /// What it does.
        public var summary: String
        /// The parameters it takes.
        public var parameters: [Parameter]

        /// An item.
        public init(name: String, summary: String, parameters: [Parameter]) {
            self.name = name
            self.summary = summary
            self.parameters = parameters
        }
    }

    /// `GET /v1/points`: one live injection point.
    public struct Point: Codable, Sendable, Hashable {
        /// Its name.
        public var name: String
        /// Its shape, e.g. `() -> Date`.
        public var signature: String
        /// Its catalogue items.
        public var items: [CatalogueItem]
        /// The conditions a `match` object may hold; nil when it takes none.
        public var match: [Parameter]?

        /// A point.
        public init(name: String, signature: String, items: [CatalogueItem], match: [Parameter]?) {
            self.name = name
            self.signature = signature
            self.items = items
            self.match = match
        }
    }

    /// The last act of an entry: what replays it.
    public struct LastAct: Codable, Sendable, Hashable {
        /// The entry's call index (0-based).
        public var callIndex: Int
        /// The entry's seed, decimal.
        public var entrySeed: String
        /// The seed of the `Chaos` that applied it, decimal.
        public var chaosSeed: String?
        /// When it acted, if observed.
        public var date: Date?

        /// A last act.
        public init(callIndex: Int, entrySeed: String, chaosSeed: String?, date: Date?) {
            self.callIndex = callIndex
            self.entrySeed = entrySeed
            self.chaosSeed = chaosSeed
            self.date = date
        }
    }

    /// `GET /v1/entries`: one live entry with its counters.
    public struct Entry: Codable, Sendable, Hashable {
        /// Its id (the number after `#`).
        public var id: Int
        /// The point it is applied to.
        public var point: String
        /// Its provider, rendered.
        public var provider: String
        /// Whether it is switched on.
        public var enabled: Bool
        /// Calls that reached it.
        public var seen: Int
        /// Calls it acted on.
        public var acted: Int
        /// Calls it passed to the original.
        public var passed: Int
        /// Its last act; nil when it never fired.
        public var lastAct: LastAct?
        /// When its lease ends; nil without a lease.
        public var leaseEnds: Date?
        /// The seed of the `Chaos` that applied it, decimal.
        public var chaosSeed: String
        /// True while the entry waits for its point to be created (an app's point nothing
        /// has made yet); absent or false once it is live.
        public var pending: Bool?
        /// Why the entry never acts: its point appeared and the provider did not fit it,
        /// said where the entry was written. Absent for every other entry.
        public var problem: String?

        /// An entry.
        public init(
            id: Int, point: String, provider: String, enabled: Bool, seen: Int, acted: Int, passed: Int,
            lastAct: LastAct?, leaseEnds: Date?, chaosSeed: String, pending: Bool? = nil, problem: String? = nil
        ) {
            self.pending = pending
            self.problem = problem
            self.id = id
            self.point = point
            self.provider = provider
            self.enabled = enabled
            self.seen = seen
            self.acted = acted
            self.passed = passed
            self.lastAct = lastAct
            self.leaseEnds = leaseEnds
            self.chaosSeed = chaosSeed
        }
    }

    /// `POST /v1/entries`: what a profile applied.
    public struct Applied: Codable, Sendable, Hashable {
        /// The new entries' ids, in the profile's order (disabled entries are not applied).
        public var entries: [Int]
        /// The seed they were applied with, decimal.
        public var seed: String

        /// A result.
        public init(entries: [Int], seed: String) {
            self.entries = entries
            self.seed = seed
        }
    }

    /// `POST /v1/profile/validate`: whether a profile (JSON, or a `CHAOS` line sent as
    /// `text/plain`) would apply here, by the checks an apply makes, without applying it.
    public struct Validation: Codable, Sendable, Hashable {
        /// Whether it would apply.
        public var valid: Bool
        /// `json` or `chaos` (a `CHAOS` line).
        public var format: String
        /// How many enabled entries it has (when it could be read).
        public var entries: Int?
        /// The points of entries that would wait for their point to be created (an app's
        /// point nothing has made yet).
        public var waiting: [String]?
        /// Why it would not apply, located in the text sent (``ErrorBody/Detail/location``).
        public var error: ErrorBody.Detail?

        /// A validation.
        public init(
            valid: Bool, format: String, entries: Int? = nil, waiting: [String]? = nil,
            error: ErrorBody.Detail? = nil
        ) {
            self.valid = valid
            self.format = format
            self.entries = entries
            self.waiting = waiting
            self.error = error
        }
    }

    /// Where in a profile's text an error is, as an editor shows it.
    public struct SourceLocation: Codable, Sendable, Hashable {
        /// The line, from 1.
        public var line: Int
        /// The column, from 1, in characters.
        public var column: Int
        /// The position in UTF-16 code units from the start of the text (what a browser's
        /// `setSelectionRange` takes).
        public var offset: Int
        /// The JSON path of the value at fault (`$.entries[0].provider`), when known.
        public var path: String?

        /// A location.
        public init(line: Int, column: Int, offset: Int, path: String? = nil) {
            self.line = line
            self.column = column
            self.offset = offset
            self.path = path
        }
    }

    /// `DELETE /v1/entries[/ID]`: what was reverted.
    public struct Reverted: Codable, Sendable, Hashable {
        /// The reverted entries' ids.
        public var entries: [Int]
        /// The entries a revert of all kept: those on ``ControlAPI/clockPoint``, unless
        /// `includeClock` was asked for. Absent when none was kept.
        public var kept: [Int]?
        /// Which entries were kept and why, in words.
        public var note: String?

        /// A result.
        public init(entries: [Int], kept: [Int]? = nil, note: String? = nil) {
            self.entries = entries
            self.kept = kept
            self.note = note
        }

        /// What a revert of all answers: the `entries` it reverted, and the clock entries it
        /// kept (each described `#ID point ← provider`) in ``kept`` and ``note``, both absent
        /// when it kept none.
        public init(entries: [Int], keptClock: [(id: Int, description: String)]) {
            self.init(
                entries: entries, kept: keptClock.isEmpty ? nil : keptClock.map(\.id),
                note: keptClock.isEmpty ? nil : ControlAPI.clockKept(keptClock.map(\.description)))
        }
    }

    /// The point whose entries a revert of all keeps unless told to include them
    /// (`DELETE /v1/entries?includeClock=true`, `chaos ctl revert PID --include-clock`): a
    /// program on virtual time waits on it, and reverted mid-wait its waits go on in real
    /// time, so a one-hour sleep held for an advance becomes an hour of wall-clock time.
    public static let clockPoint = "system.clock"

    /// `kept #1 system.clock ← virtual: …`: what a revert of all says of the clock entries it
    /// kept (`entries` as `#ID point ← provider`), and how to revert them too.
    private static func clockKept(_ entries: [String]) -> String {
        let one = entries.count == 1
        return
            "kept \(entries.joined(separator: ", ")): the program's time runs on \(one ? "it" : "them"), and its waits go on in real time if \(one ? "it is" : "they are") reverted; revert \(one ? "it" : "them") by id, or all with includeClock=true (chaos ctl revert PID --include-clock)"
    }

    /// `GET /v1/response-sets`: one response set and its selected answer.
    public struct ResponseSet: Codable, Sendable, Hashable {
        /// The set's name.
        public var name: String
        /// The requests it answers, rendered.
        public var matcher: String
        /// The answers' names, the default first.
        public var responses: [String]
        /// The selected answer's name.
        public var selected: String

        /// A response set.
        public init(name: String, matcher: String, responses: [String], selected: String) {
            self.name = name
            self.matcher = matcher
            self.responses = responses
            self.selected = selected
        }
    }

    /// `PUT /v1/response-sets/NAME`: the answer to select.
    public struct Selection: Codable, Sendable, Hashable {
        /// The answer's name.
        public var response: String

        /// A selection.
        public init(response: String) {
            self.response = response
        }
    }

    /// `GET /v1/requests`: the process's request journal, newest requests last.
    public struct Requests: Codable, Sendable, Hashable {
        /// How many requests the journal keeps (0: it is off).
        public var capacity: Int
        /// How many requests it has journaled since the process started.
        public var recorded: Int
        /// The requests kept (or the newest `limit` of them), oldest first.
        public var requests: [Request]

        /// A journal.
        public init(capacity: Int, recorded: Int, requests: [Request]) {
            self.capacity = capacity
            self.recorded = recorded
            self.requests = requests
        }
    }

    /// One journaled network request.
    public struct Request: Codable, Sendable, Hashable {
        /// Its number in the journal (1 for the process's first).
        public var number: Int
        /// When it started.
        public var date: Date
        /// `urlSession` or `client`: which way it came in.
        public var route: String
        /// The method.
        public var method: String
        /// The URL (secret query values redacted).
        public var url: String
        /// What answered: `stub`, `responseSet`, `responder`, `chaos`, `passedThrough`,
        /// `refused` or `client`.
        public var answer: String
        /// The stub, response set, responder or client that answered, by name.
        public var answeredBy: String?
        /// The answer in words (`stub 'items'`, `response set 'login' → expired`).
        public var summary: String
        /// The network conditions that applied, rendered.
        public var conditions: [String]
        /// The HTTP status, when a response came back.
        public var status: Int?
        /// The response body's size, when a response came back.
        public var bytes: Int?
        /// The failure, when it failed.
        public var error: String?
        /// How long it took, in milliseconds.
        public var milliseconds: Double
        /// For a request no stub matched: the nearest stubs, nearest first.
        public var nearMisses: [NearMiss]?

        /// A request.
        public init(
            number: Int, date: Date, route: String, method: String, url: String, answer: String, answeredBy: String?,
            summary: String, conditions: [String], status: Int?, bytes: Int?, error: String?, milliseconds: Double,
            nearMisses: [NearMiss]?
        ) {
            self.number = number
            self.date = date
            self.route = route
            self.method = method
            self.url = url
            self.answer = answer
            self.answeredBy = answeredBy
            self.summary = summary
            self.conditions = conditions
            self.status = status
            self.bytes = bytes
            self.error = error
            self.milliseconds = milliseconds
            self.nearMisses = nearMisses
        }
    }

    /// A stub that did not match a journaled request, and why.
    public struct NearMiss: Codable, Sendable, Hashable {
        /// The stub's name.
        public var stub: String
        /// Its matcher, rendered.
        public var matcher: String
        /// How many criteria it has.
        public var criteria: Int
        /// How many of them the request meets.
        public var satisfied: Int
        /// The criteria the request does not meet.
        public var differences: [Difference]

        /// A near miss.
        public init(stub: String, matcher: String, criteria: Int, satisfied: Int, differences: [Difference]) {
            self.stub = stub
            self.matcher = matcher
            self.criteria = criteria
            self.satisfied = satisfied
            self.differences = differences
        }
    }

    /// One criterion a request does not meet.
    public struct Difference: Codable, Sendable, Hashable {
        /// `method`, `host`, `path`, `query`, `header` or `body`.
        public var part: String
        /// The query parameter or header field.
        public var name: String?
        /// What the stub expects.
        public var expected: String
        /// What the request has; absent when it has none.
        public var actual: String?
        /// In words: `path: expected template /v1/items/:id, got /v1/item/3`.
        public var description: String

        /// A difference.
        public init(part: String, name: String?, expected: String, actual: String?, description: String) {
            self.part = part
            self.name = name
            self.expected = expected
            self.actual = actual
            self.description = description
        }
    }

    /// `GET /v1/time` and `POST /v1/time/advance?by=DURATION`: the process's virtual time
    /// (a `chaos run` child whose profile has the `system.clock` item `virtual`, or a Swift
    /// program with ChaosConsole on `VirtualTime`).
    public struct VirtualTime: Codable, Sendable, Hashable {
        /// Whether the process runs on virtual time.
        public var running: Bool
        /// The virtual wall-clock time, ISO-8601 (when running).
        public var now: String?
        /// The same instant in nanoseconds since 1970.
        public var nanosecondsSince1970: Int64?
        /// How far virtual time is ahead of the real wall clock, in nanoseconds (negative: behind).
        public var offsetNanoseconds: Int64?
        /// Sleeps and timers waiting for virtual time.
        public var pending: Int?
        /// The deadlines the advance just made stepped through.
        public var steps: Int?
        /// The advance under way, if one is.
        public var advance: AdvanceProgress?
        /// In the answer to stopping an advance: whether one was running and stopped.
        public var stopped: Bool?
        /// The program exited (calling `exit`) while the request ran: an advance that let it
        /// finish answers with where virtual time got to and this.
        public var exited: ExitReport?

        /// A virtual time state.
        public init(
            running: Bool, now: String? = nil, nanosecondsSince1970: Int64? = nil, offsetNanoseconds: Int64? = nil,
            pending: Int? = nil, steps: Int? = nil, advance: AdvanceProgress? = nil, stopped: Bool? = nil,
            exited: ExitReport? = nil
        ) {
            self.offsetNanoseconds = offsetNanoseconds
            self.exited = exited
            self.advance = advance
            self.stopped = stopped
            self.running = running
            self.now = now
            self.nanosecondsSince1970 = nanosecondsSince1970
            self.pending = pending
            self.steps = steps
        }
    }

    /// How a program ended while a request ran.
    public struct ExitReport: Codable, Sendable, Hashable {
        /// The status it passed to `exit` (0…255).
        public var status: Int

        /// An exit report.
        public init(status: Int) { self.status = status }
    }

    /// How far an advance of virtual time has got while it runs.
    public struct AdvanceProgress: Codable, Sendable, Hashable {
        /// The deadlines it has stepped through so far.
        public var steps: Int
        /// How much virtual time it has still to go.
        public var remainingNanoseconds: Int64

        /// A progress report.
        public init(steps: Int, remainingNanoseconds: Int64) {
            self.steps = steps
            self.remainingNanoseconds = remainingNanoseconds
        }
    }

    /// `GET /v1/events`: one act, as the `data:` of a Server-Sent Event named `act`.
    public struct Event: Codable, Sendable, Hashable {
        /// The entry that acted, if any.
        public var entry: Int?
        /// The point it acted on.
        public var point: String
        /// The provider, rendered.
        public var provider: String
        /// The entry's call index (0-based).
        public var callIndex: Int
        /// The entry's seed, decimal: with the call index, what replays the act.
        public var entrySeed: String
        /// When it acted.
        public var date: Date

        /// An event.
        public init(entry: Int?, point: String, provider: String, callIndex: Int, entrySeed: String, date: Date) {
            self.entry = entry
            self.point = point
            self.provider = provider
            self.callIndex = callIndex
            self.entrySeed = entrySeed
            self.date = date
        }
    }

    /// Every refusal and failure: `{"error": {"kind": …, "subject": …, "message": …}}`.
    public struct ErrorBody: Codable, Sendable, Hashable, Error {
        /// The error.
        public struct Detail: Codable, Sendable, Hashable {
            /// What went wrong: a `ChaosError` kind (`invalidProfile`, `notApplied` …) or one
            /// of the endpoint's own (`unauthorized`, `forbiddenOrigin`, `forbiddenHost`,
            /// `notFound`, `methodNotAllowed`, `badRequest`, `payloadTooLarge`).
            public var kind: String
            /// What it is about (for a profile: `file:line:column at $.json.path`).
            public var subject: String?
            /// What happened and what to do.
            public var message: String
            /// For a profile's error: where in the text sent it is.
            public var location: SourceLocation?

            /// A detail.
            public init(kind: String, subject: String?, message: String, location: SourceLocation? = nil) {
                self.kind = kind
                self.subject = subject
                self.message = message
                self.location = location
            }
        }

        /// The error.
        public var error: Detail

        /// An error body.
        public init(kind: String, subject: String? = nil, message: String, location: SourceLocation? = nil) {
            error = Detail(kind: kind, subject: subject, message: message, location: location)
        }
    }

    /// The encoder every endpoint and client in Swift uses: ISO-8601 dates with
    /// milliseconds (`2026-11-23T11:33:33.125Z`), sorted keys.
    public static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        let style = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(date.formatted(style))
        }
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    /// The matching decoder: ISO-8601 dates with or without fractional seconds.
    public static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        let fractional = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
        let whole = Date.ISO8601FormatStyle()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            if let date = (try? fractional.parse(text)) ?? (try? whole.parse(text)) { return date }
            throw DecodingError.dataCorruptedError(
                in: container, debugDescription: "'\(text.prefix(80))' is not an ISO-8601 date")
        }
        return decoder
    }

    /// `data` as valid UTF-8: each part that is not becomes U+FFFD, as ``decoder()`` needs
    /// (it refuses the whole answer otherwise). Endpoints answer in UTF-8; this keeps a
    /// process listed and steerable when one does not (an older `chaos run` library could
    /// send a label's bytes raw).
    static func repaired(_ data: Data) -> Data {
        if String(validating: data, as: UTF8.self) != nil { return data }
        return Data(String(decoding: data, as: UTF8.self).utf8)
    }
}
