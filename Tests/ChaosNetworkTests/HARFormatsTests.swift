import ChaosKit
import Foundation
import HTTPTypes
import Testing

@testable import ChaosNetwork

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Archives written by the tools people use: recorded here (Playwright driving Chromium,
/// mitmproxy) and hand-written from their documented shapes (Firefox, Safari, Charles,
/// Polly.JS, WebPageTest). Replayed through URLSession.
@Suite struct HARFormatsTests {
    static func fixture(_ path: String) -> URL {
        URL(fileURLWithPath: resourcePath("browser-export.har")).deletingLastPathComponent().appendingPathComponent(
            path)
    }

    /// The URL of the first entry whose URL ends with `suffix`.
    static func url(in file: URL, endingWith suffix: String) throws -> String {
        let json = try JSONSerialization.jsonObject(with: Data(contentsOf: file)) as! [String: Any]
        let entries = (json["log"] as! [String: Any])["entries"] as! [[String: Any]]
        let urls = entries.compactMap { ($0["request"] as? [String: Any])?["url"] as? String }
        return try #require(urls.first { $0.hasSuffix(suffix) }, "no entry for \(suffix)")
    }

    static let latin1 = "Crème brûlée à la café, 10 Euro? No: 10 euro. Ça va.".data(using: .isoLatin1)!
    /// The PNG the fixture server sends (Scripts/record-har-fixtures.py).
    static let recordedPixel = Data(
        hexadecimal: "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
            + "1f15c4890000000d49444154789c6360000002000001e221bc330000000049454e44ae426082")
    static let pixel = Data(
        base64Encoded: "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgAAAAAgAB4iG8MwAAAABJRU5ErkJggg==")!

    /// Replays the recorded fixture traffic (the same requests in both real archives).
    func replayRecordedTraffic(_ name: String, failure: URLError.Code) async throws {
        let file = Self.fixture("recorded/\(name)")
        let cassette = try HARCassette(file: file, mode: .replayOnly)
        #expect(cassette.skippedProblems.isEmpty)
        let stubs = StubSet()
        stubs.add(cassette)
        let session = session(with: stubs)
        let items = await load(session, try Self.url(in: file, endingWith: "api_key=fixture-key-123"))
        #expect(items.status == 200 && items.text.contains("\"name\": \"Ada\""))
        // The password differs from the recorded one: both are redacted before matching.
        let login = await load(
            session, try Self.url(in: file, endingWith: "/api/login"), method: "POST",
            headers: ["Content-Type": "application/json"],
            body: Data(#"{"user":"ada","password":"another one","remember":true}"#.utf8))
        #expect(login.status == 200 && login.text.contains("\"ok\": true"))
        let text = await load(session, try Self.url(in: file, endingWith: "/latin1.txt"))
        #expect(text.body == Self.latin1, "the recorded ISO-8859-1 bytes, not UTF-8")
        #expect(text.headers["content-type"] == "text/plain; charset=iso-8859-1")
        #expect(await load(session, try Self.url(in: file, endingWith: "/pixel.png")).body == Self.recordedPixel)
        #expect(await load(session, try Self.url(in: file, endingWith: "/missing")).status == 404)
        let refused = await load(session, try Self.url(in: file, endingWith: "/refused"))
        #expect(refused.error?.code == failure)
    }

    @Test func chromiumThroughPlaywright() async throws {
        try await replayRecordedTraffic("chromium-playwright.har", failure: .cannotConnectToHost)
        // Playwright keeps no body for the redirect: an explicit, noted decision.
        let cassette = try HARCassette(file: Self.fixture("recorded/chromium-playwright.har"), mode: .replayOnly)
        let note = try #require(cassette.notes.first { $0.message.contains("without its body") })
        #expect(note.path.hasSuffix(".response.content"))
        let stubs = StubSet()
        stubs.add(cassette)
        let redirect = try await stubs.respond(
            to: request(
                .get, try Self.url(in: Self.fixture("recorded/chromium-playwright.har"), endingWith: "/old-place")))
        #expect(
            redirect.statusCode == 302 && redirect.body.isEmpty && redirect.head.headerFields[.location] == "/new-place"
        )
    }

    @Test func mitmproxy() async throws {
        try await replayRecordedTraffic("mitmproxy.har", failure: .cannotConnectToHost)
    }

    @Test func strictMissingBodyLeavesTheEntryUnmatchedAndSaysWhy() async throws {
        let file = Self.fixture("recorded/chromium-playwright.har")
        let cassette = try HARCassette(file: file, mode: .replayOnly, missingBody: .unmatched)
        let stubs = StubSet()
        stubs.add(cassette)
        let error = await caught { () async throws(NetworkError) in
            try await stubs.respond(to: request(.get, try! Self.url(in: file, endingWith: "/old-place")))
        }
        guard case .noStub(let message)? = error else {
            Issue.record("expected noStub, got \(String(describing: error))")
            return
        }
        #expect(message.contains("/old-place") && message.contains("recorded without its response body"))
    }

    @Test func firefox() async throws {
        let stubs = StubSet()
        stubs.add(try HARCassette(file: Self.fixture("handwritten/firefox.har"), mode: .replayOnly))
        let session = session(with: stubs)
        let forecast = await load(session, "https://api.weather.example.com/v1/forecast?lon=-3.19&lat=55.95")
        #expect(forecast.status == 200 && forecast.text == #"{"place":"Edinburgh","temperature":7.5}"#)
        // A form body recorded as params; a windows-1252 body replayed in windows-1252.
        let created = await load(
            session, "https://api.weather.example.com/v1/favourites", method: "POST",
            headers: ["Content-Type": "application/x-www-form-urlencoded"],
            body: Data("place=Edinburgh&units=metric".utf8))
        #expect(created.status == 201 && created.body == "Créé: 12".data(using: .windowsCP1252))
        // Status 0 without a note: a connection that gave no response.
        #expect(
            await load(session, "https://tiles.weather.example.com/radar/5/15/9.png").error?.code
                == .networkConnectionLost)
    }

    @Test func safari() async throws {
        let stubs = StubSet()
        stubs.add(try HARCassette(file: Self.fixture("handwritten/safari.har"), mode: .replayOnly))
        let session = session(with: stubs)
        let icon = await load(session, "https://weather.example.com/icons/sun.png")
        #expect(icon.body == Self.pixel && icon.headers["cache-control"] == "max-age=86400")
        #expect(await load(session, "https://weather.example.com/app.js").text == "console.log(\"weather\");\n")
    }

    @Test func charles() async throws {
        let stubs = StubSet()
        let cassette = try HARCassette(file: Self.fixture("handwritten/charles.har"), mode: .replayOnly)
        stubs.add(cassette)
        let session = session(with: stubs)
        let alerts = await load(session, "https://api.weather.example.com/v1/alerts?region=lothian")
        #expect(alerts.status == 200 && alerts.text == "{\"alerts\":[]}\n")
        #expect(alerts.headers["transfer-encoding"] == nil)
        #expect(await load(session, "https://old.weather.example.com/v1/alerts").error?.code == .cannotFindHost)
    }

    @Test func pollyJSHeaderValuesAsArrays() async throws {
        let cassette = try HARCassette(file: Self.fixture("handwritten/pollyjs.har"), mode: .replayOnly)
        #expect(cassette.notes.isEmpty)
        let stubs = StubSet()
        stubs.add(cassette)
        // The JSON body matches as JSON (spacing and member order differ).
        let response = try await stubs.respond(
            to: request(
                .post, "https://api.weather.example.com/v1/forecast",
                headers: ["Content-Type": "application/json"], body: Data(#"{ "lon": -3.19, "lat": 55.95 }"#.utf8)))
        #expect(response.statusCode == 200)
        #expect(response.head.headerFields[values: HTTPField.Name("vary")!] == ["Accept", "Accept-Encoding"])
    }

    @Test func webPageTestEntriesWithoutContent() async throws {
        let cassette = try HARCassette(file: Self.fixture("handwritten/webpagetest.har"), mode: .replayOnly)
        #expect(
            cassette.notes.map(\.path) == ["log.entries[0].response.content"], "the 204 needs no body, the page had one"
        )
        let stubs = StubSet()
        stubs.add(cassette)
        let page = try await stubs.respond(to: request(.get, "https://weather.example.com/"))
        #expect(page.statusCode == 200 && page.body.isEmpty && page.head.headerFields[.contentType] == "text/html")
        #expect(try await stubs.respond(to: request(.get, "https://weather.example.com/empty.css")).statusCode == 204)
    }

    @Test(arguments: [
        ("net::ERR_CONNECTION_REFUSED", URLError.Code.cannotConnectToHost),
        ("net::ERR_NAME_NOT_RESOLVED", .cannotFindHost),
        ("net::ERR_TIMED_OUT", .timedOut),
        ("net::ERR_CONNECTION_TIMED_OUT", .timedOut),
        ("net::ERR_INTERNET_DISCONNECTED", .notConnectedToInternet),
        ("net::ERR_ABORTED", .cancelled),
        ("net::ERR_CONNECTION_ABORTED", .networkConnectionLost),
        ("net::ERR_CONNECTION_RESET", .networkConnectionLost),
        ("net::ERR_EMPTY_RESPONSE", .networkConnectionLost),
        ("net::ERR_CERT_AUTHORITY_INVALID", .serverCertificateUntrusted),
        ("net::ERR_SSL_PROTOCOL_ERROR", .secureConnectionFailed),
        ("NS_ERROR_UNKNOWN_HOST", .cannotFindHost),
        ("NS_ERROR_NET_TIMEOUT", .timedOut),
        ("NS_BINDING_ABORTED", .cancelled),
        ("[Errno 111] Connect call failed ('127.0.0.1', 9)", .cannotConnectToHost),
        ("[Errno -2] Name or service not known", .cannotFindHost),
        ("", .networkConnectionLost),
    ])
    func failedEntriesReplayAsTheMatchingURLError(note: String, code: URLError.Code) async throws {
        for (status, field) in [(-1, "_failureText"), (0, "_error")] {
            let json = """
                {"log": {"version": "1.2", "creator": {"name": "x", "version": "1"}, "entries": [{"startedDateTime": "", "time": 1,
                  "request": {"method": "GET", "url": "https://a.test/x"}, "response": {"status": \(status), "\(field)": \(HARJSON.string(note).text())}}]}}
                """
            let stubs = StubSet()
            stubs.add(try cassette(json))
            #expect(
                await load(session(with: stubs), "https://a.test/x").error?.code == code, "\(note) (status \(status))")
        }
    }

    func cassette(_ json: String, skipping: Bool = false, missingBody: HARMissingBodyPolicy = .emptyBody) throws
        -> HARCassette
    {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("chaoskit-\(UUID().uuidString).har")
        try Data(json.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        return try HARCassette(file: file, mode: .replayOnly, missingBody: missingBody, skippingBadEntries: skipping)
    }

    static let badEntries = """
        {"log": {"version": "1.2", "creator": {"name": "x", "version": "1"}, "entries": [
          {"request": {"method": "GET", "url": "https://a.test/good"}, "response": {"status": 200, "content": {"text": "fine"}}},
          {"request": {"method": "GET", "url": "https://a.test/minus"}, "response": {"status": -5}},
          {"request": {"method": "GET", "url": "https://a.test/huge"}, "response": {"status": 1000}},
          {"request": {"method": "GET", "url": "https://a.test/text"}, "response": {"status": "200"}},
          {"request": {"method": "G E T", "url": "https://a.test/method"}, "response": {"status": 200}},
          {"request": {"method": "GET", "url": "https://a.test/b64"}, "response": {"status": 200, "content": {"text": "%%%", "encoding": "base64"}}},
          {"request": {"method": "GET", "url": "https://a.test/enc"}, "response": {"status": 200, "content": {"text": "x", "encoding": "gzip"}}},
          {"request": {"method": "GET", "url": "https://a.test/odd", "headers": {"not": "a list"}}, "response": {"status": 200, "headers": 7, "cookies": "none", "_whatever": [1, 2]}}
        ]}}
        """

    @Test func problemsAreLocatedAndNoneIsAppliedUnlessSkippingWasChosen() async throws {
        let error = expectConfigurationError { _ = try cassette(Self.badEntries) }
        let message = try #require(error?.message)
        for path in [
            "log.entries[1].response.status", "log.entries[2].response.status", "log.entries[3].response.status",
            "log.entries[4].request.method",
        ] {
            #expect(message.contains(path), "\(path) in \(message)")
        }
        #expect(
            message.contains("6 of 8 entries cannot be replayed") && message.contains("and 1 more")
                && message.contains("skippingBadEntries"))

        let skipping = try cassette(Self.badEntries, skipping: true)
        #expect(
            skipping.skippedProblems.map(\.path) == [
                "log.entries[1].response.status", "log.entries[2].response.status", "log.entries[3].response.status",
                "log.entries[4].request.method", "log.entries[5].response.content.text",
                "log.entries[6].response.content.encoding",
            ])
        #expect(HARCassette.problems(in: Data(Self.badEntries.utf8)) == skipping.skippedProblems)
        // Fields replay does not need are read leniently: entry 7 replays, with notes.
        #expect(skipping.notes.contains { $0.path == "log.entries[7].response.headers" })
        let stubs = StubSet()
        stubs.add(skipping)
        #expect(try await stubs.respond(to: request(.get, "https://a.test/good")).body == Data("fine".utf8))
        #expect(try await stubs.respond(to: request(.get, "https://a.test/odd")).statusCode == 200)
    }

    @Test func messagesQuoteAtMostEightyCharactersOfInput() throws {
        let long = String(repeating: "x ", count: 2_500)
        let json = """
            {"log": {"version": "1.2", "entries": [{"request": {"method": "\(long)", "url": "\(long)"}, "response": {"status": 200}}]}}
            """
        let error = expectConfigurationError { _ = try cassette(json) }
        let message = try #require(error?.message)
        #expect(message.contains("log.entries[0].request.method") && message.contains("log.entries[0].request.url"))
        #expect(!message.contains(String(repeating: "x ", count: 41)))
        #expect(message.count < 1_000)
    }

    @Test func reExportKeepsEveryMemberItDoesNotChange() throws {
        for name in [
            "recorded/chromium-playwright.har", "recorded/mitmproxy.har", "handwritten/webpagetest.har",
            "handwritten/pollyjs.har", "browser-export.har",
        ] {
            let source = Self.fixture(name)
            let copy = FileManager.default.temporaryDirectory.appendingPathComponent(
                "chaoskit-\(UUID().uuidString).har")
            defer { try? FileManager.default.removeItem(at: copy) }
            try FileManager.default.copyItem(at: source, to: copy)
            let cassette = try HARCassette(file: copy, mode: .replayOnly, redaction: .none)
            try cassette.save()
            let before = try JSONSerialization.jsonObject(with: Data(contentsOf: source)) as! NSDictionary
            let after = try JSONSerialization.jsonObject(with: Data(contentsOf: copy)) as! NSDictionary
            #expect(before == after, "\(name) changed when written back")
        }
    }

    @Test func reExportWithRedactionKeepsNoSecretsAndStillReplays() async throws {
        let copy = FileManager.default.temporaryDirectory.appendingPathComponent("chaoskit-\(UUID().uuidString).har")
        defer { try? FileManager.default.removeItem(at: copy) }
        try FileManager.default.copyItem(at: Self.fixture("recorded/chromium-playwright.har"), to: copy)
        try HARCassette(file: copy, mode: .replayOnly).save()
        // The page's own script names the values it sends; everything else must not.
        var json = try JSONSerialization.jsonObject(with: Data(contentsOf: copy)) as! [String: Any]
        var log = json["log"] as! [String: Any]
        var entries = log["entries"] as! [[String: Any]]
        let pageURL = (entries.first?["request"] as? [String: Any])?["url"] as? String
        entries.removeAll { ($0["request"] as? [String: Any])?["url"] as? String == pageURL }
        log["entries"] = entries
        json["log"] = log
        let text = String(decoding: try JSONSerialization.data(withJSONObject: json), as: UTF8.self)
        #expect(text.contains("[redacted]"))
        for secret in [
            "fixture-key-123", "fixture-token-456", "fixture-password", "fixture-session-789", "fixture-cookie-000",
        ] {
            #expect(
                !text.contains(secret),
                "\(secret) is still in the archive: \(text.components(separatedBy: "\n").filter { $0.contains(secret) }.prefix(3))"
            )
        }
        let stubs = StubSet()
        stubs.add(try HARCassette(file: copy, mode: .replayOnly))
        let items = try await stubs.respond(
            to: request(
                .get,
                try Self.url(in: copy, endingWith: "/api/items?page=2&sort=name&api_key=%5Bredacted%5D")
                    .replacingOccurrences(of: "%5Bredacted%5D", with: "a-different-key")))
        #expect(items.statusCode == 200)
    }
}

extension Data {
    init(hexadecimal text: String) {
        var bytes: [UInt8] = []
        var index = text.startIndex
        while index < text.endIndex, let end = text.index(index, offsetBy: 2, limitedBy: text.endIndex),
            let byte = UInt8(text[index..<end], radix: 16)
        {
            bytes.append(byte)
            index = end
        }
        self.init(bytes)
    }
}
