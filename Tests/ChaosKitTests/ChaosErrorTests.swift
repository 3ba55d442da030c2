import TestHelpers
import Testing

@testable import ChaosKit

@Suite struct ChaosErrorTests {
    @Test func aboutAttributesOnlyUnattributedErrors() {
        let bare = ChaosError(.invalidProvider, "use a probability between 0 and 1")
        #expect(bare.about("clock.now").description == "clock.now: use a probability between 0 and 1")
        let named = ChaosError(.unknownPoint, subject: "a", "x")
        #expect(named.about("b").subject == "a")
    }
}
