import ChaosKit
import Foundation
import HTTPTypes
import Testing

@testable import ChaosNetwork

/// Stubs used directly as a `NetworkClient` (`StubSet.respond(to:)`): every matcher,
/// response kind, unmatched policy, hit counts and the request log.
@Suite struct StubMatchingTests {
    func status(_ stubs: StubSet, _ request: NetworkRequest) async -> Int? {
        try? await stubs.respond(to: request).statusCode
    }

    @Test func methodHostAndExactPath() async throws {
        let stubs = StubSet()
        stubs.stub(RequestMatcher(method: .get, host: "API.example.com", path: .exact("/users")), .status(201))
        #expect(await status(stubs, request(.get, "https://api.example.com/users")) == 201)
        #expect(await status(stubs, request(.get, "https://api.example.com:8443/users?page=2")) == 201)
        #expect(await status(stubs, request(.post, "https://api.example.com/users")) == nil)
        #expect(await status(stubs, request(.get, "https://other.example.com/users")) == nil)
        #expect(await status(stubs, request(.get, "https://api.example.com/users/1")) == nil)
    }

    @Test func prefixRegexAndTemplatePaths() async throws {
        let stubs = StubSet()
        stubs.stub(RequestMatcher(path: .prefix("/static/")), .status(210))
        stubs.stub(
            RequestMatcher(path: try .regex(#"/orders/(?<order>\d+)"#)),
            .block { matched in
                NetworkResponse(status: 211, body: Data(matched.pathParameters["order", default: "?"].utf8))
            })
        stubs.stub(
            try .get("/users/:id/posts/:post"),
            .block { matched in
                NetworkResponse(
                    status: 212, body: Data("\(matched.pathParameters["id"]!)-\(matched.pathParameters["post"]!)".utf8))
            })
        #expect(await status(stubs, request(.get, "https://x.test/static/app.js")) == 210)
        let order = try await stubs.respond(to: request(.get, "https://x.test/orders/42"))
        #expect(order.statusCode == 211 && order.body == Data("42".utf8))
        #expect(await status(stubs, request(.get, "https://x.test/orders/4x2")) == nil)
        let post = try await stubs.respond(to: request(.get, "https://x.test/users/a%20b/posts/9"))
        #expect(post.statusCode == 212 && String(decoding: post.body, as: UTF8.self) == "a b-9")
        #expect(await status(stubs, request(.get, "https://x.test/users/1/posts")) == nil)
        #expect(await status(stubs, request(.get, "https://x.test/users//posts/9")) == nil)
    }

    @Test func badTemplatesAndRegexesAreConfigurationErrors() {
        for template in ["users/:id", "/users/:", "/users/:id/:id", "/users/x:id", "/users/:1d", "/users?x=1"] {
            let error = expectConfigurationError { _ = try PathPattern.template(template) }
            #expect(error?.subject?.contains(template) == true)
        }
        expectConfigurationError { _ = try PathPattern.regex("(unclosed") }
    }

    @Test func queryHeadersAndBody() async throws {
        let stubs = StubSet()
        stubs.stub(RequestMatcher(query: ["q": "swift", "page": nil]), name: "search", .status(220))
        stubs.stub(RequestMatcher(headers: ["authorization": "Bearer t"]), name: "auth", .status(221))
        stubs.stub(RequestMatcher(method: .post, body: try .json(User(id: 1, name: "Ada"))), name: "json", .status(222))
        stubs.stub(RequestMatcher(method: .put, body: .contains("needle")), name: "contains", .status(223))
        stubs.stub(RequestMatcher(method: .patch, body: .string("exact")), name: "exact", .status(224))
        #expect(await status(stubs, request(.get, "https://x.test/s?page=3&q=swift")) == 220)
        #expect(await status(stubs, request(.get, "https://x.test/s?page&q=swift")) == 220)
        #expect(await status(stubs, request(.get, "https://x.test/s?q=swift")) == nil)
        #expect(await status(stubs, request(.get, "https://x.test/s?q=rust&page=1")) == nil)
        #expect(await status(stubs, request(.get, "https://x.test/", headers: ["Authorization": "Bearer t"])) == 221)
        #expect(await status(stubs, request(.get, "https://x.test/", headers: ["Authorization": "Bearer u"])) == nil)
        // JSON-aware: member order, whitespace and number spelling do not matter.
        let body = Data(#"{ "name" : "Ada", "id" : 1.0 }"#.utf8)
        #expect(await status(stubs, request(.post, "https://x.test/", body: body)) == 222)
        #expect(
            await status(stubs, request(.post, "https://x.test/", body: Data(#"{"id":2,"name":"Ada"}"#.utf8))) == nil)
        #expect(await status(stubs, request(.put, "https://x.test/", body: Data("a needle here".utf8))) == 223)
        #expect(await status(stubs, request(.patch, "https://x.test/", body: Data("exact".utf8))) == 224)
        #expect(await status(stubs, request(.patch, "https://x.test/", body: Data("exact!".utf8))) == nil)
        expectConfigurationError { _ = try BodyMatcher.jsonText("{not json") }
    }

    @Test func responsesFromFileDataJSONErrorAndBlock() async throws {
        let stubs = StubSet()
        stubs.stub(try .get("/file"), try .file(resourcePath("user.json")))
        stubs.stub(try .get("/data"), .data(Data([1, 2, 3]), status: 202, headers: ["X-A": "b"]))
        stubs.stub(try .get("/text"), .string("hi"))
        stubs.stub(try .get("/json"), try .json(User(id: 3, name: "Bo"), status: 201))
        stubs.stub(try .get("/error"), .error(.dnsFailure(host: "x.test")))
        stubs.stub(
            try .post("/echo"),
            .block { matched in
                let user = try matched.decodeBody(as: User.self)
                return NetworkResponse(
                    status: 200, headers: ["X-Q": matched.query["q"] ?? ""], body: Data(user.name.utf8))
            })
        let file = try await stubs.respond(to: request(.get, "https://x.test/file"))
        #expect(
            try JSONDecoder().decode([String: ProfileValueDecodable].self, from: file.body)["name"]
                == .string("Ada Lovelace"))
        #expect(file.head.headerFields[.contentType] == "application/json")
        let data = try await stubs.respond(to: request(.get, "https://x.test/data"))
        #expect(data.statusCode == 202 && data.body == Data([1, 2, 3]))
        #expect(data.head.headerFields[.contentType] == "application/json")  // the default MIME type
        #expect(data.head.headerFields[HTTPField.Name("X-A")!] == "b")
        let text = try await stubs.respond(to: request(.get, "https://x.test/text"))
        #expect(text.head.headerFields[.contentType] == "text/plain; charset=utf-8")
        let json = try await stubs.respond(to: request(.get, "https://x.test/json"))
        let decoded = try JSONDecoder().decode(User.self, from: json.body)
        #expect(json.statusCode == 201 && decoded == User(id: 3, name: "Bo"))
        let error = await caught { () async throws(NetworkError) in
            try await stubs.respond(to: request(.get, "https://x.test/error"))
        }
        #expect(error == .dnsFailure(host: "x.test"))
        let echo = try await stubs.respond(
            to: request(.post, "https://x.test/echo?q=1", body: try JSONEncoder().encode(User(id: 1, name: "Cy"))))
        #expect(String(decoding: echo.body, as: UTF8.self) == "Cy")
        #expect(echo.head.headerFields[HTTPField.Name("X-Q")!] == "1")
    }

    @Test func missingStubFileIsAConfigurationError() {
        let error = expectConfigurationError { _ = try StubResponse.file("/no/such/dir/user.json") }
        #expect(error?.subject == "/no/such/dir/user.json")
        #expect(error?.message.contains("does not exist") == true)
    }

    @Test func newestStubWinsAndRemoval() async throws {
        let stubs = StubSet()
        let first = stubs.stub(try .get("/a"), name: "first", .status(200))
        let second = stubs.stub(try .get("/a"), name: "second", .status(201))
        stubs.stub(try .get("/b"), name: "b", .status(202))
        #expect(await status(stubs, request(.get, "https://x.test/a")) == 201)
        #expect(stubs.remove(second))
        #expect(!stubs.remove(second))
        #expect(await status(stubs, request(.get, "https://x.test/a")) == 200)
        #expect(first.hitCount == 1 && second.hitCount == 1)
        #expect(stubs.stub(named: "b")?.hitCount == 0)
        stubs.removeAll()
        #expect(stubs.stubs.isEmpty)
        #expect(await status(stubs, request(.get, "https://x.test/a")) == nil)
    }

    @Test func unmatchedFailureNamesRequestAndNearestStubs() async throws {
        let stubs = StubSet()
        stubs.stub(try .get("/users/:id", host: "api.example.com"), name: "user", .status(200))
        stubs.stub(try .post("/orders"), name: "orders", .status(200))
        let error = await caught { () async throws(NetworkError) in
            try await stubs.respond(to: request(.delete, "https://api.example.com/users/7"))
        }
        guard case .noStub(let message)? = error else {
            Issue.record("expected noStub, got \(String(describing: error))")
            return
        }
        #expect(message.contains("DELETE https://api.example.com/users/7"))
        #expect(
            message.contains(
                "the nearest: 'user' (GET api.example.com template /users/:id), 2 of 3 criteria met: method: expected GET, got DELETE; 'orders'"
            ))
        #expect(message.contains("method: expected GET, got DELETE"))
        let empty = await caught { () async throws(NetworkError) in
            try await StubSet().respond(to: request(.get, "https://x.test/"))
        }
        #expect(empty.map { "\($0)" }?.contains("empty") == true)
    }

    @Test func unmatchedPassThroughReachesARealServer() async throws {
        let server = try echoServer()
        defer { server.stop() }
        let stubs = StubSet(unmatched: .passThrough)
        stubs.stub(try .get("/stubbed"), .status(299))
        #expect(await status(stubs, request(.get, server.baseURL.absoluteString + "/stubbed")) == 299)
        let real = try await stubs.respond(to: request(.get, server.baseURL.absoluteString + "/real?x=1"))
        #expect(real.statusCode == 200)
        #expect(String(decoding: real.body, as: UTF8.self).contains(#""target":"\/real?x=1""#))
        #expect(server.requestCount == 1)
    }

    @Test func requestLogForAssertions() async throws {
        let stubs = StubSet()
        stubs.stub(try .get("/a"), name: "a", .status(200))
        _ = await status(stubs, request(.get, "https://x.test/a"))
        _ = await status(stubs, request(.get, "https://x.test/zzz"))
        #expect(stubs.requests.map(\.stubName) == ["a", nil])
        #expect(stubs.requests.map(\.request.path) == ["/a", "/zzz"])
        stubs.clearLog()
        #expect(stubs.requests.isEmpty)
    }
}

/// Network conditions as stub modifiers and set-wide conditions.
@Suite struct StubConditionTests {
    let body = Data((0..<200).map { UInt8($0) })

    func stubs(_ conditions: [NetworkCondition], seed: UInt64 = 1) -> StubSet {
        let set = StubSet(seed: seed)
        set.stub(RequestMatcher(), conditions: conditions, .data(body))
        return set
    }

    func send(_ set: StubSet) async -> Result<NetworkResponse, NetworkError> {
        do throws(NetworkError) {
            return .success(try await set.respond(to: request(.get, "https://api.example.com/x")))
        } catch {
            return .failure(error)
        }
    }

    @Test func failures() async throws {
        #expect(await send(stubs([.offline])).failureValue == .offline)
        #expect(await send(stubs([.dnsFailure])).failureValue == .dnsFailure(host: "api.example.com"))
        #expect(await send(stubs([.timeout()])).failureValue == .timeout)
        let clock = ContinuousClock()
        let start = clock.now
        #expect(await send(stubs([.timeout(after: .milliseconds(40))])).failureValue == .timeout)
        #expect(clock.now - start >= .milliseconds(40))
    }

    @Test func latencyIsALowerBoundAndJitterReplays() async throws {
        let clock = ContinuousClock()
        let start = clock.now
        _ = await send(stubs([.latency(.milliseconds(80))]))
        #expect(clock.now - start >= .milliseconds(80))
        // Jitter draws from the seeded source: same seed, same waits.
        var a = SeededRandom(seed: 5)
        var b = SeededRandom(seed: 5)
        let jitter = NetworkCondition.latency(.milliseconds(1), jitter: .milliseconds(1))
        let request = request(.get, "https://x.test/")
        _ = try await jitter.apply(to: request, random: &a) { () async throws(NetworkError) in
            NetworkResponse(status: 200)
        }
        _ = try await jitter.apply(to: request, random: &b) { () async throws(NetworkError) in
            NetworkResponse(status: 200)
        }
        #expect(a == b)
    }

    @Test func bandwidthPresetsAndRates() async throws {
        let clock = ContinuousClock()
        let start = clock.now
        _ = await send(stubs([.bandwidth(bytesPerSecond: 1_000)]))  // 200 bytes at 1 kB/s
        #expect(clock.now - start >= .milliseconds(200))
        #expect(BandwidthPreset.allCases.map(\.rawValue) == ["gprs", "edge", "3g", "lte", "wifi"])
        #expect(BandwidthPreset.gprs.bytesPerSecond < BandwidthPreset.edge.bytesPerSecond)
        #expect(BandwidthPreset.edge.bytesPerSecond < BandwidthPreset.threeG.bytesPerSecond)
        let start2 = clock.now
        _ = await send(stubs([.bandwidth(.threeG)]))
        #expect(clock.now - start2 >= .milliseconds(100))
    }

    @Test func httpFaultsTruncationAndCorruption() async throws {
        for code in [500, 502, 503] {
            #expect(try await send(stubs([.status(code)])).get().statusCode == code)
        }
        #expect(try await send(stubs([.internalServerError])).get().statusCode == 500)
        let limited = try await send(stubs([.tooManyRequests(retryAfter: 7)])).get()
        #expect(limited.statusCode == 429 && limited.head.headerFields[.retryAfter] == "7")
        let truncated = try await send(stubs([.truncated(keeping: 0.25)])).get()
        #expect(truncated.body == body.prefix(50))
        let corrupted = try await send(stubs([.corrupted(bytes: 4)], seed: 9)).get()
        #expect(corrupted.body.count == body.count && corrupted.body != body)
        let again = try await send(stubs([.corrupted(bytes: 4)], seed: 9)).get()
        #expect(again.body == corrupted.body)
    }

    @Test func setWideConditionsApplyToEveryRequest() async throws {
        let set = stubs([])
        set.conditions = [.timeout(after: .milliseconds(20))]
        #expect(await send(set).failureValue == .timeout)
        set.conditions = []
        #expect(await send(set).failureValue == nil)
    }
}

extension Result {
    var failureValue: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}

/// Decodes any JSON scalar, for reading fixture files in tests.
enum ProfileValueDecodable: Decodable, Equatable {
    case string(String)
    case number(Double)
    case other

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let text = try? container.decode(String.self) {
            self = .string(text)
        } else if let number = try? container.decode(Double.self) {
            self = .number(number)
        } else {
            self = .other
        }
    }
}
