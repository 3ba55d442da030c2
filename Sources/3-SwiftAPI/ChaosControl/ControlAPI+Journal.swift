public import Foundation

extension ControlAPI {
    /// `GET /v1/journal`: the call journal of an in-process endpoint, and what it records.
    public struct Journal: Codable, Sendable, Hashable {
        /// How many calls the journal keeps.
        public var capacity: Int
        /// How many calls it has journaled since the process started.
        public var recorded: Int
        /// The bytes the kept calls hold.
        public var bytes: Int
        /// Which points it records.
        public var selection: JournalSelection
        /// The calls kept (those of the asked point, the newest `limit` of them), oldest first.
        public var calls: [Call]

        /// A journal.
        public init(capacity: Int, recorded: Int, bytes: Int, selection: JournalSelection, calls: [Call]) {
            self.capacity = capacity
            self.recorded = recorded
            self.bytes = bytes
            self.selection = selection
            self.calls = calls
        }
    }

    /// `PUT /v1/journal`: which points the call journal records (nothing: it is off).
    public struct JournalSelection: Codable, Sendable, Hashable {
        /// Every point whose arguments hold no secrets.
        public var everyPoint: Bool
        /// Points recorded by name, secrets or not (redacted by the HAR rules).
        public var points: [String]
        /// How many calls to keep; unchanged when absent.
        public var capacity: Int?

        /// A selection.
        public init(everyPoint: Bool = false, points: [String] = [], capacity: Int? = nil) {
            self.everyPoint = everyPoint
            self.points = points
            self.capacity = capacity
        }
    }

    /// One journaled call through an injection point (the `call` event of
    /// `GET /v1/journal?follow`).
    public struct Call: Codable, Sendable, Hashable {
        /// Its number in the journal (1 for the process's first).
        public var number: Int
        /// When it was decided.
        public var date: Date
        /// The point.
        public var point: String
        /// The entry that decided it; nil when none applied.
        public var entry: Int?
        /// The entry's call index (0-based); nil when no entry applied.
        public var callIndex: Int?
        /// The entry's seed, decimal; nil when no entry applied.
        public var entrySeed: String?
        /// Whether chaos acted (false: the call passed to the original).
        public var acted: Bool
        /// The arguments, rendered and redacted.
        public var arguments: String
        /// What the caller got back, rendered; nil when it threw.
        public var returned: String?
        /// The error the caller got; nil when it returned.
        public var error: String?
        /// The HTTP status the caller got, for network points.
        public var status: Int?
        /// The response body's size, for network points.
        public var bytes: Int?

        /// A call.
        public init(
            number: Int, date: Date, point: String, entry: Int?, callIndex: Int?, entrySeed: String?, acted: Bool,
            arguments: String, returned: String?, error: String?, status: Int?, bytes: Int?
        ) {
            self.number = number
            self.date = date
            self.point = point
            self.entry = entry
            self.callIndex = callIndex
            self.entrySeed = entrySeed
            self.acted = acted
            self.arguments = arguments
            self.returned = returned
            self.error = error
            self.status = status
            self.bytes = bytes
        }

        /// `#12 app.now() → 2000-01-01 … acted by #3 on call 4 (seed 42)`, as `chaos ctl
        /// journal` prints it.
        public var line: String {
            var text = "#\(number) \(point)(\(arguments)) → "
            if let error { text += "threw \(error)" } else { text += returned ?? "" }
            if let entry, let callIndex {
                text += " \(acted ? "acted" : "passed") by #\(entry) on call \(callIndex)"
                if let entrySeed { text += " (seed \(entrySeed))" }
            } else {
                text += " (no entry)"
            }
            return text
        }
    }
}
