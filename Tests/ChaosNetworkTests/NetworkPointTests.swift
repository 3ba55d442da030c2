import ChaosKit
import Foundation
import HTTPTypes
import Testing

@testable import ChaosNetwork

/// The `network.send` point: live client, catalogue items, profile `match`. Chaos here is
/// task-scoped (`Chaos.with`), so these tests run in parallel without seeing each other.
@Suite struct NetworkPointTests {
    let stubs: StubSet
    let client: ChaosNetworkClient

    init() throws {
        stubs = StubSet()
        stubs.stub(RequestMatcher(), name: "any", try .json(User(id: 1, name: "Ada")))
        client = ChaosNetworkClient(stubs)
        ChaosNetwork.register()
    }

    func send(_ url: String = "https://api.example.com/users/1", method: HTTPRequest.Method = .get) async throws -> (
        HTTPResponse, Data
    ) {
        try await client.send(HTTPRequest(method: method, url: URL(string: url)!), body: nil)
    }

    func item(_ name: String, _ parameters: [String: ProfileValue] = [:]) -> ProfileEntry {
        ProfileEntry(point: "network.send", .catalogue(name, ProfileParameters(parameters)))
    }

    @Test func withoutChaosTheOriginalRuns() async throws {
        let (head, body) = try await send()
        #expect(head.status == .ok)
        #expect(try JSONDecoder().decode(User.self, from: body) == User(id: 1, name: "Ada"))
    }

    @Test func liveClientAgainstLoopbackServer() async throws {
        let server = try echoServer()
        defer { server.stop() }
        let live = ChaosNetworkClient()
        var head = HTTPRequest(method: .post, url: server.baseURL.appendingPathComponent("echo"))
        head.headerFields[.contentType] = "text/plain"
        let (response, body) = try await live.send(head, body: Data("hello".utf8))
        #expect(response.status.code == 200)
        #expect(response.headerFields[HTTPField.Name("X-Served-By")!] == "loopback")
        let echo = try JSONDecoder().decode([String: String].self, from: body)
        #expect(echo == ["method": "POST", "target": "/echo", "body": "hello"])
    }

    @Test func liveClientMapsConnectionFailures() async throws {
        // A port nobody listens on: the server is stopped and its port released.
        let server = try echoServer()
        server.stop()
        try await Task.sleep(for: .milliseconds(300))
        let error = await caught { try await ChaosNetworkClient().send(HTTPRequest(url: server.baseURL), body: nil) }
        #expect(error is NetworkError)
    }

    @Test func offlineTimeoutAndDNSFailure() async throws {
        _ = try await Chaos.with(item("offline"), seed: 1) {
            await #expect(throws: NetworkError.offline) { try await send() }
        }
        _ = try await Chaos.with(item("timeout"), seed: 1) {
            await #expect(throws: NetworkError.timeout) { try await send() }
        }
        try await Chaos.with(item("timeout", ["after": .string("50ms")]), seed: 1) {
            let clock = ContinuousClock()
            let start = clock.now
            await #expect(throws: NetworkError.timeout) { try await send() }
            #expect(clock.now - start >= .milliseconds(50))
        }
        _ = try await Chaos.with(item("dns-failure"), seed: 1) {
            await #expect(throws: NetworkError.dnsFailure(host: "api.example.com")) { try await send() }
        }
    }

    @Test func statusWithRetryAfter() async throws {
        try await Chaos.with(item("status", ["code": .number(429), "retryAfter": .number(30)]), seed: 1) {
            let (head, body) = try await send()
            #expect(head.status.code == 429)
            #expect(head.headerFields[.retryAfter] == "30")
            #expect(body.isEmpty)
        }
        try await Chaos.with(item("status", ["code": .number(503)]), seed: 1) {
            let got1 = try await send().0.status.code
            #expect(got1 == 503)
        }
    }

    @Test func latencyInMillisecondsAndText() async throws {
        let clock = ContinuousClock()
        for parameters: [String: ProfileValue] in [["delay": .number(60)], ["delay": .string("60ms")]] {
            try await Chaos.with(item("latency", parameters), seed: 1) {
                let start = clock.now
                let got2 = try await send().0.status
                #expect(got2 == .ok)
                #expect(clock.now - start >= .milliseconds(60))
            }
        }
    }

    @Test func truncatedAndCorrupted() async throws {
        let full = try await send().1
        try await Chaos.with(item("truncated", ["fraction": .number(0.5)]), seed: 1) {
            let body = try await send().1
            #expect(body.count == full.count / 2)
            #expect(full.starts(with: body))
        }
        try await Chaos.with(item("corrupted", ["bytes": .number(3)]), seed: 7) {
            let first = try await send().1
            #expect(first.count == full.count)
            #expect(first != full)
        }
        // The same seed corrupts the same way.
        let a = try await Chaos.with(item("corrupted"), seed: 11) { try await send().1 }
        let b = try await Chaos.with(item("corrupted"), seed: 11) { try await send().1 }
        #expect(a == b)
    }

    @Test func bandwidthPresetAndRate() async throws {
        let clock = ContinuousClock()
        try await Chaos.with(item("bandwidth", ["preset": .string("edge")]), seed: 1) {
            let start = clock.now
            _ = try await send()
            #expect(clock.now - start >= .milliseconds(400))
        }
    }

    @Test func badCatalogueParametersAreErrors() async throws {
        let cases: [(String, [String: ProfileValue])] = [
            ("status", ["code": .number(42)]),
            ("latency", [:]),
            ("latency", ["delay": .string("soon")]),
            ("bandwidth", ["preset": .string("5g")]),
            ("truncated", ["fraction": .number(2)]),
            ("corrupted", ["bytes": .number(0)]),
        ]
        for (name, parameters) in cases {
            #expect(throws: ChaosError.self, "\(name) \(parameters)") {
                try Chaos.with(item(name, parameters), seed: 1) {}
            }
        }
    }

    @Test func profileMatchNarrowsByMethodHostAndPathPrefix() async throws {
        let profile = try ChaosProfile.decode(
            json: """
                { "entries": [ { "point": "network.send",
                                 "match": { "method": "post", "host": "*.example.com", "path": "/v1/" },
                                 "provider": "offline" } ] }
                """)
        try await Chaos.with(profile.profileEntries, seed: 1) {
            await #expect(throws: NetworkError.offline) {
                try await send("https://api.example.com/v1/orders", method: .post)
            }
            await #expect(throws: NetworkError.offline) {
                try await send("https://example.com/v1/orders", method: .post)
            }
            let got3 = try await send("https://api.example.com/v1/orders").0.status
            #expect(got3 == .ok)  // GET
            let got4 = try await send("https://api.other.com/v1/orders", method: .post).0.status
            #expect(got4 == .ok)  // host
            let got5 = try await send("https://api.example.com/v2/orders", method: .post).0.status
            #expect(got5 == .ok)  // path
        }
    }

    @Test func profileMatchRejectsUnknownConditions() async throws {
        let profile = try ChaosProfile.decode(
            json: """
                { "entries": [ { "point": "network.send", "match": { "port": 80 }, "provider": "offline" } ] }
                """)
        do {
            try Chaos.with(profile.profileEntries, seed: 1) {}
            Issue.record("expected an error")
        } catch let error as ChaosError {
            #expect(error.kind == .invalidProvider)
            #expect(error.message.contains("unknown parameter 'port'") && error.message.contains("path"))
        }
    }

    @Test func conditionsAsTypedProviders() async throws {
        let entry = ProfileEntry(ChaosNetwork.send, .sequential([NetworkCondition.offline.provider, .original]))
        try await Chaos.with(entry, seed: 1) {
            await #expect(throws: NetworkError.offline) { try await send() }
            let got6 = try await send().0.status
            #expect(got6 == .ok)
        }
        #expect(
            Chaos.catalogue.first { $0.name == "network.send" }?.items.map(\.name) == [
                "bandwidth", "connection-reset", "corrupted", "dns-failure", "latency", "mutated-json", "offline",
                "refused", "status", "timeout", "truncated",
            ])
    }
}

extension NetworkPointTests {
    /// The conditions that match real failures are named in profiles too. Each entry is
    /// applied on its own: two entries on one point stack, and the top one's `match`
    /// falls back to the original, not to the entry below.
    @Test func refusedAndConnectionResetAreCatalogueItems() async throws {
        let profile = try ChaosProfile.decode(
            json: """
                { "entries": [ { "point": "network.send", "match": { "host": "refused.example" }, "provider": "refused" },
                               { "point": "network.send", "match": { "host": "reset.example" },
                                 "provider": { "item": "connection-reset", "parameters": { "fraction": 0.25 } } } ] }
                """)
        let entries = profile.profileEntries
        try #require(entries.count == 2)
        try await Chaos.with(entries[0], seed: 1) {
            do {
                _ = try await send("https://refused.example/users/1")
                Issue.record("a refused connection answered")
            } catch NetworkError.refused {
            } catch {
                Issue.record("expected .refused, got \(error)")
            }
            // Bound first: in this closure the macro's own `try` is not seen as throwing.
            let status = try await send().0.status
            #expect(status == .ok, "other hosts are untouched")
        }
        try await Chaos.with(entries[1], seed: 1) {
            do {
                _ = try await send("https://reset.example/users/1")
                Issue.record("a reset connection answered")
            } catch NetworkError.connectionLost {
            } catch {
                Issue.record("expected .connectionLost, got \(error)")
            }
        }
    }
}
