import ChaosKit
import Foundation
import HTTPTypes
import Testing

@testable import ChaosNetwork

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The request journal: what answered each request, and for a refused one, why every
/// nearest stub missed.
@Suite struct RequestJournalTests {
    /// The shared journal's requests whose URL carries `marker` (other suites write to it too).
    static func journaled(_ marker: String) -> [JournaledRequest] {
        RequestJournal.shared.requests.filter { $0.url.contains(marker) }
    }

    @Test func urlSessionRequestsAreJournaledMatchedPassedThroughAndRefused() async throws {
        let server = try echoServer()
        defer { server.stop() }
        let run = UUID().uuidString
        let base = server.baseURL.absoluteString
        let stubs = StubSet(unmatched: .passThrough)
        stubs.stub(try .get("/v1/items/:id"), name: "items", .string("item"))
        stubs.stub(try .get("/v1/slow"), name: "slow", conditions: [.latency(.milliseconds(40))], .status(202))
        let session = session(with: stubs)

        let matched = await load(session, "\(base)/v1/items/3?run=\(run)&token=secret")
        #expect(matched.status == 200 && matched.text == "item")
        #expect(await load(session, "\(base)/v1/slow?run=\(run)").status == 202)
        let real = await load(session, "\(base)/real?run=\(run)")
        #expect(
            real.status == 200 && server.requestCount == 1,
            "passed through: status \(real.status.map(String.init) ?? "none"), error \(real.error.map { "\($0.code.rawValue) \($0.localizedDescription)" } ?? "none"), the server saw \(server.requestCount)"
        )
        stubs.unmatched = .fail
        let refused = await load(session, "\(base)/v1/item/3?run=\(run)")
        #expect(refused.error != nil)

        let journal = Self.journaled(run)
        try #require(journal.count == 4)
        #expect(journal.map(\.number) == journal.map(\.number).sorted(), "oldest first")
        let (item, slow, passed, denied) = (journal[0], journal[1], journal[2], journal[3])
        #expect(journal.allSatisfy { $0.route == .urlSession && $0.method == "GET" })

        #expect(item.answer == .stub("items"))
        #expect(item.status == 200 && item.bytes == 4 && item.error == nil)
        #expect(item.url.hasPrefix("\(base)/v1/items/3?run=\(run)&token="))
        #expect(!item.url.contains("secret"), "secret query values are redacted as in HAR files")
        #expect(item.nearMisses.isEmpty)

        #expect(slow.answer == .stub("slow") && slow.status == 202 && slow.bytes == 0)
        #expect(slow.conditions == [NetworkCondition.latency(.milliseconds(40)).description])
        #expect(slow.duration >= .milliseconds(40), "the duration covers the latency: \(slow.duration)")

        #expect(passed.answer == .passedThrough)
        #expect(passed.status == 200 && (passed.bytes ?? 0) > 0 && passed.error == nil, "journaled: \(passed)")

        #expect(denied.answer == .refused && denied.status == nil && denied.bytes == nil)
        #expect(denied.error?.contains("no stub matches") == true)
        // Both stubs miss on the path alone; the template shares more of it (/v1/item…).
        #expect(denied.nearMisses.map(\.stub) == ["items", "slow"])
        #expect(
            denied.nearMisses.first?.differences.map(\.description) == [
                "path: expected template /v1/items/:id, got /v1/item/3"
            ])
        #expect(denied.date <= Date() && item.date <= slow.date)
    }

    @Test func clientRequestsNameTheResponseSetTheChaosOrTheClientThatAnswered() async throws {
        let server = try echoServer()
        defer { server.stop() }
        let journal = RequestJournal(capacity: 10)
        let store = try ResponseSetStore()
        store.add(
            try ResponseSet(
                "login", matching: .post("/login"),
                [.init("success", .status(200)), .init("expired", .status(401))]))
        try store.select("expired", for: "login")
        let stubs = StubSet()
        stubs.add(store)
        let client = ChaosNetworkClient(stubs, journal: journal)
        let login = HTTPRequest(method: .post, url: URL(string: "https://api.test/login")!)
        let (head, _) = try await client.send(login, body: nil)
        #expect(head.status.code == 401)

        _ = try await Chaos.with([ProfileEntry(ChaosNetwork.send, NetworkCondition.offline.provider)]) {
            await #expect(throws: NetworkError.offline) { _ = try await client.send(login, body: nil) }
        }

        let live = ChaosNetworkClient(
            URLSessionNetworkClient(session: URLSession(configuration: .ephemeral)), journal: journal)
        let (echo, body) = try await live.send(
            HTTPRequest(method: .get, url: URL(string: server.baseURL.absoluteString + "/live")!), body: nil)
        #expect(echo.status.code == 200)

        let requests = journal.requests
        try #require(requests.count == 3)
        #expect(requests.map(\.route) == [.client, .client, .client])
        #expect(requests[0].answer == .responseSet("login", response: "expired") && requests[0].status == 401)
        #expect(requests[1].answer == .chaos && requests[1].error == NetworkError.offline.description)
        #expect(requests[2].answer == .client("URLSessionNetworkClient"))
        #expect(requests[2].status == 200 && requests[2].bytes == body.count)
        #expect(requests[0].description.contains("POST https://api.test/login → response set 'login' → expired 401"))
    }

    @Test func aClientOverAStubbedURLSessionJournalsEachRequestOnceWithItsStub() async throws {
        let run = UUID().uuidString
        let journal = RequestJournal(capacity: 10)
        let stubs = StubSet()
        // The header that carries the record into the protocol is off before any stub looks.
        stubs.stub(
            try .get("/v1/items/:id"), name: "items",
            .block { matched in NetworkResponse(status: matched.header("X-ChaosKit-Journal-Record") == nil ? 200 : 500)
            })
        stubs.stub(try .get("/v1/slow"), name: "slow", conditions: [.latency(.milliseconds(5))], .status(202))
        let client = ChaosNetworkClient(URLSessionNetworkClient(session: session(with: stubs)), journal: journal)
        for path in ["/v1/items/3", "/v1/slow", "/v1/item/3"] {
            _ = try? await client.send(
                HTTPRequest(method: .get, url: URL(string: "https://api.test\(path)?run=\(run)")!), body: nil)
        }
        #expect(journal.requests.map(\.answer) == [.stub("items"), .stub("slow"), .refused])
        #expect(journal.requests.map(\.route) == [.client, .client, .client])
        #expect(journal.requests.map(\.status) == [200, 202, nil])
        #expect(journal.requests.last?.nearMisses.first?.stub == "items")
        #expect(Self.journaled(run).isEmpty, "the protocol wrote into the client's record, not a second one")
    }

    @Test func nearMissesRankStubsByFailedThenMetCriteriaAndNameEachDifference() throws {
        let stubs = StubSet()
        stubs.stub(try .get("/v1/items/:id", host: "api.test"), name: "items", .status(200))
        stubs.stub(try .post("/v1/orders"), name: "orders", .status(201))
        stubs.stub(
            RequestMatcher(
                method: .get, path: try .template("/v1/items/:id"), query: ["q": "shoes"],
                headers: ["Accept": "application/json"]),
            name: "search", .status(200))
        stubs.stub(try .get("/v1/item/:id", host: "other.test"), name: "other host", .status(200))

        let misses = stubs.nearMisses(for: request(.get, "https://api.test/v1/item/3"))
        // items and other host fail one of three criteria (the newer first), orders two,
        // search three (left out: three are listed).
        #expect(misses.map(\.stub) == ["other host", "items", "orders"])
        #expect(misses.map(\.satisfied) == [2, 2, 0])
        #expect(misses.map(\.criteria) == [3, 3, 2])
        #expect(misses[0].differences.map(\.description) == ["host: expected other.test, got api.test"])
        #expect(misses[1].differences.map(\.part) == [.path])
        #expect(
            misses[2].differences.map(\.description) == [
                "method: expected POST, got GET", "path: expected exact /v1/orders, got /v1/item/3",
            ])
        #expect(
            stubs.nearMisses(for: request(.get, "https://api.test/v1/item/3"), limit: 1).map(\.stub) == ["other host"])

        let search = try #require(stubs.stub(named: "search"))
        let wrongQuery = search.matcher.differences(request(.get, "https://api.test/v1/items/3?q=boots"))
        #expect(
            wrongQuery.map(\.description) == [
                "query q: expected 'shoes', got 'boots'", "header Accept: expected 'application/json', got none",
            ])
        let json = RequestMatcher(method: .post, body: try .jsonText(#"{"a": 1}"#))
        #expect(
            json.differences(request(.post, "https://api.test/", body: Data(#"{"a":2}"#.utf8))).map(\.description) == [
                "body: expected json {\"a\":1}, got 7 bytes that differ"
            ])
        #expect(json.differences(request(.post, "https://api.test/", body: Data(#"{ "a" : 1 }"#.utf8))).isEmpty)
    }

    @Test func theRingStaysBoundedAfterManyRequests() async throws {
        let journal = RequestJournal(capacity: 50)
        let stubs = StubSet(logCapacity: 0)
        stubs.stub(RequestMatcher(), name: "any", .status(204))
        let client = ChaosNetworkClient(stubs, journal: journal)
        for index in 0..<2_000 {
            _ = try await client.send(
                HTTPRequest(method: .get, url: URL(string: "https://x.test/\(index)")!), body: nil)
        }
        #expect(journal.requests.count == 50)
        #expect(journal.recordedCount == 2_000)
        #expect(journal.requests.map(\.number) == Array(1_951...2_000))
        #expect(journal.requests.last?.url == "https://x.test/1999")

        journal.capacity = 5
        #expect(journal.requests.map(\.number) == Array(1_996...2_000), "lowering the capacity keeps the newest")
        _ = try await client.send(HTTPRequest(method: .get, url: URL(string: "https://x.test/next")!), body: nil)
        #expect(journal.requests.map(\.number) == Array(1_997...2_001))

        journal.capacity = 0
        #expect(!journal.isEnabled && journal.requests.isEmpty)
        _ = try await client.send(HTTPRequest(method: .get, url: URL(string: "https://x.test/off")!), body: nil)
        #expect(journal.recordedCount == 2_001, "an off journal records nothing")

        // A set's own log is the same ring: it keeps the newest, dropping the oldest one
        // at a time.
        let logged = StubSet(logCapacity: 3)
        logged.stub(RequestMatcher(), name: "any", .status(204))
        let loggedClient = ChaosNetworkClient(logged, journal: RequestJournal(capacity: 0))
        for index in 0..<7 {
            _ = try await loggedClient.send(
                HTTPRequest(method: .get, url: URL(string: "https://x.test/log/\(index)")!), body: nil)
        }
        #expect(logged.requests.map(\.request.path) == ["/log/4", "/log/5", "/log/6"])
        logged.clearLog()
        #expect(logged.requests.isEmpty)

        let long = RequestJournal(capacity: 1)
        let path = String(repeating: "a", count: 10_000)
        _ = try await ChaosNetworkClient(stubs, journal: long).send(
            HTTPRequest(method: .get, url: URL(string: "https://x.test/\(path)")!), body: nil)
        #expect(long.requests.first?.url.count == RequestJournal.maximumURLLength + 1, "long URLs are cut")
    }
}
