import Foundation
import Synchronization
import TestHelpers
import Testing

@testable import ChaosKit

/// The custom failure type the throwing test points use.
enum TestFailure: Error, Equatable, Sendable {
    case offline
    case timeout(seconds: Int)
    case real
}

/// Another error type, for "wrong error type" checks.
struct OtherError: Error, Sendable {}

/// A result type without a `RandomChaosValue` conformance, for `.random` misuse checks.
struct Opaque: Equatable, Sendable {
    var value: Int
}
