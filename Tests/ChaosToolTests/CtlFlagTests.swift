import Foundation
import Testing

@testable import chaos_tool

/// The flags of `chaos ctl apply` that make a refusal the user's choice. What they do to a
/// running program is tested against one (ChaosConsoleTests: ProfileEditorTests).
@Suite struct CtlFlagTests {
    @Test func applyTakesAllowPending() throws {
        #expect(try CtlApply.parse(["41235", "p.json", "--allow-pending"]).allowPending)
        #expect(try !CtlApply.parse(["41235", "p.json"]).allowPending)
        let help = try ChaosToolTests.chaos("ctl", "apply", "--help")
        #expect(help.output.contains("--allow-pending"), "\(help.output)")
        #expect(help.output.contains("did you mean"), "\(help.output)")
    }

    /// A misspelt option is refused before any process is asked anything.
    @Test func aMisspeltFlagIsRefused() throws {
        let wrong = try ChaosToolTests.chaos("ctl", "apply", "1", "p.json", "--allow-pendings")
        #expect(wrong.status != 0)
        #expect(wrong.errors.contains("--allow-pending"), "\(wrong.errors)")
    }
}
