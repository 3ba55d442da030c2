public import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A chaos profile: a seed and entries, as a JSON file or a `CHAOS` variable carries them.
///
/// ```json
/// { "seed": 42,
///   "entries": [
///     { "point": "clock.now", "provider": { "item": "offset", "parameters": { "by": "-1d" } } },
///     { "point": "demo.fetch-score",
///       "provider": { "sequential": [ { "item": "offline", "times": 3 }, "original" ], "probability": 0.2 } }
///   ] }
/// ```
/// A provider is a string (`"original"`, `"nil"`, `"random"`, or a catalogue item without
/// parameters) or an object with one of `constant`, `sequential` or `item` (+ `parameters`),
/// and optional modifiers (``ProviderModifier``): `probability` (0…1), `times` (≥ 1) and
/// `delay` (`"250ms"`, `"2s"` or milliseconds). The schema is `Docs/profile.schema.json`,
/// made from the modifiers and the built-in points' declarations by `chaos schema`.
///
/// Reading is strict: the file must be UTF-8 JSON as RFC 8259 writes it, no member may
/// appear twice, and every catalogue item's parameters are checked against its declared
/// ``CatalogueParameter``s when the profile is applied. Every error gives the file, line,
/// column and JSON path.
public struct ChaosProfile: Sendable {
    /// One entry of a profile, with where it was written.
    public struct Entry: Sendable {
        /// The point's name.
        public var pointName: String
        /// What the point should do.
        public var provider: ProviderDescription
        /// Disabled entries are kept but not applied.
        public var enabled: Bool
        /// Where the entry is: `file:line:column` and its JSON path, for error messages.
        public var location: String
        /// Where the point's name is (`… at $.entries[0].point`), when known: an unknown
        /// point is an error about the name, not the whole entry.
        public var pointLocation: String?

        /// An entry for the point named `pointName`.
        public init(pointName: String, provider: ProviderDescription, enabled: Bool = true, location: String = "") {
            self.pointName = pointName
            self.provider = provider
            self.enabled = enabled
            self.location = location
        }
    }

    /// The seed, when the profile fixes one.
    public var seed: UInt64?
    /// The entries, in order.
    public var entries: [Entry]

    /// A profile with these entries.
    public init(seed: UInt64? = nil, entries: [Entry]) {
        self.seed = seed
        self.entries = entries
    }

    /// Reads and decodes the JSON profile at `path`: a file, `-` for standard input, or
    /// anything that can be opened and read to its end (`/dev/fd/N` from a shell's `<(…)`, a
    /// named pipe).
    public static func load(contentsOfFile path: String) throws(ChaosError) -> ChaosProfile {
        try decode(json: try contents(ofFile: path), file: path == "-" ? "<stdin>" : path)
    }

    /// The largest profile `contents(ofFile:)` reads.
    public static let largestFile = 64 << 20

    /// The bytes of the profile at `path`, read to the end once: a file, `-` for standard
    /// input, `/dev/fd/N` or a named pipe (which can be read only once, so callers that need
    /// the bytes twice keep them).
    public static func contents(ofFile path: String) throws(ChaosError) -> Data {
        let subject = path == "-" ? "<stdin>" : path
        let descriptor = path == "-" ? dup(STDIN_FILENO) : open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            let reason = String(cString: strerror(errno))
            throw ChaosError(
                .invalidProfile, subject: subject,
                "cannot read the profile (\(reason)); check the path and its permissions")
        }
        defer { close(descriptor) }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let got = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if got == 0 { return data }
            if got < 0 {
                if errno == EINTR { continue }
                let reason = String(cString: strerror(errno))
                throw ChaosError(
                    .invalidProfile, subject: subject,
                    "cannot read the profile (\(reason)); check the path and its permissions")
            }
            data.append(contentsOf: buffer[0..<got])
            if data.count > largestFile {
                throw ChaosError(
                    .invalidProfile, subject: subject,
                    "the profile is larger than \(largestFile >> 20) MiB; split it or remove entries")
            }
        }
    }

    /// Decodes a JSON profile; errors give file, line, column and the JSON path.
    public static func decode(json: String, file: String = "<profile>") throws(ChaosError) -> ChaosProfile {
        try decode(json: Data(json.utf8), file: file)
    }

    /// Decodes a JSON profile from its bytes, which must be UTF-8; errors give file, line,
    /// column (and, for bytes that are not UTF-8, the byte offset) and the JSON path.
    public static func decode(json data: Data, file: String = "<profile>") throws(ChaosError) -> ChaosProfile {
        let root: JSONNode
        do throws(JSONSyntaxError) {
            root = try JSONDocumentParser.parse(data)
        } catch {
            throw ChaosError(.invalidProfile, subject: "\(file):\(error.line):\(error.column)", error.message)
        }
        return try ProfileDecoder(file: file).profile(root)
    }

    /// The enabled entries as ``ProfileEntry`` values.
    public var profileEntries: [ProfileEntry] {
        entries.filter(\.enabled).map { ProfileEntry(point: $0.pointName, $0.provider) }
    }

    /// Applies the enabled entries with a new `Chaos` (seeded from the profile when it has a
    /// seed), all or nothing; an error names the entry's (or the parameter's) file, line,
    /// column and JSON path.
    ///
    /// With `missingPoints: .wait`, an entry whose point does not exist yet waits for it
    /// (see ``Chaos/MissingPoints/wait``); every other error still refuses the whole profile.
    public func apply(seed overrideSeed: UInt64? = nil, missingPoints: Chaos.MissingPoints = .refuse)
        throws(ChaosError) -> Chaos
    {
        let chaos = Chaos(seed: overrideSeed ?? seed, missingPoints: missingPoints)
        let (located, ids) = locatedEntries()
        chaos.locate(located)
        chaos.profile(located.map(\.entry))
        do throws(ChaosError) {
            try chaos.apply()
        } catch {
            ProfileEntry.returnIDs(ids)
            throw Self.located(error, in: located)
        }
        return chaos
    }

    /// Checks every enabled entry against the live points — names, provider types,
    /// catalogue items and their parameters, modifiers — without applying anything (no
    /// point is activated, no C slot patched). The error is the one ``apply(seed:missingPoints:)`` would throw.
    ///
    /// With `missingPoints: .wait` (or `.waitUnlessMisspelt`) it checks as
    /// ``apply(seed:missingPoints:)`` would then, and returns the entries that would wait: their point does not exist yet and may
    /// still be created (an app's own point, see ``Chaos/MissingPoints/wait``). Only their
    /// JSON shape can be checked until it exists.
    @discardableResult
    public func validate(missingPoints: Chaos.MissingPoints = .refuse) throws(ChaosError) -> [Entry] {
        let (located, ids) = locatedEntries()
        // A check makes no entry that lives on: its ids are the next apply's.
        defer { ProfileEntry.returnIDs(ids) }
        var waiting: [Entry] = []
        for item in located {
            do throws(ChaosError) {
                do throws(ChaosError) {
                    _ = try item.entry.prepared(chaosSeed: seed ?? 0)
                } catch {
                    guard try PointRegistry.shared.waits(item.entry, after: error, missingPoints) else {
                        throw error
                    }
                    waiting.append(item.source)
                }
            } catch {
                throw Self.located(error, in: located)
            }
        }
        return waiting
    }

    /// The enabled entries as ``ProfileEntry`` values numbered from ids reserved for them,
    /// which an apply that is refused gives back (``ProfileEntry/returnIDs(_:)``).
    private func locatedEntries() -> (entries: [(entry: ProfileEntry, source: Entry)], ids: Range<Int>) {
        let enabled = entries.filter(\.enabled)
        let ids = ProfileEntry.reserveIDs(enabled.count)
        let located = zip(enabled, ids).map { source, id in
            (
                entry: ProfileEntry(point: source.pointName, source.provider, id: ProfileEntry.ID(raw: id)),
                source: source
            )
        }
        return (located, ids)
    }

    /// An entry's error, said about where the entry (or the value at fault) was written.
    private static func located(_ error: ChaosError, in located: [(entry: ProfileEntry, source: Entry)])
        -> ChaosError
    {
        guard let culprit = located.first(where: { error.subject?.hasPrefix("entry \($0.entry.id) ") == true }) else {
            return error
        }
        return culprit.source.located(error)
    }
}

extension ChaosProfile.Entry {
    /// `error`, said about where this entry — or the parameter at fault, when the error
    /// knows it — was written (`file:line:column at $.json.path`).
    public func located(_ error: ChaosError) -> ChaosError {
        let place = error.sourceLocation ?? (error.kind == .unknownPoint ? pointLocation : nil) ?? location
        return ChaosError(error.kind, subject: place.isEmpty ? error.subject : place, error.message)
    }
}

extension ChaosProfile.Entry: CustomStringConvertible {
    /// `point ← provider`.
    public var description: String { "\(pointName) ← \(provider.summary)" }
}
