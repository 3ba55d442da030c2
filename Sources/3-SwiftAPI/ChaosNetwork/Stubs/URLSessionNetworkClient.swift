public import Foundation
public import HTTPTypes
import HTTPTypesFoundation

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// The live ``NetworkClient``: sends requests with a `URLSession`.
///
/// Failures are thrown as ``NetworkError`` (offline, timeout, DNS failure, …).
public struct URLSessionNetworkClient: NetworkClient {
    /// A client on `URLSession.shared`.
    public static let shared = URLSessionNetworkClient(session: .shared)

    /// The session requests go through.
    public let session: URLSession

    /// A client sending through `session`.
    public init(session: URLSession) {
        self.session = session
    }

    /// Sends `request` with `body`.
    public func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
        guard var urlRequest = URLRequest(httpRequest: request) else {
            throw NetworkError.transport(
                "\(request.method.rawValue) \(request.path ?? "") has no usable URL; give it a scheme and an authority")
        }
        urlRequest.httpBody = body
        return try await Self.perform(urlRequest, on: session)
    }

    /// Sends `request` with `body`; when the session has a ``ChaosURLProtocol`` installed,
    /// it carries the journal record `record` there (in a header the protocol takes off
    /// before anything sees the request), so that the protocol writes what answered into
    /// it instead of journaling the request a second time. A session without the protocol
    /// sends the request as it is: the header never leaves the process.
    func send(_ request: HTTPRequest, body: Data?, record: JournalRecord) async throws -> (HTTPResponse, Data) {
        let intercepted = (session.configuration.protocolClasses ?? []).contains { $0 is ChaosURLProtocol.Type }
        guard intercepted else { return try await send(request, body: body) }
        var marked = request
        marked.headerFields[JournalRecord.markHeader] = String(record.identifier)
        record.enterURLSession()
        defer { record.leaveURLSession() }
        return try await send(marked, body: body)
    }

    static func perform(_ urlRequest: URLRequest, on session: URLSession) async throws(NetworkError) -> (
        HTTPResponse, Data
    ) {
        let data: Data
        let response: URLResponse
        do {
            (data, response) = try await session.data(for: urlRequest)
        } catch {
            throw NetworkError(error)
        }
        guard let http = response as? HTTPURLResponse, let head = http.httpResponse else {
            throw NetworkError.transport(
                "the response to \(urlRequest.url?.absoluteString ?? "the request") is not HTTP")
        }
        return (head, data)
    }
}

/// The client a ``StubSet`` passes unmatched requests to when installed in a URLSession:
/// a session without ``ChaosURLProtocol``, and a mark on each request that the protocol
/// declines, so that a pass-through never loops back into the stubs.
struct PassThroughClient: NetworkClient {
    static let shared = PassThroughClient()
    static let markKey = "ChaosKit.passThrough"

    let session: URLSession = {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.protocolClasses = (configuration.protocolClasses ?? []).filter {
            ($0 as? ChaosURLProtocol.Type) == nil
        }
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        return URLSession(configuration: configuration)
    }()

    func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
        guard let urlRequest = URLRequest(httpRequest: request) else {
            throw NetworkError.transport("\(request.method.rawValue) \(request.path ?? "") has no usable URL")
        }
        let marked = NSMutableURLRequest(url: urlRequest.url!)
        marked.httpMethod = urlRequest.httpMethod ?? "GET"
        marked.allHTTPHeaderFields = urlRequest.allHTTPHeaderFields
        marked.httpBody = body
        URLProtocol.setProperty(true, forKey: Self.markKey, in: marked)
        return try await URLSessionNetworkClient.perform(marked as URLRequest, on: session)
    }
}
