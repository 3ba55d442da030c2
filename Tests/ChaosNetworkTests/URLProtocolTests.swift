import ChaosKit
import Foundation
import Testing

@testable import ChaosNetwork

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// URLSession interception. Per-session stub sets keep tests apart; global registration
/// and global chaos are process-wide, so everything here runs serialized.
@Suite(.serialized) struct URLProtocolTests {
    @Test func stubbedResponsesThroughURLSession() async throws {
        let stubs = StubSet()
        stubs.stub(try .get("/users/:id", host: "api.example.com"), name: "user", try .file(resourcePath("user.json")))
        stubs.stub(
            try .post("/users"),
            .block { matched in
                NetworkResponse(status: 201, headers: ["Location": "/users/8"], body: matched.request.body ?? Data())
            })
        let session = session(with: stubs)
        let user = await load(session, "https://api.example.com/users/7")
        #expect(user.status == 200)
        #expect(user.headers["content-type"] == "application/json")
        #expect(user.text.contains("Ada Lovelace"))
        let created = await load(
            session, "https://api.example.com/users", method: "POST", body: Data("{\"name\":\"Bo\"}".utf8))
        #expect(created.status == 201 && created.text == "{\"name\":\"Bo\"}")
        #expect(stubs.stub(named: "user")?.hitCount == 1)
    }

    @Test func failuresBecomeURLErrors() async throws {
        let stubs = StubSet()
        stubs.stub(try .get("/offline"), conditions: [.offline], .status(200))
        stubs.stub(try .get("/timeout"), .error(.timeout))
        stubs.stub(try .get("/dns"), conditions: [.dnsFailure], .status(200))
        stubs.stub(try .get("/busy"), conditions: [.tooManyRequests(retryAfter: 3)], .status(200))
        stubs.stub(try .get("/redirect"), .status(302, headers: ["Location": "https://api.example.com/elsewhere"]))
        let session = session(with: stubs)
        #expect(await load(session, "https://api.example.com/offline").error?.code == .notConnectedToInternet)
        #expect(await load(session, "https://api.example.com/timeout").error?.code == .timedOut)
        #expect(await load(session, "https://api.example.com/dns").error?.code == .cannotFindHost)
        let busy = await load(session, "https://api.example.com/busy")
        #expect(busy.status == 429 && busy.headers["retry-after"] == "3")
        // Redirects are answered as plain 3xx responses.
        let redirect = await load(session, "https://api.example.com/redirect")
        #expect(redirect.status == 302 && redirect.headers["location"] == "https://api.example.com/elsewhere")
        let unmatched = await load(session, "https://api.example.com/nothing")
        #expect(unmatched.error?.code == .resourceUnavailable)
        #expect(unmatched.error?.localizedDescription.contains("GET https://api.example.com/nothing") == true)
    }

    @Test func passThroughToALoopbackServer() async throws {
        let server = try echoServer()
        defer { server.stop() }
        let stubs = StubSet(unmatched: .passThrough)
        stubs.stub(try .get("/stubbed"), .string("stub"))
        let session = session(with: stubs)
        #expect(await load(session, server.baseURL.absoluteString + "/stubbed").text == "stub")
        let real = await load(
            session, server.baseURL.absoluteString + "/real", method: "PUT", body: Data("payload".utf8))
        #expect(real.status == 200 && real.headers["x-served-by"] == "loopback")
        #expect(real.text.contains("\"body\":\"payload\"") && real.text.contains("\"method\":\"PUT\""))
        let missing = await load(session, server.baseURL.absoluteString + "/missing")
        #expect(missing.status == 404)
        #expect(server.requestCount == 2)
    }

    @Test func sessionsWithDifferentSetsStayApart() async throws {
        let a = StubSet()
        let b = StubSet()
        a.stub(RequestMatcher(), .string("a"))
        b.stub(RequestMatcher(), .string("b"))
        let sessionA = session(with: a)
        let sessionB = session(with: b)
        async let first = load(sessionA, "https://x.test/")
        async let second = load(sessionB, "https://x.test/")
        let (resultA, resultB) = await (first, second)
        #expect(resultA.text == "a" && resultB.text == "b")
        #expect(a.requests.count == 1 && b.requests.count == 1)
    }

    @Test func latencyThroughURLSession() async throws {
        let stubs = StubSet()
        stubs.conditions = [.latency(.milliseconds(100))]
        stubs.stub(RequestMatcher(), .status(204))
        let clock = ContinuousClock()
        let start = clock.now
        #expect(await load(session(with: stubs), "https://x.test/").status == 204)
        #expect(clock.now - start >= .milliseconds(100))
    }

    @Test func globalProfileReachesURLSessionTraffic() async throws {
        let stubs = StubSet()
        stubs.stub(RequestMatcher(), .string("fine"))
        let session = session(with: stubs)
        ChaosNetwork.register()
        let profile = try ChaosProfile.decode(
            json: """
                { "seed": 3, "entries": [ { "point": "network.send", "match": { "host": "flaky.test" },
                  "provider": { "item": "status", "parameters": { "code": 503 } } } ] }
                """)
        let chaos = try profile.apply()
        defer { chaos.revertAll() }
        #expect(await load(session, "https://flaky.test/x").status == 503)
        #expect(await load(session, "https://steady.test/x").text == "fine")
        chaos.revertAll()
        #expect(await load(session, "https://flaky.test/x").text == "fine")
    }

    @Test func globalRegistrationForSessionsWithoutASet() async throws {
        // Registration applies to sessions created after it, with configurations that list
        // registered classes; `.default`/`.ephemeral` do not on Linux, so the stubbed set
        // is checked through canInit and a session made from a configuration after it.
        let stubs = StubSet()
        stubs.stub(RequestMatcher(), .string("global"))
        ChaosURLProtocol.registerGlobally(stubs)
        defer { ChaosURLProtocol.unregisterGlobally() }
        #expect(ChaosURLProtocol.canInit(with: URLRequest(url: URL(string: "https://any.test/")!)))
        #expect(!ChaosURLProtocol.canInit(with: URLRequest(url: URL(string: "ftp://any.test/")!)))
        let configuration = URLSessionConfiguration.ephemeral
        configuration.protocolClasses = [ChaosURLProtocol.self]
        #expect(await load(URLSession(configuration: configuration), "https://any.test/").text == "global")
        ChaosURLProtocol.unregisterGlobally()
        #expect(!ChaosURLProtocol.canInit(with: URLRequest(url: URL(string: "https://any.test/")!)))
    }
}
