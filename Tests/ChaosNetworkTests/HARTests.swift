import ChaosKit
import Foundation
import HTTPTypes
import Testing

@testable import ChaosNetwork

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Record and replay with HAR 1.2 files: recording and pass-through against the real
/// loopback server, strict replay, browser exports, malformed files.
@Suite struct HARTests {
    static func temporaryHAR() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("chaoskit-\(UUID().uuidString)/traffic.har")
    }

    /// A server that sets a cookie and echoes the Authorization header it saw.
    static func server() throws -> LoopbackServer {
        try LoopbackServer(maxRequests: 100) { request in
            var headers = [
                "Content-Type": "application/json", "Set-Cookie": "session=s3cr3t; Path=/", "X-Api-Key-Echo": "key-123",
            ]
            if let auth = request.headers["authorization"] { headers["X-Saw-Authorization"] = auth }
            if request.target.hasPrefix("/binary") {
                return LoopbackResponse(
                    status: 200, headers: ["Content-Type": "application/octet-stream"],
                    body: Data([0xFF, 0x00, 0xFE, 0x80]))
            }
            let body =
                #"{"target":"\#(request.target)","method":"\#(request.method)","body":"\#(String(decoding: request.body, as: UTF8.self))"}"#
            return LoopbackResponse(
                status: request.target.hasPrefix("/missing") ? 404 : 200, headers: headers, body: Data(body.utf8))
        }
    }

    func json(_ file: URL) throws -> [String: Any] {
        try JSONSerialization.jsonObject(with: Data(contentsOf: file)) as! [String: Any]
    }

    /// The members HAR 1.2 requires, checked on a written file.
    func expectValidHAR12(_ file: URL, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let root = try json(file)
        let log = try #require(root["log"] as? [String: Any], sourceLocation: sourceLocation)
        #expect(log["version"] as? String == "1.2", sourceLocation: sourceLocation)
        let creator = try #require(log["creator"] as? [String: Any], sourceLocation: sourceLocation)
        #expect(creator["name"] is String && creator["version"] is String, sourceLocation: sourceLocation)
        let entries = try #require(log["entries"] as? [[String: Any]], sourceLocation: sourceLocation)
        for entry in entries {
            let started = try #require(entry["startedDateTime"] as? String, sourceLocation: sourceLocation)
            #expect(
                (try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(started)) != nil, "\(started)",
                sourceLocation: sourceLocation)
            #expect(entry["time"] is NSNumber && entry["cache"] is [String: Any], sourceLocation: sourceLocation)
            let request = try #require(entry["request"] as? [String: Any], sourceLocation: sourceLocation)
            for key in ["method", "url", "httpVersion"] {
                #expect(request[key] is String, "request.\(key)", sourceLocation: sourceLocation)
            }
            for key in ["cookies", "headers", "queryString"] {
                #expect(request[key] is [Any], "request.\(key)", sourceLocation: sourceLocation)
            }
            for key in ["headersSize", "bodySize"] {
                #expect(request[key] is NSNumber, "request.\(key)", sourceLocation: sourceLocation)
            }
            let response = try #require(entry["response"] as? [String: Any], sourceLocation: sourceLocation)
            for key in ["status", "headersSize", "bodySize"] {
                #expect(response[key] is NSNumber, "response.\(key)", sourceLocation: sourceLocation)
            }
            for key in ["statusText", "httpVersion", "redirectURL"] {
                #expect(response[key] is String, "response.\(key)", sourceLocation: sourceLocation)
            }
            for key in ["cookies", "headers"] {
                #expect(response[key] is [Any], "response.\(key)", sourceLocation: sourceLocation)
            }
            let content = try #require(response["content"] as? [String: Any], sourceLocation: sourceLocation)
            #expect(content["size"] is NSNumber && content["mimeType"] is String, sourceLocation: sourceLocation)
            let timings = try #require(entry["timings"] as? [String: Any], sourceLocation: sourceLocation)
            for key in ["send", "wait", "receive"] {
                #expect(timings[key] is NSNumber, "timings.\(key)", sourceLocation: sourceLocation)
            }
        }
    }

    @Test func recordsURLSessionTrafficAndReplaysItWithoutTheServer() async throws {
        let file = Self.temporaryHAR()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let server = try Self.server()
        let base = server.baseURL.absoluteString

        let recorder = try HARCassette(file: file, mode: .record, redacting: ["X-Api-Key-Echo", "X-Saw-Authorization"])
        #expect(recorder.isRecording)
        let stubs = StubSet()
        stubs.add(recorder)
        let recording = session(with: stubs)
        let first = await load(
            recording, base + "/weather?lat=1&lon=2", headers: ["Authorization": "Bearer top-secret", "Cookie": "a=b"])
        #expect(
            first.status == 200 && first.text.contains("/weather?lat=1&lon=2"), "\(String(describing: first.error))")
        let posted = await load(recording, base + "/notes", method: "POST", body: Data("remember".utf8))
        #expect(posted.text.contains("\"body\":\"remember\""))
        #expect(await load(recording, base + "/missing").status == 404)
        let binary = await load(recording, base + "/binary")
        #expect(binary.body == Data([0xFF, 0x00, 0xFE, 0x80]))
        #expect(server.requestCount == 4)
        server.stop()

        try expectValidHAR12(file)
        let text = try String(contentsOf: file, encoding: .utf8)
        for secret in ["top-secret", "a=b", "s3cr3t", "key-123"] {
            #expect(!text.contains(secret), "\(secret) leaked into the HAR")
        }
        #expect(text.contains("[redacted]"))
        let entries = try #require((try json(file)["log"] as? [String: Any])?["entries"] as? [[String: Any]])
        #expect(entries.count == 4)
        let binaryContent = (entries[3]["response"] as? [String: Any])?["content"] as? [String: Any]
        #expect(binaryContent?["encoding"] as? String == "base64")
        let query = (entries[0]["request"] as? [String: Any])?["queryString"] as? [[String: String]]
        #expect(query == [["name": "lat", "value": "1"], ["name": "lon", "value": "2"]])

        // Replay, strictly, with the server gone; the query order does not matter.
        let player = try HARCassette(file: file, mode: .replayOnly)
        let replayStubs = StubSet()
        replayStubs.add(player)
        let replaying = session(with: replayStubs)
        let again = await load(replaying, base + "/weather?lon=2&lat=1")
        #expect(again.status == 200 && again.body == first.body)
        #expect(again.headers["set-cookie"] == "session=[redacted]; Path=/")
        #expect(await load(replaying, base + "/notes", method: "POST", body: Data("remember".utf8)).body == posted.body)
        #expect(await load(replaying, base + "/missing").status == 404)
        #expect(await load(replaying, base + "/binary").body == binary.body)
        let unknown = await load(replaying, base + "/weather?lat=9&lon=2")
        #expect(unknown.error?.code == .resourceUnavailable)
    }

    @Test func redactionCoversHeadersQueryJSONAndCookiesAndTheArchiveStillReplays() async throws {
        let file = Self.temporaryHAR()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let server = try LoopbackServer(maxRequests: 10) { request in
            LoopbackResponse(
                status: 200,
                headers: [
                    "Content-Type": "application/json", "Set-Cookie": "session=server-secret-1; Path=/; HttpOnly",
                ],
                body: Data(
                    #"{"ok":true,"token":"server-secret-2","user":{"name":"Ada","refresh_token":"server-secret-3"}}"#
                        .utf8)
            )
        }
        defer { server.stop() }
        let base = server.baseURL.absoluteString
        var redaction = HARRedaction.default
        redaction.queryParameters.insert("session_id")
        redaction.jsonFields.insert("pin")
        let recorder = try HARCassette(file: file, mode: .record, redaction: redaction)
        let stubs = StubSet()
        stubs.add(recorder)
        let recording = session(with: stubs)
        let search = await load(
            recording, base + "/search?q=cats&api_key=client-secret-1&session_id=client-secret-2",
            headers: [
                "Authorization": "Bearer client-secret-3", "Cookie": "session=client-secret-4; theme=client-secret-5",
                "X-Api-Key": "client-secret-6",
            ])
        #expect(search.status == 200)
        let login = await load(
            recording, base + "/login", method: "POST", headers: ["Content-Type": "application/json"],
            body: Data(#"{"user":"ada","password":"client-secret-7","device":{"pin":"client-secret-8"}}"#.utf8))
        #expect(login.status == 200)
        let form = await load(
            recording, base + "/form", method: "POST", headers: ["Content-Type": "application/x-www-form-urlencoded"],
            body: Data("user=ada&password=client-secret-9".utf8))
        #expect(form.status == 200)
        server.stop()

        let text = try String(contentsOf: file, encoding: .utf8)
        for secret in (1...9).map({ "client-secret-\($0)" }) + (1...3).map({ "server-secret-\($0)" }) {
            #expect(!text.contains(secret), "\(secret) leaked into the HAR")
        }
        for kept in ["api_key", "session_id", "password", "pin", "theme", "refresh_token", "Ada", "cats"] {
            #expect(text.contains(kept), "\(kept) should stay (only values are redacted)")
        }

        // Replay with other secrets: they are redacted before matching, so the entries match.
        let player = try HARCassette(file: file, mode: .replayOnly, redaction: redaction)
        let replayStubs = StubSet()
        replayStubs.add(player)
        let replaying = session(with: replayStubs)
        let again = await load(
            replaying, base + "/search?session_id=other-2&api_key=other-1&q=cats",
            headers: ["Authorization": "Bearer other"])
        #expect(
            again.status == 200 && again.text.contains(#""token":"[redacted]""#)
                && again.text.contains(#""name":"Ada""#))
        #expect(again.headers["set-cookie"] == "session=[redacted]; Path=/; HttpOnly")
        let loginAgain = await load(
            replaying, base + "/login", method: "POST", headers: ["Content-Type": "application/json"],
            body: Data(#"{"device":{"pin":"0000"},"password":"other","user":"ada"}"#.utf8))
        #expect(loginAgain.status == 200)
        let formAgain = await load(
            replaying, base + "/form", method: "POST", headers: ["Content-Type": "application/x-www-form-urlencoded"],
            body: Data("user=ada&password=other".utf8))
        #expect(formAgain.status == 200)
        // What is not a secret still has to match.
        #expect(
            await load(replaying, base + "/search?q=dogs&api_key=x&session_id=y").error?.code == .resourceUnavailable)
        let otherUser = await load(
            replaying, base + "/login", method: "POST", headers: ["Content-Type": "application/json"],
            body: Data(#"{"user":"bo","password":"x","device":{"pin":"1"}}"#.utf8))
        #expect(otherUser.error?.code == .resourceUnavailable)
        #expect(otherUser.error?.localizedDescription.contains("body") == true)
    }

    @Test func aBodyInAnotherCharsetIsRecordedAsTextAndReplaysItsExactBytes() async throws {
        let file = Self.temporaryHAR()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let latin1 = try #require("Crème brûlée, ça va?".data(using: .isoLatin1))
        let network = StubSet().answering(.data(latin1, contentType: "text/plain; charset=iso-8859-1"))
        let recorder = try HARCassette(file: file, mode: .record, network: network)
        let recording = StubSet()
        recording.add(recorder)
        _ = try await recording.respond(to: request(.get, "https://a.test/menu"))
        let text = try String(contentsOf: file, encoding: .utf8)
        #expect(text.contains("Crème brûlée, ça va?") && !text.contains("base64"), "kept as readable text")
        let replay = StubSet()
        replay.add(try HARCassette(file: file, mode: .replayOnly))
        #expect(try await replay.respond(to: request(.get, "https://a.test/menu")).body == latin1)
    }

    @Test func recordsThroughChaosNetworkClientAndRecordOnceReplaysTheSecondTime() async throws {
        let file = Self.temporaryHAR()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        let server = try Self.server()
        defer { server.stop() }
        let url = server.baseURL.appendingPathComponent("once")

        func fetch() async throws -> (Int, String, HARCassette) {
            let cassette = try HARCassette(file: file, mode: .recordOnce)
            let stubs = StubSet()
            stubs.add(cassette)
            let (head, body) = try await ChaosNetworkClient(stubs).send(HTTPRequest(method: .get, url: url), body: nil)
            return (head.status.code, String(decoding: body, as: UTF8.self), cassette)
        }
        let (status, body, first) = try await fetch()
        #expect(status == 200 && first.isRecording && first.entryCount == 1)
        #expect(server.requestCount == 1)
        let (againStatus, againBody, second) = try await fetch()
        #expect(!second.isRecording)
        #expect(againStatus == status && againBody == body)
        #expect(server.requestCount == 1, "the second run replays")
        try expectValidHAR12(file)
    }

    @Test func replayElseNetworkSendsWhatIsNotRecordedToTheServer() async throws {
        let server = try Self.server()
        defer { server.stop() }
        let file = Self.temporaryHAR()
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        // An archive with one entry for the server's /cached.
        let recorder = try HARCassette(
            file: file, mode: .record, network: StubSet().answering(.string("from the archive")))
        let recordStubs = StubSet()
        recordStubs.add(recorder)
        _ = try await recordStubs.respond(to: request(.get, server.baseURL.absoluteString + "/cached"))

        let cassette = try HARCassette(file: file, mode: .replayElseNetwork)
        let stubs = StubSet()
        stubs.add(cassette)
        let session = session(with: stubs)
        #expect(await load(session, server.baseURL.absoluteString + "/cached").text == "from the archive")
        let live = await load(session, server.baseURL.absoluteString + "/live")
        #expect(live.status == 200 && live.text.contains("\"target\":\"/live\""))
        #expect(server.requestCount == 1)
        #expect(cassette.entryCount == 2, "what it fetched is recorded")
        // … and replayed from then on, also by a cassette reading the file anew.
        #expect(await load(session, server.baseURL.absoluteString + "/live").text == live.text)
        #expect(server.requestCount == 1)
        let reread = try HARCassette(file: file, mode: .replayOnly)
        #expect(reread.entryDescriptions.contains("GET \(server.baseURL.absoluteString)/live"))
    }

    @Test func strictReplayNamesTheRequestAndTheClosestEntry() async throws {
        let cassette = try HARCassette(
            file: URL(fileURLWithPath: resourcePath("browser-export.har")), mode: .replayOnly)
        let stubs = StubSet()
        stubs.add(cassette)
        let error = await caught { () async throws(NetworkError) in
            try await stubs.respond(
                to: request(.get, "https://api.weather.example.com/v1/forecast?lat=55.95&lon=-3.20"))
        }
        guard case .noStub(let message)? = error else {
            Issue.record("expected noStub, got \(String(describing: error))")
            return
        }
        #expect(message.contains("GET https://api.weather.example.com/v1/forecast?lat=55.95&lon=-3.20"))
        #expect(
            message.contains(
                "the closest is GET https://api.weather.example.com/v1/forecast?lon=-3.19&lat=55.95 (entry 0, log.entries[0])"
            ))
        #expect(message.contains("query"))
        let missing = expectConfigurationError {
            _ = try HARCassette(file: URL(fileURLWithPath: "/no/such.har"), mode: .replayOnly)
        }
        #expect(missing?.message.contains("record it first") == true)
    }

    @Test func replaysABrowserExport() async throws {
        let cassette = try HARCassette(
            file: URL(fileURLWithPath: resourcePath("browser-export.har")), mode: .replayOnly)
        #expect(cassette.entryCount == 4)
        let stubs = StubSet()
        stubs.add(cassette)
        let session = session(with: stubs)
        let forecast = await load(session, "https://api.weather.example.com/v1/forecast?lat=55.95&lon=-3.19")
        #expect(forecast.status == 200 && forecast.text.contains("\"place\":\"Edinburgh\""))
        #expect(forecast.headers["content-encoding"] == nil, "the archive holds decoded content")
        #expect(forecast.headers["cache-control"] == "max-age=300")
        let icon = await load(session, "https://weather.example.com/icons/drizzle.png")
        #expect(icon.body.prefix(4) == Data([0x89, 0x50, 0x4E, 0x47]) && icon.body.count == 70)
        let favourite = await load(
            session, "https://api.weather.example.com/v1/favourites", method: "POST",
            body: Data(#"{"place":"Edinburgh"}"#.utf8))
        #expect(favourite.status == 201 && favourite.headers["location"] == "/v1/favourites/12")
        #expect(await load(session, "https://api.weather.example.com/v1/alerts").error?.code == .notConnectedToInternet)
        // Directly: repeated header names stay apart.
        let direct = try await stubs.respond(to: request(.get, "https://weather.example.com/icons/drizzle.png"))
        #expect(direct.head.headerFields[values: .setCookie] == ["seen=1; Path=/", "theme=dark; Path=/"])
    }

    @Test(arguments: [
        (
            #"{"log": {"version": "1.2", "creator": {"name": "x", "version": "1"}, "entries": [{"startedDateTime": "", "time": 1, "request": {"method": "GET", "url": "https://a.test/"}, "response": {"status": "200"}}]}}"#,
            "log.entries[0].response.status"
        ),
        (
            #"{"log": {"version": "1.2", "creator": {"name": "x", "version": "1"}, "entries": [{"startedDateTime": "", "time": 1, "request": {"url": "https://a.test/"}, "response": {"status": 200}}]}}"#,
            "log.entries[0].request.method"
        ),
        (#"{"log": {"version": "1.2", "creator": {"name": "x", "version": "1"}, "entries": {}}}"#, "log.entries"),
        (#"{"log": {"version": "2.0", "creator": {"name": "x", "version": "1"}, "entries": []}}"#, "log.version"),
        (
            #"{"log": {"version": "1.2", "creator": {"name": "x", "version": "1"}, "entries": [{"startedDateTime": "", "time": 1, "request": {"method": "GET", "url": "/relative"}, "response": {"status": 200}}]}}"#,
            "log.entries[0].request.url"
        ),
        (
            #"{"log": {"version": "1.2", "creator": {"name": "x", "version": "1"}, "entries": [{"startedDateTime": "", "time": 1, "request": {"method": "GET", "url": "https://a.test/"}, "response": {"status": 200, "content": {"text": "%%%", "encoding": "base64"}}}]}}"#,
            "log.entries[0].response.content.text"
        ),
        (#"{"entries": []}"#, "log"),
        (#"{"log": "#, "not JSON"),
    ])
    func malformedArchivesSayWhere(json: String, path: String) throws {
        let file = Self.temporaryHAR()
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: file.deletingLastPathComponent()) }
        try Data(json.utf8).write(to: file)
        let error = expectConfigurationError { _ = try HARCassette(file: file, mode: .replayOnly) }
        #expect(error?.message.contains(path) == true, "\(error?.message ?? "")")
        #expect(error?.subject == file.path)
    }
}

extension StubSet {
    /// A set answering everything with `response` (a stand-in network).
    func answering(_ response: StubResponse) -> StubSet {
        stub(RequestMatcher(), response)
        return self
    }
}
