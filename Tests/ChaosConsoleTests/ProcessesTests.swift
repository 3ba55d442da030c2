// Needs the console's server: runs with `swift test --traits Console`.
#if Console
@testable import ChaosControl
import ChaosConsole
import ChaosKit
import Foundation
import TestHelpers
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `GET /v1/processes` and `/console/processes`: every endpoint on the machine in one page,
/// each with a working link to its console, or what it offers when it has none.
@Suite(.disabled(if: Sanitizers.thread, Sanitizers.preloadReason)) struct ProcessesTests {
    @Test func everyEndpointIsListedWithAWorkingLinkToItsConsole() async throws {
        // Three endpoints in one directory: this process's, the ConsoleDemo example's and a
        // `chaos run` child's (no console page).
        let child = try PreloadChild(profile: PreloadControlTests.harmless)
        defer { child.stop() }
        let demo = try RunningDemo(directory: child.directory)
        defer { demo.stop() }
        guard
            let console = try await ChaosConsole.start(
                .init(endpointDirectory: child.directory, program: "processes-tests"))
        else { throw TestFailure("the endpoint did not start in a debug build") }
        _ = try await demo.line(containing: "greeting: hello, world")
        _ = try await child.endpoint()
        let host = String(console.url.dropFirst("http://".count))
        let token = console.token

        // Each process is asked for its status with a short bound: on a loaded machine one may
        // miss it once, and is listed with why; the next listing has it.
        var listing = ControlAPI.Processes(directory: "", processes: [])
        for _ in 0..<30 {
            let answer = try await offload {
                try rawRequest(
                    console.url, ["GET /v1/processes HTTP/1.1", "Host: \(host)", "Authorization: Bearer \(token)"])
            }
            #expect(answer.status == 200)
            listing = try ControlAPI.decoder().decode(ControlAPI.Processes.self, from: answer.body)
            if listing.processes.count == 3, listing.processes.allSatisfy({ $0.status != nil }) { break }
            try await Task.sleep(for: .milliseconds(200))
        }
        #expect(listing.directory == child.directory.path)
        let byPid = Dictionary(listing.processes.map { ($0.pid, $0) }, uniquingKeysWith: { first, _ in first })

        let own = try #require(byPid[getpid()])
        #expect(own.isCurrent)
        #expect(own.console == console.consoleURL)
        #expect(own.status?.features.contains("processes") == true)

        let shown = try #require(byPid[demo.pid], "\(listing)")
        #expect(!shown.isCurrent)
        #expect(shown.program == "ConsoleDemo")
        #expect(shown.status?.kind == "swift")
        let link = try #require(shown.console)
        #expect(demo.output.first { $0.hasPrefix("ready ") }?.hasSuffix(link) == true, "the link is the one it printed")
        let linkHost = String(link.dropFirst("http://".count).prefix { $0 != "/" })
        let path = String(link.dropFirst("http://".count + linkHost.count))
        let page = try await offload {
            try rawRequest("http://\(linkHost)", ["GET \(path) HTTP/1.1", "Host: \(linkHost)"])
        }
        #expect(page.status == 200)
        #expect(String(decoding: page.body, as: UTF8.self).contains("<html"))

        // Listed by the program's own pid, with chaos run's beside it.
        let program = try await child.endpoint()
        let run = try #require(byPid[program.pid], "\(listing)")
        #expect(run.runner == child.pid, "\(run)")
        #expect(run.kind == "preload")
        #expect(run.console == nil, "a chaos run child serves no page: no broken link")
        #expect(run.status?.entries == 1, "its status says what it offers: \(run)")

        // The page itself: behind the token, and it loads the listing.
        let listingPage = try await offload {
            try rawRequest(console.url, ["GET /console/processes?token=\(token) HTTP/1.1", "Host: \(host)"])
        }
        #expect(listingPage.status == 200)
        #expect(listingPage.headers["content-security-policy"]?.contains("frame-ancestors 'none'") == true)
        #expect(String(decoding: listingPage.body, as: UTF8.self).contains("/v1/processes"))

        // `chaos ctl console` without a pid names the page and every process.
        let printed = try await demo.ctl("console")
        #expect(printed.status == 0, "\(printed.errors)")
        #expect(printed.output.contains("/console/processes?token="), "\(printed.output)")
        #expect(printed.output.contains("\(demo.pid)  ConsoleDemo  \(link)"))
        #expect(printed.output.contains("\(program.pid)  "), "\(printed.output)")
        #expect(printed.output.contains("no web console"), "\(printed.output)")
        await console.stop()
    }
}
#endif
