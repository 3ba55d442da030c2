/// What every entry did, flagging those that never acted: the in-process twin of the
/// report `chaos run` prints when its program ends.
///
/// ``Chaos/report``, ``ChaosSession/report`` and ``ChaosScopeInfo/report`` make one from
/// the entries' counters (``EntryCounters``). Its ``description`` has the lines `chaos run`
/// prints, and its JSON has the field names of `chaos run --report FILE`:
///
/// ```
/// seed 42, 2 entries, 1 never acted:
///   #3 clock.now ← constant(2000-01-01 00:00:00 +0000): seen 4, acted 4
///   #4 system.files ← enospc(…): seen 0, acted 0  <- NEVER ACTED
/// ```
///
/// ```json
/// {"seed":42,"entries":[{"entry":3,"point":"clock.now","label":"#3 clock.now ← …",
///   "seen":4,"acted":4,"passed":0,"neverActed":false}, …]}
/// ```
public struct ChaosReport: Sendable, Hashable, Codable, CustomStringConvertible {
    /// One entry's line of the report.
    public struct Entry: Sendable, Hashable, Codable, CustomStringConvertible {
        /// The entry's number: ``ProfileEntry/ID/number`` (0 for chaos applied outside an entry).
        public let entry: Int
        /// The name of the point it is applied to.
        public let point: String
        /// `#3 clock.now ← constant(…)`: the entry's id, point and provider.
        public let label: String
        /// Calls that reached the entry.
        public let seen: Int
        /// Calls it acted on (answered with anything but the original).
        public let acted: Int

        /// Calls it passed to the original.
        public var passed: Int { seen - acted }

        /// Whether it never acted: armed, but never fired.
        public var neverActed: Bool { acted == 0 }

        /// The line of the entry whose counters are `counters`.
        public init(_ counters: EntryCounters) {
            entry = counters.entry?.number ?? 0
            point = counters.pointName
            label =
                (counters.entry.map { "\($0) " } ?? "")
                + InputExcerpt.of("\(counters.pointName) ← \(counters.provider)", limit: 200)
            seen = counters.seen
            acted = counters.acted
        }

        /// `#3 clock.now ← constant(…): seen 4, acted 4`, with `  <- NEVER ACTED` after an
        /// entry that never acted (as `chaos run` prints it).
        public var description: String {
            "\(label): seen \(seen), acted \(acted)\(neverActed ? "  <- NEVER ACTED" : "")"
        }

        private enum CodingKeys: String, CodingKey {
            case entry, point, label, seen, acted, passed, neverActed
        }

        /// Reads an entry as `encode(to:)` writes it; `passed` and `neverActed` follow from
        /// `seen` and `acted`, and are not read.
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            entry = try container.decode(Int.self, forKey: .entry)
            point = try container.decode(String.self, forKey: .point)
            label = try container.decode(String.self, forKey: .label)
            seen = try container.decode(Int.self, forKey: .seen)
            acted = try container.decode(Int.self, forKey: .acted)
        }

        /// Writes the fields of `chaos run --report`: `entry`, `point`, `label`, `seen`,
        /// `acted`, `passed` and `neverActed`.
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(entry, forKey: .entry)
            try container.encode(point, forKey: .point)
            try container.encode(label, forKey: .label)
            try container.encode(seen, forKey: .seen)
            try container.encode(acted, forKey: .acted)
            try container.encode(passed, forKey: .passed)
            try container.encode(neverActed, forKey: .neverActed)
        }
    }

    /// The seed of the `Chaos`, session or scope whose entries these are.
    public let seed: UInt64
    /// Every entry, ordered by entry number.
    public let entries: [Entry]

    /// A report of the entries whose counters are `counters`, applied with `seed`.
    public init(seed: UInt64, counters: [EntryCounters]) {
        self.seed = seed
        self.entries = counters.map(Entry.init).sorted { $0.entry < $1.entry }
    }

    /// The entries that never acted.
    public var neverActed: [Entry] { entries.filter(\.neverActed) }

    /// A heading line (`seed 42, 2 entries, 1 never acted:`), then one indented line per
    /// entry (see ``Entry/description``).
    public var description: String {
        let never = neverActed.count
        let heading =
            "seed \(seed), \(entries.count) \(entries.count == 1 ? "entry" : "entries")"
            + (never == 0 ? "" : ", \(never) never acted") + ":"
        return ([heading] + entries.map { "  \($0)" }).joined(separator: "\n")
    }
}
