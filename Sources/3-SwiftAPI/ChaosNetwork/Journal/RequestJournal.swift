import ChaosKit
public import Foundation
import HTTPTypes
import Synchronization

/// One request as the ``RequestJournal`` keeps it: what was asked, what answered, how it
/// ended and how long it took.
public struct JournaledRequest: Sendable, CustomStringConvertible {
    /// What answered a request.
    public enum Answer: Sendable, Hashable, CustomStringConvertible {
        /// The stub of this name.
        case stub(String)
        /// The response set of this name, with the response selected in it.
        case responseSet(String, response: String)
        /// Something else in the stub set: a router, a HAR cassette (its name).
        case responder(String)
        /// Chaos on the ``ChaosNetwork/send`` point answered before the request reached
        /// its transport (an `offline` entry, a `status` condition).
        case chaos
        /// No stub matched and the stub set sent the request on for real.
        case passedThrough
        /// No stub matched and the stub set refused the request (``StubSet/UnmatchedPolicy/fail``).
        case refused
        /// A ``ChaosNetworkClient`` sent it with its base client, which is not a stub set
        /// (the client's type).
        case client(String)

        /// `stub 'items'`, `response set 'login' → expired`, `refused` …
        public var description: String {
            switch self {
            case .stub(let name): "stub '\(name)'"
            case .responseSet(let name, let response): "response set '\(name)' → \(response)"
            case .responder(let name): name
            case .chaos: "chaos on network.send"
            case .passedThrough: "passed through"
            case .refused: "refused"
            case .client(let name): "sent by \(name)"
            }
        }
    }

    /// Which way the request came in.
    public enum Route: String, Sendable, Hashable {
        /// A URLSession with ``ChaosURLProtocol``.
        case urlSession
        /// A ``ChaosNetworkClient``.
        case client
    }

    /// Its number in the journal: 1 for the first request the process journaled.
    public let number: Int
    /// When it started.
    public let date: Date
    /// Which way it came in.
    public let route: Route
    /// The method.
    public let method: String
    /// The URL, with the query values HAR redaction hides replaced (``HARRedaction/default``).
    public let url: String
    /// What answered it.
    public let answer: Answer
    /// The network conditions of the stub set and the stub that applied to it, rendered.
    public let conditions: [String]
    /// The HTTP status, when a response came back.
    public let status: Int?
    /// The size of the response body, when a response came back.
    public let bytes: Int?
    /// The failure, when the request failed.
    public let error: String?
    /// From the start until the answer was complete.
    public let duration: Duration
    /// For a request no stub matched: the nearest stubs and what differed (up to three).
    public let nearMisses: [NearMiss]

    /// `#3 GET https://api.test/v1/items → stub 'items' 200 (12 bytes) 1.2 ms`.
    public var description: String {
        var text = "#\(number) \(method) \(url) → \(answer)"
        if !conditions.isEmpty { text += " [\(conditions.joined(separator: ", "))]" }
        if let status { text += " \(status)" }
        if let bytes { text += " (\(bytes) bytes)" }
        if let error { text += " failed: \(error)" }
        text += " \(DurationText.format(duration))"
        return text
    }
}

/// The process's journal of network requests: every request through ``ChaosURLProtocol``
/// or a ``ChaosNetworkClient``, with what answered it (a stub, a response set, chaos, a pass-
/// through, a refusal), its status, size and duration, and for a request no stub matched,
/// the nearest stubs and why each missed.
///
/// It is a ring: it keeps the newest ``capacity`` requests (1,000 unless set), each with its
/// URL cut to 2,000 characters and at most three near misses, so its memory stays bounded
/// however many requests pass. A capacity of 0 turns it off; a request then costs one atomic
/// load more. The console shows it (`GET /v1/requests`, `chaos ctl requests PID`).
public final class RequestJournal: Sendable {
    /// The journal every ``ChaosURLProtocol`` and ``ChaosNetworkClient`` writes to.
    public static let shared = RequestJournal()

    /// The default capacity.
    public static let defaultCapacity = 1_000
    /// The longest URL kept, in characters; longer ones are cut and end in `…`.
    static let maximumURLLength = 2_000

    private let ring: Locked<BoundedRing<JournaledRequest>>
    /// The capacity, readable without the lock: 0 means off.
    private let currentCapacity: Atomic<Int>

    /// A journal keeping the newest `capacity` requests.
    public init(capacity: Int = RequestJournal.defaultCapacity) {
        let capacity = max(0, capacity)
        ring = Locked(BoundedRing(capacity: capacity))
        currentCapacity = Atomic(capacity)
    }

    /// How many requests it keeps (the oldest go first); 0 keeps none. Lowering it drops
    /// the oldest at once.
    public var capacity: Int {
        get { currentCapacity.load(ordering: .relaxed) }
        set {
            let capacity = max(0, newValue)
            ring.withLock { $0.resize(to: capacity) }
            currentCapacity.store(capacity, ordering: .relaxed)
        }
    }

    /// Whether it records requests (its capacity is above 0).
    public var isEnabled: Bool { capacity > 0 }

    /// The requests it keeps, oldest first.
    public var requests: [JournaledRequest] { ring.withLock { $0.elements } }

    /// How many requests it has journaled since the process started (kept or not).
    public var recordedCount: Int { ring.withLock { $0.recorded } }

    /// Forgets every request kept (numbers go on).
    public func clear() {
        ring.withLock { $0.removeAll() }
    }

    /// A record for a request starting now, or nil when the journal is off.
    func start(_ request: NetworkRequest, route: JournaledRequest.Route) -> JournalRecord? {
        guard currentCapacity.load(ordering: .relaxed) > 0 else { return nil }
        return JournalRecord(journal: self, request: request, route: route)
    }

    fileprivate func add(_ make: (Int) -> JournaledRequest) {
        _ = ring.withLock { $0.append(make) }
    }
}

extension ChaosNetwork {
    /// The process's request journal (``RequestJournal/shared``).
    public static var journal: RequestJournal { RequestJournal.shared }
}

/// One request on its way: what the stub set learns about its answer, written into the
/// journal when the request ends. Its state is guarded by its lock.
///
/// A ``ChaosNetworkClient`` whose base is a URLSession with ``ChaosURLProtocol`` installed
/// hands its record to the protocol (its identifier travels in a header the protocol takes
/// off: URLProtocol properties do not reach the protocol on Linux), so that the request is
/// journaled once, with the stub that answered it.
final class JournalRecord: Sendable {
    /// The header that carries a record's identifier to ``ChaosURLProtocol``.
    static let markHeader = HTTPField.Name("X-ChaosKit-Journal-Record")!
    private static let nextIdentifier = Atomic<Int>(1)
    /// The records whose request is inside a URLSession now, by identifier.
    private static let inURLSession = Locked<[Int: JournalRecord]>([:])

    private struct State {
        var answer: JournaledRequest.Answer?
        var conditions: [String] = []
        var nearMisses: [NearMiss] = []
        var reachedTransport = false
        var finished = false
    }

    let journal: RequestJournal
    let date = Date()
    let start = ContinuousClock.now
    let method: String
    let url: String
    let route: JournaledRequest.Route
    /// Its key in the records inside a URLSession.
    let identifier = JournalRecord.nextIdentifier.wrappingAdd(1, ordering: .relaxed).oldValue
    private let state = Locked(State())

    init(journal: RequestJournal, request: NetworkRequest, route: JournaledRequest.Route) {
        self.journal = journal
        self.route = route
        method = request.method.rawValue
        var url = HARRedaction.default.redact(url: request.url?.absoluteString ?? request.description)
        if url.count > RequestJournal.maximumURLLength {
            url = String(url.prefix(RequestJournal.maximumURLLength)) + "…"
        }
        self.url = url
    }

    /// The request reached its transport: chaos on the point did not answer it alone.
    func reachedTransport() {
        state.withLock { $0.reachedTransport = true }
    }

    /// The request enters a URLSession, where ``ChaosURLProtocol`` may take the record over.
    func enterURLSession() {
        Self.inURLSession.withLock { $0[identifier] = self }
    }

    /// The request is back from the URLSession.
    func leaveURLSession() {
        _ = Self.inURLSession.withLock { $0.removeValue(forKey: identifier) }
    }

    /// The record of a ``ChaosNetworkClient`` request now inside a URLSession, taken over by
    /// ``ChaosURLProtocol``: from here on its transport is the protocol's stub set, which chaos
    /// on the point may again answer first.
    ///
    /// Returns `request` without the header that carries the record, and the record, if any.
    static func takeOver(_ request: HTTPRequest) -> (HTTPRequest, JournalRecord?) {
        var request = request
        let mark = request.headerFields[markHeader]
        guard mark != nil else { return (request, nil) }
        request.headerFields[markHeader] = nil
        return (request, takeOver(identifier: mark))
    }

    private static func takeOver(identifier: String?) -> JournalRecord? {
        guard let identifier = identifier.flatMap({ Int($0) }),
            let record = inURLSession.withLock({ $0[identifier] })
        else { return nil }
        record.state.withLock { $0.reachedTransport = false }
        return record
    }

    /// What answered, with the conditions that applied.
    func answered(by answer: JournaledRequest.Answer, conditions: [NetworkCondition] = []) {
        state.withLock {
            $0.answer = answer
            $0.conditions = conditions.map(\.description)
        }
    }

    /// The stub set refused the request; `nearMisses` say why each stub missed.
    func refused(nearMisses: [NearMiss]) {
        state.withLock {
            $0.answer = .refused
            $0.nearMisses = nearMisses
        }
    }

    /// Writes the request into the journal, once, with how it ended.
    func finish(_ result: Result<NetworkResponse, NetworkError>, client: (any NetworkClient)? = nil) {
        switch result {
        case .success(let response):
            finish(
                status: response.statusCode, bytes: response.body.count, error: response.interruption, client: client)
        case .failure(let error):
            finish(status: nil, bytes: nil, error: error, client: client)
        }
    }

    /// Writes the request into the journal, once, with how it ended.
    func finish(status: Int?, bytes: Int?, error: NetworkError?, client: (any NetworkClient)? = nil) {
        let duration = ContinuousClock.now - start
        guard
            let state = state.withLock({ state -> State? in
                guard !state.finished else { return nil }
                state.finished = true
                return state
            })
        else { return }
        let answer: JournaledRequest.Answer =
            state.answer
            ?? (state.reachedTransport ? .client(client.map { "\(type(of: $0))" } ?? "its client") : .chaos)
        journal.add { number in
            JournaledRequest(
                number: number, date: date, route: route, method: method, url: url, answer: answer,
                conditions: state.conditions, status: status, bytes: bytes, error: error?.description,
                duration: duration, nearMisses: state.nearMisses)
        }
    }
}

/// A ``ChaosNetworkClient``'s base as the point's transport while its request is journaled:
/// marks that the request got past chaos, and lets a stub set say what answered.
struct JournalingTransport: ResponseProducing {
    let base: any NetworkClient
    let record: JournalRecord

    func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
        let response = try await self.response(to: NetworkRequest(request, body: body))
        return (response.head, try response.completeBody())
    }

    func response(to request: NetworkRequest) async throws(NetworkError) -> NetworkResponse {
        record.reachedTransport()
        if let stubs = base as? StubSet {
            return try await stubs.respond(to: request, passThrough: nil, record: record)
        }
        if let client = base as? URLSessionNetworkClient {
            do {
                let (head, body) = try await client.send(request.head, body: request.body, record: record)
                return NetworkResponse(head, body: body)
            } catch {
                throw NetworkError(error)
            }
        }
        return try await NetworkRequest(request.head, body: request.body, transport: base).perform()
    }
}
