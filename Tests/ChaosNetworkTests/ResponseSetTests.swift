import ChaosKit
import Foundation
import HTTPTypes
import Testing

@testable import ChaosNetwork

/// MMBarricade-style response sets: named answers, run-time selection, persistence.
@Suite struct ResponseSetTests {
    static func loginSet() throws -> ResponseSet {
        try ResponseSet(
            "login", matching: .post("/login"),
            [
                .init("success", try .json(["token": "abc"])),
                .init("wrong password", .status(401, headers: ["WWW-Authenticate": "Bearer"])),
                .init("profile file", try .file(resourcePath("user.json"))),
                .init("bytes", .data(Data([0xCA, 0xFE]), contentType: "application/octet-stream")),
                .init("offline", .error(.offline)),
                .init("slow", .status(204), conditions: [.latency(.milliseconds(30))]),
            ])
    }

    static func temporaryFile() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("chaoskit-selections-\(UUID().uuidString).json")
    }

    @Test func theFirstResponseIsTheDefaultAndSelectionSwitchesIt() async throws {
        let store = try ResponseSetStore()
        store.add(try Self.loginSet())
        let stubs = StubSet()
        stubs.add(store)
        let login = request(.post, "https://api.test/login")
        #expect(store.selection(for: "login") == "success")
        let success = try await stubs.respond(to: login)
        #expect(success.statusCode == 200 && String(decoding: success.body, as: UTF8.self) == #"{"token":"abc"}"#)

        try store.select("wrong password", for: "login")
        let denied = try await stubs.respond(to: login)
        #expect(denied.statusCode == 401 && denied.head.headerFields[HTTPField.Name("WWW-Authenticate")!] == "Bearer")

        try store.select("profile file", for: "login")
        #expect(String(decoding: try await stubs.respond(to: login).body, as: UTF8.self).contains("Ada Lovelace"))

        try store.select("bytes", for: "login")
        let bytes = try await stubs.respond(to: login)
        #expect(
            bytes.body == Data([0xCA, 0xFE]) && bytes.head.headerFields[.contentType] == "application/octet-stream")

        try store.select("offline", for: "login")
        let error = await caught { () async throws(NetworkError) in try await stubs.respond(to: login) }
        #expect(error == .offline)

        try store.select("slow", for: "login")
        let start = ContinuousClock.now
        #expect(try await stubs.respond(to: login).statusCode == 204)
        #expect(ContinuousClock.now - start >= .milliseconds(30))

        try store.selectDefault(for: "login")
        #expect(try await stubs.respond(to: login).statusCode == 200)
        // Other requests are not the set's business.
        #expect(
            await caught { () async throws(NetworkError) in
                try await stubs.respond(to: request(.get, "https://api.test/login"))
            } != nil)
    }

    @Test func stubsComeFirstAndTheLogNamesTheResponder() async throws {
        let store = try ResponseSetStore()
        store.add(try Self.loginSet())
        let stubs = StubSet()
        stubs.add(store)
        stubs.stub(try .post("/login"), name: "override", .status(299))
        #expect(try await stubs.respond(to: request(.post, "https://api.test/login")).statusCode == 299)
        let removed = stubs.stub(named: "override")!
        stubs.remove(removed)
        #expect(try await stubs.respond(to: request(.post, "https://api.test/login")).statusCode == 200)
        #expect(stubs.requests.map(\.stubName) == ["override", "response sets"])
    }

    @Test func theSelectionSurvivesANewStoreReadingTheSameFile() throws {
        let file = Self.temporaryFile()
        defer { try? FileManager.default.removeItem(at: file) }
        let first = try ResponseSetStore(persistingTo: file)
        first.add(try Self.loginSet())
        try first.select("offline", for: "login")
        #expect(FileManager.default.fileExists(atPath: file.path))

        // A later launch: a new store, the same file.
        let second = try ResponseSetStore(persistingTo: file)
        second.add(try Self.loginSet())
        #expect(second.selection(for: "login") == "offline")

        // A remembered name the set no longer has falls back to the default.
        let third = try ResponseSetStore(persistingTo: file)
        third.add(try ResponseSet("login", matching: .post("/login"), [.init("ok", .status(200))]))
        #expect(third.selection(for: "login") == "ok")
    }

    @Test func aSelectionThroughURLSession() async throws {
        let store = try ResponseSetStore()
        store.add(try Self.loginSet())
        let stubs = StubSet()
        stubs.add(store)
        let session = session(with: stubs)
        #expect(await load(session, "https://api.test/login", method: "POST").status == 200)
        try store.select("offline", for: "login")
        #expect(await load(session, "https://api.test/login", method: "POST").error?.code == .notConnectedToInternet)
    }

    @Test func mistakesAreConfigurationErrorsThatSayWhatToFix() throws {
        let empty = expectConfigurationError { _ = try ResponseSet("empty", matching: RequestMatcher(), []) }
        #expect(empty?.message.contains("at least one") == true)
        #expect(empty?.subject?.contains("empty") == true)

        let twice = expectConfigurationError {
            _ = try ResponseSet(
                "twice", matching: RequestMatcher(), [.init("a", .status(200)), .init("a", .status(500))])
        }
        #expect(twice?.message.contains("'a'") == true)

        let store = try ResponseSetStore()
        store.add(try Self.loginSet())
        let unknown = expectConfigurationError { try store.select("teapot", for: "login") }
        #expect(
            unknown?.message.contains("'success', 'wrong password', 'profile file', 'bytes', 'offline', 'slow'") == true
        )
        let noSet = expectConfigurationError { try store.select("success", for: "logout") }
        #expect(noSet?.message.contains("'login'") == true)
        #expect(store.selection(for: "login") == "success")

        let missing = expectConfigurationError {
            _ = try ResponseSet("profile", matching: try .get("/me"), [.init("me", try .file("/no/such/me.json"))])
        }
        #expect(missing?.subject == "/no/such/me.json" && missing?.message.contains("does not exist") == true)

        let file = Self.temporaryFile()
        defer { try? FileManager.default.removeItem(at: file) }
        try Data("not json".utf8).write(to: file)
        let corrupt = expectConfigurationError { _ = try ResponseSetStore(persistingTo: file) }
        #expect(corrupt?.message.contains("delete it") == true)
    }
}
