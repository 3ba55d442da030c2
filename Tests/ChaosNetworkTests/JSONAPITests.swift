import ChaosKit
import Foundation
import HTTPTypes
import TestHelpers
import Testing

@testable import ChaosNetwork

/// Kakapo's serialization on Encodable: JSON:API documents (resources, relationships,
/// `included`), key transformers and the null policy. The gated test reads the documents
/// back with a JSON:API client library (jsonapi-client) and a validator (jsonapi-pydantic).
@Suite struct JSONAPITests {
    struct Person: JSONAPIResource, Identifiable, Equatable {
        static let jsonAPIType = "people"
        var id: Int
        var fullName: String
        var homepageURL: URL?
        var bestFriend: Friend?
    }

    /// Another type, so that a person's friend is a relationship of its own.
    struct Friend: JSONAPIResource, Identifiable, Equatable {
        static let jsonAPIType = "people"
        var id: Int
        var fullName: String
    }

    struct Tag: JSONAPIResource, Identifiable, Equatable {
        var id: String
        var label: String
    }

    struct Comment: JSONAPIResource, Identifiable {
        static let jsonAPIType = "comments"
        var id: Int
        var body: String
        var author: Person
    }

    struct Article: JSONAPIResource, Identifiable {
        static let jsonAPIType = "articles"
        var id: Int
        var title: String
        var publishedAt: Date
        var subTitle: String?
        var wordCount: Int
        var metaData: [String: Int]
        var author: Person
        var editor: Person?
        var tags: [Tag]
        var comments: [Comment]
        var jsonAPILinks: [String: String] { ["self": "https://api.example.com/articles/\(id)"] }
        var jsonAPIRelationshipLinks: [String: [String: String]] {
            ["author": ["related": "https://api.example.com/articles/\(id)/author"]]
        }
        var jsonAPIMeta: ProfileValue? { ["revision": 3] }
    }

    static let ada = Person(
        id: 9, fullName: "Ada Lovelace", homepageURL: URL(string: "https://ada.example/"),
        bestFriend: Friend(id: 10, fullName: "Charles Babbage"))
    static let grace = Person(id: 11, fullName: "Grace Hopper", homepageURL: nil, bestFriend: nil)
    static func article(_ id: Int = 1) -> Article {
        Article(
            id: id, title: "Engines", publishedAt: Date(timeIntervalSince1970: 1_700_000_000), subTitle: nil,
            wordCount: 1200,
            metaData: ["readingTime": 4], author: ada, editor: nil,
            tags: [Tag(id: "math", label: "Maths"), Tag(id: "history", label: "History")],
            comments: [Comment(id: 100, body: "First!", author: grace), Comment(id: 101, body: "Again", author: ada)]
        )
    }

    func object(_ value: ProfileValue?) -> [String: ProfileValue] {
        if case .object(let members)? = value { return members }
        return [:]
    }

    func array(_ value: ProfileValue?) -> [ProfileValue] {
        if case .array(let items)? = value { return items }
        return []
    }

    @Test func aResourceWithAttributesRelationshipsAndIncluded() throws {
        let document = try JSONAPISerializer().document(
            Self.article(), links: ["self": "https://api.example.com/articles/1"], meta: ["total": 1])
        let top = object(document.value)
        #expect(top["jsonapi"] == ["version": "1.0"] && top["meta"] == ["total": 1])
        let data = object(top["data"])
        #expect(data["type"] == "articles" && data["id"] == "1")
        let attributes = object(data["attributes"])
        #expect(attributes["title"] == "Engines" && attributes["wordCount"] == 1200)
        #expect(attributes["publishedAt"] == "2023-11-14T22:13:20Z", "dates as the router writes them (ISO 8601)")
        #expect(attributes["metaData"] == ["readingTime": 4])
        #expect(attributes["id"] == nil && attributes["subTitle"] == nil && attributes["author"] == nil)
        let relationships = object(data["relationships"])
        #expect(
            relationships["author"] == [
                "data": ["type": "people", "id": "9"],
                "links": ["related": "https://api.example.com/articles/1/author"],
            ])
        #expect(relationships["editor"] == nil, "a nil to-one relationship is left out under .omit")
        #expect(relationships["tags"] == ["data": [["type": "tag", "id": "math"], ["type": "tag", "id": "history"]]])
        #expect(
            object(relationships["comments"])["data"] == [
                ["type": "comments", "id": "100"], ["type": "comments", "id": "101"],
            ])
        #expect(data["links"] == ["self": "https://api.example.com/articles/1"] && data["meta"] == ["revision": 3])
        // Direct inclusion: the article's author, tags and comments, each once — not the
        // comments' authors, nor the author's best friend.
        let included = array(top["included"]).map { [object($0)["type"]!, object($0)["id"]!] }
        #expect(
            included == [
                ["people", "9"], ["tag", "math"], ["tag", "history"], ["comments", "100"], ["comments", "101"],
            ])
        // Included resources carry their own relationships.
        let comment = try #require(array(top["included"]).first { object($0)["id"] == "100" })
        #expect(object(object(comment)["relationships"])["author"] == ["data": ["type": "people", "id": "11"]])
    }

    @Test func inclusionPolicies() throws {
        func included(_ policy: JSONAPIInclusion) throws -> Set<[ProfileValue]> {
            let document = try JSONAPISerializer(include: policy).document([Self.article(1), Self.article(2)])
            return Set(array(object(document.value)["included"]).map { [object($0)["type"]!, object($0)["id"]!] })
        }
        #expect(try included(.none).isEmpty)
        #expect(
            try included(.all) == [
                ["people", "9"], ["people", "10"], ["people", "11"], ["tag", "math"], ["tag", "history"],
                ["comments", "100"], ["comments", "101"],
            ])
        #expect(
            try included(.paths(commaSeparated: "comments.author")) == [
                ["comments", "100"], ["comments", "101"], ["people", "11"], ["people", "9"],
            ])
        #expect(try included(.paths(["author.bestFriend"])) == [["people", "9"], ["people", "10"]])
        // The primary data is never repeated in included.
        let people = try JSONAPISerializer(include: .all).document([Self.ada, Self.grace])
        #expect(Set(array(object(people.value)["included"]).map { object($0)["id"]! }) == ["10"])
    }

    @Test func keyTransformers() throws {
        for (name, snake, kebab) in [
            ("userName", "user_name", "user-name"), ("avatarURL", "avatar_url", "avatar-url"),
            ("URLString", "url_string", "url-string"),
            ("HTTPStatusCode", "http_status_code", "http-status-code"), ("address2", "address2", "address2"),
            ("_private", "_private", "_private"),
            ("already_snake", "already_snake", "already-snake"), ("a", "a", "a"), ("", "", ""),
            ("iOSVersion", "i_os_version", "i-os-version"),
        ] {
            #expect(KeyTransformer.snakeCase(name) == snake, "\(name)")
            #expect(KeyTransformer.kebabCase(name) == kebab, "\(name)")
        }
        let shout = KeyTransformer.snakeCase.then(.custom { $0.uppercased() })
        #expect(shout("fullName") == "FULL_NAME")
        // Attributes, relationship names and the names inside attribute values all change;
        // JSON:API's own members do not.
        let document = try JSONAPISerializer(keys: .snakeCase).document(Self.article())
        let data = object(object(document.value)["data"])
        #expect(Set(object(data["attributes"]).keys) == ["title", "published_at", "word_count", "meta_data"])
        #expect(object(object(data["attributes"])["meta_data"])["reading_time"] == 4)
        #expect(object(data["relationships"])["author"] != nil)
        let person = try JSONAPISerializer(keys: .kebabCase).document(Self.ada)
        #expect(object(object(object(person.value)["data"])["attributes"])["full-name"] == "Ada Lovelace")
        #expect(object(object(object(person.value)["data"])["relationships"])["best-friend"] != nil)
        // The plain encoder takes the same transformers.
        struct Plain: Encodable {
            var firstName: String
            var innerValue: [String: Int]
        }
        #expect(
            try JSONValueEncoder(keys: .snakeCase).encode(Plain(firstName: "Ada", innerValue: ["someKey": 1])) == [
                "first_name": "Ada", "inner_value": ["some_key": 1],
            ])
    }

    @Test func nullPolicies() throws {
        struct Profile: Encodable {
            var name: String
            var bio: String?
            var age: Int?
            var pinned: PropertyPolicy<String>
        }
        let profile = Profile(name: "Ada", bio: nil, age: nil, pinned: .omit)
        #expect(try JSONValueEncoder().encode(profile) == ["name": "Ada"])
        #expect(try JSONValueEncoder(nilValues: .null).encode(profile) == ["name": "Ada", "bio": .null, "age": .null])
        #expect(
            try JSONValueEncoder(nilValues: .value("n/a")).encode(profile) == [
                "name": "Ada", "bio": "n/a", "age": "n/a",
            ])
        // A property's own policy wins, with JSONEncoder too.
        for (policy, expected) in [
            (PropertyPolicy<String>.omit, #"{"name":"Ada"}"#), (.null, #"{"name":"Ada","pinned":null}"#),
            (.value("yes"), #"{"name":"Ada","pinned":"yes"}"#),
        ] {
            struct Pinned: Encodable {
                var name: String
                var pinned: PropertyPolicy<String>
            }
            let encoder = JSONEncoder()
            encoder.outputFormatting = .sortedKeys
            #expect(
                String(decoding: try encoder.encode(Pinned(name: "Ada", pinned: policy)), as: UTF8.self) == expected)
            #expect(try JSONValueEncoder().data(Pinned(name: "Ada", pinned: policy)) == Data(expected.utf8))
        }
        // In JSON:API: nil attributes follow the policy; a nil to-one relationship is {"data": null}.
        let document = try JSONAPISerializer(nilValues: .null).document(Self.grace)
        let data = object(object(document.value)["data"])
        #expect(object(data["attributes"])["homepageURL"] == .null)
        #expect(object(data["relationships"])["bestFriend"] == ["data": .null])
    }

    @Test func mistakesAreConfigurationErrors() throws {
        struct Typed: JSONAPIResource, Identifiable {
            var id: Int
            var type: String
        }
        let error = expectChaosError(.invalidNetworkConfiguration) {
            _ = try JSONAPISerializer().document(Typed(id: 1, type: "x"))
        }
        #expect(error?.message.contains("'type'") == true)
        struct Scalar: JSONAPIResource {
            var jsonAPIID: String { "1" }
            func encode(to encoder: any Encoder) throws {
                var container = encoder.singleValueContainer()
                try container.encode(5)
            }
        }
        expectChaosError(.invalidNetworkConfiguration) { _ = try JSONAPISerializer().document(Scalar()) }
        struct NotANumber: Encodable { var value = Double.nan }
        expectChaosError(.invalidNetworkConfiguration) { _ = try JSONValueEncoder().encode(NotANumber()) }
    }

    @Test func aRouterServesDocumentsAsJSONAPI() async throws {
        let store = Store()
        store.insert(Self.ada)
        let router = Router(host: "api.example.com")
        let serializer = JSONAPISerializer(keys: .snakeCase)
        try router.get("/people/:id") { request in
            guard let person = store.find(Person.self, id: try request.intParameter("id")) else {
                throw RouteError.notFound()
            }
            return try serializer.document(person, links: ["self": "https://api.example.com/people/\(person.id)"])
        }
        let response = try #require(try await router.respond(to: request(.get, "https://api.example.com/people/9")))
        #expect(response.head.headerFields[.contentType] == JSONAPIDocument.contentType)
        let document = try ProfileValue(json: response.body)
        #expect(object(object(document)["data"])["id"] == "9")
        #expect(
            try serializer.document(Self.ada).response().head.headerFields[.contentType] == JSONAPIDocument.contentType)
    }

    // MARK: Read back by JSON:API software

    static let readersInstalled = pythonCanImport("jsonapi_client", "jsonapi_pydantic")

    struct ClientView: Decodable {
        struct Resource: Decodable {
            var type: String
            var id: String
            var attributes: ProfileValueBox
            var relationships: [String: ProfileValueBox]
            var resolved: [String: [Resolved]]
        }
        struct Resolved: Decodable {
            var type: String
            var id: String
            var attributes: ProfileValueBox
        }
        var valid: Bool
        var validationError: String?
        var readError: String?
        var resources: [Resource]?
        var included: [[String]]?
    }

    /// A JSON value decoded from the checker's output.
    struct ProfileValueBox: Decodable, Equatable {
        let value: ProfileValue
        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if container.decodeNil() {
                value = .null
            } else if let flag = try? container.decode(Bool.self) {
                value = .bool(flag)
            } else if let number = try? container.decode(Double.self) {
                value = .number(number)
            } else if let text = try? container.decode(String.self) {
                value = .string(text)
            } else if let items = try? container.decode([ProfileValueBox].self) {
                value = .array(items.map(\.value))
            } else {
                value = .object(try container.decode([String: ProfileValueBox].self).mapValues(\.value))
            }
        }
    }

    @Test(
        .enabled(
            if: readersInstalled,
            "jsonapi-client and jsonapi-pydantic are not installed (.ci/install-test-deps installs them)"))
    func jsonAPIClientsReadTheDocumentsBack() throws {
        let documents: [JSONAPIDocument] = [
            try JSONAPISerializer().document(Self.article()),
            try JSONAPISerializer(keys: .snakeCase, nilValues: .null, include: .all).document(
                [Self.article(1), Self.article(2)], meta: ["count": 2]),
            try JSONAPISerializer(keys: .kebabCase, include: .paths(["comments.author"])).document(Self.article()),
            try JSONAPISerializer(include: .none).document([Self.ada, Self.grace]),
            try JSONAPISerializer().document([Person]()),
            JSONAPISerializer().document(meta: ["status": "ok"]),
        ]
        let input = Data("[\(documents.map { String(decoding: $0.data, as: UTF8.self) }.joined(separator: ","))]".utf8)
        let output = try #require(
            runPython([packageRoot.appendingPathComponent("Scripts/check-jsonapi.py").path], input: input))
        try #require(output.status == 0, "check-jsonapi.py failed: \(output.stderr)")
        let views = try JSONDecoder().decode([ClientView].self, from: output.stdout)
        try #require(views.count == documents.count)
        for (index, view) in views.enumerated() {
            #expect(view.valid, "document \(index): \(view.validationError ?? "")")
            // jsonapi-client reads every document with data; one with only meta, which
            // JSON:API allows (and the validator accepts), it refuses by design.
            if index == 5 {
                #expect(view.readError?.contains("Data or errors is needed") == true)
            } else {
                #expect(view.readError == nil, "document \(index): \(view.readError ?? "")")
            }
        }

        // The client sees the article as written, and finds every related resource in included.
        let article = try #require(views[0].resources?.first)
        #expect(article.type == "articles" && article.id == "1")
        #expect(
            article.attributes.value == [
                "title": "Engines", "publishedAt": "2023-11-14T22:13:20Z", "wordCount": 1200,
                "metaData": ["readingTime": 4],
            ])
        #expect(article.relationships["author"]?.value == ["people", "9"])
        #expect(article.relationships["tags"]?.value == [["tag", "math"], ["tag", "history"]])
        #expect(
            article.resolved["author"]?.first?.attributes.value == [
                "fullName": "Ada Lovelace", "homepageURL": "https://ada.example/",
            ])
        #expect(article.resolved["comments"]?.map(\.attributes.value) == [["body": "First!"], ["body": "Again"]])
        #expect(article.resolved["tags"]?.count == 2)

        // snake_case, nulls and everything included: both articles, linked to the same people once.
        let list = try #require(views[1].resources)
        #expect(list.map(\.id) == ["1", "2"])
        #expect(
            list[0].attributes.value == [
                "title": "Engines", "published_at": "2023-11-14T22:13:20Z", "sub_title": .null, "word_count": 1200,
                "meta_data": ["reading_time": 4],
            ])
        #expect(list[0].relationships["editor"]?.value == nil || list[0].relationships["editor"]?.value == .null)
        #expect(
            Set(views[1].included ?? []) == [
                ["people", "9"], ["people", "10"], ["people", "11"], ["tag", "math"], ["tag", "history"],
                ["comments", "100"], ["comments", "101"],
            ])
        #expect(list.allSatisfy { $0.resolved["comments"]?.count == 2 && $0.resolved["author"]?.first?.id == "9" })

        // kebab-case, included along a path.
        let kebab = try #require(views[2].resources?.first)
        #expect(
            kebab.attributes.value == [
                "title": "Engines", "published-at": "2023-11-14T22:13:20Z", "word-count": 1200,
                "meta-data": ["reading-time": 4],
            ])
        #expect(
            Set(views[2].included ?? []) == [
                ["comments", "100"], ["comments", "101"], ["people", "11"], ["people", "9"],
            ])
        #expect(kebab.resolved["tags"] == nil, "tags are not on the include path")

        // Nothing included: the linkage is still there.
        #expect(views[3].resources?.map(\.id) == ["9", "11"] && views[3].included == [])
        #expect(views[3].resources?.first?.relationships["bestFriend"]?.value == ["people", "10"])
        #expect(views[4].resources?.isEmpty == true)
    }
}

extension JSONAPITests.ClientView.Resolved: Equatable {}
