// Needs the console's server: runs with `swift test --traits Console`.
#if Console
import ChaosKit
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

    /// The exploration panel (Scripts/console-explorations-browser-test.py), against an
    /// endpoint of this process: explorations are listed in the process that runs them, so
    /// this test explores, serves the console, and checks here what the page's Replay did.
    @Test(
        .enabled(
            if: BrowserTests.available,
            "needs chromium at /usr/bin/chromium (apt) and the playwright Python package (pip)"),
        .disabled(
            if: Sanitizers.thread,
            "a browser driving a ThreadSanitizer build finds no races and only costs time; the plain run drives it"),
        .timeLimit(.minutes(5))
    )
    func theConsoleShowsAnExplorationAndReplaysAFailure() async throws {
        let fetch = ExplorationRouteTests.makeFetch()
        let seed = ExplorationRouteTests.uniqueSeed()
        let entry = ProfileEntry(fetch, .throwing(.offline))
        let result = try await Chaos.explore(entry, seed: seed) {
            try await ExplorationRouteTests.sync(fetch)
        }
        #expect(result.failures.map(\.call) == [3, 4], "\(result)")
        let exploration = try #require(Chaos.explorations.last { $0.seed == seed })
        let endpoint = try await TestEndpoint.start()
        let console = try #require(endpoint.console.consoleURL)
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let screenshot = root.appendingPathComponent(".build-artifacts/console-explorations.png").path
        let outcome = try await offload { () throws -> (Int32, String) in
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = [
                "python3", root.appendingPathComponent("Scripts/console-explorations-browser-test.py").path,
                "--url", console, "--exploration", String(exploration.id), "--point", fetch.name,
                "--screenshot", screenshot, "--chromium", BrowserTests.chromium,
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

        // The page's Replay applied failure 1's entry in this process: the point now fails
        // at its third call, and there only.
        let live = Chaos.liveEntries.filter { $0.entry.pointName == fetch.name }
        #expect(live.map(\.entry.providerSummary) == ["\(entry.providerSummary) at call 3"], "\(live)")
        _ = try await fetch(1)
        _ = try await fetch(2)
        await #expect(throws: ExplorationRouteTests.FetchError.offline) { _ = try await fetch(3) }
        _ = try await fetch(4)
        for entry in live { try? Chaos.revert(entryID: entry.entry.id) }
        await endpoint.finish()
    }
}
#endif
