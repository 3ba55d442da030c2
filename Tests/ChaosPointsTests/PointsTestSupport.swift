import Foundation
import Synchronization
import TestHelpers
import Testing

@testable import ChaosKit
@testable import ChaosPoints

/// The URL of a file in the checked-in test resources (Tests/ChaosKitTests/Points/Resources).
func pointsResource(_ name: String) -> URL {
    Bundle.module.url(forResource: "Resources", withExtension: nil)!.appendingPathComponent(name)
}

/// Parameters for a catalogue item.
func settings(_ values: [String: ProfileValue] = [:]) -> ProfileParameters {
    ProfileParameters(values)
}

/// Parameters holding one unnamed value, as the `CHAOS` grammar writes `item(value)`.
func positional(_ value: ProfileValue) -> ProfileParameters {
    var parameters = ProfileParameters()
    parameters.positional = value
    return parameters
}

/// The `ChaosError` applying `entries` in a scope throws, or nil when it applies.
func scopeError(_ entries: ProfileEntry...) -> ChaosError? {
    do {
        try Chaos.with(entries) {}
        return nil
    } catch let error as ChaosError {
        return error
    } catch {
        Issue.record("expected a ChaosError, got \(error)")
        return nil
    }
}

/// A wall clock a test moves by hand.
final class ManualWallClock: WallClock {
    private let date: Mutex<Date>

    init(_ start: Date) { date = Mutex(start) }

    var now: Date { date.withLock { $0 } }

    func advance(by seconds: TimeInterval) {
        date.withLock { $0 = $0.addingTimeInterval(seconds) }
    }
}

/// Localized strings from a dictionary.
struct StubStrings: LocalizedStrings {
    var table: [String: String]

    func string(forKey key: String, value: String?, table tableName: String?) -> String {
        table[key] ?? value ?? key
    }
}

/// `ISO8601Date.parse`, unwrapped.
func iso(_ text: String) -> Date {
    ISO8601Date.parse(text)!
}
