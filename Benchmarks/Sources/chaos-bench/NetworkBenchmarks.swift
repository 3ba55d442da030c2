import ChaosNetwork
import Foundation
import LoopbackServer

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The floor: a URLProtocol that answers every request with one constant response.
final class BareProtocol: URLProtocol {
    static let body = Data(#"{"id":99,"name":"item"}"#.utf8)

    override class func canInit(with request: URLRequest) -> Bool { true }
    override class func canonicalRequest(for request: URLRequest) -> URLRequest { request }

    override func startLoading() {
        let response = HTTPURLResponse(
            url: request.url!, statusCode: 200, httpVersion: "HTTP/1.1",
            headerFields: ["Content-Type": "application/json"]
        )!
        client?.urlProtocol(self, didReceive: response, cacheStoragePolicy: .notAllowed)
        client?.urlProtocol(self, didLoad: Self.body)
        client?.urlProtocolDidFinishLoading(self)
    }

    override func stopLoading() {}
}

/// Sends `iterations` GET requests one after another and returns the elapsed nanoseconds.
func requests(_ session: URLSession, _ url: URL, _ iterations: Int) -> UInt64 {
    let done = DispatchSemaphore(value: 0)
    let start = now()
    for _ in 0..<iterations {
        let task = session.dataTask(with: url) { data, response, error in
            precondition(
                error == nil && (response as? HTTPURLResponse)?.statusCode == 200 && data?.isEmpty == false,
                "benchmark request failed: \(String(describing: error))")
            done.signal()
        }
        task.resume()
        done.wait()
    }
    return now() - start
}

/// Kept alive for the whole run: the protocol holds stub sets weakly.
nonisolated(unsafe) var benchmarkStubs: StubSet?
nonisolated(unsafe) var benchmarkServer: LoopbackServer?

func networkGroup() throws -> Group {
    let bareConfiguration = URLSessionConfiguration.ephemeral
    bareConfiguration.protocolClasses = [BareProtocol.self]
    let bare = URLSession(configuration: bareConfiguration)

    // 100 stubs; the newest matching stub wins, so the oldest one is tried last: the
    // request below matches only that one (the worst case for the search).
    let stubs = StubSet(logCapacity: 0)
    for index in 0..<100 {
        stubs.stub(try .get("/items/\(index)", host: "bench.test"), .data(BareProtocol.body))
    }
    benchmarkStubs = stubs
    let stubConfiguration = URLSessionConfiguration.ephemeral
    ChaosURLProtocol.install(stubs, into: stubConfiguration)
    let stubbed = URLSession(configuration: stubConfiguration)

    let server = try LoopbackServer(maxRequests: 10_000_000, idleTimeout: 60) { _ in
        LoopbackResponse(status: 200, headers: ["Content-Type": "application/json"], body: BareProtocol.body)
    }
    benchmarkServer = server
    let loopback = URLSession(configuration: .ephemeral)

    let itemURL = URL(string: "https://bench.test/items/0")!
    let serverURL = server.baseURL.appendingPathComponent("items/0")
    return Group(
        name: "network",
        metrics: [
            Metric(name: "urlsession_bare_protocol_rps", unit: .perSecond, iterations: 3_000) { n in
                requests(bare, itemURL, n)
            },
            Metric(name: "urlsession_chaos_stub_rps", unit: .perSecond, iterations: 3_000) { n in
                requests(stubbed, itemURL, n)
            },
            Metric(name: "urlsession_loopback_rps", unit: .perSecond, iterations: 1_000) { n in
                requests(loopback, serverURL, n)
            },
        ])
}
