import ChaosKit
import Foundation
import HTTPTypes
import TestHelpers
import Testing

@testable import ChaosNetwork

/// The JSON mutator: type-aware changes to response bodies, each reported with its JSON
/// path and seed, replayable from the seed; as a condition on stubs, HAR replay and the point.
@Suite struct JSONMutationTests {
    static let body = Data(
        #"{"user":{"id":7,"name":"Ada Lovelace","status":"active","score":0,"tags":["a","b"],"address":{"city":"London"},"verified":true,"nickname":null},"page":1}"#
            .utf8)

    @Test func everyKindFitsTheValuesType() throws {
        var seen: [JSONMutation.Kind: Int] = [:]
        var counts: Set<Int> = []
        for seed in 0..<400 as Range<UInt64> {
            let (data, mutations) = try #require(JSONMutator(count: 3).mutate(json: Self.body, seed: seed))
            // Three, unless a change took the others' values away (all of $.user removed).
            counts.insert(mutations.count)
            #expect((1...3).contains(mutations.count))
            let mutated = try ProfileValue(json: data)
            for mutation in mutations {
                seen[mutation.kind, default: 0] += 1
                #expect(mutation.seed == seed)
                #expect(Self.value(at: mutation.path, in: mutated) == mutation.replacement, "\(mutation)")
                switch mutation.kind {
                case .null: #expect(mutation.replacement == .null)
                case .missingKey: #expect(mutation.replacement == nil && !mutation.path.hasSuffix("]"))
                case .wrongType: #expect(mutation.replacement?.typeName != mutation.original.typeName)
                case .hugeNumber:
                    guard case .number(let n)? = mutation.replacement else {
                        Issue.record("\(mutation)")
                        continue
                    }
                    #expect(abs(n) > 9e15)
                case .negativeNumber:
                    guard case .number(let before) = mutation.original, case .number(let after)? = mutation.replacement
                    else { continue }
                    #expect(before >= 0 && after < 0)
                case .longString:
                    guard case .string(let text)? = mutation.replacement else { continue }
                    #expect(text.count == 10_000)
                case .unknownEnumValue:
                    #expect(
                        mutation.path == "$.user.status" || mutation.path.hasPrefix("$.user.tags")
                            || mutation.path == "$.user.address.city")
                }
            }
        }
        #expect(Set(seen.keys) == Set(JSONMutation.Kind.allCases), "\(seen)")
        #expect(counts.contains(3))
        // A name with a space is not an enum value.
        #expect(!JSONMutator.looksLikeEnumValue("Ada Lovelace") && JSONMutator.looksLikeEnumValue("in_progress"))
    }

    /// The value at a path the mutator wrote (`$.a.b[2]`), nil when absent.
    static func value(at path: String, in root: ProfileValue) -> ProfileValue? {
        var node: ProfileValue? = root
        var rest = Substring(path.dropFirst())
        while !rest.isEmpty {
            if rest.hasPrefix(".") {
                rest = rest.dropFirst()
                let key = rest.prefix { $0 != "." && $0 != "[" }
                rest = rest.dropFirst(key.count)
                guard case .object(let members)? = node else { return nil }
                node = members[String(key)]
            } else if rest.hasPrefix("[") {
                let index = rest.dropFirst().prefix { $0 != "]" }
                rest = rest.dropFirst(index.count + 2)
                guard case .array(let items)? = node, let i = Int(index), items.indices.contains(i) else { return nil }
                node = items[i]
            } else {
                return nil
            }
        }
        return node
    }

    @Test func theSeedReplaysTheSameChangesAndTheRestIsKeptAsWritten() throws {
        let mutator = JSONMutator(count: 2)
        let first = try #require(mutator.mutate(json: Self.body, seed: 99))
        let again = try #require(mutator.mutate(json: Self.body, seed: 99))
        #expect(first.data == again.data && first.mutations == again.mutations)
        #expect(
            (0..<20 as Range<UInt64>).map { mutator.mutate(json: Self.body, seed: $0)!.data }.contains {
                $0 != first.data
            })
        // Member order and number spelling survive where nothing changed.
        let untouched = try #require(
            JSONMutator(paths: ["$.page"]).mutate(json: Data(#"{"z":1.50,"a":[1e3],"page":2}"#.utf8), seed: 1))
        #expect(String(decoding: untouched.data, as: UTF8.self).hasPrefix(#"{"z":1.50,"a":[1e3]"#))
        #expect(untouched.mutations.map(\.path) == ["$.page"])
        // Paths narrow, kinds narrow; a body that is not JSON is not changed.
        let narrowed = try #require(
            JSONMutator(kinds: [.null], count: 10, paths: ["$.user.address"]).mutate(json: Self.body, seed: 5))
        #expect(
            narrowed.mutations.map(\.path) == ["$.user.address"]
                || narrowed.mutations.map(\.path) == ["$.user.address.city"])
        #expect(JSONMutator().mutate(json: Data("<html>".utf8), seed: 1) == nil)
        // Odd keys get bracketed paths.
        let odd = try #require(JSONMutator(kinds: [.null]).mutate(json: Data(#"{"a b":{"it's":1}}"#.utf8), seed: 3))
        #expect(odd.mutations.first?.path.hasPrefix("$['a b']") == true)
        // The ProfileValue form makes the same changes.
        let value = try ProfileValue(json: String(decoding: Self.body, as: UTF8.self))
        let (mutated, changes) = JSONMutator(count: 2).mutate(value, seed: 99)
        #expect(changes == first.mutations)
        #expect(mutated == (try ProfileValue(json: first.data)))
    }

    @Test func asAStubConditionEveryMutationIsLoggedAndRecorded() async throws {
        let log = JSONMutationLog()
        let (logger, logged) = RecordingLogHandler.logger()
        let stubs = StubSet(seed: 21)
        stubs.stub(
            try .get("/user"), conditions: [.mutatedJSON(JSONMutator(count: 2), log: log, logger: logger)],
            .data(Self.body, headers: ["Content-Length": "\(Self.body.count)"]))
        var bodies: [Data] = []
        for _ in 0..<5 {
            let response = try await stubs.respond(to: request(.get, "https://api.example.com/user"))
            bodies.append(response.body)
            #expect(response.head.headerFields[.contentLength] == String(response.body.count))
        }
        #expect(log.entries.count == 5 && log.mutations.count == 10)
        #expect(Set(bodies).count > 1, "each response gets its own seed")
        #expect(
            logged.all.count == 10
                && logged.all.allSatisfy {
                    $0.level == .notice && $0.metadata["path"] != nil && $0.metadata["seed"] != nil
                })
        // A failure replays from the logged seed.
        for (entry, body) in zip(log.entries, bodies) {
            #expect(JSONMutator(count: 2).mutate(json: Self.body, seed: entry.seed)?.data == body)
            #expect(entry.request == "GET https://api.example.com/user")
        }
        // A fixed seed makes the same changes every time.
        let fixed = StubSet()
        fixed.stub(try .get("/user"), conditions: [.mutatedJSON(seed: 42)], .data(Self.body))
        let a = try await fixed.respond(to: request(.get, "https://api.example.com/user")).body
        let b = try await fixed.respond(to: request(.get, "https://api.example.com/user")).body
        #expect(a == b && a != Self.body)
    }

    @Test func onHARReplay() async throws {
        let cassette = try HARCassette(
            file: URL(fileURLWithPath: resourcePath("recorded/mitmproxy.har")), mode: .replayOnly)
        let stubs = StubSet()
        stubs.add(cassette)
        let log = JSONMutationLog()
        stubs.conditions = [.mutatedJSON(JSONMutator(kinds: [.wrongType, .null, .missingKey]), seed: 8, log: log)]
        let response = try await stubs.respond(
            to: request(.get, "http://127.0.0.1:43699/api/items?page=2&sort=name&api_key=fixture-key-123"))
        #expect(response.statusCode == 200)
        let mutation = try #require(log.mutations.first)
        let original = try ProfileValue(
            json: #"{"page": 2, "items": [{"id": 3, "name": "Ada"}, {"id": 4, "name": "Bo"}]}"#)
        #expect(Self.value(at: mutation.path, in: original) == mutation.original)
        #expect(Self.value(at: mutation.path, in: try ProfileValue(json: response.body)) == mutation.replacement)
        // A body that is not JSON (the PNG) is left alone.
        let pixel = try await stubs.respond(to: request(.get, "http://127.0.0.1:43699/pixel.png"))
        #expect(pixel.body.starts(with: [0x89, 0x50, 0x4E, 0x47]) && log.entries.count == 1)
    }

    @Test func fromAProfile() async throws {
        ChaosNetwork.register()
        let profile = try ChaosProfile.decode(
            json: """
                { "entries": [ { "point": "network.send", "match": { "host": "mutated.example" },
                                 "provider": { "item": "mutated-json", "parameters": { "count": 2, "kinds": ["null", "missing-key"], "seed": 17 } } } ] }
                """)
        let backend = StubSet()
        backend.stub(try .get("/user"), .data(Self.body))
        let client = ChaosNetworkClient(backend)
        let url = URL(string: "https://mutated.example/user")!
        let (_, body) = try await Chaos.with(profile.profileEntries) {
            try await client.send(HTTPRequest(method: .get, url: url), body: nil)
        }
        #expect(body == JSONMutator(kinds: [.null, .missingKey], count: 2).mutate(json: Self.body, seed: 17)?.data)
        #expect(JSONMutationLog.shared.entries.contains { $0.seed == 17 && $0.request.contains("mutated.example") })
        // Parameters are declared and checked like every other item's.
        let item = try #require(ChaosNetwork.catalogue.items.first { $0.name == "mutated-json" })
        #expect(item.parameters.map(\.name) == ["count", "kinds", "paths", "seed", "stringLength"])
        for (parameters, fragment) in [
            (#"{"kinds": ["nul"]}"#, "'nul'"), (#"{"paths": ["user"]}"#, "starts with '$'"),
            (#"{"count": 0}"#, "count"),
        ] {
            let error = expectChaosError(.invalidProvider) {
                let bad = try ChaosProfile.decode(
                    json: """
                        { "entries": [ { "point": "network.send", "provider": { "item": "mutated-json", "parameters": \(parameters) } } ] }
                        """)
                try Chaos.with(bad.profileEntries) {}
            }
            #expect(error?.description.contains(fragment) == true, "\(String(describing: error))")
        }
    }

    struct Order: Codable, Equatable, Sendable {
        enum State: String, Codable, CaseIterable, Sendable { case placed, shipped }
        var id: Int
        var items: [String]
        var state: State
        var note: String?
    }

    @Test func randomModelsAsAConditionReplayFromTheLoggedSeed() async throws {
        let (logger, logged) = RecordingLogHandler.logger()
        let stubs = StubSet(seed: 5)
        stubs.stub(
            try .get("/order"), conditions: [.randomModel(Order.self, logger: logger)],
            .data(Data(#"{"id": 1, "items": [], "state": "placed"}"#.utf8)))
        var orders: [Order] = []
        for _ in 0..<10 {
            let response = try await stubs.respond(to: request(.get, "https://shop.example/order"))
            orders.append(try JSONDecoder().decode(Order.self, from: response.body))
        }
        #expect(Set(orders.map(\.id)).count > 5)
        #expect(logged.all.count == 10)
        // The logged seed makes the same order again.
        let seed = try #require(logged.all.first?.metadata["seed"].flatMap { UInt64("\($0)") })
        var source = SeededRandom(seed: seed)
        #expect(RandomGenerator<Order>.decodable().generate(using: &source) == orders[0])
        // On HAR replay too: the recorded JSON answer becomes a random model.
        let cassette = try HARCassette(
            file: URL(fileURLWithPath: resourcePath("recorded/mitmproxy.har")), mode: .replayOnly)
        let replay = StubSet()
        replay.add(cassette)
        replay.conditions = [.randomModel(Order.self, seed: 3, logger: logger)]
        let response = try await replay.respond(
            to: request(.get, "http://127.0.0.1:43699/api/items?page=2&sort=name&api_key=fixture-key-123"))
        var again = SeededRandom(seed: 3)
        #expect(
            try JSONDecoder().decode(Order.self, from: response.body)
                == RandomGenerator<Order>.decodable().generate(using: &again))
    }
}
