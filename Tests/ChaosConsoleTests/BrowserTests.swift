// Needs the console's server: runs with `swift test --traits Console`.
#if Console
import Foundation
import TestHelpers
import Testing

/// The web console in a real browser (Scripts/console-browser-test.py: Debian's chromium
/// driven by Playwright from PyPI). Skipped by name where either is missing; CI installs
/// both (.ci/install-system-test-deps, .ci/install-test-deps).
@Suite struct BrowserTests {
    static let chromium = "/usr/bin/chromium"
    static var available: Bool {
        FileManager.default.isExecutableFile(atPath: chromium) && PythonModule.isInstalled("playwright")
    }

    @Test(
        .enabled(
            if: BrowserTests.available,
            "needs chromium at /usr/bin/chromium (apt) and the playwright Python package (pip)"),
        .disabled(
            if: Sanitizers.thread,
            "a browser driving a ThreadSanitizer build finds no races and only costs time; the plain run drives it")
    )
    func theConsoleAppliesAFaultWithTheKeyboardAndReverts() async throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let screenshot = root.appendingPathComponent(".build-artifacts/console.png").path
        let outcome = try await offload { () throws -> (Int32, String) in
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = [
                "python3", root.appendingPathComponent("Scripts/console-browser-test.py").path,
                "--build-dir", RunningDemo.buildDirectory.path, "--screenshot", screenshot, "--chromium",
                BrowserTests.chromium,
            ]
            let output = Pipe()
            process.standardOutput = output
            process.standardError = output
            try process.runWithSignalsUnblocked()
            let data = output.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return (process.terminationStatus, String(decoding: data, as: UTF8.self))
        }
        #expect(outcome.0 == 0, "\(outcome.1)")
        #expect(outcome.1.contains(" passed, 0 failed"))
    }
}
#endif
