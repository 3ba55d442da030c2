import ChaosKit
import Foundation
import HTTPTypes
@_exported import TestHelpers
import Testing

@testable import ChaosNetwork

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

struct User: Codable, Equatable, Sendable {
    var id: Int
    var name: String
}

/// A URLSession whose traffic goes through `stubs`.
func session(with stubs: StubSet) -> URLSession {
    let configuration = URLSessionConfiguration.ephemeral
    ChaosURLProtocol.install(stubs, into: configuration)
    return URLSession(configuration: configuration)
}

/// What a URLSession request produced: status, headers, body, or the URL error.
struct Outcome: Sendable {
    var status: Int?
    var headers: [String: String] = [:]
    var body = Data()
    var error: URLError?

    var text: String { String(decoding: body, as: UTF8.self) }
}

func load(
    _ session: URLSession, _ url: String, method: String = "GET", headers: [String: String] = [:], body: Data? = nil
) async -> Outcome {
    var request = URLRequest(url: URL(string: url)!)
    request.httpMethod = method
    for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
    request.httpBody = body
    do {
        let (data, response) = try await session.data(for: request)
        let http = response as? HTTPURLResponse
        var fields: [String: String] = [:]
        for (key, value) in http?.allHeaderFields ?? [:] { fields["\(key)".lowercased()] = "\(value)" }
        return Outcome(status: http?.statusCode, headers: fields, body: data)
    } catch let error as URLError {
        return Outcome(error: error)
    } catch {
        Issue.record("unexpected error \(error)")
        return Outcome()
    }
}

func request(_ method: HTTPRequest.Method = .get, _ url: String, headers: [String: String] = [:], body: Data? = nil)
    -> NetworkRequest
{
    var head = HTTPRequest(method: method, url: URL(string: url)!)
    for (name, value) in headers { head.headerFields[HTTPField.Name(name)!] = value }
    return NetworkRequest(head, body: body)
}

@discardableResult
func expectConfigurationError(sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void)
    -> ChaosError?
{
    do {
        try body()
        Issue.record("expected an invalidNetworkConfiguration error", sourceLocation: sourceLocation)
        return nil
    } catch let error as ChaosError {
        #expect(error.kind == .invalidNetworkConfiguration, "\(error)", sourceLocation: sourceLocation)
        return error
    } catch {
        Issue.record("expected a ChaosError, got \(error)", sourceLocation: sourceLocation)
        return nil
    }
}

func resourcePath(_ name: String) -> String {
    Bundle.module.path(forResource: name, ofType: nil, inDirectory: "Resources")!
}

/// An echo server: answers with method, target and body, and `x-echo-*` request headers.
func echoServer(maxRequests: Int = 200) throws -> LoopbackServer {
    // A generous idle timeout: under ThreadSanitizer a test may take tens of seconds to
    // reach its first request.
    try LoopbackServer(maxRequests: maxRequests, idleTimeout: 180) { request in
        var headers = ["Content-Type": "application/json", "X-Served-By": "loopback"]
        if let auth = request.headers["authorization"] { headers["X-Saw-Authorization"] = auth }
        let echo: [String: String] = [
            "method": request.method, "target": request.target, "body": String(decoding: request.body, as: UTF8.self),
        ]
        let data = (try? JSONSerialization.data(withJSONObject: echo, options: [.sortedKeys])) ?? Data()
        return LoopbackResponse(status: request.target.hasPrefix("/missing") ? 404 : 200, headers: headers, body: data)
    }
}
