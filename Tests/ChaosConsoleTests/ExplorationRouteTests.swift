// Needs the console's server: runs with `swift test --traits Console`.
#if Console
@testable import ChaosControl
import ChaosKit
import Foundation
import TestHelpers
import Testing

/// `/v1/explorations` and `POST /v1/explorations/ID/failures/N/replay`, over real
/// explorations run in this process. Explorations are listed process-wide (and the browser
/// test runs one beside): each test finds its own by its seed.
@Suite struct ExplorationRouteTests {
    enum FetchError: Error { case offline }

    /// A point of its own, named uniquely.
    static func makeFetch() -> AsyncInjectionPoint<Int, Int, FetchError> {
        AsyncInjectionPoint(uniqueName()) { (page: Int) async throws(FetchError) -> Int in page }
    }

    /// A body that calls `fetch` four times: it shrugs off a failure of the first two calls
    /// and not of the last two, so an exploration finds failures at calls 3 and 4 of 4.
    static func sync(_ fetch: AsyncInjectionPoint<Int, Int, FetchError>) async throws {
        for page in 1...2 { _ = try? await fetch(page) }
        for page in 3...4 { _ = try await fetch(page) }
    }

    /// A seed no other exploration of the process uses, to find this one by.
    static func uniqueSeed() -> UInt64 { UInt64.random(in: 1..<(1 << 50)) }

    /// The exploration of this process with `seed`, as the endpoint lists it.
    static func listed(_ client: ControlClient, seed: UInt64) async throws -> ControlAPI.Exploration? {
        try await offload { try client.explorations() }.last { $0.seed == String(seed) }
    }

    @Test(.timeLimit(.minutes(2))) func aFinishedExplorationIsListedAndItsFailureReplaysHere() async throws {
        let fetch = Self.makeFetch()
        let entry = ProfileEntry(fetch, .throwing(.offline))
        let seed = Self.uniqueSeed()
        let before = Date()
        let result = try await Chaos.explore(entry, seed: seed) { try await Self.sync(fetch) }
        #expect(result.failures.map(\.call) == [3, 4], "\(result)")
        let endpoint = try await TestEndpoint.start()
        let client = endpoint.client

        let all = try await offload { try client.explorations() }
        #expect(all.map(\.id) == all.map(\.id).sorted(), "oldest first")
        let exploration = try #require(try await Self.listed(client, seed: seed))
        #expect(exploration.finished && exploration.error == nil)
        #expect(exploration.placements == 4 && exploration.done == 4)
        #expect(exploration.started >= before.addingTimeInterval(-1) && exploration.started <= Date())
        #expect(
            exploration.candidates == [
                ControlAPI.Exploration.Candidate(point: fetch.name, provider: entry.providerSummary, calls: 4)
            ])
        #expect(exploration.failures.map(\.number) == [1, 2])
        #expect(exploration.failures.map(\.call) == [3, 4])
        for failure in exploration.failures {
            #expect(failure.point == fetch.name && failure.provider == entry.providerSummary)
            #expect(failure.of == 4 && !failure.flaky && failure.error == "offline")
            #expect(failure.replay == "\(fetch.name) ← \(entry.providerSummary) at call \(failure.call)")
        }

        // The replay of failure 1 is applied here like any entry: listed, counted, reverted by id.
        let applied = try await offload {
            try client.replay(failure: 1, of: exploration.id, expectingCall: 3, point: fetch.name)
        }
        #expect(applied.seed == String(seed))
        let id = try #require(applied.entries.first)
        #expect(applied.entries.count == 1)
        let live = try #require(try await offload { try client.entries() }.first { $0.id == id })
        #expect(live.point == fetch.name && live.provider.hasSuffix("at call 3") && live.enabled)
        #expect(live.chaosSeed == String(seed))
        // Its fault acts where the placement put it: at the third call, and there only.
        _ = try await fetch(1)
        _ = try await fetch(2)
        await #expect(throws: FetchError.offline) { _ = try await fetch(3) }
        _ = try await fetch(4)
        let counted = try #require(try await offload { try client.entries() }.first { $0.id == id })
        #expect(counted.seen == 4 && counted.acted == 1 && counted.passed == 3)
        #expect(counted.lastAct?.callIndex == 2, "the third call (0-based 2)")

        // Replayed again while it is live: refused, naming the entry to revert.
        let again = await #expect(throws: ControlError.self) {
            try await offload { try client.replay(failure: 1, of: exploration.id) }
        }
        #expect(again?.status == 409 && again?.kind == "alreadyApplied")
        #expect(again?.message.contains("DELETE /v1/entries/\(id)") == true, "\(String(describing: again))")
        #expect(try await offload { try client.entries() }.filter { $0.point == fetch.name }.count == 1)

        // Reverted like any other entry, the point passes again; then it replays anew.
        #expect(try await offload { try client.revert(entry: id) }.entries == [id])
        _ = try await fetch(3)
        #expect(try await offload { try client.entries() }.contains { $0.point == fetch.name } == false)
        let second = try await offload { try client.replay(failure: 2, of: exploration.id) }
        let secondLive = try #require(try await offload { try client.entries() }.first { $0.point == fetch.name })
        #expect(secondLive.id == second.entries.first && secondLive.provider.hasSuffix("at call 4"))
        // This entry only: other suites' entries live in this process too.
        #expect(try await offload { try client.revert(entry: secondLive.id) }.entries == [secondLive.id])
        await endpoint.finish()
    }

    @Test(.timeLimit(.minutes(2))) func aRunningExplorationShowsItsProgress() async throws {
        let fetch = Self.makeFetch()
        let seed = Self.uniqueSeed()
        let gate = Gate()
        defer { gate.open() }  // a failed expectation must not leave the placements waiting
        let runs = Locked(0)
        // The baseline runs through; every placement waits at the gate, so the exploration
        // stays under way, with none of its placements done, until the test opens it.
        let exploring = Task {
            try await Chaos.explore(ProfileEntry(fetch, .throwing(.offline)), seed: seed) {
                let run = runs.withLock { runs in
                    defer { runs += 1 }
                    return runs
                }
                if run > 0 { await gate.wait() }
                try await Self.sync(fetch)
            }
        }
        let endpoint = try await TestEndpoint.start()
        let client = endpoint.client
        var running = try await Self.listed(client, seed: seed)
        while (running?.placements ?? 0) == 0 {
            try await Task.sleep(for: .milliseconds(10))
            running = try await Self.listed(client, seed: seed)
        }
        let during = try #require(running)
        #expect(!during.finished && during.error == nil)
        #expect(during.placements == 4 && during.done == 0 && during.failures.isEmpty)
        #expect(during.candidates.map(\.calls) == [4])
        let none = await #expect(throws: ControlError.self) {
            try await offload { try client.replay(failure: 1, of: during.id) }
        }
        #expect(none?.status == 404 && none?.message.contains("has found no failure yet") == true)

        gate.open()
        let result = try await exploring.value
        let after = try #require(try await Self.listed(client, seed: seed))
        #expect(after.id == during.id && after.finished)
        #expect(after.done == 4 && after.failures.map(\.call) == result.failures.map(\.call))
        #expect(after.failures.map(\.call) == [3, 4])
        await endpoint.finish()
    }

    @Test(.timeLimit(.minutes(2))) func unknownIDsWrongMethodsAndMissingTokensAreRefused() async throws {
        let fetch = Self.makeFetch()
        let seed = Self.uniqueSeed()
        _ = try await Chaos.explore(ProfileEntry(fetch, .throwing(.offline)), seed: seed) { try await Self.sync(fetch) }
        // One that ended without exploring: its body fails with no fault placed.
        let failedSeed = Self.uniqueSeed()
        _ = try? await Chaos.explore(ProfileEntry(fetch, .throwing(.offline)), seed: failedSeed) { () async throws in
            throw FetchError.offline
        }
        let endpoint = try await TestEndpoint.start()
        let client = endpoint.client
        let exploration = try #require(try await Self.listed(client, seed: seed))
        let failed = try #require(try await Self.listed(client, seed: failedSeed))
        #expect(failed.finished && failed.placements == 0 && failed.failures.isEmpty)
        #expect(failed.error?.contains("fails with no fault placed") == true, "\(String(describing: failed.error))")

        let url = endpoint.console.url
        let host = String(url.dropFirst("http://".count))
        let token = endpoint.console.token
        let id = exploration.id
        let replay = "/v1/explorations/\(id)/failures"
        let cases: [(String, Int, String, String?)] = [
            ("POST /v1/explorations/999999999/failures/1/replay", 404, "notFound", "there are "),
            ("POST \(replay)/3/replay", 404, "notFound", "has 2 failures: give a number from 1 to 2"),
            ("POST \(replay)/0/replay", 404, "notFound", "give a number from 1 to 2"),
            ("POST \(replay)/-1/replay", 404, "notFound", "give a number from 1 to 2"),
            ("POST \(replay)/x/replay", 400, "badRequest", "a whole number from 1"),
            ("POST /v1/explorations/\(failed.id)/failures/1/replay", 404, "notFound", "has found no failure"),
            ("POST /v1/explorations/first/failures/1/replay", 400, "badRequest", "a whole number"),
            ("POST \(replay)/1/replay?call=4", 409, "failureChanged", "at call 3, not call 4"),
            ("POST \(replay)/1/replay?point=other.point", 409, "failureChanged", "not 'other.point'"),
            ("GET \(replay)/1/replay", 405, "methodNotAllowed", "POST"),
            ("POST /v1/explorations", 405, "methodNotAllowed", "GET"),
            ("DELETE /v1/explorations", 405, "methodNotAllowed", "GET"),
            ("GET /v1/explorations/\(id)", 404, "notFound", "/v1/explorations/{exploration}/failures/{failure}/replay"),
            ("POST \(replay)/1/apply", 404, "notFound", nil),
        ]
        for (line, status, kind, words) in cases {
            let response = try await offload {
                try rawRequest(url, ["\(line) HTTP/1.1", "Host: \(host)", "Authorization: Bearer \(token)"])
            }
            #expect(response.status == status, "\(line)")
            #expect(errorKind(response) == kind, "\(line)")
            let message = (try? ControlAPI.decoder().decode(ControlAPI.ErrorBody.self, from: response.body))?.error
                .message
            if let words { #expect(message?.contains(words) == true, "\(line): \(String(describing: message))") }
            if status == 405 { #expect(response.headers["allow"] == words, "\(line)") }
        }
        // The id that does not exist is answered with the ids that do, this one's among them.
        let unknown = try await offload {
            try rawRequest(
                url,
                [
                    "POST /v1/explorations/999999999/failures/1/replay HTTP/1.1", "Host: \(host)",
                    "Authorization: Bearer \(token)",
                ])
        }
        let said = try ControlAPI.decoder().decode(ControlAPI.ErrorBody.self, from: unknown.body).error.message
        let named = said.components(separatedBy: "there are ").last?.components(separatedBy: " (").first ?? ""
        #expect(named.components(separatedBy: ", ").contains(String(id)), "\(said)")

        // Behind the same checks as every route: nothing is listed or applied without them.
        let post = "POST \(replay)/1/replay HTTP/1.1"
        let bearer = "Authorization: Bearer \(token)"
        let queryToken = "POST \(replay)/1/replay?token=\(token) HTTP/1.1"
        let foreignHost = "Host: evil.example:\(endpoint.console.port ?? 0)"
        let refused: [(String, [String], Int, String)] = [
            ("no token", ["GET /v1/explorations HTTP/1.1", "Host: \(host)"], 401, "unauthorized"),
            ("no token", [post, "Host: \(host)"], 401, "unauthorized"),
            (
                "a wrong token", [post, "Host: \(host)", "Authorization: Bearer \(token.dropLast())"], 401,
                "unauthorized"
            ),
            ("the token in a POST's query", [queryToken, "Host: \(host)"], 401, "unauthorized"),
            (
                "a foreign Origin", [post, "Host: \(host)", "Origin: http://evil.example", bearer], 403,
                "forbiddenOrigin"
            ),
            (
                "a cross-site fetch", [post, "Host: \(host)", "Sec-Fetch-Site: cross-site", bearer], 403,
                "forbiddenOrigin"
            ),
            ("a foreign Host", [post, foreignHost, bearer], 403, "forbiddenHost"),
        ]
        for (label, head, status, kind) in refused {
            let response = try await offload { try rawRequest(url, head) }
            #expect(response.status == status, "\(head[0]): \(label)")
            #expect(errorKind(response) == kind, "\(head[0]): \(label)")
            #expect(!String(decoding: response.body, as: UTF8.self).contains("\"failures\""), "\(label)")
        }
        #expect(try await offload { try client.entries() }.contains { $0.point == fetch.name } == false)
        #expect(try await offload { try client.status() }.features.contains("explorations"))
        await endpoint.finish()
    }
}

/// Holds every waiter until opened.
final class Gate: Sendable {
    private let state = Locked((open: false, waiters: [CheckedContinuation<Void, Never>]()))

    func wait() async {
        await withCheckedContinuation { continuation in
            let open = state.withLock { state -> Bool in
                if !state.open { state.waiters.append(continuation) }
                return state.open
            }
            if open { continuation.resume() }
        }
    }

    func open() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.open = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }
}
#endif
