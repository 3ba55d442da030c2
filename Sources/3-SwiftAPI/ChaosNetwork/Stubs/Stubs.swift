public import ChaosKit
public import Foundation
public import HTTPTypes
import Synchronization

/// A request that matched a stub or route, with what the match found.
public struct MatchedRequest: Sendable {
    /// The request.
    public let request: NetworkRequest
    /// Parameters from the path template or regex groups (`["id": "7"]`).
    public let pathParameters: [String: String]

    /// The query parameters (the first value of a repeated name wins).
    public var query: [String: String] {
        var result: [String: String] = [:]
        for item in request.queryItems where result[item.name] == nil { result[item.name] = item.value ?? "" }
        return result
    }

    /// The value of header `name` (case-insensitive), if present.
    public func header(_ name: String) -> String? {
        HTTPField.Name(name).flatMap { request.head.headerFields[$0] }
    }

    /// The body decoded from JSON as `type`; undecodable bodies throw a ``NetworkError/transport(_:)``.
    public func decodeBody<T: Decodable>(as type: T.Type) throws(NetworkError) -> T {
        do {
            return try JSONDecoder().decode(T.self, from: request.body ?? Data())
        } catch {
            throw .transport("the body of \(request) is not a \(T.self): \(error)")
        }
    }
}

/// What a stub answers with.
public struct StubResponse: Sendable {
    enum Kind: Sendable {
        case response(NetworkResponse)
        case error(NetworkError)
        case block(@Sendable (MatchedRequest) async throws -> NetworkResponse)
    }

    let kind: Kind

    /// The default content type of stubbed bodies.
    public static let defaultContentType = "application/json"

    /// `data` with `status` and `headers`; `Content-Type` defaults to `application/json`.
    public static func data(
        _ data: Data, status: Int = 200, headers: [String: String] = [:], contentType: String = defaultContentType
    ) -> StubResponse {
        var all = headers
        if !all.keys.contains(where: { $0.lowercased() == "content-type" }) { all["Content-Type"] = contentType }
        return StubResponse(kind: .response(NetworkResponse(status: status, headers: all, body: data)))
    }

    /// The UTF-8 of `text` (`text/plain` unless told otherwise).
    public static func string(
        _ text: String, status: Int = 200, headers: [String: String] = [:],
        contentType: String = "text/plain; charset=utf-8"
    ) -> StubResponse {
        .data(Data(text.utf8), status: status, headers: headers, contentType: contentType)
    }

    /// `value` encoded as JSON with `encoder`.
    public static func json(
        _ value: some Encodable, status: Int = 200, headers: [String: String] = [:],
        encoder: JSONEncoder = JSONEncoder()
    ) throws(ChaosError) -> StubResponse {
        do {
            return .data(try encoder.encode(value), status: status, headers: headers)
        } catch {
            throw ChaosError(
                .invalidNetworkConfiguration, subject: "json stub",
                "the value does not encode as JSON (\(error)); check its Encodable conformance")
        }
    }

    /// The contents of the file at `path`, read now. A missing file is an error; the
    /// content type follows the extension (`.json`, `.html`, `.txt`, `.png` …) unless given.
    public static func file(
        _ path: String, status: Int = 200, headers: [String: String] = [:], contentType: String? = nil
    ) throws(ChaosError) -> StubResponse {
        guard FileManager.default.fileExists(atPath: path) else {
            throw ChaosError(
                .invalidNetworkConfiguration, subject: path,
                "the stub file does not exist; check the path (for test resources use Bundle.module.path(forResource:ofType:))"
            )
        }
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw ChaosError(
                .invalidNetworkConfiguration, subject: path,
                "the stub file cannot be read (\(error.localizedDescription))")
        }
        return .data(data, status: status, headers: headers, contentType: contentType ?? mimeType(forPath: path))
    }

    /// The contents of the file at `url` (see ``file(_:status:headers:contentType:)-(String,_,_,_)``).
    public static func file(
        _ url: URL, status: Int = 200, headers: [String: String] = [:], contentType: String? = nil
    ) throws(ChaosError) -> StubResponse {
        try file(url.path, status: status, headers: headers, contentType: contentType)
    }

    /// Status `code` with `headers` and an empty body.
    public static func status(_ code: Int, headers: [String: String] = [:]) -> StubResponse {
        StubResponse(kind: .response(NetworkResponse(status: code, headers: headers)))
    }

    /// A complete response.
    public static func response(_ response: NetworkResponse) -> StubResponse {
        StubResponse(kind: .response(response))
    }

    /// Fails with `error` (offline, timeout, DNS failure, …).
    public static func error(_ error: NetworkError) -> StubResponse {
        StubResponse(kind: .error(error))
    }

    /// Computes the response from the request (path parameters, query, body). Errors it
    /// throws become ``NetworkError``s (see ``NetworkError/init(_:)``).
    public static func block(_ body: @escaping @Sendable (MatchedRequest) async throws -> NetworkResponse)
        -> StubResponse
    {
        StubResponse(kind: .block(body))
    }

    func respond(to matched: MatchedRequest) async throws(NetworkError) -> NetworkResponse {
        switch kind {
        case .response(let response): return response
        case .error(let error): throw error
        case .block(let body):
            do {
                return try await body(matched)
            } catch {
                throw NetworkError(error)
            }
        }
    }

    static func mimeType(forPath path: String) -> String {
        switch (path as NSString).pathExtension.lowercased() {
        case "json", "har": "application/json"
        case "html", "htm": "text/html; charset=utf-8"
        case "txt": "text/plain; charset=utf-8"
        case "xml": "application/xml"
        case "png": "image/png"
        case "jpg", "jpeg": "image/jpeg"
        case "gif": "image/gif"
        case "js": "application/javascript"
        case "css": "text/css"
        default: "application/octet-stream"
        }
    }
}

/// One stub: a matcher, a response, and conditions. Counts its hits.
public final class Stub: Sendable, CustomStringConvertible {
    /// The stub's name (in logs and "closest stub" messages).
    public let name: String
    /// What requests it answers.
    public let matcher: RequestMatcher
    /// Conditions applied to its answer, in order.
    public let conditions: [NetworkCondition]
    let response: StubResponse
    /// The answer in URLSession's terms, when it is a constant given without conditions.
    let prepared: PreparedResponse?
    private let hits = Atomic<Int>(0)

    init(name: String, matcher: RequestMatcher, conditions: [NetworkCondition], response: StubResponse) {
        self.name = name
        self.matcher = matcher
        self.conditions = conditions
        self.response = response
        if conditions.isEmpty, case .response(let constant) = response.kind {
            prepared = PreparedResponse(constant)
        } else {
            prepared = nil
        }
    }

    /// How many requests this stub has answered.
    public var hitCount: Int { hits.load(ordering: .relaxed) }

    func hit() -> Int { hits.wrappingAdd(1, ordering: .relaxed).oldValue }

    /// `'name' (GET any host template /users/:id)`.
    public var description: String { "'\(name)' (\(matcher))" }
}

/// A request a ``StubSet`` saw, for assertions.
public struct LoggedRequest: Sendable, CustomStringConvertible {
    /// The request (without its transport).
    public let request: NetworkRequest
    /// The stub that answered, or nil when none matched.
    public let stubName: String?
    /// When it arrived.
    public let date: Date
    /// Whether the set refused it (no stub matched under ``StubSet/UnmatchedPolicy/fail``).
    public let wasRefused: Bool
    /// For a refused request, the nearest stubs and what differed (up to three, nearest first).
    public let nearMisses: [NearMiss]

    init(request: NetworkRequest, stubName: String?, date: Date, wasRefused: Bool = false, nearMisses: [NearMiss] = [])
    {
        self.request = request
        self.stubName = stubName
        self.date = date
        self.wasRefused = wasRefused
        self.nearMisses = nearMisses
    }

    /// `GET https://… → 'name'`, or for a refused request `GET https://… → refused; the
    /// nearest: …` with what differed.
    public var description: String {
        guard wasRefused else { return "\(request) → \(stubName.map { "'\($0)'" } ?? "no stub")" }
        guard !nearMisses.isEmpty else { return "\(request) → refused (the set has no stubs)" }
        return "\(request) → refused; the nearest: \(nearMisses.map(\.description).joined(separator: "; "))"
    }
}

/// A set of stubs that answers requests (OHHTTPStubs-style): install it in a URLSession
/// configuration with ``ChaosURLProtocol/install(_:into:)``, or use it directly as a
/// ``NetworkClient``.
///
/// When several stubs match, the most recently added wins (so a test can override a
/// default). Requests that match none follow ``unmatched``. Each set is its own world:
/// tests running in parallel give each session its own set.
public final class StubSet: NetworkClient, Sendable {
    /// What happens to a request no stub matches.
    public enum UnmatchedPolicy: Sendable {
        /// Send it on for real (through URLSession when installed in one).
        case passThrough
        /// Send it on through this client.
        case passThroughClient(any NetworkClient)
        /// Fail with ``NetworkError/noStub(_:)``, naming the request and the closest stub.
        case fail
    }

    private struct State {
        var stubs: [Stub] = [] {
            didSet { index = StubIndex(stubs) }
        }
        var index = StubIndex([])
        var conditions: [NetworkCondition] = []
        var unmatched: UnmatchedPolicy
        var log: BoundedRing<LoggedRequest>
        var responders: [any StubResponder] = []
    }

    /// The identifier ``ChaosURLProtocol`` finds this set by.
    public let identifier: String
    /// The seed of every random choice the set's conditions make.
    public let seed: UInt64
    /// How many requests the log keeps (the oldest go first).
    public let logCapacity: Int
    private let state: Locked<State>
    private let calls = Atomic<UInt64>(0)

    /// An empty set; unmatched requests fail unless told otherwise.
    public init(seed: UInt64 = 0, unmatched: UnmatchedPolicy = .fail, logCapacity: Int = 10_000) {
        self.identifier = UUID().uuidString
        self.seed = seed
        self.logCapacity = max(0, logCapacity)
        self.state = Locked(State(unmatched: unmatched, log: BoundedRing(capacity: self.logCapacity)))
    }

    /// What happens to requests no stub matches.
    public var unmatched: UnmatchedPolicy {
        get { state.withLock { $0.unmatched } }
        set { state.withLock { $0.unmatched = newValue } }
    }

    /// Conditions applied to every request the set handles (stubbed or passed through),
    /// outside each stub's own conditions: "this whole session is on 3G".
    public var conditions: [NetworkCondition] {
        get { state.withLock { $0.conditions } }
        set { state.withLock { $0.conditions = newValue } }
    }

    /// Adds a stub answering requests that match `matcher` with `response`, after `conditions`.
    @discardableResult
    public func stub(
        _ matcher: RequestMatcher, name: String? = nil, conditions: [NetworkCondition] = [], _ response: StubResponse
    ) -> Stub {
        let stub = Stub(name: name ?? matcher.description, matcher: matcher, conditions: conditions, response: response)
        state.withLock { $0.stubs.append(stub) }
        return stub
    }

    /// Removes `stub`; true when it was in the set.
    @discardableResult
    public func remove(_ stub: Stub) -> Bool {
        state.withLock { state in
            guard let index = state.stubs.firstIndex(where: { $0 === stub }) else { return false }
            state.stubs.remove(at: index)
            return true
        }
    }

    /// Removes every stub and responder (conditions, policy and log stay).
    public func removeAll() {
        state.withLock {
            $0.stubs = []
            $0.responders = []
        }
    }

    /// The stubs, oldest first.
    public var stubs: [Stub] { state.withLock { $0.stubs } }

    /// The stub named `name`, if any.
    public func stub(named name: String) -> Stub? {
        state.withLock { $0.stubs.last { $0.name == name } }
    }

    /// Every request the set saw, oldest first (up to ``logCapacity``).
    public var requests: [LoggedRequest] { state.withLock { $0.log.elements } }

    /// Empties the request log.
    public func clearLog() {
        state.withLock { $0.log.removeAll() }
    }

    /// Adds something that answers requests after the stubs (response sets, routers, replays).
    func addResponder(_ responder: any StubResponder) {
        state.withLock { $0.responders.append(responder) }
    }

    /// Sends `request` to the stubs (``NetworkClient`` conformance).
    public func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
        let response = try await respond(to: NetworkRequest(request, body: body))
        return (response.head, try response.completeBody())
    }

    /// Answers `request`: the newest matching stub, else a responder, else the unmatched policy.
    public func respond(to request: NetworkRequest) async throws(NetworkError) -> NetworkResponse {
        try await respond(to: request, passThrough: nil)
    }

    func respond(to request: NetworkRequest, passThrough: (any NetworkClient)?, record: JournalRecord? = nil)
        async throws(NetworkError) -> NetworkResponse
    {
        var request = request
        request.transport = nil
        let (index, conditions, unmatched, responders) = state.withLock {
            ($0.index, $0.conditions, $0.unmatched, $0.responders)
        }
        let stubs = index.stubs
        var facts = RequestFacts(request)
        let found = index.newestMatch(&facts)
        var responder: (any StubResponder)?
        if found == nil {
            for candidate in responders.reversed() where candidate.handles(&facts) {
                responder = candidate
                break
            }
        }
        var refused = false
        if found == nil, responder == nil, case .fail = unmatched { refused = true }
        // A refusal's report: the stubs nearest to matching, and what differed.
        let nearMisses = refused ? Self.nearMisses(&facts, stubs: stubs, limit: 3) : []
        if logCapacity > 0 {
            log(
                LoggedRequest(
                    request: request, stubName: found?.stub.name ?? responder?.name, date: Date(), wasRefused: refused,
                    nearMisses: nearMisses))
        }
        if let record {
            if let (stub, _) = found {
                record.answered(by: .stub(stub.name), conditions: conditions + stub.conditions)
            } else if let responder {
                record.answered(by: responder.journalAnswer(&facts), conditions: conditions)
            } else if refused {
                record.refused(nearMisses: nearMisses)
            } else {
                record.answered(by: .passedThrough, conditions: conditions)
            }
        }
        let call = calls.wrappingAdd(1, ordering: .relaxed).oldValue
        var random = SeededRandom(seed: seed ^ (call &* 0x9E37_79B9_7F4A_7C15))
        let request2 = request
        return try await NetworkCondition.run(conditions[...], request: request, random: &random) {
            () async throws(NetworkError) -> NetworkResponse in
            if let (stub, parameters) = found {
                var mixer = SeededRandom(seed: UInt64(stub.hit()))
                var stubRandom = SeededRandom(seed: self.seed ^ mixer.next())
                return try await NetworkCondition.run(stub.conditions[...], request: request2, random: &stubRandom) {
                    () async throws(NetworkError) in
                    try await stub.response.respond(to: MatchedRequest(request: request2, pathParameters: parameters))
                }
            }
            if let responder {
                return try await responder.respond(to: request2, passThrough: passThrough)
            }
            switch unmatched {
            case .fail:
                throw .noStub(self.unmatchedMessage(request2, nearMisses: nearMisses))
            case .passThrough:
                return try await NetworkRequest(request2.head, body: request2.body, transport: passThrough).perform()
            case .passThroughClient(let client):
                return try await NetworkRequest(request2.head, body: request2.body, transport: client).perform()
            }
        }
    }

    /// The answer to `request` when a stub gives it at once — a constant response, no
    /// conditions on the set or the stub — with the stub's hit and the log written;
    /// nil when the request needs the full (asynchronous) path.
    func immediateAnswer(_ request: NetworkRequest, record: JournalRecord?) -> PreparedResponse? {
        let (index, plain) = state.withLock { ($0.index, $0.conditions.isEmpty) }
        guard plain else { return nil }
        var facts = RequestFacts(request)
        guard let (stub, _) = index.newestMatch(&facts), let prepared = stub.prepared else { return nil }
        _ = stub.hit()
        _ = calls.wrappingAdd(1, ordering: .relaxed)
        record?.answered(by: .stub(stub.name))
        if logCapacity > 0 {
            var logged = request
            logged.transport = nil
            log(LoggedRequest(request: logged, stubName: stub.name, date: Date()))
        }
        return prepared
    }

    private func log(_ entry: LoggedRequest) {
        guard logCapacity > 0 else { return }
        _ = state.withLock { $0.log.append { _ in entry } }
    }

    /// The stubs nearest to matching `request`, nearest first, at most `limit` of them: for
    /// a request no stub matches, what WireMock calls a near-miss report. A stub is nearer
    /// when fewer of its criteria fail; among equals, when more of them hold, then when its
    /// path pattern shares a longer start with the request's path, then when it is newer
    /// (as matching prefers). Each names every criterion that failed, in words.
    public func nearMisses(for request: NetworkRequest, limit: Int = 3) -> [NearMiss] {
        var facts = RequestFacts(request)
        return Self.nearMisses(&facts, stubs: stubs, limit: limit)
    }

    static func nearMisses(_ facts: inout RequestFacts, stubs: [Stub], limit: Int) -> [NearMiss] {
        guard limit > 0 else { return [] }
        var ranked: [(position: Int, closeness: Int, miss: NearMiss)] = []
        for (position, stub) in stubs.enumerated() {
            let differences = stub.matcher.differences(&facts)
            let criteria = stub.matcher.criteriaCount
            let closeness = stub.matcher.path.map { $0.text.commonPrefix(with: facts.path).count } ?? 0
            ranked.append(
                (
                    position, closeness,
                    NearMiss(
                        stub: stub.name, matcher: stub.matcher.description, criteria: criteria,
                        satisfied: criteria - differences.count, differences: differences)
                ))
        }
        ranked.sort { a, b in
            if a.miss.differences.count != b.miss.differences.count {
                return a.miss.differences.count < b.miss.differences.count
            }
            if a.miss.satisfied != b.miss.satisfied { return a.miss.satisfied > b.miss.satisfied }
            if a.closeness != b.closeness { return a.closeness > b.closeness }
            return a.position > b.position
        }
        return ranked.prefix(limit).map(\.miss)
    }

    func unmatchedMessage(_ request: NetworkRequest, nearMisses: [NearMiss]) -> String {
        guard !nearMisses.isEmpty else {
            return "no stub matches \(request): the stub set is empty; add a stub for it or use the passThrough policy"
        }
        return "no stub matches \(request); the nearest: "
            + nearMisses.map(\.description).joined(separator: "; ")
    }
}

/// A stub that did not match a request, with how near it came: one line of a near-miss report.
public struct NearMiss: Sendable, Hashable, CustomStringConvertible {
    /// The stub's name.
    public let stub: String
    /// The stub's matcher, rendered.
    public let matcher: String
    /// How many criteria the matcher has (``RequestMatcher/criteriaCount``).
    public let criteria: Int
    /// How many of them the request meets.
    public let satisfied: Int
    /// The criteria it does not meet, in words.
    public let differences: [MatcherDifference]

    /// A near miss.
    public init(stub: String, matcher: String, criteria: Int, satisfied: Int, differences: [MatcherDifference]) {
        self.stub = stub
        self.matcher = matcher
        self.criteria = criteria
        self.satisfied = satisfied
        self.differences = differences
    }

    /// `'items' (GET any host template /v1/items/:id), 2 of 3 criteria met: path: expected …, got …`.
    public var description: String {
        let stubText = stub == matcher ? "'\(stub)'" : "'\(stub)' (\(matcher))"
        return "\(stubText), \(satisfied) of \(criteria) criteria met: "
            + differences.map(\.description).joined(separator: ", ")
    }
}

/// The stubs with an index by exact path, so that a request is only tested against the
/// stubs for its path and those without an exact path (newest first, as without an index).
final class StubIndex: Sendable {
    let stubs: [Stub]
    private let byExactPath: [String: [Int]]
    private let other: [Int]

    init(_ stubs: [Stub]) {
        self.stubs = stubs
        var byExactPath: [String: [Int]] = [:]
        var other: [Int] = []
        for (position, stub) in stubs.enumerated() {
            if let path = stub.matcher.path, case .exact(let exact) = path.kind {
                byExactPath[exact, default: []].append(position)
            } else {
                other.append(position)
            }
        }
        self.byExactPath = byExactPath
        self.other = other
    }

    func newestMatch(_ facts: inout RequestFacts) -> (stub: Stub, parameters: [String: String])? {
        let exact = byExactPath[facts.path] ?? []
        var i = exact.count - 1
        var j = other.count - 1
        while i >= 0 || j >= 0 {
            let position: Int
            if j < 0 || (i >= 0 && exact[i] > other[j]) {
                position = exact[i]
                i -= 1
            } else {
                position = other[j]
                j -= 1
            }
            if let parameters = stubs[position].matcher.match(&facts) { return (stubs[position], parameters) }
        }
        return nil
    }
}

/// A response as URLSession's loading system takes it: header fields folded into a
/// dictionary (repeated names joined with ", ") once, not on every request.
struct PreparedResponse: Sendable {
    let status: Int
    let headers: [String: String]
    let body: Data
    /// The failure that follows the (partial) body, if the transfer breaks.
    let interruption: NetworkError?

    init(_ response: NetworkResponse) {
        var fields: [String: String] = [:]
        for field in response.head.headerFields {
            if let existing = fields[field.name.rawName] {
                fields[field.name.rawName] = existing + ", " + field.value
            } else {
                fields[field.name.rawName] = field.value
            }
        }
        self.status = response.head.status.code
        self.headers = fields
        self.body = response.body
        self.interruption = response.interruption
    }
}

extension StubSet: ResponseProducing {
    func response(to request: NetworkRequest) async throws(NetworkError) -> NetworkResponse {
        try await respond(to: request)
    }
}

/// Answers requests inside a ``StubSet`` when no stub does (response sets, routers, HAR replay).
protocol StubResponder: Sendable {
    var name: String { get }
    func handles(_ facts: inout RequestFacts) -> Bool
    /// What the journal says answered a request it handles.
    func journalAnswer(_ facts: inout RequestFacts) -> JournaledRequest.Answer
    func respond(to request: NetworkRequest, passThrough: (any NetworkClient)?) async throws(NetworkError)
        -> NetworkResponse
}

extension StubResponder {
    func journalAnswer(_ facts: inout RequestFacts) -> JournaledRequest.Answer { .responder(name) }
}
