import ChaosKit
import Foundation
import HTTPTypes
import Testing

@testable import ChaosNetwork

struct Post: Codable, Identifiable, Sendable, Equatable {
    var id: Int
    var title: String
    var author: Int
}

struct NewPost: Codable, Sendable {
    var title: String
}

/// A stateful prototype back-end: a router over a store, reached directly, through
/// `ChaosNetworkClient` and through URLSession.
@Suite struct RouterTests {
    /// `/users/:id/posts` CRUD over a store of 5 posts by user 1.
    static func backEnd() throws -> (Router, Store) {
        let store = Store()
        store.create(Post.self, count: 5) { id in Post(id: id, title: "Post \(id)", author: 1) }
        let router = Router(host: "api.test")
        try router.get("/users/:user/posts") { request in
            let user = try request.intParameter("user")
            let limit = request.query["limit"].flatMap(Int.init) ?? .max
            return Array(store.filter(Post.self) { $0.author == user }.prefix(limit))
        }
        try router.get("/users/:user/posts/:id") { request in
            guard let post = store.find(Post.self, id: try request.intParameter("id")) else {
                throw RouteError.notFound("no post \(request.pathParameters["id"] ?? "")")
            }
            return post
        }
        try router.post("/users/:user/posts") { request in
            guard request.header("Authorization") == "Bearer secret" else { throw RouteError(401, "sign in first") }
            let new = try request.decode(NewPost.self)
            let user = try request.intParameter("user")
            return store.insert { id in Post(id: id, title: new.title, author: user) }
        }
        try router.patch("/users/:user/posts/:id") { request in
            let change = try request.decode(NewPost.self)
            guard let post = store.update(Post.self, id: try request.intParameter("id"), { $0.title = change.title })
            else {
                throw RouteError.notFound()
            }
            return post
        }
        try router.put("/users/:user/posts/:id") { request in
            var post = try request.decode(Post.self)
            post.id = try request.intParameter("id")
            return store.update(post) ? NetworkResponse(status: 204) : NetworkResponse(status: 404)
        }
        try router.delete("/users/:user/posts/:id") { request in
            store.delete(Post.self, id: try request.intParameter("id")) == nil
                ? NetworkResponse(status: 404) : NetworkResponse(status: 204)
        }
        try router.get("/boom") { _ -> NetworkResponse in
            struct Boom: Error {}
            throw Boom()
        }
        return (router, store)
    }

    func json(_ response: NetworkResponse) -> String { String(decoding: response.body, as: UTF8.self) }

    @Test func crudThroughChaosNetworkClient() async throws {
        let (router, store) = try Self.backEnd()
        let stubs = StubSet()
        stubs.add(router)
        let client = ChaosNetworkClient(stubs)
        func send(_ method: HTTPRequest.Method, _ path: String, headers: [String: String] = [:], body: String? = nil)
            async throws -> (Int, String)
        {
            var head = HTTPRequest(method: method, url: URL(string: "https://api.test" + path)!)
            for (name, value) in headers { head.headerFields[HTTPField.Name(name)!] = value }
            let (response, data) = try await client.send(head, body: body.map { Data($0.utf8) })
            return (response.status.code, String(decoding: data, as: UTF8.self))
        }
        let (listStatus, list) = try await send(.get, "/users/1/posts?limit=2")
        #expect(listStatus == 200)
        #expect(try JSONDecoder().decode([Post].self, from: Data(list.utf8)).map(\.id) == [1, 2])

        #expect(try await send(.get, "/users/1/posts/3") == (200, #"{"author":1,"id":3,"title":"Post 3"}"#))
        #expect(try await send(.get, "/users/1/posts/99") == (404, #"{"error":"no post 99"}"#))
        #expect(try await send(.get, "/users/1/posts/x").0 == 400)

        #expect(try await send(.post, "/users/2/posts", body: #"{"title":"Hi"}"#).0 == 401)
        let (created, body) = try await send(
            .post, "/users/2/posts", headers: ["Authorization": "Bearer secret"], body: #"{"title":"Hi"}"#)
        #expect(created == 201 && body == #"{"author":2,"id":6,"title":"Hi"}"#)
        #expect(store.find(Post.self, id: 6)?.title == "Hi")
        #expect(
            try await send(.post, "/users/2/posts", headers: ["Authorization": "Bearer secret"], body: "{").0 == 400)

        #expect(try await send(.patch, "/users/1/posts/2", body: #"{"title":"Edited"}"#).1.contains("Edited"))
        #expect(try await send(.put, "/users/1/posts/3", body: #"{"id":0,"title":"Put","author":1}"#).0 == 204)
        #expect(store.find(Post.self, id: 3)?.title == "Put")
        #expect(try await send(.delete, "/users/1/posts/1").0 == 204)
        #expect(try await send(.delete, "/users/1/posts/1").0 == 404)
        #expect(store.count(Post.self) == 5)

        let (boom, message) = try await send(.get, "/boom")
        #expect(boom == 500 && message.contains("Boom"))
        // Another host, or no route: the stub set's unmatched policy (fail by default).
        await #expect(throws: NetworkError.self) { _ = try await send(.get, "/nowhere") }
    }

    @Test func throughURLSession() async throws {
        let (router, _) = try Self.backEnd()
        let stubs = StubSet()
        stubs.add(router)
        let session = session(with: stubs)
        let post = await load(session, "https://api.test/users/1/posts/4")
        #expect(post.status == 200 && post.headers["content-type"] == "application/json")
        #expect(try JSONDecoder().decode(Post.self, from: post.body) == Post(id: 4, title: "Post 4", author: 1))
        let created = await load(
            session, "https://api.test/users/1/posts", method: "POST",
            headers: ["Authorization": "Bearer secret"], body: Data(#"{"title":"Via URLSession"}"#.utf8))
        #expect(created.status == 201 && created.text.contains("\"id\":6"))
        #expect(await load(session, "https://other.test/users/1/posts/4").error?.code == .resourceUnavailable)
    }

    @Test func stubsAndConditionsStillApply() async throws {
        let (router, _) = try Self.backEnd()
        let stubs = StubSet()
        stubs.add(router)
        stubs.stub(try .get("/users/1/posts/1"), .status(503))
        #expect(try await stubs.respond(to: request(.get, "https://api.test/users/1/posts/1")).statusCode == 503)
        stubs.conditions = [.offline]
        let error = await caught { () async throws(NetworkError) in
            try await stubs.respond(to: request(.get, "https://api.test/users/1/posts/2"))
        }
        #expect(error == .offline)
    }

    @Test func badPathTemplatesAreClearErrors() throws {
        let router = Router()
        let noSlash = expectConfigurationError { try router.get("users/:id") { _ in NetworkResponse(status: 200) } }
        #expect(noSlash?.message.contains("starts with '/'") == true)
        let noName = expectConfigurationError { try router.get("/users/:") { _ in NetworkResponse(status: 200) } }
        #expect(noName?.subject?.contains("/users/:") == true)
        expectConfigurationError { try router.post("/a/:id/b/:id") { _ in [1] } }
        expectConfigurationError { try router.delete("/a/b:c") { _ in NetworkResponse(status: 200) } }
        #expect(router.routeDescriptions.isEmpty)
    }

    @Test func theStoreIsThreadSafe() async throws {
        let store = Store()
        await withTaskGroup(of: Void.self) { group in
            for worker in 0..<8 {
                group.addTask {
                    for index in 0..<250 {
                        let post = store.insert { id in Post(id: id, title: "\(worker)-\(index)", author: worker) }
                        store.update(Post.self, id: post.id) { $0.title += "!" }
                        if index % 5 == 0 { store.delete(Post.self, id: post.id) }
                    }
                }
            }
        }
        let all = store.findAll(Post.self)
        #expect(all.count == 8 * 200)
        #expect(Set(all.map(\.id)).count == all.count)
        #expect(all.allSatisfy { $0.title.hasSuffix("!") })
        store.removeAll()
        #expect(store.insert { id in Post(id: id, title: "", author: 0) }.id == 1)
    }
}
