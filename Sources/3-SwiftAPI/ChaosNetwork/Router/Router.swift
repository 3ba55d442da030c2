public import ChaosKit
public import Foundation
public import HTTPTypes

/// A back-end in the test process (after Kakapo): routes such as `GET /users/:id` with
/// handlers that compute answers, usually from a ``Store``. Add it to a ``StubSet`` and
/// URLSession (through ``ChaosURLProtocol``) and ``ChaosNetworkClient`` both reach it.
///
/// ```swift
/// struct User: Codable, Identifiable, Sendable { var id: Int; var name: String }
/// let store = Store()
/// store.create(User.self, count: 3) { id in User(id: id, name: "User \(id)") }
/// let router = Router(host: "api.example.com")
/// try router.get("/users/:id") { request in
///     guard let user = store.find(User.self, id: try request.intParameter("id")) else {
///         throw RouteError(404, "no user \(request.pathParameters["id"] ?? "")")
///     }
///     return user
/// }
/// let stubs = StubSet()
/// stubs.add(router)
/// ```
///
/// Handlers return an `Encodable` value (sent as JSON, status 200 unless the route says
/// otherwise) or a complete ``NetworkResponse``. A ``RouteError`` they throw becomes an
/// HTTP error response with a JSON body `{"error": …}`; a ``NetworkError`` fails the
/// request as a transport failure; any other error becomes a 500. When several routes
/// match, the one added last wins; requests no route matches go on to the stub set's
/// other responders and its unmatched policy.
public final class Router: Sendable {
    typealias Handler = @Sendable (MatchedRequest) async throws -> NetworkResponse

    struct Route: Sendable {
        let matcher: RequestMatcher
        let handler: Handler
    }

    /// The host every route answers for (nil: any host).
    public let host: String?
    private let routes = Locked<[Route]>([])

    /// An empty router answering for `host` (lower-cased, without port), or any host when nil.
    public init(host: String? = nil) {
        self.host = host?.lowercased()
    }

    /// The routes as `GET api.example.com template /users/:id`, oldest first.
    public var routeDescriptions: [String] { routes.withLock { $0.map(\.matcher.description) } }

    /// Adds a route for `method` and `path` (`/users/:id`: each `:name` segment is a path
    /// parameter) answered by `handler` with a complete response.
    public func route(
        _ method: HTTPRequest.Method, _ path: String,
        _ handler: @escaping @Sendable (MatchedRequest) async throws -> NetworkResponse
    ) throws(ChaosError) {
        guard path.hasPrefix("/") else {
            throw ChaosError(
                .invalidNetworkConfiguration, subject: "route \(method.rawValue) \(path)",
                "a route path starts with '/', e.g. /users/:id")
        }
        // Any ':' makes it a template, so that a misplaced one is reported, not matched literally.
        let pattern: PathPattern = path.contains(":") ? try .template(path) : .exact(path)
        let matcher = RequestMatcher(method: method, host: host, path: pattern)
        routes.withLock { $0.append(Route(matcher: matcher, handler: handler)) }
    }

    /// Adds a route whose handler returns a value sent as JSON with `status` (a
    /// ``JSONAPIDocument`` as `application/vnd.api+json`).
    public func route<Value: Encodable & Sendable>(
        _ method: HTTPRequest.Method, _ path: String, status: Int = 200,
        encoder: @escaping @Sendable () -> JSONEncoder = Router.defaultEncoder,
        _ handler: @escaping @Sendable (MatchedRequest) async throws -> Value
    ) throws(ChaosError) {
        let typeName = String(describing: Value.self)
        try route(method, path) { (request: MatchedRequest) async throws -> NetworkResponse in
            let value = try await handler(request)
            let data: Data
            do {
                data = try encoder().encode(value)
            } catch {
                throw RouteError(500, "the handler's \(typeName) does not encode as JSON: \(error)")
            }
            // A JSON:API document goes out with its own media type.
            let contentType = value is JSONAPIDocument ? JSONAPIDocument.contentType : StubResponse.defaultContentType
            return NetworkResponse(status: status, headers: ["Content-Type": contentType], body: data)
        }
    }

    /// The encoder of JSON answers: sorted keys, ISO 8601 dates.
    public static let defaultEncoder: @Sendable () -> JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }

    // MARK: Verbs

    /// `GET path` answered with a complete response.
    public func get(_ path: String, _ handler: @escaping @Sendable (MatchedRequest) async throws -> NetworkResponse)
        throws(ChaosError)
    {
        try route(.get, path, handler)
    }

    /// `GET path` answered with JSON.
    public func get<Value: Encodable & Sendable>(
        _ path: String, status: Int = 200, _ handler: @escaping @Sendable (MatchedRequest) async throws -> Value
    ) throws(ChaosError) {
        try route(.get, path, status: status, handler)
    }

    /// `POST path` answered with a complete response.
    public func post(_ path: String, _ handler: @escaping @Sendable (MatchedRequest) async throws -> NetworkResponse)
        throws(ChaosError)
    {
        try route(.post, path, handler)
    }

    /// `POST path` answered with JSON (status 201 unless told otherwise).
    public func post<Value: Encodable & Sendable>(
        _ path: String, status: Int = 201, _ handler: @escaping @Sendable (MatchedRequest) async throws -> Value
    ) throws(ChaosError) {
        try route(.post, path, status: status, handler)
    }

    /// `PUT path` answered with a complete response.
    public func put(_ path: String, _ handler: @escaping @Sendable (MatchedRequest) async throws -> NetworkResponse)
        throws(ChaosError)
    {
        try route(.put, path, handler)
    }

    /// `PUT path` answered with JSON.
    public func put<Value: Encodable & Sendable>(
        _ path: String, status: Int = 200, _ handler: @escaping @Sendable (MatchedRequest) async throws -> Value
    ) throws(ChaosError) {
        try route(.put, path, status: status, handler)
    }

    /// `PATCH path` answered with a complete response.
    public func patch(_ path: String, _ handler: @escaping @Sendable (MatchedRequest) async throws -> NetworkResponse)
        throws(ChaosError)
    {
        try route(.patch, path, handler)
    }

    /// `PATCH path` answered with JSON.
    public func patch<Value: Encodable & Sendable>(
        _ path: String, status: Int = 200, _ handler: @escaping @Sendable (MatchedRequest) async throws -> Value
    ) throws(ChaosError) {
        try route(.patch, path, status: status, handler)
    }

    /// `DELETE path` answered with a complete response.
    public func delete(_ path: String, _ handler: @escaping @Sendable (MatchedRequest) async throws -> NetworkResponse)
        throws(ChaosError)
    {
        try route(.delete, path, handler)
    }

    /// `DELETE path` answered with JSON.
    public func delete<Value: Encodable & Sendable>(
        _ path: String, status: Int = 200, _ handler: @escaping @Sendable (MatchedRequest) async throws -> Value
    ) throws(ChaosError) {
        try route(.delete, path, status: status, handler)
    }

    // MARK: Answering

    func match(_ facts: inout RequestFacts) -> (Route, [String: String])? {
        let routes = self.routes.withLock { $0 }
        for route in routes.reversed() {
            if let parameters = route.matcher.match(&facts) { return (route, parameters) }
        }
        return nil
    }

    /// Answers `request` directly (nil when no route matches it).
    public func respond(to request: NetworkRequest) async throws(NetworkError) -> NetworkResponse? {
        var facts = RequestFacts(request)
        guard let (route, parameters) = match(&facts) else { return nil }
        do {
            return try await route.handler(MatchedRequest(request: request, pathParameters: parameters))
        } catch let error as RouteError {
            return error.response
        } catch let error as NetworkError {
            throw error
        } catch {
            return RouteError(500, "the handler for \(route.matcher) failed: \(error)").response
        }
    }
}

extension Router: StubResponder {
    var name: String { "router" }

    func handles(_ facts: inout RequestFacts) -> Bool {
        match(&facts) != nil
    }

    func respond(to request: NetworkRequest, passThrough: (any NetworkClient)?) async throws(NetworkError)
        -> NetworkResponse
    {
        guard let response = try await respond(to: request) else {
            throw .noStub("no route matches \(request) any more")
        }
        return response
    }
}

extension StubSet {
    /// Lets `router` answer requests no stub matches (stubs first, then the responders
    /// added last, then the unmatched policy).
    public func add(_ router: Router) {
        addResponder(router)
    }
}

/// An HTTP error a route handler throws: the request is answered with `status` and a JSON
/// body `{"error": message}`.
public struct RouteError: Error, Sendable, CustomStringConvertible {
    /// The status code.
    public let status: Int
    /// What went wrong, for the body.
    public let message: String

    /// An error answered with `status` and `message`.
    public init(_ status: Int, _ message: String) {
        self.status = status
        self.message = message
    }

    /// 404 with `message`.
    public static func notFound(_ message: String = "not found") -> RouteError { RouteError(404, message) }
    /// 400 with `message`.
    public static func badRequest(_ message: String) -> RouteError { RouteError(400, message) }

    /// The response the error is answered with.
    public var response: NetworkResponse {
        let body = (try? JSONEncoder().encode(["error": message])) ?? Data()
        return NetworkResponse(status: status, headers: ["Content-Type": StubResponse.defaultContentType], body: body)
    }

    /// `404: no user 7`.
    public var description: String { "\(status): \(message)" }
}

extension MatchedRequest {
    /// The request body (empty without one).
    public var body: Data { request.body ?? Data() }

    /// The request's header fields.
    public var headers: HTTPFields { request.head.headerFields }

    /// The path parameter `name` as an integer; a missing or non-integer one throws a
    /// ``RouteError`` 400, which a route answers with.
    public func intParameter(_ name: String) throws(RouteError) -> Int {
        guard let text = pathParameters[name] else { throw .badRequest("the path has no parameter '\(name)'") }
        guard let value = Int(text) else { throw .badRequest("'\(text)' is not a number (path parameter '\(name)')") }
        return value
    }

    /// The body decoded from JSON as `type`; an undecodable body throws a ``RouteError``
    /// 400, which a route answers with.
    public func decode<T: Decodable>(_ type: T.Type, decoder: JSONDecoder = JSONDecoder()) throws(RouteError) -> T {
        do {
            return try decoder.decode(T.self, from: body)
        } catch {
            throw .badRequest("the body is not a \(T.self): \(error)")
        }
    }
}

/// An in-memory database for a prototype back-end (after Kakapo's store): tables of
/// `Identifiable` values with integer ids, one table per type. Thread-safe.
///
/// ```swift
/// struct Post: Codable, Identifiable, Sendable { var id: Int; var title: String }
/// let store = Store()
/// store.create(Post.self, count: 20) { id in Post(id: id, title: "Post \(id)") }
/// let post = store.insert { id in Post(id: id, title: "New") }   // id 21
/// store.update(Post(id: post.id, title: "Renamed"))
/// store.delete(Post.self, id: 1)
/// ```
public final class Store: Sendable {
    private struct Table {
        var rows: [Int: any Sendable] = [:]
        var nextID = 1
    }

    private let tables = Locked<[ObjectIdentifier: Table]>([:])

    /// An empty store.
    public init() {}

    private func reserve<T>(_ type: T.Type, _ count: Int) -> Range<Int> {
        tables.withLock { tables in
            let key = ObjectIdentifier(type)
            let first = tables[key, default: Table()].nextID
            tables[key, default: Table()].nextID = first + max(count, 0)
            return first..<first + max(count, 0)
        }
    }

    private func put<T: Identifiable & Sendable>(_ entities: [T]) where T.ID == Int {
        tables.withLock { tables in
            let key = ObjectIdentifier(T.self)
            var table = tables[key, default: Table()]
            for entity in entities {
                table.rows[entity.id] = entity
                table.nextID = max(table.nextID, entity.id + 1)
            }
            tables[key] = table
        }
    }

    /// Creates `count` values with `factory`, which receives fresh ids (1, 2, 3 … per type).
    @discardableResult
    public func create<T: Identifiable & Sendable>(_ type: T.Type, count: Int, _ factory: (Int) throws -> T) rethrows
        -> [T] where T.ID == Int
    {
        let entities = try reserve(type, count).map(factory)
        put(entities)
        return entities
    }

    /// Inserts the value `factory` makes from a fresh id.
    @discardableResult
    public func insert<T: Identifiable & Sendable>(_ factory: (Int) throws -> T) rethrows -> T where T.ID == Int {
        try create(T.self, count: 1, factory)[0]
    }

    /// Inserts (or replaces) `entity` under its own id.
    public func insert<T: Identifiable & Sendable>(_ entity: T) where T.ID == Int {
        put([entity])
    }

    /// Every value of `type`, by id.
    public func findAll<T: Identifiable & Sendable>(_ type: T.Type) -> [T] where T.ID == Int {
        tables.withLock { tables in
            (tables[ObjectIdentifier(type)]?.rows ?? [:]).sorted { $0.key < $1.key }.compactMap { $0.value as? T }
        }
    }

    /// The value of `type` with `id`, if any.
    public func find<T: Identifiable & Sendable>(_ type: T.Type, id: Int) -> T? where T.ID == Int {
        tables.withLock { $0[ObjectIdentifier(type)]?.rows[id] as? T }
    }

    /// The values of `type` for which `isIncluded` holds, by id.
    public func filter<T: Identifiable & Sendable>(_ type: T.Type, _ isIncluded: (T) throws -> Bool) rethrows -> [T]
    where T.ID == Int {
        try findAll(type).filter(isIncluded)
    }

    /// Replaces the stored value with `entity`'s id; false (and nothing stored) when there is none.
    @discardableResult
    public func update<T: Identifiable & Sendable>(_ entity: T) -> Bool where T.ID == Int {
        tables.withLock { tables in
            let key = ObjectIdentifier(T.self)
            guard tables[key]?.rows[entity.id] != nil else { return false }
            tables[key]?.rows[entity.id] = entity
            return true
        }
    }

    /// Changes the value of `type` with `id` in place (atomically); returns the new value,
    /// or nil when there is none.
    @discardableResult
    public func update<T: Identifiable & Sendable>(_ type: T.Type, id: Int, _ change: (inout T) -> Void) -> T?
    where T.ID == Int {
        tables.withLock { tables in
            let key = ObjectIdentifier(type)
            guard var value = tables[key]?.rows[id] as? T else { return nil }
            change(&value)
            tables[key]?.rows[id] = value
            return value
        }
    }

    /// Deletes the value of `type` with `id`; returns it, or nil when there was none.
    @discardableResult
    public func delete<T: Identifiable & Sendable>(_ type: T.Type, id: Int) -> T? where T.ID == Int {
        tables.withLock { $0[ObjectIdentifier(type)]?.rows.removeValue(forKey: id) as? T }
    }

    /// How many values of `type` there are.
    public func count<T: Identifiable & Sendable>(_ type: T.Type) -> Int where T.ID == Int {
        tables.withLock { $0[ObjectIdentifier(type)]?.rows.count ?? 0 }
    }

    /// Empties every table (ids start again at 1).
    public func removeAll() {
        tables.withLock { $0 = [:] }
    }
}
