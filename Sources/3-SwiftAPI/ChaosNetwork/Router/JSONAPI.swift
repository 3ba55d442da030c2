public import ChaosKit
public import Foundation

/// A model a JSON:API document can hold as a resource object (after Kakapo's
/// `JSONAPIEntity`): its members become `attributes`, except those holding other resources
/// (or lists of them), which become `relationships`; the related resources go in `included`.
///
/// ```swift
/// struct Author: JSONAPIResource, Identifiable { var id: Int; var name: String }
/// struct Article: JSONAPIResource, Identifiable {
///     static let jsonAPIType = "articles"
///     var id: Int; var title: String; var author: Author; var tags: [String]
/// }
/// ```
///
/// The member `id` is the resource's id (``jsonAPIID``), not an attribute; a member named
/// `type` cannot be written (JSON:API reserves it): rename it with `CodingKeys`.
public protocol JSONAPIResource: Encodable {
    /// The resource type (default: the type's name, lower-cased, as Kakapo does).
    static var jsonAPIType: String { get }
    /// The resource's id (default for `Identifiable` types: their `id` as text).
    var jsonAPIID: String { get }
    /// The resource's `links` (`["self": "https://…/articles/1"]`; default none).
    var jsonAPILinks: [String: String] { get }
    /// The `links` of each relationship, by the member's name as declared (default none).
    var jsonAPIRelationshipLinks: [String: [String: String]] { get }
    /// The resource's `meta` (default none).
    var jsonAPIMeta: ProfileValue? { get }
}

extension JSONAPIResource {
    /// The type's name, lower-cased (`Article` → `article`).
    public static var jsonAPIType: String { String(describing: Self.self).lowercased() }
    /// No links.
    public var jsonAPILinks: [String: String] { [:] }
    /// No relationship links.
    public var jsonAPIRelationshipLinks: [String: [String: String]] { [:] }
    /// No meta.
    public var jsonAPIMeta: ProfileValue? { nil }
}

extension JSONAPIResource where Self: Identifiable {
    /// The `id`, as text.
    public var jsonAPIID: String { "\(id)" }
}

/// Which related resources a document's `included` holds.
public enum JSONAPIInclusion: Sendable, Hashable {
    /// None.
    case none
    /// Those the primary data refers to (Kakapo's default).
    case direct
    /// Those the primary data refers to, and theirs, all the way (Kakapo's `includingChildren`).
    case all
    /// Those along these relationship paths, as a client's `include` parameter names them
    /// (`["author", "comments.author"]`, member names as written in the document).
    case paths([String])

    /// The paths of an `include` query parameter (`"author,comments.author"`).
    public static func paths(commaSeparated text: String) -> JSONAPIInclusion {
        .paths(text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty })
    }

    /// Whether resources at the relationship path `path` are included.
    func includes(_ path: [String]) -> Bool {
        switch self {
        case .none: false
        case .direct: path.count == 1
        case .all: true
        case .paths(let paths):
            paths.contains { $0.split(separator: ".").map(String.init).starts(with: path) }
        }
    }
}

/// Writes JSON:API 1.0 documents (after Kakapo's `JSONAPISerializer`): resource objects with
/// `attributes` and `relationships`, a compound document's `included` resources (each once,
/// none repeating the primary data), links and meta — on `Encodable`, with key transformers
/// and a null policy.
///
/// ```swift
/// struct Author: JSONAPIResource, Identifiable { var id: Int; var fullName: String }
/// struct Post: JSONAPIResource, Identifiable { var id: Int; var title: String; var author: Author }
/// let post = Post(id: 1, title: "Hello", author: Author(id: 9, fullName: "Ada"))
/// let document = try JSONAPISerializer(keys: .snakeCase).document(post)
/// let router = Router(host: "api.example.com")
/// try router.get("/posts/1") { _ in document }   // sent as application/vnd.api+json
/// ```
public struct JSONAPISerializer: Sendable {
    /// How member names (attributes, relationships, and the names inside attribute values) are written.
    public var keys: KeyTransformer
    /// What nil optionals become: attributes left out, `null` or a value; a nil to-one
    /// relationship is `{"data": null}` unless left out.
    public var nilValues: NullPolicy
    /// Which related resources go in `included`.
    public var include: JSONAPIInclusion
    /// Makes the `JSONEncoder` that writes dates, data, URLs and decimals in attributes.
    public var encoder: @Sendable () -> JSONEncoder

    /// A serializer; by default names as declared, nil attributes left out, the primary
    /// data's related resources included.
    public init(
        keys: KeyTransformer = .identity, nilValues: NullPolicy = .omit, include: JSONAPIInclusion = .direct,
        encoder: @escaping @Sendable () -> JSONEncoder = Router.defaultEncoder
    ) {
        self.keys = keys
        self.nilValues = nilValues
        self.include = include
        self.encoder = encoder
    }

    /// A document whose primary data is `resource`.
    public func document<R: JSONAPIResource>(
        _ resource: R, links: [String: String] = [:], meta: ProfileValue? = nil
    ) throws(ChaosError) -> JSONAPIDocument {
        try document(primary: [resource], single: true, links: links, meta: meta)
    }

    /// A document whose primary data is the list `resources`.
    public func document<R: JSONAPIResource>(
        _ resources: [R], links: [String: String] = [:], meta: ProfileValue? = nil
    ) throws(ChaosError) -> JSONAPIDocument {
        try document(primary: resources, single: false, links: links, meta: meta)
    }

    /// A document with no primary data, only `meta` (JSON:API allows it).
    public func document(meta: ProfileValue) -> JSONAPIDocument {
        JSONAPIDocument(value: .object(["meta": meta, "jsonapi": Self.version]))
    }

    static let version: ProfileValue = .object(["version": .string("1.0")])

    /// A resource object and the resources its relationships hold.
    struct Serialized {
        let object: ProfileValue
        let related: [(name: String, resources: [any JSONAPIResource])]
    }

    private func document(
        primary: [any JSONAPIResource], single: Bool, links: [String: String], meta: ProfileValue?
    ) throws(ChaosError) -> JSONAPIDocument {
        let leafEncoder = encoder()
        var queue: [(serialized: Serialized, path: [String])] = []
        var seen: Set<[String]> = []
        for resource in primary {
            queue.append((try serialize(resource, leafEncoder), []))
            seen.insert(Self.identity(resource))
        }
        var included: [ProfileValue] = []
        var next = 0
        while next < queue.count {
            let (serialized, path) = queue[next]
            next += 1
            for (name, resources) in serialized.related where include.includes(path + [name]) {
                for resource in resources where seen.insert(Self.identity(resource)).inserted {
                    let child = try serialize(resource, leafEncoder)
                    included.append(child.object)
                    queue.append((child, path + [name]))
                }
            }
        }
        let data: [ProfileValue] = queue.prefix(primary.count).map(\.serialized.object)
        var top: [String: ProfileValue] = ["data": single ? data[0] : .array(data), "jsonapi": Self.version]
        if !included.isEmpty { top["included"] = .array(included) }
        if !links.isEmpty { top["links"] = .object(links.mapValues(ProfileValue.string)) }
        if let meta { top["meta"] = meta }
        return JSONAPIDocument(value: .object(top))
    }

    /// A resource's identity in a document: its type and id.
    static func identity(_ resource: any JSONAPIResource) -> [String] {
        [type(of: resource).jsonAPIType, resource.jsonAPIID]
    }

    /// A resource identifier object: `{"type": …, "id": …}`.
    static func identifier(_ resource: any JSONAPIResource) -> ProfileValue {
        .object(["type": .string(type(of: resource).jsonAPIType), "id": .string(resource.jsonAPIID)])
    }

    /// `resource` as a resource object.
    func serialize(_ resource: any JSONAPIResource, _ leafEncoder: JSONEncoder) throws(ChaosError) -> Serialized {
        let typeName = "\(type(of: resource))"
        let context = CaptureContext(keys: keys, nilValues: nilValues, leafEncoder: leafEncoder)
        let attributes: ProfileValue
        do {
            attributes = try context.capture(resource, path: [], resourceRoot: true).resolved
        } catch {
            throw ChaosError(
                .invalidNetworkConfiguration, subject: "JSON:API \(typeName)",
                "the resource does not encode (\(error)); check its Encodable conformance")
        }
        guard case .object(var members) = attributes else {
            throw ChaosError(
                .invalidNetworkConfiguration, subject: "JSON:API \(typeName)",
                "a resource encodes as an object of members, but this one encodes as \(attributes.typeName)"
            )
        }
        members[keys("id")] = nil
        members["id"] = nil
        if members["type"] != nil {
            throw ChaosError(
                .invalidNetworkConfiguration, subject: "JSON:API \(typeName)",
                "it has a member named 'type', which JSON:API reserves; rename it with CodingKeys (e.g. \"kind\")"
            )
        }
        var object: [String: ProfileValue] = [
            "type": .string(type(of: resource).jsonAPIType), "id": .string(resource.jsonAPIID),
        ]
        if !members.isEmpty { object["attributes"] = .object(members) }
        var relationships: [String: ProfileValue] = [:]
        var related: [(name: String, resources: [any JSONAPIResource])] = []
        let relationshipLinks = resource.jsonAPIRelationshipLinks
        for (property, relationship) in context.relationships {
            let name = keys(property)
            guard name != "type", name != "id" else {
                throw ChaosError(
                    .invalidNetworkConfiguration, subject: "JSON:API \(typeName)",
                    "the relationship '\(property)' is named '\(name)', which JSON:API reserves; rename it with CodingKeys"
                )
            }
            var member: [String: ProfileValue] = [:]
            switch relationship {
            case .toOne(let resource?):
                member["data"] = Self.identifier(resource)
                related.append((name, [resource]))
            case .toOne(nil):
                member["data"] = .null
            case .toMany(let resources):
                member["data"] = .array(resources.map(Self.identifier))
                related.append((name, resources))
            }
            if let links = relationshipLinks[property], !links.isEmpty {
                member["links"] = .object(links.mapValues(ProfileValue.string))
            }
            relationships[name] = .object(member)
        }
        if !relationships.isEmpty { object["relationships"] = .object(relationships) }
        if !resource.jsonAPILinks.isEmpty {
            object["links"] = .object(resource.jsonAPILinks.mapValues(ProfileValue.string))
        }
        if let meta = resource.jsonAPIMeta { object["meta"] = meta }
        return Serialized(object: .object(object), related: related)
    }
}

/// A JSON:API document: `Encodable` (a route can return it), or as bytes and a response.
public struct JSONAPIDocument: Encodable, Sendable, Hashable {
    /// The media type of JSON:API documents.
    public static let contentType = "application/vnd.api+json"

    /// The whole document.
    public let value: ProfileValue

    /// Encodes the document.
    public func encode(to encoder: any Encoder) throws {
        try value.encode(to: encoder)
    }

    /// The document as JSON text (members sorted by name).
    public var data: Data {
        let writer = JSONEncoder()
        writer.outputFormatting = [.sortedKeys]
        // The tree holds only JSON values, which always encode.
        return (try? writer.encode(value)) ?? Data()
    }

    /// A response with the document and `Content-Type: application/vnd.api+json`.
    public func response(status: Int = 200, headers: [String: String] = [:]) -> NetworkResponse {
        var all = headers
        all["Content-Type"] = Self.contentType
        return NetworkResponse(status: status, headers: all, body: data)
    }
}
