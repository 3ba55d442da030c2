public import ChaosKit
public import Foundation
import HTTPTypes
import Logging

/// Records real traffic to a HAR 1.2 file and replays it (a "cassette", after VCR).
///
/// ```swift
/// let cassette = try HARCassette(file: URL(fileURLWithPath: "Fixtures/weather.har"), mode: .recordOnce)
/// let stubs = StubSet()
/// stubs.add(cassette)
/// // Install `stubs` in a URLSession configuration, or use ChaosNetworkClient(stubs).
/// ```
///
/// **Reading.** Archives written by browsers and tools replay: Chromium and Playwright
/// (failed requests with status 0 or -1 and `_error`/`_failureText` replay as the matching
/// `URLError`), Firefox, Safari, Charles, mitmproxy, Polly.JS (header values as arrays) and
/// WebPageTest (entries without content). What replay needs is read strictly — method, URL,
/// status, request body, response body bytes — and everything else leniently, with a note
/// in ``notes``. Every problem is located by its JSON path; when an entry has one, nothing
/// is loaded and the error lists them, unless `skippingBadEntries` is set (then the others
/// replay and the problems are in ``skippedProblems``). Text bodies are turned back into
/// the bytes their charset says (`text/plain; charset=iso-8859-1` replays the recorded
/// ISO-8859-1 bytes). An entry without its body replays with an empty body, logged, or not
/// at all under ``HARMissingBodyPolicy/unmatched``.
///
/// **Writing.** Entries are redacted by ``redaction`` (headers, query parameters, JSON body
/// fields, cookie values) before they are recorded or written, and requests are redacted
/// the same way before they are matched, so secrets never reach the file and a redacted
/// archive still replays. An archive read from a file replays as it is, and is redacted
/// when written back. ``save()`` writes the archive back with every
/// member it was read with, so a re-export round-trips.
///
/// **Matching.** Method, host, port, path and query (in any order, after redaction), and
/// the body when the entry has one (JSON compared as JSON). Several entries for one request
/// replay in order, the last repeating, so a polling sequence replays as it happened.
public final class HARCassette: Sendable {
    /// What the cassette does with requests.
    public enum Mode: Sendable, Equatable {
        /// Sends every request to the network and records it, replacing the file's contents.
        case record
        /// Replays when the file exists (strictly, like ``replayOnly``), else records.
        case recordOnce
        /// Replays only: a request the file has no entry for fails with
        /// ``NetworkError/noStub(_:)``, naming it and the closest recorded request. The file must exist.
        case replayOnly
        /// Replays what the file has and sends anything else to the network, recording what
        /// it fetched (the file is created if it does not exist).
        case replayElseNetwork
    }

    /// The archive's file.
    public let fileURL: URL
    /// The mode asked for.
    public let mode: Mode
    /// Whether every request is recorded (``Mode/record``, or ``Mode/recordOnce`` without a
    /// file). ``Mode/replayElseNetwork`` records only what it fetches.
    public let isRecording: Bool
    /// What is kept out of the archive.
    public let redaction: HARRedaction
    /// What replay does with entries recorded without their body.
    public let missingBody: HARMissingBodyPolicy
    /// Whether every recorded entry is written to the file at once (else call ``save()``).
    public let autosave: Bool
    /// The problems of the entries left out because `skippingBadEntries` was set.
    public let skippedProblems: [HARProblem]
    /// Lenient decisions taken while reading the file (a header list of the wrong shape
    /// passed over, an unknown charset read as UTF-8, an entry without its body …).
    public let notes: [HARProblem]
    private let network: (any NetworkClient)?
    private let state: Locked<State>
    private static let logger = Logger(label: "ChaosKit.HAR")

    private struct State {
        var archive: HARArchive
        var records: [HARRecord] = []
        /// Replay: record positions per request key, and how often each sequence was replayed.
        var byKey: [String: [Int]] = [:]
        var replayed: [String: Int] = [:]
    }

    /// The credential headers ``HARRedaction/default`` redacts (cookies are governed by
    /// ``HARRedaction/cookies``).
    public static let alwaysRedacted: Set<String> = ["authorization", "proxy-authorization"]

    /// Header names (lower-cased) whose values are never written.
    public var redactedHeaders: Set<String> { redaction.headers }

    /// A cassette on `file` in `mode`.
    ///
    /// - Parameters:
    ///   - file: the archive: read when replaying, written when recording.
    ///   - mode: whether to record, replay, or both (see ``Mode``).
    ///   - redacting: header names to redact, on top of `redaction`'s.
    ///   - redaction: what is kept out of the archive (``HARRedaction/default``: credentials
    ///     by their usual names and every cookie value).
    ///   - missingBody: what replay does with entries that have no body.
    ///   - skippingBadEntries: replay the good entries of a file some of whose entries have
    ///     problems (listed in ``skippedProblems``), instead of refusing the file.
    ///   - autosave: write each recorded entry to the file at once.
    ///   - network: performs requests that are recorded or passed on (default: the session
    ///     the stub set is installed in, or the live client).
    /// - Throws: `ChaosError` (`invalidNetworkConfiguration`) for a file that is
    ///   not a HAR archive or has entries that cannot be replayed (each named by its JSON
    ///   path), and for ``Mode/replayOnly`` without a file.
    public init(
        file: URL, mode: Mode, redacting: Set<String> = [], redaction: HARRedaction = .default,
        missingBody: HARMissingBodyPolicy = .emptyBody, skippingBadEntries: Bool = false,
        autosave: Bool = true, network: (any NetworkClient)? = nil
    ) throws(ChaosError) {
        self.fileURL = file
        self.mode = mode
        self.redaction = redaction.adding(headers: redacting)
        self.missingBody = missingBody
        self.autosave = autosave
        self.network = network
        let exists = FileManager.default.fileExists(atPath: file.path)
        switch mode {
        case .record:
            isRecording = true
        case .recordOnce:
            isRecording = !exists
        case .replayOnly:
            guard exists else {
                throw ChaosError(
                    .invalidNetworkConfiguration, subject: file.path,
                    "there is no HAR file to replay; record it first (mode .recordOnce or .record), or check the path"
                )
            }
            isRecording = false
        case .replayElseNetwork:
            isRecording = false
        }
        var state = State(archive: .empty(comment: "Recorded by ChaosKit's HARCassette; secrets redacted"))
        if !isRecording && exists {
            let data: Data
            do {
                data = try Data(contentsOf: file)
            } catch {
                throw ChaosError(
                    .invalidNetworkConfiguration, subject: file.path,
                    "the HAR file cannot be read (\(error.localizedDescription))")
            }
            let loaded = try Self.load(
                data, source: file.path, redaction: self.redaction, skippingBadEntries: skippingBadEntries)
            state.archive = loaded.archive
            skippedProblems = loaded.skipped
            notes = loaded.notes
            for record in loaded.records {
                Self.index(record, into: &state, redaction: self.redaction, missingBody: missingBody)
            }
            for note in loaded.notes { Self.logger.notice("\(note)", metadata: ["file": "\(file.lastPathComponent)"]) }
            for problem in loaded.skipped {
                Self.logger.warning("HAR entry skipped: \(problem)", metadata: ["file": "\(file.lastPathComponent)"])
            }
        } else {
            skippedProblems = []
            notes = []
        }
        self.state = Locked(state)
    }

    /// The number of entries in the archive (loaded and recorded).
    public var entryCount: Int { state.withLock { $0.archive.entries.count } }

    /// The requests of the replayable entries, as `GET https://…`, in order.
    public var entryDescriptions: [String] { state.withLock { $0.records.map { "\($0.method) \($0.url)" } } }

    /// The problems that keep entries of the HAR document `data` from replaying, each with
    /// its JSON path (a document that is not HAR at all gives one problem, at `$` or `log…`).
    public static func problems(in data: Data) -> [HARProblem] {
        do {
            let loaded = try load(data, source: "", redaction: .none, skippingBadEntries: true)
            return loaded.skipped
        } catch {
            return [HARProblem(path: "$", message: error.message)]
        }
    }

    /// Writes the archive to the file (creating its folder): every entry it was read with,
    /// members ChaosKit does not use included, and every entry recorded since.
    public func save() throws(ChaosError) {
        var archive = state.withLock { $0.archive }
        // Entries read from the file are redacted on the way out (recorded ones already are).
        for index in archive.entries.indices { redaction.redact(entry: &archive.entries[index]) }
        let data = archive.encoded()
        do {
            try FileManager.default.createDirectory(
                at: fileURL.deletingLastPathComponent(), withIntermediateDirectories: true)
            try data.write(to: fileURL, options: .atomic)
        } catch {
            throw ChaosError(
                .invalidNetworkConfiguration, subject: fileURL.path,
                "the HAR file cannot be written (\(error.localizedDescription)); check that its folder is writable")
        }
    }

    // MARK: Loading

    struct Loaded {
        var archive: HARArchive
        var records: [HARRecord]
        var skipped: [HARProblem]
        var notes: [HARProblem]
    }

    /// Reads and checks a HAR document; every problem is located. Without
    /// `skippingBadEntries` one bad entry fails the whole load, and the error lists them all.
    static func load(_ data: Data, source: String, redaction: HARRedaction, skippingBadEntries: Bool) throws(ChaosError)
        -> Loaded
    {
        var archive: HARArchive
        do throws(HARProblem) {
            archive = try HARArchive.read(data)
        } catch {
            let located =
                error.path == "$"
                ? "malformed HAR: \(error.message)" : "malformed HAR at \(error.path): \(error.message)"
            throw ChaosError(
                .invalidNetworkConfiguration, subject: source,
                located + "; fix it, or delete the file and record it again")
        }
        var records: [HARRecord] = []
        var problems: [HARProblem] = []
        var notes: [HARProblem] = []
        for index in archive.entries.indices {
            switch HARRecord.read(archive.entries[index], index: index, notes: &notes) {
            case .success(let record):
                if record.bodyMissing {
                    notes.append(
                        HARProblem(
                            path: record.path + ".response.content",
                            message:
                                "recorded without its body; replayed with an empty body unless missingBody is .unmatched"
                        ))
                }
                records.append(record)
            case .failure(let list):
                problems += list.problems
            }
        }
        if !problems.isEmpty && !skippingBadEntries {
            let shown = problems.prefix(5).map(\.description).joined(separator: "; ")
            let more = problems.count > 5 ? "; and \(problems.count - 5) more" : ""
            let entries = Set(problems.map { $0.path.split(separator: ".").prefix(2).joined(separator: ".") }).count
            throw ChaosError(
                .invalidNetworkConfiguration, subject: source,
                "malformed HAR: \(entries) of \(archive.entries.count) entries cannot be replayed, so none was loaded: \(shown)\(more). "
                    + "Fix them, or pass skippingBadEntries: true to replay the others"
            )
        }
        return Loaded(archive: archive, records: records, skipped: problems, notes: notes)
    }

    private static func index(
        _ record: HARRecord, into state: inout State, redaction: HARRedaction, missingBody: HARMissingBodyPolicy
    ) {
        state.records.append(record)
        if record.bodyMissing && missingBody == .unmatched { return }
        state.byKey[key(method: record.method, url: record.url, redaction: redaction), default: []].append(
            state.records.count - 1)
    }

    // MARK: Keys and matching

    /// `GET api.test:443 /v1/x a=1&b=2`: method, host, port, path and sorted, decoded query.
    static func key(method: String, url text: String, redaction: HARRedaction) -> String {
        let redacted = redaction.redact(url: text)
        guard let components = URLComponents(string: redacted) else { return "\(method.uppercased()) \(redacted)" }
        let scheme = components.scheme?.lowercased() ?? "https"
        let port = components.port ?? (scheme == "http" ? 80 : 443)
        let query = (components.queryItems ?? []).map { "\($0.name)=\($0.value ?? "")" }.sorted().joined(separator: "&")
        let path =
            components.percentEncodedPath.isEmpty
            ? "/" : (components.path.isEmpty ? components.percentEncodedPath : components.path)
        return "\(method.uppercased()) \(components.host?.lowercased() ?? ""):\(port) \(path) \(query)"
    }

    func key(_ request: NetworkRequest) -> String {
        Self.key(
            method: request.method.rawValue, url: request.url?.absoluteString ?? request.description,
            redaction: redaction)
    }

    /// Whether a recorded body accepts `body`: an entry recorded without a body accepts any
    /// (exports often leave request bodies out); otherwise the same bytes, or the same JSON.
    static func bodyMatches(recorded: Data, _ body: Data) -> Bool {
        if recorded.isEmpty || recorded == body { return true }
        guard let left = try? ProfileValue(json: recorded, duplicateMembers: .lastWins),
            let right = try? ProfileValue(json: body, duplicateMembers: .lastWins)
        else { return false }
        return left == right
    }

    /// A recorded request body as it is matched: redacted like the request's.
    private func matchedBody(of record: HARRecord) -> Data {
        redaction.redact(body: record.requestBody, contentType: record.requestContentType)
    }

    /// The record to replay for `request`, advancing that request's sequence.
    private func replayRecord(for request: NetworkRequest) -> HARRecord? {
        let key = key(request)
        let body = redaction.redact(body: request.body ?? Data(), contentType: request.head.headerFields[.contentType])
        return state.withLock { state -> HARRecord? in
            guard let candidates = state.byKey[key] else { return nil }
            let pool = candidates.filter { Self.bodyMatches(recorded: self.matchedBody(of: state.records[$0]), body) }
            guard !pool.isEmpty else { return nil }
            let exact = pool.filter { !state.records[$0].requestBody.isEmpty }
            let chosen = exact.isEmpty ? pool : exact
            let sequenceKey = key + " #" + chosen.map(String.init).joined(separator: ",")
            let turn = state.replayed[sequenceKey, default: 0]
            state.replayed[sequenceKey] = turn + 1
            return state.records[chosen[min(turn, chosen.count - 1)]]
        }
    }

    /// "no recorded entry matches …; the closest is …".
    func unmatchedMessage(_ request: NetworkRequest) -> String {
        let (records, indexed) = state.withLock { ($0.records, Set($0.byKey.values.joined())) }
        let file = fileURL.lastPathComponent
        guard !records.isEmpty else {
            return "no recorded entry matches \(request): \(file) has no entries; record it again (mode .record)"
        }
        let wanted = URLComponents(string: redaction.redact(url: request.url?.absoluteString ?? ""))
        let body = redaction.redact(body: request.body ?? Data(), contentType: request.head.headerFields[.contentType])
        func differences(_ record: HARRecord, position: Int) -> [String] {
            var result: [String] = []
            let recorded = URLComponents(string: record.url)
            if record.method != request.method.rawValue { result.append("method \(record.method)") }
            if recorded?.host?.lowercased() != wanted?.host?.lowercased() || recorded?.port != wanted?.port {
                result.append("host \(recorded?.host ?? "?")\(recorded?.port.map { ":\($0)" } ?? "")")
            }
            if recorded?.path != wanted?.path { result.append("path \(recorded?.percentEncodedPath ?? "?")") }
            let recordedQuery = Set((recorded?.queryItems ?? []).map { "\($0.name)=\($0.value ?? "")" })
            let wantedQuery = Set((wanted?.queryItems ?? []).map { "\($0.name)=\($0.value ?? "")" })
            if recordedQuery != wantedQuery { result.append("query \(recorded?.percentEncodedQuery ?? "(none)")") }
            if !Self.bodyMatches(recorded: matchedBody(of: record), body) {
                result.append("body (\(record.requestBody.count) bytes recorded, \(body.count) sent)")
            }
            if !indexed.contains(position) {
                result.append("it was recorded without its response body and missingBody is .unmatched")
            }
            return result
        }
        func weight(_ differences: [String]) -> Int {
            differences.reduce(0) { total, difference in
                total
                    + (difference.hasPrefix("host")
                        ? 8 : difference.hasPrefix("path") ? 6 : difference.hasPrefix("method") ? 4 : 1)
            }
        }
        var best: (position: Int, differences: [String])?
        for (position, record) in records.enumerated() {
            let found = differences(record, position: position)
            if best == nil || weight(found) < weight(best!.differences) { best = (position, found) }
        }
        guard let best else { return "no recorded entry in \(file) matches \(request)" }
        let closest = records[best.position]
        return
            "no recorded entry in \(file) matches \(request); the closest is \(closest.method) \(HARText.quote(closest.url)) "
            + "(entry \(closest.index), log.entries[\(closest.index)]), which differs in: \(best.differences.joined(separator: ", "))"
    }

    // MARK: Recording

    /// The HAR entry for `request` and its outcome, redacted.
    func entry(
        request: NetworkRequest, outcome: Result<NetworkResponse, NetworkError>, started: Date, elapsed: Duration
    ) -> HARJSON {
        let milliseconds = Double(elapsed.components.seconds) * 1_000 + Double(elapsed.components.attoseconds) / 1e15
        let url = request.url?.absoluteString ?? request.description
        func pairs(_ list: [(String, String)]) -> HARJSON {
            .array(
                list.map {
                    .object([.init(key: "name", value: .string($0.0)), .init(key: "value", value: .string($0.1))])
                })
        }
        func cookies(_ header: String?, separator: Character) -> HARJSON {
            guard let header else { return .array([]) }
            let items = header.split(separator: separator).compactMap { part -> (String, String)? in
                let cookie = part.split(separator: ";").first ?? part
                let pieces = cookie.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                guard pieces.count == 2 else { return nil }
                return (pieces[0].trimmingCharacters(in: .whitespaces), String(pieces[1]))
            }
            return pairs(items)
        }
        var requestMembers: [HARJSON.Member] = [
            .init(key: "method", value: .string(request.method.rawValue)),
            .init(key: "url", value: .string(url)),
            .init(key: "httpVersion", value: .string("HTTP/1.1")),
            .init(key: "cookies", value: cookies(request.head.headerFields[.cookie], separator: ";")),
            .init(key: "headers", value: pairs(request.head.headerFields.map { ($0.name.rawName, $0.value) })),
            .init(key: "queryString", value: pairs(request.queryItems.map { ($0.name, $0.value ?? "") })),
        ]
        if let body = request.body, !body.isEmpty {
            let mimeType = request.head.headerFields[.contentType] ?? "application/octet-stream"
            let (text, encoding) = HARText.text(body, mimeType: mimeType)
            var post: [HARJSON.Member] = [
                .init(key: "mimeType", value: .string(mimeType)), .init(key: "text", value: .string(text)),
            ]
            if let encoding { post.append(.init(key: "encoding", value: .string(encoding))) }
            requestMembers.append(.init(key: "postData", value: .object(post)))
        }
        requestMembers += [
            .init(key: "headersSize", value: .number(-1)),
            .init(key: "bodySize", value: .number(request.body?.count ?? 0)),
        ]
        let response: HARJSON
        switch outcome {
        case .success(let answer):
            let mimeType = answer.head.headerFields[.contentType] ?? ""
            let (text, encoding) = HARText.text(answer.body, mimeType: mimeType)
            var content: [HARJSON.Member] = [
                .init(key: "size", value: .number(answer.body.count)), .init(key: "mimeType", value: .string(mimeType)),
                .init(key: "text", value: .string(text)),
            ]
            if let encoding { content.append(.init(key: "encoding", value: .string(encoding))) }
            let setCookies = answer.head.headerFields[values: .setCookie]
            response = .object([
                .init(key: "status", value: .number(answer.statusCode)),
                .init(key: "statusText", value: .string(answer.head.status.reasonPhrase)),
                .init(key: "httpVersion", value: .string("HTTP/1.1")),
                .init(
                    key: "cookies",
                    value: cookies(setCookies.isEmpty ? nil : setCookies.joined(separator: "\n"), separator: "\n")),
                .init(key: "headers", value: pairs(answer.head.headerFields.map { ($0.name.rawName, $0.value) })),
                .init(key: "content", value: .object(content)),
                .init(key: "redirectURL", value: .string(answer.head.headerFields[.location] ?? "")),
                .init(key: "headersSize", value: .number(-1)),
                .init(key: "bodySize", value: .number(answer.body.count)),
            ])
        case .failure(let error):
            response = .object([
                .init(key: "status", value: .number(0)),
                .init(key: "statusText", value: .string("")),
                .init(key: "httpVersion", value: .string("")),
                .init(key: "cookies", value: .array([])),
                .init(key: "headers", value: .array([])),
                .init(
                    key: "content",
                    value: .object([.init(key: "size", value: .number(0)), .init(key: "mimeType", value: .string(""))])),
                .init(key: "redirectURL", value: .string("")),
                .init(key: "headersSize", value: .number(-1)),
                .init(key: "bodySize", value: .number(-1)),
                .init(key: "_error", value: .string(error.description)),
                .init(key: "_urlErrorCode", value: .number(error.urlErrorCode.rawValue)),
            ])
        }
        var entry: HARJSON = .object([
            .init(
                key: "startedDateTime",
                value: .string(Date.ISO8601FormatStyle(includingFractionalSeconds: true).format(started))),
            .init(key: "time", value: .number(milliseconds)),
            .init(key: "request", value: .object(requestMembers)),
            .init(key: "response", value: response),
            .init(key: "cache", value: .object([])),
            .init(
                key: "timings",
                value: .object([
                    .init(key: "blocked", value: .number(-1)), .init(key: "dns", value: .number(-1)),
                    .init(key: "connect", value: .number(-1)),
                    .init(key: "send", value: .number(0)), .init(key: "wait", value: .number(milliseconds)),
                    .init(key: "receive", value: .number(0)),
                    .init(key: "ssl", value: .number(-1)),
                ])),
        ])
        redaction.redact(entry: &entry)
        return entry
    }

    private func record(_ entry: HARJSON) {
        state.withLock { state in
            let index = state.archive.entries.count
            state.archive.entries.append(entry)
            var notes: [HARProblem] = []
            if case .success(let record) = HARRecord.read(entry, index: index, notes: &notes) {
                Self.index(record, into: &state, redaction: redaction, missingBody: missingBody)
            }
        }
        if autosave {
            do {
                try save()
            } catch {
                Self.logger.error("HAR entry not saved: \(error)")
            }
        }
    }

    private func fetchAndRecord(_ request: NetworkRequest, passThrough: (any NetworkClient)?) async throws(NetworkError)
        -> NetworkResponse
    {
        let started = Date()
        let clock = ContinuousClock()
        let start = clock.now
        let outcome: Result<NetworkResponse, NetworkError>
        do throws(NetworkError) {
            outcome = .success(
                try await NetworkRequest(request.head, body: request.body, transport: network ?? passThrough).perform())
        } catch {
            outcome = .failure(error)
        }
        record(entry(request: request, outcome: outcome, started: started, elapsed: clock.now - start))
        return try outcome.get()
    }
}

extension HARCassette: StubResponder {
    var name: String { "HAR \(fileURL.lastPathComponent)" }

    func handles(_ facts: inout RequestFacts) -> Bool { true }

    func respond(to request: NetworkRequest, passThrough: (any NetworkClient)?) async throws(NetworkError)
        -> NetworkResponse
    {
        if isRecording {
            return try await fetchAndRecord(request, passThrough: passThrough)
        }
        if let record = replayRecord(for: request) {
            if record.bodyMissing {
                Self.logger.notice(
                    "HAR entry replayed with an empty body: the archive has none for it",
                    metadata: ["entry": "\(record.path)", "request": "\(record.method) \(HARText.quote(record.url))"]
                )
            }
            return try record.response()
        }
        if mode == .replayElseNetwork {
            return try await fetchAndRecord(request, passThrough: passThrough)
        }
        throw .noStub(unmatchedMessage(request))
    }
}

extension StubSet {
    /// Lets `cassette` record or replay every request no stub matches. It takes every
    /// request it is asked about, and responders added later are asked first: add the
    /// cassette before routers and response sets that should answer before it.
    public func add(_ cassette: HARCassette) {
        addResponder(cassette)
    }
}
