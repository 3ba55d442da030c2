import Foundation
import Testing

@testable import chaos_tool

/// The flags of `chaos ctl apply` and `revert` that make a refusal or a kept entry the
/// user's choice. What they do to a running program is tested against one
/// (ChaosConsoleTests: CtlExampleTests, CtlClockTests, PreloadControlTests).
@Suite struct CtlFlagTests {
    @Test func applyTakesAllowPending() throws {
        #expect(try CtlApply.parse(["41235", "p.json", "--allow-pending"]).allowPending)
        #expect(try !CtlApply.parse(["41235", "p.json"]).allowPending)
        let help = try ChaosToolTests.chaos("ctl", "apply", "--help")
        #expect(help.output.contains("--allow-pending"), "\(help.output)")
        #expect(help.output.contains("did you mean"), "\(help.output)")
    }

    @Test func revertTakesIncludeClockOnlyForEveryEntry() throws {
        #expect(try CtlRevert.parse(["41235", "--include-clock"]).includeClock)
        #expect(try !CtlRevert.parse(["41235"]).includeClock)
        #expect(throws: (any Error).self) { try CtlRevert.parse(["41235", "3", "--include-clock"]) }
        let help = try ChaosToolTests.chaos("ctl", "revert", "--help")
        #expect(help.output.contains("--include-clock"), "\(help.output)")
        #expect(help.output.contains("keeps those on system.clock"), "\(help.output)")
    }

    /// A misspelt option is refused before any process is asked anything.
    @Test func aMisspeltFlagIsRefused() throws {
        let wrong = try ChaosToolTests.chaos("ctl", "revert", "1", "--include-clocks")
        #expect(wrong.status != 0)
        #expect(wrong.errors.contains("--include-clock"), "\(wrong.errors)")
    }
}
