import ChaosKit
import Foundation
@_exported import TestHelpers

/// The error the failing bodies throw.
struct Boom: Error, CustomStringConvertible {
    var description: String { "boom" }
}

/// Day `n` after the epoch: distinct, recognisable clock values far from today.
func day(_ n: Int) -> Date {
    Date(timeIntervalSince1970: Double(n) * 86_400)
}

/// Any date after 2001-09-09 is the real clock, not one of the chaos dates above.
let realClockThreshold = Date(timeIntervalSince1970: 1_000_000_000)
