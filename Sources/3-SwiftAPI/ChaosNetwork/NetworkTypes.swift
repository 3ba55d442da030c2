import ChaosKit
public import Foundation
public import HTTPTypes

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Something that sends HTTP requests: the dependency an app injects instead of calling
/// `URLSession` directly. ``URLSessionNetworkClient`` is the live one, ``ChaosNetworkClient``
/// routes another client through the ``ChaosNetwork/send`` injection point, and a
/// ``StubSet`` answers from stubs.
public protocol NetworkClient: Sendable {
    /// Sends `request` with `body` and returns the response head and body.
    func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data)
}

/// A request as the ``ChaosNetwork/send`` point sees it: the head, the body, and the
/// client that performs it when the point calls its original.
public struct NetworkRequest: Sendable, CustomStringConvertible {
    /// Method, scheme, authority, path and header fields.
    public var head: HTTPRequest
    /// The body, if any.
    public var body: Data?
    /// Who performs the request when chaos lets it through (nil: the shared live client).
    public var transport: (any NetworkClient)?

    /// A request with `head` and `body`, sent through `transport` (the live client when nil).
    public init(_ head: HTTPRequest, body: Data? = nil, transport: (any NetworkClient)? = nil) {
        self.head = head
        self.body = body
        self.transport = transport
    }

    /// The method.
    public var method: HTTPRequest.Method { head.method }

    /// The host, lower-cased, without port or IPv6 brackets (nil when the request has no authority).
    public var host: String? {
        guard let authority = head.authority, !authority.isEmpty else { return nil }
        return NetworkRequest.host(ofAuthority: authority)
    }

    /// The path without the query (`/users/7`).
    public var path: String {
        let full = head.path ?? "/"
        guard let mark = full.utf8.firstIndex(where: { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }) else {
            return full
        }
        return String(full[..<mark])
    }

    /// The query items, decoded, in order (empty without a query).
    public var queryItems: [URLQueryItem] {
        guard let full = head.path, let mark = full.firstIndex(of: "?") else { return [] }
        var query = full[full.index(after: mark)...]
        if let hash = query.firstIndex(of: "#") { query = query[..<hash] }
        var components = URLComponents()
        components.percentEncodedQuery = String(query)
        return components.queryItems ?? []
    }

    /// The full URL, when the head has scheme and authority.
    public var url: URL? { head.url }

    /// `GET https://api.example.com/users/7`, for logs and error messages.
    public var description: String {
        "\(head.method.rawValue) \(head.scheme ?? "https")://\(head.authority ?? "")\(head.path ?? "")"
    }

    static func host(ofAuthority authority: String) -> String {
        // The common case, checked byte by byte: an ASCII host name, maybe a port.
        var bytes: [UInt8] = []
        bytes.reserveCapacity(authority.utf8.count)
        var plain = true
        for byte in authority.utf8 {
            if byte == UInt8(ascii: ":") { break }
            if byte >= 0x80 || byte == UInt8(ascii: "@") || byte == UInt8(ascii: "[") {
                plain = false
                break
            }
            bytes.append(byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte + 32 : byte)
        }
        if plain { return String(decoding: bytes, as: UTF8.self) }
        var text = Substring(authority)
        if let at = text.lastIndex(of: "@") { text = text[text.index(after: at)...] }
        if text.hasPrefix("[") {
            if let close = text.firstIndex(of: "]") {
                return text[text.index(after: text.startIndex)..<close].lowercased()
            }
            return text.lowercased()
        }
        if let colon = text.lastIndex(of: ":") { text = text[..<colon] }
        return text.lowercased()
    }

    /// Calls the transport (what the point's original does).
    func perform() async throws(NetworkError) -> NetworkResponse {
        let client = transport ?? URLSessionNetworkClient.shared
        if let producer = client as? any ResponseProducing {
            // Keeps a response's interruption, which the NetworkClient interface cannot carry.
            return try await producer.response(to: NetworkRequest(head, body: body))
        }
        do {
            let (head, body) = try await client.send(head, body: body)
            return NetworkResponse(head, body: body)
        } catch {
            throw NetworkError(error)
        }
    }
}

/// A client that answers with whole ``NetworkResponse``s (stub sets), so that a response
/// interrupted mid-body reaches URLSession as one, not as a thrown error.
protocol ResponseProducing: NetworkClient {
    func response(to request: NetworkRequest) async throws(NetworkError) -> NetworkResponse
}

/// A response as the ``ChaosNetwork/send`` point returns it.
public struct NetworkResponse: Sendable, CustomStringConvertible {
    /// Status and header fields.
    public var head: HTTPResponse
    /// The body (empty when there is none). When ``interruption`` is set, the part of the
    /// body that arrived before the transfer broke.
    public var body: Data
    /// Why the transfer broke after the head and ``body`` arrived (a connection reset mid-body,
    /// a body shorter than its `Content-Length`), or nil for a complete response. URLSession
    /// delegates receive the head and the partial body, then this error, as from a real
    /// server; ``ChaosNetworkClient`` and ``StubSet`` throw it, as `URLSession.data(for:)` does.
    public var interruption: NetworkError?

    /// A response with `head` and `body`.
    public init(_ head: HTTPResponse, body: Data = Data()) {
        self.head = head
        self.body = body
        self.interruption = nil
    }

    /// A response with a status code, header fields given as a dictionary, and a body.
    /// Header names that HTTP does not allow are skipped.
    public init(status: Int, headers: [String: String] = [:], body: Data = Data()) {
        var fields = HTTPFields()
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) {
            if let fieldName = HTTPField.Name(name) { fields.append(HTTPField(name: fieldName, value: value)) }
        }
        self.init(
            HTTPResponse(status: .init(code: NetworkResponse.checkedStatus(status)), headerFields: fields), body: body)
    }

    /// `code` when `HTTPResponse.Status` takes it (0…999, which it traps outside of), else 500:
    /// a stub's status is the program's own choice, so this only keeps a typo from crashing.
    static func checkedStatus(_ code: Int) -> Int {
        (0...999).contains(code) ? code : 500
    }

    /// The body, or the interruption thrown: what a caller of `URLSession.data(for:)` gets.
    func completeBody() throws(NetworkError) -> Data {
        if let interruption { throw interruption }
        return body
    }

    /// The status code.
    public var statusCode: Int { head.status.code }

    /// `200 (1234 bytes)`.
    public var description: String { "\(head.status.code) (\(body.count) bytes)" }
}

/// Why a request failed below HTTP: the failures chaos injects and real networks produce.
/// Each has the `URLError` code URLSession reports for it (``urlError(for:)``).
public enum NetworkError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No connection to the internet (`URLError.notConnectedToInternet`).
    case offline
    /// The request timed out (`URLError.timedOut`).
    case timeout
    /// The host name did not resolve (`URLError.cannotFindHost`).
    case dnsFailure(host: String)
    /// The host refused the connection: nothing listens on the port
    /// (`URLError.cannotConnectToHost`).
    case refused(host: String)
    /// The connection broke while the response was arriving, e.g. reset mid-body
    /// (`URLError.networkConnectionLost`).
    case connectionLost
    /// The request was cancelled.
    case cancelled
    /// No stub matched and the stub set fails unmatched requests; the message names the
    /// request and the closest stub.
    case noStub(String)
    /// A failure with this `URLError` code (its raw value) and description: what the
    /// platform reports for failures without a case of their own (a TLS failure, a body
    /// shorter than its `Content-Length` on swift-corelibs-foundation …).
    case urlError(code: Int, String)
    /// Any other transport failure, described.
    case transport(String)

    /// A URL error's classification with `host` for the cases that name one.
    init(_ error: URLError, host: String) {
        switch NetworkError(error) {
        case .dnsFailure: self = .dnsFailure(host: host)
        case .refused: self = .refused(host: host)
        case let other: self = other
        }
    }

    /// Classifies any error: URL errors by code, `NetworkError`s as they are.
    public init(_ error: any Error) {
        if let network = error as? NetworkError {
            self = network
            return
        }
        if error is CancellationError {
            self = .cancelled
            return
        }
        if let url = error as? URLError {
            switch url.code {
            case .notConnectedToInternet, .dataNotAllowed: self = .offline
            case .timedOut: self = .timeout
            case .cannotFindHost, .dnsLookupFailed: self = .dnsFailure(host: url.failingURL?.host ?? "")
            case .cannotConnectToHost: self = .refused(host: url.failingURL?.host ?? "")
            case .networkConnectionLost: self = .connectionLost
            case .cancelled: self = .cancelled
            default: self = .urlError(code: url.code.rawValue, url.localizedDescription)
            }
            return
        }
        self = .transport(String(describing: error))
    }

    /// The `URLError` code URLSession reports for this failure.
    public var urlErrorCode: URLError.Code {
        switch self {
        case .offline: .notConnectedToInternet
        case .timeout: .timedOut
        case .dnsFailure: .cannotFindHost
        case .refused: .cannotConnectToHost
        case .connectionLost: .networkConnectionLost
        case .cancelled: .cancelled
        case .noStub: .resourceUnavailable
        case .urlError(let code, _): Self.code(code)
        case .transport: .networkConnectionLost
        }
    }

    /// The `URLError` that URLSession reports for this failure (what ``ChaosURLProtocol`` fails with).
    public func urlError(for url: URL?) -> URLError {
        var info: [String: Any] = [NSLocalizedDescriptionKey: description]
        if let url {
            info[NSURLErrorFailingURLErrorKey] = url
        }
        return URLError(urlErrorCode, userInfo: info)
    }

    private static func code(_ raw: Int) -> URLError.Code {
        #if canImport(FoundationNetworking)
        URLError.Code(rawValue: raw) ?? .unknown
        #else
        URLError.Code(rawValue: raw)
        #endif
    }

    /// The code URLSession reports when a response body ends before its `Content-Length`:
    /// `networkConnectionLost` on Apple platforms; swift-corelibs-foundation passes on
    /// libcurl's "partial file" as `unknown` (-1).
    public static var shortBodyCode: URLError.Code {
        #if canImport(FoundationNetworking)
        .unknown
        #else
        .networkConnectionLost
        #endif
    }

    /// A readable explanation.
    public var description: String {
        switch self {
        case .offline: "offline: the device is not connected to the internet"
        case .timeout: "timeout: the request timed out"
        case .dnsFailure(let host): "DNS failure: \(host.isEmpty ? "the host" : host) could not be resolved"
        case .refused(let host):
            "connection refused: \(host.isEmpty ? "the host" : host) does not accept connections on that port"
        case .connectionLost: "connection lost: the connection broke while the response was arriving"
        case .cancelled: "cancelled"
        case .noStub(let message): message
        case .urlError(let code, let message): "URL error \(code): \(message)"
        case .transport(let message): "transport failure: \(message)"
        }
    }
}
