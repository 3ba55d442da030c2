import ChaosKit
import Foundation
import Testing

@testable import ChaosNetwork

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Each network fault caused for real against a local server, and by ChaosKit, seen the
/// same way in the same test: `data(for:)` (code, or status and body length) and a
/// delegate (was a response seen, how many bytes arrived, which code ended the task).
@Suite(.serialized) struct ErrorFidelityTests {
    /// What a client sees of one request.
    struct Observation: Equatable, CustomStringConvertible {
        /// `data(for:)`: the URLError code, or nil when it returned.
        var code: Int?
        /// `data(for:)`: status and body length when it returned.
        var status: Int?
        var bytes: Int?
        /// A data delegate: whether a response arrived, the bytes it received, the final code.
        var delegateSawResponse: Bool
        var delegateBytes: Int
        var delegateCode: Int?

        var description: String {
            let direct = code.map { "URLError \($0)" } ?? "\(status ?? 0), \(bytes ?? 0) bytes"
            return
                "data(for:) \(direct); delegate: response \(delegateSawResponse ? "yes" : "no"), \(delegateBytes) bytes, "
                + (delegateCode.map { "URLError \($0)" } ?? "no error")
        }
    }

    static let body = Data((0..<1_000).map { UInt8($0 % 251) })

    /// Requests `url` twice from sessions made of `configuration`: once with `data(for:)`,
    /// once with a data delegate.
    static func observe(_ url: URL, _ configuration: @escaping @Sendable () -> URLSessionConfiguration) async
        -> Observation
    {
        var observation = Observation(delegateSawResponse: false, delegateBytes: 0)
        do {
            let (data, response) = try await URLSession(configuration: configuration()).data(from: url)
            observation.status = (response as? HTTPURLResponse)?.statusCode
            observation.bytes = data.count
        } catch let error as URLError {
            observation.code = error.code.rawValue
        } catch {
            Issue.record("not a URLError: \(error)")
        }
        let collector = DataCollector()
        let session = URLSession(configuration: configuration(), delegate: collector, delegateQueue: nil)
        session.dataTask(with: url).resume()
        #expect(await collector.done.wait(seconds: 15))
        let (response, bytes, error) = collector.result
        observation.delegateSawResponse = response
        observation.delegateBytes = bytes
        observation.delegateCode = (error as? URLError)?.code.rawValue
        session.finishTasksAndInvalidate()
        return observation
    }

    static func real(_ url: URL, timeout: Double = 10) async -> Observation {
        await observe(url) {
            let configuration = URLSessionConfiguration.ephemeral
            configuration.timeoutIntervalForRequest = timeout
            return configuration
        }
    }

    /// The same request answered by a stub with `body` under `conditions`.
    static func chaos(_ url: URL, _ conditions: [NetworkCondition]) async -> Observation {
        let stubs = StubSet()
        stubs.stub(RequestMatcher(), conditions: conditions, .data(body, contentType: "application/octet-stream"))
        let observation = await observe(url) {
            let configuration = URLSessionConfiguration.ephemeral
            ChaosURLProtocol.install(stubs, into: configuration)
            return configuration
        }
        withExtendedLifetime(stubs) {}
        return observation
    }

    static func report(_ fault: String, real: Observation, chaos: Observation) {
        print("| \(fault) | \(real) | \(chaos) |")
    }

    @Test func refusedConnection() async throws {
        let url = URL(string: "http://127.0.0.1:\(try FaultServer.closedPort())/refused")!
        let real = await Self.real(url)
        let chaos = await Self.chaos(url, [.refused])
        Self.report("refused", real: real, chaos: chaos)
        #expect(real.code == URLError.Code.cannotConnectToHost.rawValue)
        #expect(real == chaos)
    }

    @Test func unknownHost() async throws {
        let url = URL(string: "http://nonexistent.invalid/dns")!
        let real = await Self.real(url)
        let chaos = await Self.chaos(url, [.dnsFailure])
        Self.report("DNS failure", real: real, chaos: chaos)
        #expect(real.code == URLError.Code.cannotFindHost.rawValue)
        #expect(real == chaos)
    }

    @Test func serverThatNeverAnswers() async throws {
        let server = try FaultServer(.neverAnswers)
        defer { server.stop() }
        let real = await Self.real(server.baseURL.appendingPathComponent("slow"), timeout: 1)
        let chaos = await Self.chaos(server.baseURL.appendingPathComponent("slow"), [.timeout(after: .seconds(1))])
        Self.report("timeout", real: real, chaos: chaos)
        #expect(real.code == URLError.Code.timedOut.rawValue)
        #expect(real == chaos)
    }

    @Test func resetMidBody() async throws {
        let server = try FaultServer(.cutBody(body: Self.body, declared: Self.body.count, sent: 400, reset: true))
        defer { server.stop() }
        let real = await Self.real(server.baseURL.appendingPathComponent("reset"))
        let chaos = await Self.chaos(server.baseURL.appendingPathComponent("reset"), [.connectionReset(keeping: 0.4)])
        Self.report("reset mid-body", real: real, chaos: chaos)
        #expect(real.code == URLError.Code.networkConnectionLost.rawValue && real.delegateBytes == 400)
        #expect(real == chaos)
    }

    @Test func bodyShorterThanItsContentLength() async throws {
        let server = try FaultServer(.cutBody(body: Self.body, declared: Self.body.count, sent: 400, reset: false))
        defer { server.stop() }
        let real = await Self.real(server.baseURL.appendingPathComponent("short"))
        let chaos = await Self.chaos(
            server.baseURL.appendingPathComponent("short"), [.truncated(keeping: 0.4, declaredLength: true)])
        Self.report("truncated (Content-Length)", real: real, chaos: chaos)
        #expect(real.code == NetworkError.shortBodyCode.rawValue && real.delegateBytes == 400)
        #expect(real == chaos)
    }

    @Test func bodyCutByTheConnectionClosing() async throws {
        let server = try FaultServer(.closeDelimited(body: Self.body, sent: 400))
        defer { server.stop() }
        let real = await Self.real(server.baseURL.appendingPathComponent("cut"))
        let chaos = await Self.chaos(server.baseURL.appendingPathComponent("cut"), [.truncated(keeping: 0.4)])
        Self.report("truncated (close-delimited)", real: real, chaos: chaos)
        #expect(real.status == 200 && real.bytes == 400)
        #expect(real == chaos)
    }

    /// A real "offline" cannot be caused inside this process (it needs the machine's
    /// network gone). What is checked: the condition fails like a connection failure
    /// before any response, with the code Apple's URLSession reports offline.
    @Test func offline() async throws {
        let chaos = await Self.chaos(URL(string: "https://api.test/offline")!, [.offline])
        #expect(
            chaos
                == Observation(
                    code: URLError.Code.notConnectedToInternet.rawValue, delegateSawResponse: false, delegateBytes: 0,
                    delegateCode: URLError.Code.notConnectedToInternet.rawValue))
    }

    /// The same faults through ChaosNetworkClient: what URLSessionNetworkClient throws for
    /// the real failure, the chaos one throws too.
    @Test func networkClientsAgree() async throws {
        let server = try FaultServer(.cutBody(body: Self.body, declared: Self.body.count, sent: 400, reset: true))
        defer { server.stop() }
        let url = server.baseURL.appendingPathComponent("reset")
        let live = await caught {
            try await URLSessionNetworkClient(session: URLSession(configuration: .ephemeral)).send(
                .init(method: .get, url: url), body: nil)
        }
        let stubs = StubSet()
        stubs.stub(RequestMatcher(), conditions: [.connectionReset(keeping: 0.4)], .data(Self.body))
        let chaos = await caught { try await ChaosNetworkClient(stubs).send(.init(method: .get, url: url), body: nil) }
        #expect(live as? NetworkError == .connectionLost)
        #expect(chaos as? NetworkError == .connectionLost)
        let port = try FaultServer.closedPort()
        let refusedURL = URL(string: "http://127.0.0.1:\(port)/")!
        let liveRefused = await caught {
            try await URLSessionNetworkClient(session: URLSession(configuration: .ephemeral)).send(
                .init(method: .get, url: refusedURL), body: nil)
        }
        #expect(liveRefused as? NetworkError == .refused(host: "127.0.0.1"))
        let stubsRefused = StubSet()
        stubsRefused.stub(RequestMatcher(), conditions: [.refused], .status(200))
        #expect(
            await caught {
                try await ChaosNetworkClient(stubsRefused).send(.init(method: .get, url: refusedURL), body: nil)
            } as? NetworkError
                == .refused(host: "127.0.0.1"))
    }
}

/// What a data delegate is told; written on the delegate queue, read after `done`, `lock` guards it.
final class DataCollector: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    private let lock = NSLock()
    private var sawResponse = false
    private var count = 0
    private var error: (any Error)?
    let done = Completion()

    var result: (Bool, Int, (any Error)?) { lock.withLock { (sawResponse, count, error) } }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
    ) {
        lock.withLock { sawResponse = true }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        lock.withLock { count += data.count }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        lock.withLock { self.error = error }
        done.signal()
    }
}
