import ChaosKit
public import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
public import HTTPTypes

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
        guard let mark = full.utf8.firstIndex(where: { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }) else { return full }
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
            if let close = text.firstIndex(of: "]") { return text[text.index(after: text.startIndex)..<close].lowercased() }
            return text.lowercased()
        }
        if let colon = text.lastIndex(of: ":") { text = text[..<colon] }
        return text.lowercased()
    }

    /// Calls the transport (what the point's original does).
    func perform() async throws(NetworkError) -> NetworkResponse {
        let client = transport ?? URLSessionNetworkClient.shared
        do {
            let (head, body) = try await client.send(head, body: body)
            return NetworkResponse(head, body: body)
        } catch {
            throw NetworkError(error)
        }
    }
}

/// A response as the ``ChaosNetwork/send`` point returns it.
public struct NetworkResponse: Sendable, CustomStringConvertible {
    /// Status and header fields.
    public var head: HTTPResponse
    /// The body (empty when there is none).
    public var body: Data

    /// A response with `head` and `body`.
    public init(_ head: HTTPResponse, body: Data = Data()) {
        self.head = head
        self.body = body
    }

    /// A response with a status code, header fields given as a dictionary, and a body.
    /// Header names that HTTP does not allow are skipped.
    public init(status: Int, headers: [String: String] = [:], body: Data = Data()) {
        var fields = HTTPFields()
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) {
            if let fieldName = HTTPField.Name(name) { fields.append(HTTPField(name: fieldName, value: value)) }
        }
        self.init(HTTPResponse(status: .init(code: status), headerFields: fields), body: body)
    }

    /// The status code.
    public var statusCode: Int { head.status.code }

    /// `200 (1234 bytes)`.
    public var description: String { "\(head.status.code) (\(body.count) bytes)" }
}

/// Why a request failed below HTTP: the failures chaos injects and real networks produce.
public enum NetworkError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No connection to the internet (`URLError.notConnectedToInternet`).
    case offline
    /// The request timed out (`URLError.timedOut`).
    case timeout
    /// The host name did not resolve (`URLError.cannotFindHost`).
    case dnsFailure(host: String)
    /// The request was cancelled.
    case cancelled
    /// No stub matched and the stub set fails unmatched requests; the message names the
    /// request and the closest stub.
    case noStub(String)
    /// Any other transport failure, described.
    case transport(String)

    /// Classifies any error: URL errors by code, `NetworkError`s as they are.
    public init(_ error: any Error) {
        if let network = error as? NetworkError { self = network; return }
        if error is CancellationError { self = .cancelled; return }
        if let url = error as? URLError {
            switch url.code {
            case .notConnectedToInternet, .dataNotAllowed: self = .offline
            case .timedOut: self = .timeout
            case .cannotFindHost, .dnsLookupFailed: self = .dnsFailure(host: url.failingURL?.host ?? "")
            case .cancelled: self = .cancelled
            default: self = .transport("URLError \(url.code.rawValue): \(url.localizedDescription)")
            }
            return
        }
        self = .transport(String(describing: error))
    }

    /// The `URLError` that URLSession reports for this failure (what ``ChaosURLProtocol`` fails with).
    public func urlError(for url: URL?) -> URLError {
        let code: URLError.Code = switch self {
        case .offline: .notConnectedToInternet
        case .timeout: .timedOut
        case .dnsFailure: .cannotFindHost
        case .cancelled: .cancelled
        case .noStub: .resourceUnavailable
        case .transport: .networkConnectionLost
        }
        var info: [String: Any] = [NSLocalizedDescriptionKey: description]
        if let url { info[NSURLErrorFailingURLErrorKey] = url }
        return URLError(code, userInfo: info)
    }

    /// A readable explanation.
    public var description: String {
        switch self {
        case .offline: "offline: the device is not connected to the internet"
        case .timeout: "timeout: the request timed out"
        case .dnsFailure(let host): "DNS failure: \(host.isEmpty ? "the host" : host) could not be resolved"
        case .cancelled: "cancelled"
        case .noStub(let message): message
        case .transport(let message): "transport failure: \(message)"
        }
    }
}
