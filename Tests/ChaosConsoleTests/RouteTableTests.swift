// Needs the console's server: runs with `swift test --traits Console`.
#if Console
import ChaosControl
import Foundation
import TestHelpers
import Testing

/// Both control servers against the one route table (`ControlAPI.routes`). Each route is
/// probed with a method no route takes, so nothing changes in the process: a server that
/// has the route answers 405 with the route's methods in `Allow`; one that lacks it, 404.
@Suite struct RouteTableTests {
    /// Values for the `{NAME}` parts of the table's paths.
    static let filling = ["id": "999999", "name": "no-such-set", "exploration": "999999", "failure": "1"]

    /// How `client`'s server answers PATCH on each route: route → (status, Allow, error kind).
    static func probe(_ client: ControlClient) throws -> [ControlAPI.Route: (Int, String?, String?)] {
        var answers: [ControlAPI.Route: (Int, String?, String?)] = [:]
        for route in ControlAPI.routes {
            let response = try client.send("PATCH", route.path(filling: filling))
            answers[route] = (response.status, response.headers["allow"], errorKind(response))
        }
        return answers
    }

    @Test func aSwiftProgramsEndpointAnswersEveryRouteWithItsMethods() async throws {
        let endpoint = try await TestEndpoint.start()
        let client = endpoint.client
        let answers = try await offload { try Self.probe(client) }
        for route in ControlAPI.routes {
            let (status, allow, _) = try #require(answers[route])
            #expect(status == 405, "PATCH \(route.path): \(status); the table has it, the server does not")
            #expect(allow == route.methods.joined(separator: ", "), "\(route.path): Allow \(allow ?? "none")")
        }
        // A path outside the table is no route, and the answer names the table's routes.
        let missing = try await offload { try client.send("GET", "/v1/nothing") }
        #expect(missing.status == 404 && errorKind(missing) == "notFound")
        let message = String(decoding: missing.body, as: UTF8.self)
        #expect(message.contains("/v1/explorations/{exploration}/failures/{failure}/replay"), "\(message)")
        await endpoint.finish()
    }

    @Test(.disabled(if: Sanitizers.thread, Sanitizers.preloadReason))
    func aChaosRunProgramsEndpointAnswersTheRoutesTheTableGivesIt() async throws {
        let child = try PreloadChild(profile: PreloadControlTests.harmless)
        defer { child.stop() }
        try await child.line(startingWith: "ok")
        let client = ControlClient(try await child.endpoint(), timeout: .seconds(30))
        let answers = try await offload { try Self.probe(client) }
        #expect(ControlAPI.routes.contains { $0.inChaosRun } && ControlAPI.routes.contains { !$0.inChaosRun })
        for route in ControlAPI.routes {
            let (status, allow, kind) = try #require(answers[route])
            if route.inChaosRun {
                #expect(status == 405, "PATCH \(route.path): \(status); the table gives it to chaos run")
                #expect(allow == route.methods.joined(separator: ", "), "\(route.path): Allow \(allow ?? "none")")
            } else {
                #expect(status == 404 && kind == "notFound", "\(route.path): \(status); chaos run does not serve it")
            }
        }
        try await child.line(startingWith: "ok", after: child.output.count)
    }
}
#endif
