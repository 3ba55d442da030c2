import ChaosKit
import ChaosNetwork
import ChaosTesting
import Foundation
import HTTPTypes
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `.networkStubs`: every test case gets its own stub set and session; in parallel, each
/// sees only its own answers.
@Suite(
    .networkStubs { stubs in
        stubs.stub(try .get("/shared"), .string("suite default"))
    })
struct NetworkStubsTraitTests {
    func text(_ url: String) async throws -> String {
        let network = try #require(ChaosNetworkTest.current)
        let (data, _) = try await network.session.data(from: URL(string: url)!)
        return String(decoding: data, as: UTF8.self)
    }

    @Test(arguments: 0..<20)
    func parallelCasesSeeOnlyTheirOwnStubs(index: Int) async throws {
        let network = try #require(ChaosNetworkTest.current)
        // The same request in every case, answered differently, with latency so the cases overlap.
        network.stubs.stub(try .get("/who"), conditions: [.latency(.milliseconds(20))], .string("case \(index)"))
        for _ in 0..<3 {
            #expect(try await text("https://api.test/who") == "case \(index)")
        }
        let (head, body) = try await network.client.send(
            HTTPRequest(method: .get, url: URL(string: "https://api.test/who")!), body: nil)
        #expect(head.status.code == 200 && String(decoding: body, as: UTF8.self) == "case \(index)")
        #expect(network.stubs.requests.count == 4, "only this case's requests reach its set")
        #expect(try await text("https://api.test/shared") == "suite default")
    }

    @Test func unmatchedRequestsFailNamingTheClosestStub() async throws {
        await #expect(throws: URLError.self) { _ = try await text("https://api.test/nothing") }
    }

    @Test(.chaos(ProfileEntry(ChaosNetwork.send, NetworkCondition.status(503).provider)))
    func taskScopedChaosReachesTheClientButNotTheSession() async throws {
        let network = try #require(ChaosNetworkTest.current)
        let url = URL(string: "https://api.test/shared")!
        let (head, _) = try await network.client.send(HTTPRequest(method: .get, url: url), body: nil)
        #expect(head.status.code == 503)
        #expect(try await text(url.absoluteString) == "suite default")
    }
}

@Suite struct NetworkStubsLifetimeTests {
    @Test func theSetIsUninstalledAndTheSessionInvalidatedAfterwards() async throws {
        weak var released: StubSet?
        // (The session is invalidated afterwards; swift-corelibs-foundation traps on using an
        // invalidated session, so that is not tried here.)
        try await ChaosNetworkTest.with(configure: { $0.stub(RequestMatcher(), .status(204)) }) {
            let network = try #require(ChaosNetworkTest.current)
            released = network.stubs
            #expect(ChaosURLProtocol.isInstalled(network.stubs))
            let (_, response) = try await network.session.data(from: URL(string: "https://x.test/")!)
            #expect((response as? HTTPURLResponse)?.statusCode == 204)
        }
        #expect(ChaosNetworkTest.current == nil)
        #expect(released == nil, "nothing keeps the set alive")
    }
}

/// A test that fails after its strict stub set refused a request is told which request,
/// the nearest stubs and what differed, however the app handled the refusal.
@Suite struct NetworkStubsRefusalTests {
    static let trait: NetworkStubsTrait = .networkStubs { stubs in
        stubs.stub(try .get("/v1/items/:id"), name: "items", .string("item"))
        stubs.stub(try .post("/v1/orders"), name: "orders", .status(201))
    }

    static func refusal(_ issue: Issue) -> String? {
        issue.comments.first { $0.rawValue.hasPrefix(NetworkStubsTrait.refusalMarker) }?.rawValue
    }

    /// What an app shows: the item, or "error" when the request failed (the error swallowed).
    static func shown(_ url: String) async throws -> String {
        let network = try #require(ChaosNetworkTest.current)
        guard let (data, _) = try? await network.session.data(from: URL(string: url)!) else { return "error" }
        return String(decoding: data, as: UTF8.self)
    }

    @Test func aFailedExpectationAfterARefusalNamesTheNearestStubs() async throws {
        let test = try #require(Test.current)
        let issues = try await ReplayTests.issuesRecorded {
            try await Self.trait.provideScope(for: test, testCase: nil) {
                let shown = try await Self.shown("https://api.test/v1/item/3")
                #expect(shown == "item")
            }
        }
        try #require(issues.count == 1)
        let comment = try #require(Self.refusal(issues[0]))
        #expect(
            comment.hasPrefix(
                "ChaosNetwork: the stub set refused 1 request:\n- GET https://api.test/v1/item/3 → refused; the nearest: 'items'"
            ))
        #expect(comment.contains("1 of 2 criteria met: path: expected template /v1/items/:id, got /v1/item/3"))
        #expect(
            comment.contains(
                "'orders' (POST any host exact /v1/orders), 0 of 2 criteria met: method: expected POST, got GET"))
    }

    @Test func anErrorThrownAfterARefusalIsRecordedWithTheReport() async throws {
        let test = try #require(Test.current)
        let issues = try await ReplayTests.issuesRecorded {
            try await Self.trait.provideScope(for: test, testCase: nil) {
                let network = try #require(ChaosNetworkTest.current)
                _ = try await network.session.data(from: URL(string: "https://api.test/v1/item/3")!)
            }
        }
        try #require(issues.count == 1)
        #expect(issues[0].error is URLError)
        #expect(Self.refusal(issues[0])?.contains("path: expected template /v1/items/:id, got /v1/item/3") == true)
    }

    @Test func withoutARefusalAFailureCarriesNoReport() async throws {
        let test = try #require(Test.current)
        let issues = try await ReplayTests.issuesRecorded {
            try await Self.trait.provideScope(for: test, testCase: nil) {
                let shown = try await Self.shown("https://api.test/v1/items/3")
                #expect(shown == "something else")
            }
        }
        try #require(issues.count == 1)
        #expect(Self.refusal(issues[0]) == nil)
    }
}
