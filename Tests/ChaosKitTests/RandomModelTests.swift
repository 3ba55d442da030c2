import Foundation
import TestHelpers
import Testing

@testable import ChaosKit

/// Randomised models: seeded random instances of any Decodable type, made by a decoder
/// that invents values (Dixie's "randomised properties on your data models").
@Suite struct RandomModelTests {
    enum Role: String, Codable, CaseIterable, Sendable { case admin, member, guest }
    enum Level: Int, Codable, CaseIterable, Sendable {
        case low = 1
        case high = 2
    }

    /// An enum that decodes values it does not know, as robust apps do.
    enum Status: Codable, Equatable, Sendable {
        case active, suspended
        case unknown(String)
        init(from decoder: any Decoder) throws {
            let text = try decoder.singleValueContainer().decode(String.self)
            self = text == "active" ? .active : text == "suspended" ? .suspended : .unknown(text)
        }
        func encode(to encoder: any Encoder) throws {}
    }

    struct Address: Codable, Equatable, Sendable {
        var street: String
        var postcode: String?
    }

    struct User: Codable, Equatable, Sendable {
        var id: Int
        var name: String
        var email: String?
        var age: UInt8
        var score: Double
        var verified: Bool
        var role: Role
        var level: Level
        var tags: [String]
        var address: Address?
        var scores: [String: Int]
        var joined: Date
        var homepage: URL
        var uuid: UUID
        var avatar: Data
        var balance: Decimal
    }

    /// Recursive: it must end.
    struct Comment: Codable, Equatable, Sendable {
        var text: String
        var replies: [Comment]
        var depth: Int { 1 + (replies.map(\.depth).max() ?? 0) }
    }

    /// A type that validates what it decodes.
    struct Positive: Decodable, Equatable, Sendable {
        let value: Int
        init(from decoder: any Decoder) throws {
            value = try decoder.singleValueContainer().decode(Int.self)
            guard value > 0 else {
                throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "not positive"))
            }
        }
    }

    /// A type that draws its own values.
    struct Temperature: Codable, Equatable, Sendable, RandomChaosValue {
        var celsius: Double
        static func randomChaosValue(using source: inout SeededRandom) -> Temperature {
            Temperature(celsius: Double.random(in: -90...60, using: &source))
        }
    }

    static func users(seed: UInt64, count: Int = 300, options: RandomModelOptions = RandomModelOptions()) -> [User] {
        var source = SeededRandom(seed: seed)
        let generator = RandomGenerator<User>.decodable(User.self, options: options)
        return (0..<count).map { _ in generator.generate(using: &source) }
    }

    @Test func theSameSeedGivesTheSameInstances() {
        let a = Self.users(seed: 7, count: 50)
        #expect(Self.users(seed: 7, count: 50) == a)
        #expect(Self.users(seed: 8, count: 50) != a)
    }

    @Test func valuesReachTheEdgesThatBreakApps() {
        let users = Self.users(seed: 1)
        #expect(users.contains { $0.email == nil } && users.contains { $0.email != nil })
        #expect(users.contains { $0.address == nil } && users.contains { $0.address?.postcode == nil })
        #expect(users.contains { $0.tags.isEmpty } && users.contains { $0.tags.count > 1 })
        #expect(users.contains { $0.scores.isEmpty } && users.contains { !$0.scores.isEmpty })
        #expect(users.contains { $0.id == .min } && users.contains { $0.id == .max } && users.contains { $0.id == 0 })
        #expect(users.contains { $0.age == .max } && users.contains { $0.score == .greatestFiniteMagnitude })
        #expect(users.allSatisfy { $0.score.isFinite }, "JSON cannot carry NaN: not unless asked")
        #expect(users.contains { $0.name.isEmpty } && users.contains { $0.name.count >= 300 })
        let characters = Set(users.flatMap(\.name))
        #expect(characters.contains("🙂") && characters.contains("ש"), "strings come from the troublesome catalogue")
        #expect(users.contains { $0.verified } && users.contains { !$0.verified })
        #expect(Set(users.map(\.role)) == Set(Role.allCases), "a strict enum always gets one of its cases")
        #expect(Set(users.map(\.level)) == Set(Level.allCases))
        #expect(Set(users.map(\.uuid)).count == users.count)
        #expect(users.contains { $0.avatar.isEmpty } && users.contains { !$0.avatar.isEmpty })
        #expect(users.contains { $0.homepage.absoluteString.count > 500 })
        #expect(
            users.allSatisfy {
                abs($0.joined.timeIntervalSince(RandomGenerator<Date>.defaultCentre)) <= 10_000 * 86_400
            })
    }

    @Test func enumsThatDecodeLenientlyGetUnknownValues() {
        struct Account: Decodable { var status: Status }
        // The decoder knows the cases only through a CaseIterable type; Status is not one,
        // so it gets any strings, and keeps them.
        var source = SeededRandom(seed: 3)
        let statuses = (0..<200).map { _ in RandomGenerator<Account>.decodable().generate(using: &source).status }
        #expect(statuses.contains { if case .unknown = $0 { true } else { false } })
        // A strict enum is offered unknown values too, refuses them, and gets a case.
        let options = RandomModelOptions(unknownEnumProbability: 1)
        var strict = SeededRandom(seed: 4)
        #expect(
            (0..<50).allSatisfy { _ in
                Role.allCases.contains(RandomGenerator<Role>.decodable(options: options).generate(using: &strict))
            })
    }

    @Test func recursiveTypesEnd() {
        var source = SeededRandom(seed: 5)
        let options = RandomModelOptions(nilProbability: 0, emptyProbability: 0, maxDepth: 4)
        let comments = (0..<20).map { _ in RandomGenerator<Comment>.decodable(options: options).generate(using: &source)
        }
        #expect(comments.allSatisfy { $0.depth <= 4 })
        #expect(comments.contains { $0.depth >= 2 })
    }

    @Test func validatingTypesAndOwnRandomValues() {
        struct Reading: Decodable, Sendable {
            var positive: Positive
            var temperature: Temperature
            var optional: Positive?
        }
        var source = SeededRandom(seed: 6)
        let readings = (0..<200).map { _ in RandomGenerator<Reading>.decodable().generate(using: &source) }
        #expect(readings.allSatisfy { $0.positive.value > 0 && ($0.optional?.value ?? 1) > 0 })
        #expect(readings.allSatisfy { (-90...60).contains($0.temperature.celsius) })
    }

    @Test func nonFiniteNumbersOnlyWhenAsked() {
        let users = Self.users(seed: 9, options: RandomModelOptions(edgeProbability: 0.9, nonFiniteNumbers: true))
        #expect(users.contains { $0.score.isNaN } && users.contains { $0.score.isInfinite })
    }

    @Test func asAProviderItReplaysFromTheChaosSeed() throws {
        // A fixed name: the entry's seed mixes in the point's name, and the ids drawn from a
        // random name's seed were once only five different ones among ten.
        let point = InjectionPoint<Void, User, Never>("random-model.replay.users") {
            Self.users(seed: 0, count: 1)[0]
        }
        let provider = ChaosProvider<Void, User, Never>.random(.decodable(User.self))
        let first = try RandomnessTests.run(point, provider, seed: 11, count: 10)
        #expect(try RandomnessTests.run(point, provider, seed: 11, count: 10) == first)
        #expect(try RandomnessTests.run(point, provider, seed: 12, count: 10) != first)
        #expect(Set(first.map(\.id)).count > 5)
    }
}
