public import ChaosKit
public import Foundation
import HTTPTypes
import Synchronization

/// Records real traffic to a HAR 1.2 file and replays it (a "cassette", after VCR).
///
/// ```swift
/// let cassette = try HARCassette(file: URL(fileURLWithPath: "Fixtures/weather.har"), mode: .recordOnce)
/// let stubs = StubSet()
/// stubs.add(cassette)
/// // Install `stubs` in a URLSession configuration, or use ChaosNetworkClient(stubs).
/// ```
///
/// The file is an ordinary HAR 1.2 archive (`log.version`, `creator`, entries with request,
/// response, timings and `startedDateTime`): it opens in browsers' developer tools, and
/// archives exported from them replay (pages, `_initiator`, base64 content and other
/// extras are read or ignored as needed). Recorded request headers `Authorization`,
/// `Proxy-Authorization` and `Cookie`, response headers `Set-Cookie`, and any header named
/// in `redacting`, are written as `[redacted]`; cookies are never written.
///
/// Replay matches method, host, port, path and query (in any order); among entries for
/// the same request, one with the same body is preferred. Several entries for one request
/// are replayed in order, the last repeating, so a polling sequence replays as it happened.
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
        /// Replays what the file has and sends anything else to the network, unrecorded.
        case replayElseNetwork
    }

    /// The archive's file.
    public let fileURL: URL
    /// The mode asked for.
    public let mode: Mode
    /// Whether requests are recorded (``Mode/record``, or ``Mode/recordOnce`` without a file).
    public let isRecording: Bool
    /// Header names (lower-cased) whose values are never written.
    public let redactedHeaders: Set<String>
    /// Whether every recorded entry is written to the file at once (else call ``save()``).
    public let autosave: Bool
    private let network: (any NetworkClient)?
    private let state: Mutex<State>

    private struct State {
        var entries: [HAREntry] = []
        /// Replay: entry indexes per request key, and how many times each key was replayed.
        var byKey: [String: [Int]] = [:]
        var replayed: [String: Int] = [:]
    }

    /// The headers redacted always.
    public static let alwaysRedacted: Set<String> = ["authorization", "proxy-authorization", "cookie", "set-cookie"]

    /// A cassette on `file` in `mode`. `network` performs requests that are recorded or
    /// passed on (default: the session the stub set is installed in, or the live client).
    /// A malformed file is an error naming the JSON path at fault; ``Mode/replayOnly``
    /// without a file is an error too.
    public init(
        file: URL, mode: Mode, redacting: Set<String> = [], autosave: Bool = true, network: (any NetworkClient)? = nil
    ) throws(ChaosError) {
        self.fileURL = file
        self.mode = mode
        self.redactedHeaders = Self.alwaysRedacted.union(redacting.map { $0.lowercased() })
        self.autosave = autosave
        self.network = network
        let exists = FileManager.default.fileExists(atPath: file.path)
        var state = State()
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
        if !isRecording && exists {
            state.entries = try Self.load(file)
            for (index, entry) in state.entries.enumerated() {
                state.byKey[Self.key(method: entry.request.method, url: entry.request.url), default: []].append(index)
            }
        }
        self.state = Mutex(state)
    }

    /// The number of entries recorded or loaded.
    public var entryCount: Int { state.withLock { $0.entries.count } }

    /// The requests of the entries, as `GET https://…`, in order.
    public var entryDescriptions: [String] { state.withLock { $0.entries.map { "\($0.request.method) \($0.request.url)" } } }

    /// Writes the recorded entries to the file (creating its folder).
    public func save() throws(ChaosError) {
        let entries = state.withLock { $0.entries }
        let document = HARDocument(log: HARLog(
            version: "1.2", creator: HARCreator(name: "ChaosKit", version: "1.0"), browser: nil, entries: entries,
            comment: "Recorded by ChaosKit's HARCassette; redacted headers: \(redactedHeaders.sorted().joined(separator: ", "))"
        ))
        do {
            try FileManager.default.createDirectory(at: fileURL.deletingLastPathComponent(), withIntermediateDirectories: true)
            try document.encoded().write(to: fileURL, options: .atomic)
        } catch {
            throw ChaosError(.invalidNetworkConfiguration, subject: fileURL.path, "the HAR file cannot be written (\(error.localizedDescription)); check that its folder is writable")
        }
    }

    static func load(_ file: URL) throws(ChaosError) -> [HAREntry] {
        let data: Data
        do {
            data = try Data(contentsOf: file)
        } catch {
            throw ChaosError(.invalidNetworkConfiguration, subject: file.path, "the HAR file cannot be read (\(error.localizedDescription))")
        }
        let document: HARDocument
        do throws(HARFormatError) {
            document = try HARDocument.read(data, source: file.path)
        } catch {
            throw ChaosError(.invalidNetworkConfiguration, subject: file.path, error.message + "; fix it, or delete the file and record it again")
        }
        for (index, entry) in document.log.entries.enumerated() {
            guard let url = URL(string: entry.request.url), url.host != nil else {
                throw ChaosError(.invalidNetworkConfiguration, subject: file.path, "malformed HAR at log.entries[\(index)].request.url: '\(entry.request.url)' is not an absolute URL")
            }
            if let content = entry.response.content, content.encoding == "base64", let text = content.text, Data(base64Encoded: text) == nil {
                throw ChaosError(.invalidNetworkConfiguration, subject: file.path, "malformed HAR at log.entries[\(index)].response.content.text: the text is not base64 although encoding says so")
            }
            if let post = entry.request.postData, post.encoding == "base64", let text = post.text, Data(base64Encoded: text) == nil {
                throw ChaosError(.invalidNetworkConfiguration, subject: file.path, "malformed HAR at log.entries[\(index)].request.postData.text: the text is not base64 although encoding says so")
            }
        }
        return document.log.entries
    }

    // MARK: Keys and matching

    /// `GET api.test:443 /v1/x a=1&b=2`: method, host, port, path and sorted query.
    static func key(method: String, url text: String) -> String {
        guard let components = URLComponents(string: text) else { return "\(method.uppercased()) \(text)" }
        let scheme = components.scheme?.lowercased() ?? "https"
        let port = components.port ?? (scheme == "http" ? 80 : 443)
        let query = (components.percentEncodedQueryItems ?? [])
            .map { "\($0.name)=\($0.value ?? "")" }.sorted().joined(separator: "&")
        let path = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
        return "\(method.uppercased()) \(components.host?.lowercased() ?? ""):\(port) \(path) \(query)"
    }

    static func key(_ request: NetworkRequest) -> String {
        key(method: request.method.rawValue, url: request.url?.absoluteString ?? request.description)
    }

    /// The entry to replay for `request`, advancing that request's sequence.
    private func replayEntry(for request: NetworkRequest) -> HAREntry? {
        let key = Self.key(request)
        let body = request.body ?? Data()
        return state.withLock { state -> HAREntry? in
            guard let candidates = state.byKey[key], !candidates.isEmpty else { return nil }
            let sameBody = candidates.filter { Self.body(of: state.entries[$0].request) == body }
            let pool = sameBody.isEmpty ? candidates : sameBody
            let sequenceKey = key + (sameBody.isEmpty ? "" : " #\(body.hashValue)")
            let turn = state.replayed[sequenceKey, default: 0]
            state.replayed[sequenceKey] = turn + 1
            return state.entries[pool[min(turn, pool.count - 1)]]
        }
    }

    private func hasEntry(for request: NetworkRequest) -> Bool {
        let key = Self.key(request)
        return state.withLock { $0.byKey[key] != nil }
    }

    /// "no recorded entry matches …; the closest is …".
    func unmatchedMessage(_ request: NetworkRequest) -> String {
        let entries = state.withLock { $0.entries }
        let file = fileURL.lastPathComponent
        guard !entries.isEmpty else {
            return "no recorded entry matches \(request): \(file) has no entries; record it again (mode .record)"
        }
        let wanted = URLComponents(string: request.url?.absoluteString ?? "")
        func differences(_ entry: HAREntry) -> [String] {
            var result: [String] = []
            let recorded = URLComponents(string: entry.request.url)
            if entry.request.method.uppercased() != request.method.rawValue { result.append("method \(entry.request.method)") }
            if recorded?.host?.lowercased() != wanted?.host?.lowercased() || recorded?.port != wanted?.port {
                result.append("host \(recorded?.host ?? "?")\(recorded?.port.map { ":\($0)" } ?? "")")
            }
            if recorded?.percentEncodedPath != wanted?.percentEncodedPath { result.append("path \(recorded?.percentEncodedPath ?? "?")") }
            let recordedQuery = Set((recorded?.percentEncodedQueryItems ?? []).map { "\($0.name)=\($0.value ?? "")" })
            let wantedQuery = Set((wanted?.percentEncodedQueryItems ?? []).map { "\($0.name)=\($0.value ?? "")" })
            if recordedQuery != wantedQuery { result.append("query \(recorded?.percentEncodedQuery ?? "(none)")") }
            return result
        }
        func weight(_ entry: HAREntry) -> Int {
            differences(entry).reduce(0) { total, difference in
                total + (difference.hasPrefix("host") ? 4 : difference.hasPrefix("path") ? 3 : difference.hasPrefix("method") ? 2 : 1)
            }
        }
        let (index, closest) = entries.enumerated().min { weight($0.element) < weight($1.element) }!
        return "no recorded entry in \(file) matches \(request); the closest is \(closest.request.method) \(closest.request.url) "
            + "(entry \(index)), which differs in: \(differences(closest).joined(separator: ", "))"
    }

    // MARK: Entries ↔ messages

    private static func body(of request: HARRequest) -> Data {
        guard let post = request.postData, let text = post.text else { return Data() }
        if post.encoding == "base64" { return Data(base64Encoded: text) ?? Data() }
        return Data(text.utf8)
    }

    /// Headers a replayed response does not repeat: HTTP/2 pseudo-headers and those that
    /// describe the transfer rather than the (decoded) content.
    private static let transferHeaders: Set<String> = ["content-encoding", "content-length", "transfer-encoding", "connection", "keep-alive"]

    static func response(from entry: HAREntry) throws(NetworkError) -> NetworkResponse {
        if entry.response.status == 0 {
            throw error(fromNote: entry.response._error ?? "")
        }
        var fields = HTTPFields()
        for header in entry.response.headers ?? [] {
            let lower = header.name.lowercased()
            guard !lower.hasPrefix(":"), !transferHeaders.contains(lower), let name = HTTPField.Name(header.name) else { continue }
            fields.append(HTTPField(name: name, value: header.value))
        }
        var body = Data()
        if let content = entry.response.content, let text = content.text {
            body = content.encoding == "base64" ? (Data(base64Encoded: text) ?? Data()) : Data(text.utf8)
            if fields[.contentType] == nil, let mime = content.mimeType, !mime.isEmpty { fields[.contentType] = mime }
        }
        var status = HTTPResponse.Status(code: entry.response.status)
        if let reason = entry.response.statusText, !reason.isEmpty {
            status = HTTPResponse.Status(code: entry.response.status, reasonPhrase: reason)
        }
        return NetworkResponse(HTTPResponse(status: status, headerFields: fields), body: body)
    }

    /// A failure recorded as status 0 (Chrome's `net::ERR_…`, or ChaosKit's own words).
    static func error(fromNote note: String) -> NetworkError {
        let lower = note.lowercased()
        if lower.contains("internet_disconnected") || lower.hasPrefix("offline") { return .offline }
        if lower.contains("timed_out") || lower.hasPrefix("timeout") { return .timeout }
        if lower.contains("name_not_resolved") || lower.hasPrefix("dns failure") { return .dnsFailure(host: "") }
        return .transport(note.isEmpty ? "the recorded request failed" : note)
    }

    func entry(request: NetworkRequest, outcome: Result<NetworkResponse, NetworkError>, started: Date, elapsed: Duration) -> HAREntry {
        let milliseconds = Double(elapsed.components.seconds) * 1_000 + Double(elapsed.components.attoseconds) / 1e15
        let url = request.url?.absoluteString ?? request.description
        let requestHeaders = request.head.headerFields.map { field in
            HARNameValue(name: field.name.rawName, value: redactedHeaders.contains(field.name.canonicalName) ? "[redacted]" : field.value)
        }
        let query = request.queryItems.map { HARNameValue(name: $0.name, value: $0.value ?? "") }
        var postData: HARPostData?
        if let body = request.body, !body.isEmpty {
            let (text, encoding) = Self.text(body)
            postData = HARPostData(mimeType: request.head.headerFields[.contentType] ?? "application/octet-stream", text: text, encoding: encoding)
        }
        let harRequest = HARRequest(
            method: request.method.rawValue, url: url, httpVersion: "HTTP/1.1", cookies: [], headers: requestHeaders,
            queryString: query, postData: postData, headersSize: -1, bodySize: request.body?.count ?? 0
        )
        let harResponse: HARResponse
        switch outcome {
        case .success(let response):
            let headers = response.head.headerFields.map { field in
                HARNameValue(name: field.name.rawName, value: redactedHeaders.contains(field.name.canonicalName) ? "[redacted]" : field.value)
            }
            let (text, encoding) = Self.text(response.body)
            harResponse = HARResponse(
                status: response.statusCode, statusText: response.head.status.reasonPhrase, httpVersion: "HTTP/1.1", cookies: [],
                headers: headers,
                content: HARContent(size: response.body.count, compression: nil, mimeType: response.head.headerFields[.contentType] ?? "", text: text, encoding: encoding),
                redirectURL: response.head.headerFields[.location] ?? "", headersSize: -1, bodySize: response.body.count, _error: nil
            )
        case .failure(let error):
            harResponse = HARResponse(
                status: 0, statusText: "", httpVersion: "", cookies: [], headers: [],
                content: HARContent(size: 0, compression: nil, mimeType: "", text: nil, encoding: nil),
                redirectURL: "", headersSize: -1, bodySize: -1, _error: error.description
            )
        }
        return HAREntry(
            pageref: nil, startedDateTime: Date.ISO8601FormatStyle(includingFractionalSeconds: true).format(started),
            time: milliseconds, request: harRequest, response: harResponse, cache: HARCache(),
            timings: HARTimings(blocked: -1, dns: -1, connect: -1, send: 0, wait: milliseconds, receive: 0, ssl: -1),
            serverIPAddress: nil, connection: nil, comment: nil
        )
    }

    /// A body as HAR text: UTF-8 as it is, anything else base64.
    static func text(_ body: Data) -> (String?, String?) {
        if body.isEmpty { return ("", nil) }
        if let text = String(data: body, encoding: .utf8) { return (text, nil) }
        return (body.base64EncodedString(), "base64")
    }

    private func record(_ entry: HAREntry) {
        state.withLock { $0.entries.append(entry) }
        if autosave { try? save() }
    }

    private func perform(_ request: NetworkRequest, passThrough: (any NetworkClient)?) async throws(NetworkError) -> NetworkResponse {
        try await NetworkRequest(request.head, body: request.body, transport: network ?? passThrough).perform()
    }
}

extension HARCassette: StubResponder {
    var name: String { "HAR \(fileURL.lastPathComponent)" }

    func handles(_ facts: inout RequestFacts) -> Bool { true }

    func respond(to request: NetworkRequest, passThrough: (any NetworkClient)?) async throws(NetworkError) -> NetworkResponse {
        if isRecording {
            let started = Date()
            let clock = ContinuousClock()
            let start = clock.now
            let outcome: Result<NetworkResponse, NetworkError>
            do throws(NetworkError) {
                outcome = .success(try await perform(request, passThrough: passThrough))
            } catch {
                outcome = .failure(error)
            }
            record(entry(request: request, outcome: outcome, started: started, elapsed: clock.now - start))
            return try outcome.get()
        }
        if let entry = replayEntry(for: request) {
            return try Self.response(from: entry)
        }
        if mode == .replayElseNetwork {
            return try await perform(request, passThrough: passThrough)
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
