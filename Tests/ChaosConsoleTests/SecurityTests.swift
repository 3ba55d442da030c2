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

/// A raw HTTP/1.1 request: the exact head lines given, nothing added.
func rawRequest(_ url: String, _ head: [String], body: Data = Data()) throws -> ControlResponse {
    let address = try ControlAddress(url)
    let socket = try address.connect(timeout: testTimeout)
    defer { close(socket) }
    var bytes = Data(
        (head + ["Connection: close", "Content-Length: \(body.count)", "", ""]).joined(separator: "\r\n").utf8)
    bytes.append(body)
    let sent = bytes.withUnsafeBytes { send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    guard sent == bytes.count else { throw TestFailure("the request was not sent") }
    var reader = HTTPResponseReader(SocketSource(fd: socket))
    let responseHead = try reader.head()
    var collected = Data()
    try reader.body(of: responseHead, limit: 1 << 20) { piece in
        collected.append(contentsOf: piece)
        return true
    }
    var headers: [String: String] = [:]
    for (name, value) in responseHead.headers { headers[name] = value }
    return ControlResponse(status: responseHead.status, headers: headers, body: collected)
}

func errorKind(_ response: ControlResponse) -> String? {
    (try? ControlAPI.decoder().decode(ControlAPI.ErrorBody.self, from: response.body))?.error.kind
}

/// Requests without the token, with a foreign Origin or a foreign Host are refused, and
/// refused requests change nothing.
@Suite struct SecurityTests {
    @Test func refusesWhatAPageInTheBrowserOrAStrangerWouldSend() async throws {
        let endpoint = try await TestEndpoint.start()
        let name = uniqueName()
        let point = makePoint(name)
        let url = endpoint.console.url
        let host = String(url.dropFirst("http://".count))
        let token = endpoint.console.token
        let apply = String(decoding: profile(name, item: "double"), as: UTF8.self)
        let cases: [(String, [String], Int, String)] = [
            ("no token", ["POST /v1/entries HTTP/1.1", "Host: \(host)"], 401, "unauthorized"),
            (
                "a wrong token",
                ["POST /v1/entries HTTP/1.1", "Host: \(host)", "Authorization: Bearer \(String(token.reversed()))"],
                401, "unauthorized"
            ),
            (
                "a token one character short",
                ["POST /v1/entries HTTP/1.1", "Host: \(host)", "Authorization: Bearer \(token.dropLast())"], 401,
                "unauthorized"
            ),
            (
                "a token in the query of a POST", ["POST /v1/entries?token=\(token) HTTP/1.1", "Host: \(host)"], 401,
                "unauthorized"
            ),
            (
                "a foreign Origin",
                [
                    "POST /v1/entries HTTP/1.1", "Host: \(host)", "Origin: http://evil.example",
                    "Authorization: Bearer \(token)",
                ], 403, "forbiddenOrigin"
            ),
            (
                "a null Origin",
                ["POST /v1/entries HTTP/1.1", "Host: \(host)", "Origin: null", "Authorization: Bearer \(token)"], 403,
                "forbiddenOrigin"
            ),
            (
                "another port's Origin",
                [
                    "POST /v1/entries HTTP/1.1", "Host: \(host)", "Origin: http://127.0.0.1:1",
                    "Authorization: Bearer \(token)",
                ], 403, "forbiddenOrigin"
            ),
            (
                "a cross-site fetch",
                [
                    "POST /v1/entries HTTP/1.1", "Host: \(host)", "Sec-Fetch-Site: cross-site",
                    "Authorization: Bearer \(token)",
                ], 403, "forbiddenOrigin"
            ),
            (
                "a foreign Host (DNS rebinding)",
                [
                    "POST /v1/entries HTTP/1.1", "Host: evil.example:\(endpoint.console.port ?? 0)",
                    "Authorization: Bearer \(token)",
                ], 403, "forbiddenHost"
            ),
            ("no Host", ["POST /v1/entries HTTP/1.0", "Authorization: Bearer \(token)"], 403, "forbiddenHost"),
        ]
        for (label, head, status, kind) in cases {
            let response = try await offload { try rawRequest(url, head, body: Data(apply.utf8)) }
            #expect(response.status == status, "\(label)")
            #expect(errorKind(response) == kind, "\(label)")
        }
        #expect(point(2) == 2, "a refused request applied chaos")
        let entries = try await offload { try endpoint.client.entries() }
        #expect(!entries.contains { $0.point == name })

        // The same request with the token, its own Host and its own Origin goes through.
        let accepted = try await offload {
            try rawRequest(
                url,
                [
                    "POST /v1/entries HTTP/1.1", "Host: \(host)", "Origin: http://\(host)",
                    "Authorization: Bearer \(token)",
                ], body: Data(apply.utf8))
        }
        #expect(accepted.status == 201)
        #expect(point(2) == 4)
        let applied = try ControlAPI.decoder().decode(ControlAPI.Applied.self, from: accepted.body)
        _ = try await offload { try endpoint.client.revert(entry: applied.entries[0]) }

        // The console page and the event stream take the token in the query of a GET only.
        let page = try await offload { try rawRequest(url, ["GET /console?token=\(token) HTTP/1.1", "Host: \(host)"]) }
        #expect(page.status == 200)
        #expect(page.headers["content-security-policy"]?.contains("frame-ancestors 'none'") == true)
        let noPage = try await offload { try rawRequest(url, ["GET /console HTTP/1.1", "Host: \(host)"]) }
        #expect(noPage.status == 401)
        #expect(noPage.headers["www-authenticate"]?.hasPrefix("Bearer") == true)

        // Browsers ask for /favicon.ico on their own, without the token: an empty answer,
        // still behind the Host and Origin checks, and for that exact path and GET only.
        let favicons: [(String, [String], Int)] = [
            ("the favicon", ["GET /favicon.ico HTTP/1.1", "Host: \(host)"], 204),
            ("the favicon, HEAD", ["HEAD /favicon.ico HTTP/1.1", "Host: \(host)"], 204),
            ("the favicon with a query", ["GET /favicon.ico?x=1 HTTP/1.1", "Host: \(host)"], 204),
            ("the favicon from a foreign Host", ["GET /favicon.ico HTTP/1.1", "Host: evil.example"], 403),
            (
                "the favicon for a foreign Origin",
                ["GET /favicon.ico HTTP/1.1", "Host: \(host)", "Origin: http://evil.example"], 403
            ),
            ("a POST to the favicon", ["POST /favicon.ico HTTP/1.1", "Host: \(host)"], 401),
            ("an encoded favicon path", ["GET /favicon%2Eico HTTP/1.1", "Host: \(host)"], 401),
            ("a path below the favicon", ["GET /favicon.ico/../v1/entries HTTP/1.1", "Host: \(host)"], 401),
            ("the entries beside it", ["GET /v1/entries HTTP/1.1", "Host: \(host)"], 401),
        ]
        for (label, head, status) in favicons {
            let response = try await offload { try rawRequest(url, head) }
            #expect(response.status == status, "\(label)")
            if status == 204 { #expect(response.body.isEmpty, "\(label)") }
        }
        await endpoint.finish()
    }

    /// The request journal, virtual time and the listing of every process (whose links carry
    /// other consoles' tokens) pass the same checks as the rest.
    @Test(arguments: [
        ("GET /v1/requests", "\"requests\""), ("GET /v1/time", "\"running\""),
        ("POST /v1/time/advance?by=soon", "\"running\""), ("DELETE /v1/time/advance", "\"running\""),
        ("GET /v1/processes", "\"processes\""), ("GET /console/processes", "<html"),
    ])
    func theseRoutesAreBehindTheSameChecks(route: String, answered: String) async throws {
        let endpoint = try await TestEndpoint.start()
        let url = endpoint.console.url
        let host = String(url.dropFirst("http://".count))
        let token = endpoint.console.token
        let line = "\(route) HTTP/1.1"
        let cases: [(String, [String], Int)] = [
            ("no token", [line, "Host: \(host)"], 401),
            ("a wrong token", [line, "Host: \(host)", "Authorization: Bearer \(String(token.reversed()))"], 401),
            (
                "a foreign Origin",
                [line, "Host: \(host)", "Origin: http://evil.example", "Authorization: Bearer \(token)"], 403
            ),
            (
                "a cross-site fetch",
                [line, "Host: \(host)", "Sec-Fetch-Site: cross-site", "Authorization: Bearer \(token)"], 403
            ),
            (
                "a foreign Host",
                [line, "Host: evil.example:\(endpoint.console.port ?? 0)", "Authorization: Bearer \(token)"], 403
            ),
        ]
        for (label, head, status) in cases {
            let response = try await offload { try rawRequest(url, head) }
            #expect(response.status == status, "\(route): \(label)")
            #expect(!String(decoding: response.body, as: UTF8.self).contains(answered), "\(route): \(label)")
        }
        // With the token it is answered (the advance's bad duration with 400). Not a DELETE:
        // it would stop an advance of TimeRouteTests, which runs beside.
        if !route.hasPrefix("DELETE") {
            let accepted = try await offload {
                try rawRequest(url, [line, "Host: \(host)", "Authorization: Bearer \(token)"])
            }
            #expect(accepted.status == (route.hasPrefix("POST") ? 400 : 200), "\(route)")
        }
        await endpoint.finish()
    }

    /// The profile editor's routes — exporting, validating, and applying a `CHAOS` line as
    /// `text/plain`, which a cross-site form can send without asking first — pass the same
    /// checks, and a refused one changes nothing.
    @Test func theProfileRoutesAreBehindTheSameChecks() async throws {
        let endpoint = try await TestEndpoint.start()
        let name = uniqueName()
        let point = makePoint(name)
        let url = endpoint.console.url
        let host = String(url.dropFirst("http://".count))
        let token = endpoint.console.token
        let line = Data("\(name)=double".utf8)
        let routes: [(String, Data, Int)] = [
            // Partial: another suite may have an entry made in code live, which a full export refuses.
            ("GET /v1/profile?partial=true HTTP/1.1", Data(), 200),
            ("POST /v1/profile/validate HTTP/1.1", profile(name, item: "double"), 200),
            ("POST /v1/entries HTTP/1.1", line, 201),
        ]
        for (route, body, accepted) in routes {
            let plain = ["Content-Type: text/plain"]
            let cases: [(String, [String], Int)] = [
                ("no token", [route, "Host: \(host)"] + plain, 401),
                ("a wrong token", [route, "Host: \(host)", "Authorization: Bearer \(String(token.reversed()))"], 401),
                (
                    "a foreign Origin",
                    [route, "Host: \(host)", "Origin: http://evil.example", "Authorization: Bearer \(token)"] + plain,
                    403
                ),
                (
                    "a cross-site fetch",
                    [route, "Host: \(host)", "Sec-Fetch-Site: cross-site", "Authorization: Bearer \(token)"] + plain,
                    403
                ),
                (
                    "a foreign Host",
                    [route, "Host: evil.example:\(endpoint.console.port ?? 0)", "Authorization: Bearer \(token)"]
                        + plain, 403
                ),
            ]
            for (label, head, status) in cases {
                let response = try await offload { try rawRequest(url, head, body: body) }
                #expect(response.status == status, "\(route): \(label)")
                #expect(!String(decoding: response.body, as: UTF8.self).contains("\"entries\""), "\(route): \(label)")
            }
            #expect(point(2) == 2, "\(route): a refused request applied chaos")
            let head = [route, "Host: \(host)", "Origin: http://\(host)", "Authorization: Bearer \(token)"] + plain
            let response = try await offload { try rawRequest(url, head, body: body) }
            #expect(response.status == accepted, "\(route) with the token")
            if accepted == 201 {
                let applied = try ControlAPI.decoder().decode(ControlAPI.Applied.self, from: response.body)
                #expect(point(2) == 4)
                for id in applied.entries { _ = try await offload { try endpoint.client.revert(entry: id) } }
            }
        }
        await endpoint.finish()
    }

    @Test func theCallJournalIsBehindTheSameChecks() async throws {
        let endpoint = try await TestEndpoint.start()
        let url = endpoint.console.url
        let host = String(url.dropFirst("http://".count))
        let token = endpoint.console.token
        let select = Data(#"{"everyPoint": true, "points": ["network.send"]}"#.utf8)
        var cases: [(String, [String], Data, Int)] = []
        for route in ["GET /v1/journal HTTP/1.1", "GET /v1/journal?follow HTTP/1.1", "PUT /v1/journal HTTP/1.1"] {
            let body = route.hasPrefix("PUT") ? select : Data()
            cases += [
                ("\(route): no token", [route, "Host: \(host)"], body, 401),
                (
                    "\(route): a wrong token",
                    [route, "Host: \(host)", "Authorization: Bearer \(String(token.reversed()))"], body, 401
                ),
                (
                    "\(route): a foreign Origin",
                    [route, "Host: \(host)", "Origin: http://evil.example", "Authorization: Bearer \(token)"], body,
                    403
                ),
                (
                    "\(route): a cross-site fetch",
                    [route, "Host: \(host)", "Sec-Fetch-Site: cross-site", "Authorization: Bearer \(token)"], body,
                    403
                ),
                (
                    "\(route): a foreign Host",
                    [route, "Host: evil.example:\(endpoint.console.port ?? 0)", "Authorization: Bearer \(token)"],
                    body, 403
                ),
            ]
        }
        cases.append(
            (
                "a token in the query of a PUT", ["PUT /v1/journal?token=\(token) HTTP/1.1", "Host: \(host)"], select,
                401
            ))
        cases.append(
            (
                "GET with the token",
                ["GET /v1/journal?limit=0 HTTP/1.1", "Host: \(host)", "Authorization: Bearer \(token)"],
                Data(), 200
            ))
        for (label, head, body, status) in cases {
            let response = try await offload { try rawRequest(url, head, body: body) }
            #expect(response.status == status, "\(label)")
            if status != 200 {
                #expect(!String(decoding: response.body, as: UTF8.self).contains("\"calls\""), "\(label)")
            }
        }
        #expect(!CallJournal.shared.selection.everyPoint, "a refused PUT changes nothing")
        await endpoint.finish()
    }

    @Test func tokensAreRandomPerSession() async throws {
        let first = try await TestEndpoint.start()
        let second = try await TestEndpoint.start()
        #expect(first.console.token != second.console.token)
        #expect(first.console.url.hasPrefix("http://127.0.0.1:"))
        let crossed = ControlClient(url: first.console.url, token: second.console.token, timeout: testTimeout)
        let error = await #expect(throws: ControlError.self) { _ = try await offload { try crossed.status() } }
        #expect(error?.status == 401)
        await first.finish()
        await second.finish()
    }

    @Test func garbageRequestsGetAnAnswerAndTheEndpointStaysUp() async throws {
        let endpoint = try await TestEndpoint.start()
        let url = endpoint.console.url
        let host = String(url.dropFirst("http://".count))
        let token = endpoint.console.token
        var random = SystemRandomNumberGenerator()
        let paths = [
            "/v1/entries/99999999999999999999", "/v1/entries/-1/enable", "/v1/%ZZ", "/v1/response-sets/%00",
            "/../etc/passwd", "/v1/entries/1/2/3/4",
        ]
        for path in paths {
            let response = try await offload {
                try rawRequest(url, ["GET \(path) HTTP/1.1", "Host: \(host)", "Authorization: Bearer \(token)"])
            }
            #expect((400...499).contains(response.status), "\(path)")
        }
        // Bodies that are not profiles: random bytes, deep nesting, a huge point name (no
        // point can have it, so the entry may not wait for one).
        let hugeName = Data(
            #"{"entries": [{"point": "\#(String(repeating: "x", count: 100_000))", "provider": "original"}]}"#.utf8)
        let bodies = [
            Data((0..<512).map { _ in UInt8.random(in: 0...255, using: &random) }),
            Data(String(repeating: "[", count: 100_000).utf8),
            hugeName,
        ]
        for body in bodies {
            let response = try await offload {
                try rawRequest(
                    url, ["POST /v1/entries HTTP/1.1", "Host: \(host)", "Authorization: Bearer \(token)"], body: body)
            }
            #expect(response.status == 422)
            guard response.status == 422 else { continue }
            let detail = try ControlAPI.decoder().decode(ControlAPI.ErrorBody.self, from: response.body).error
            #expect(detail.message.count < 600, "errors quote at most 80 characters of input")
            if body == hugeName {
                #expect(detail.kind == "unknownPoint", "\(detail)")
                #expect(detail.subject == "<control request>:1:24 at $.entries[0].point", "\(detail)")
                #expect(detail.message.contains("a point name is 1 to 200 letters"), "\(detail)")
            }
        }
        #expect(!Chaos.liveEntries.contains { $0.entry.pointName.count > 200 }, "nothing was kept pending")
        let status = try await offload { try endpoint.client.status() }
        #expect(status.pid == getpid())
        await endpoint.finish()
    }
}
#endif
