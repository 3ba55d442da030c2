import Foundation
import TestHelpers
import Testing

@testable import ChaosKit

/// The counting rules of Docs/Providers.md ("What a modifier counts"), written three ways:
/// code, JSON and the `CHAOS` line must build the same tree and act on the same calls.
@Suite struct OneMeaningTests {
    /// "A" for a call chaos acted on, "P" for one that reached the original.
    static func pattern(_ point: InjectionPoint<Int, Int, Never>, _ arguments: [Int]) -> String {
        String(arguments.map { point($0) == -1 ? "A" : "P" })
    }

    static func point() -> InjectionPoint<Int, Int, Never> {
        InjectionPoint<Int, Int, Never>(uniqueName()) { $0 }
    }

    /// The act/pass pattern of `entries` (made for the point) over `arguments`, seeded.
    static func run(
        _ point: InjectionPoint<Int, Int, Never>, seed: UInt64, _ arguments: [Int], _ entry: ProfileEntry
    ) throws -> String {
        let chaos = Chaos(seed: seed)
        defer { chaos.revertAll() }
        try chaos.profile(entry).apply()
        return pattern(point, arguments)
    }

    @Test func aSequentialStepWithTimesCoversThatManyCallsInEveryFrontEnd() throws {
        let point = Self.point()
        let calls = Array(0..<6)
        let code = try Self.run(
            point, seed: 1, calls, ProfileEntry(point, .sequential([.constant(-1).times(2), .original])))
        let json = try ChaosProfile.decode(
            json:
                #"{"entries": [{"point": "\#(point.name)", "provider": {"sequential": [{"constant": -1, "times": 2}, "original"]}}]}"#
        )
        let fromJSON = try Self.run(point, seed: 1, calls, json.profileEntries[0])
        let line = try ChaosGrammar.parse("\(point.name)=2*constant(-1)->original")
        let fromLine = try Self.run(point, seed: 1, calls, ChaosProfile(entries: line).profileEntries[0])
        #expect(code == "AAPPPP")
        #expect(fromJSON == code)
        #expect(fromLine == code)
        #expect(json.entries[0].provider.summary == line[0].provider.summary)
    }

    @Test func theGrammarWritesModifiersInTheOrderJSONAppliesThem() throws {
        let line = try ChaosGrammar.parse("p=20%3*constant(-1)@5ms->original")
        let json = try ChaosProfile.decode(
            json:
                #"{"entries": [{"point": "p", "provider": {"sequential": [{"constant": -1, "times": 3, "probability": 0.2, "delay": "5ms"}, "original"]}}]}"#
        )
        #expect(line[0].provider.summary == json.entries[0].provider.summary)
    }

    @Test func timesAndProbabilityCountOnlyTheCallsTheirBranchIsAskedAbout() throws {
        let point = Self.point()
        // Odd arguments are what the entry targets; even ones never reach the modifiers.
        let provider = ChaosProvider<Int, Int, Never>.composite(
            [.when({ $0 % 2 == 1 }, .constant(-1).times(2))], otherwise: .original)
        #expect(try Self.run(point, seed: 3, [0, 2, 1, 4, 3, 6, 5, 7], ProfileEntry(point, provider)) == "PPAPAPPP")
        // The draws of a probability node follow the calls it is asked about: interleaving
        // other calls leaves the targeted calls' pattern as it was.
        let drawing = ChaosProvider<Int, Int, Never>.composite(
            [.when({ $0 % 2 == 1 }, .constant(-1).probability(0.5))], otherwise: .original)
        let targeted = Array(repeating: 1, count: 40)
        let alone = try Self.run(point, seed: 9, targeted, ProfileEntry(point, drawing))
        let mixed = try Self.run(point, seed: 9, targeted.flatMap { [0, $0, 2] }, ProfileEntry(point, drawing))
        let mixedTargeted = String(mixed.enumerated().filter { $0.offset % 3 == 1 }.map(\.element))
        #expect(mixedTargeted == alone)
        #expect(alone.contains("A") && alone.contains("P"), "\(alone)")
    }

    @Test func aDelayActsEvenAroundTheOriginal() throws {
        let point = Self.point()
        let chaos = Chaos(seed: 1)
        defer { chaos.revertAll() }
        let entry = ProfileEntry(point, ChaosProvider<Int, Int, Never>.original.delayed(by: .milliseconds(1)).times(2))
        try chaos.profile(entry).apply()
        for argument in 0..<5 { #expect(point(argument) == argument) }
        let counters = chaos.counters[0]
        #expect(counters.seen == 5 && counters.acted == 2, "\(counters)")
    }
}
