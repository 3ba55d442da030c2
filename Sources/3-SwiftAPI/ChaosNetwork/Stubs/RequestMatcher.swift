public import ChaosKit
public import Foundation
public import HTTPTypes

/// How a stub or route matches a request's path.
public struct PathPattern: Sendable, CustomStringConvertible {
    enum Kind: Sendable {
        case exact(String)
        case prefix(String)
        case regex(String, RegexBox)
        case template(PathTemplate)
    }

    let kind: Kind

    /// The path equals `path` (query excluded).
    public static func exact(_ path: String) -> PathPattern { PathPattern(kind: .exact(path)) }

    /// The path starts with `prefix`.
    public static func prefix(_ prefix: String) -> PathPattern { PathPattern(kind: .prefix(prefix)) }

    /// The whole path matches the regular expression `pattern` (anchored at both ends);
    /// named groups `(?<id>…)` become path parameters. An invalid pattern is an error.
    public static func regex(_ pattern: String) throws(ChaosError) -> PathPattern {
        do {
            return PathPattern(
                kind: .regex(pattern, RegexBox(try NSRegularExpression(pattern: "^(?:\(pattern))$"), pattern: pattern)))
        } catch {
            throw ChaosError(
                .invalidNetworkConfiguration, subject: pattern,
                "not a valid regular expression (\(error.localizedDescription)); fix the pattern")
        }
    }

    /// A template such as `/users/:id/posts/:post`: each `:name` segment matches one path
    /// segment and becomes a path parameter. A malformed template is an error.
    public static func template(_ template: String) throws(ChaosError) -> PathPattern {
        PathPattern(kind: .template(try PathTemplate(template)))
    }

    /// A template when `path` has `:name` segments, otherwise an exact path.
    public static func path(_ path: String) throws(ChaosError) -> PathPattern {
        path.contains("/:") ? try template(path) : exact(path)
    }

    /// The path, prefix, template or regular expression as written.
    var text: String {
        switch kind {
        case .exact(let path): path
        case .prefix(let prefix): prefix
        case .regex(let pattern, _): pattern
        case .template(let template): template.text
        }
    }

    /// `exact /users`, `prefix /v1/`, `template /users/:id`, `regex …`.
    public var description: String {
        switch kind {
        case .exact(let path): "exact \(path)"
        case .prefix(let prefix): "prefix \(prefix)"
        case .regex(let pattern, _): "regex \(pattern)"
        case .template(let template): "template \(template.text)"
        }
    }

    /// The path parameters when `path` matches (empty for exact and prefix), nil when it does not.
    public func match(_ path: String) -> [String: String]? {
        switch kind {
        case .exact(let expected): return path == expected ? [:] : nil
        case .prefix(let prefix): return path.hasPrefix(prefix) ? [:] : nil
        case .regex(_, let box): return box.match(path)
        case .template(let template): return template.match(path)
        }
    }
}

/// A compiled regular expression. `NSRegularExpression` is immutable once made and
/// documented as safe to use from several threads at once, which is what guards it.
final class RegexBox: @unchecked Sendable {
    let expression: NSRegularExpression
    let groupNames: [String]

    init(_ expression: NSRegularExpression, pattern: String) {
        self.expression = expression
        // Named groups: (?<name>…
        var names: [String] = []
        var rest = Substring(pattern)
        while let range = rest.range(of: "(?<") {
            let after = rest[range.upperBound...]
            if let close = after.firstIndex(of: ">"), !after.hasPrefix("="), !after.hasPrefix("!") {
                names.append(String(after[..<close]))
            }
            rest = after
        }
        self.groupNames = names
    }

    func match(_ path: String) -> [String: String]? {
        let range = NSRange(path.startIndex..., in: path)
        guard let result = expression.firstMatch(in: path, range: range) else { return nil }
        var parameters: [String: String] = [:]
        for name in groupNames {
            let groupRange = result.range(withName: name)
            if groupRange.location != NSNotFound, let swiftRange = Range(groupRange, in: path) {
                parameters[name] = String(path[swiftRange])
            }
        }
        return parameters
    }
}

/// A path template (`/users/:id`), checked when made.
struct PathTemplate: Sendable {
    enum Segment: Sendable, Equatable {
        case literal(String)
        case parameter(String)
    }

    let text: String
    let segments: [Segment]

    init(_ text: String) throws(ChaosError) {
        func fail(_ message: String) -> ChaosError {
            ChaosError(.invalidNetworkConfiguration, subject: "path template '\(text)'", message)
        }
        guard text.hasPrefix("/") else { throw fail("a template starts with '/', e.g. /users/:id") }
        guard !text.contains("?") else {
            throw fail("a template has no query; match query parameters with the matcher's query instead")
        }
        var segments: [Segment] = []
        var seen = Set<String>()
        for raw in text.dropFirst().split(separator: "/", omittingEmptySubsequences: false) {
            if raw.hasPrefix(":") {
                let name = String(raw.dropFirst())
                guard let first = name.first, first.isLetter || first == "_",
                    name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" })
                else {
                    throw fail(
                        "':\(name)' is not a parameter name; write a name of letters, digits and _ after ':', e.g. :id")
                }
                guard seen.insert(name).inserted else {
                    throw fail("the parameter ':\(name)' appears twice; give each its own name")
                }
                segments.append(.parameter(name))
            } else {
                if raw.contains(":") {
                    throw fail("'\(raw)' mixes text and ':'; a parameter takes a whole segment, e.g. /users/:id")
                }
                segments.append(.literal(String(raw)))
            }
        }
        self.text = text
        self.segments = segments
    }

    func match(_ path: String) -> [String: String]? {
        guard path.hasPrefix("/") else { return nil }
        var parameters: [String: String] = [:]
        var index = 0
        for raw in path.utf8.dropFirst().split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false) {
            guard index < segments.count else { return nil }
            let part = String(Substring(raw))
            switch segments[index] {
            case .literal(let literal):
                if part != literal { return nil }
            case .parameter(let name):
                if part.isEmpty { return nil }
                parameters[name] = part.removingPercentEncoding ?? part
            }
            index += 1
        }
        return index == segments.count ? parameters : nil
    }
}

/// How a stub matches a request's body.
public struct BodyMatcher: Sendable, CustomStringConvertible {
    enum Kind: Sendable {
        case data(Data)
        case json(ProfileValue)
        case contains(String)
    }

    let kind: Kind

    /// The body is exactly `data`.
    public static func data(_ data: Data) -> BodyMatcher { BodyMatcher(kind: .data(data)) }

    /// The body is exactly the UTF-8 of `text`.
    public static func string(_ text: String) -> BodyMatcher { .data(Data(text.utf8)) }

    /// The body contains `text`.
    public static func contains(_ text: String) -> BodyMatcher { BodyMatcher(kind: .contains(text)) }

    /// The body is JSON equal to `value` encoded: member order, whitespace and number
    /// spelling do not matter.
    public static func json(_ value: some Encodable) throws(ChaosError) -> BodyMatcher {
        let data: Data
        do {
            data = try JSONEncoder().encode(value)
        } catch {
            throw ChaosError(
                .invalidNetworkConfiguration, subject: "body matcher",
                "the value does not encode as JSON (\(error)); give an Encodable value")
        }
        return try jsonText(String(decoding: data, as: UTF8.self))
    }

    /// The body is JSON equal to `text` (which must be JSON).
    public static func jsonText(_ text: String) throws(ChaosError) -> BodyMatcher {
        guard let value = try? ProfileValue(json: Data(text.utf8), duplicateMembers: .lastWins) else {
            throw ChaosError(
                .invalidNetworkConfiguration, subject: "body matcher",
                "'\(text.prefix(60))' is not JSON; fix it or use .string(_:)")
        }
        return BodyMatcher(kind: .json(value))
    }

    func matches(_ body: Data?) -> Bool {
        let body = body ?? Data()
        switch kind {
        case .data(let expected): return body == expected
        case .contains(let text): return String(decoding: body, as: UTF8.self).contains(text)
        case .json(let expected): return (try? ProfileValue(json: body, duplicateMembers: .lastWins)) == expected
        }
    }

    /// `json {…}`, `contains "…"`, `data (12 bytes)`.
    public var description: String {
        switch kind {
        case .data(let data): "data (\(data.count) bytes)"
        case .json(let value): "json \(value)"
        case .contains(let text): "contains \"\(text)\""
        }
    }
}

/// What a stub, response set or route matches: method, host, path, query, headers, body.
/// Every criterion left nil (or empty) matches anything.
public struct RequestMatcher: Sendable, CustomStringConvertible {
    /// The method, or nil for any.
    public var method: HTTPRequest.Method?
    /// The host (lower-cased, without port), or nil for any.
    public var host: String?
    /// The path pattern, or nil for any path.
    public var path: PathPattern?
    /// Query parameters that must be present: a value must be equal; nil means any value.
    public var query: [String: String?]
    /// Header fields that must be present with these values (names are case-insensitive).
    public var headers: [String: String]
    /// The body, or nil for any.
    public var body: BodyMatcher?

    /// A matcher from its criteria.
    public init(
        method: HTTPRequest.Method? = nil, host: String? = nil, path: PathPattern? = nil,
        query: [String: String?] = [:], headers: [String: String] = [:], body: BodyMatcher? = nil
    ) {
        self.method = method
        self.host = host?.lowercased()
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
    }

    /// `method` requests for `path` (a template when it has `:name` segments, else exact).
    public init(_ method: HTTPRequest.Method, _ path: String, host: String? = nil) throws(ChaosError) {
        self.init(method: method, host: host, path: try .path(path))
    }

    /// `GET` on `path` (a template when it has `:name` segments).
    public static func get(_ path: String, host: String? = nil) throws(ChaosError) -> RequestMatcher {
        try RequestMatcher(.get, path, host: host)
    }
    /// `POST` on `path`.
    public static func post(_ path: String, host: String? = nil) throws(ChaosError) -> RequestMatcher {
        try RequestMatcher(.post, path, host: host)
    }
    /// `PUT` on `path`.
    public static func put(_ path: String, host: String? = nil) throws(ChaosError) -> RequestMatcher {
        try RequestMatcher(.put, path, host: host)
    }
    /// `PATCH` on `path`.
    public static func patch(_ path: String, host: String? = nil) throws(ChaosError) -> RequestMatcher {
        try RequestMatcher(.patch, path, host: host)
    }
    /// `DELETE` on `path`.
    public static func delete(_ path: String, host: String? = nil) throws(ChaosError) -> RequestMatcher {
        try RequestMatcher(.delete, path, host: host)
    }

    /// `GET api.example.com template /users/:id query[page] …`.
    public var description: String {
        var parts: [String] = [method?.rawValue ?? "any method", host ?? "any host", path?.description ?? "any path"]
        if !query.isEmpty { parts.append("query \(query.keys.sorted().joined(separator: ","))") }
        if !headers.isEmpty { parts.append("headers \(headers.keys.sorted().joined(separator: ","))") }
        if let body { parts.append("body \(body)") }
        return parts.joined(separator: " ")
    }

    /// The path parameters when `request` matches, nil when it does not.
    public func match(_ request: NetworkRequest) -> [String: String]? {
        var facts = RequestFacts(request)
        return match(&facts)
    }

    func match(_ facts: inout RequestFacts) -> [String: String]? {
        // The path first: it tells stubs apart most often.
        if let path, case .exact(let expected) = path.kind, facts.path != expected { return nil }
        if let method, facts.request.head.method != method { return nil }
        if let host, facts.host != host { return nil }
        var parameters: [String: String] = [:]
        if let path {
            guard let found = path.match(facts.path) else { return nil }
            parameters = found
        }
        if !query.isEmpty {
            let items = facts.query
            for (name, value) in query {
                guard let actual = items[name] else { return nil }
                if let value, actual != value { return nil }
            }
        }
        for (name, value) in headers {
            guard let fieldName = HTTPField.Name(name), facts.request.head.headerFields[fieldName] == value else {
                return nil
            }
        }
        if let body, !body.matches(facts.request.body) { return nil }
        return parameters
    }

    /// How many criteria the matcher has: one each for method, host, path and body when
    /// given, one per query parameter and one per header field.
    public var criteriaCount: Int {
        (method == nil ? 0 : 1) + (host == nil ? 0 : 1) + (path == nil ? 0 : 1) + query.count + headers.count
            + (body == nil ? 0 : 1)
    }

    /// The criteria `request` does not meet, each in words (empty when it matches): what a
    /// near-miss report shows.
    public func differences(_ request: NetworkRequest) -> [MatcherDifference] {
        var facts = RequestFacts(request)
        return differences(&facts)
    }

    /// The criteria `facts` does not meet, checked with the same tests as ``match(_:)``,
    /// every one of them (``match(_:)`` stops at the first).
    func differences(_ facts: inout RequestFacts) -> [MatcherDifference] {
        var result: [MatcherDifference] = []
        if let method, facts.request.head.method != method {
            result.append(.init(.method, expected: method.rawValue, actual: facts.request.head.method.rawValue))
        }
        if let host, facts.host != host { result.append(.init(.host, expected: host, actual: facts.host)) }
        if let path, path.match(facts.path) == nil {
            result.append(.init(.path, expected: path.description, actual: facts.path))
        }
        let items = facts.query
        for (name, value) in query.sorted(by: { $0.key < $1.key }) {
            let actual = items[name]
            if actual == nil || (value != nil && actual != value) {
                result.append(
                    .init(
                        .query, name: name, expected: value.map { "'\($0)'" } ?? "any value",
                        actual: actual.map { "'\($0)'" }))
            }
        }
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) {
            let actual = HTTPField.Name(name).flatMap { facts.request.head.headerFields[$0] }
            if actual != value {
                result.append(.init(.header, name: name, expected: "'\(value)'", actual: actual.map { "'\($0)'" }))
            }
        }
        if let body, !body.matches(facts.request.body) {
            let count = facts.request.body?.count ?? 0
            result.append(
                .init(.body, expected: body.description, actual: count == 0 ? nil : "\(count) bytes that differ"))
        }
        return result
    }
}

/// One criterion of a ``RequestMatcher`` that a request does not meet.
public struct MatcherDifference: Sendable, Hashable, CustomStringConvertible {
    /// The part of a request a criterion looks at.
    public enum Part: String, Sendable, Hashable, CaseIterable {
        /// The method.
        case method
        /// The host.
        case host
        /// The path.
        case path
        /// One query parameter.
        case query
        /// One header field.
        case header
        /// The body.
        case body
    }

    /// The part that differs.
    public let part: Part
    /// The query parameter or header field, for those parts.
    public let name: String?
    /// What the matcher expects, in words (`template /v1/items/:id`, `'2'`).
    public let expected: String
    /// What the request has, or nil when it has none (a missing header or parameter, no host, no body).
    public let actual: String?

    init(_ part: Part, name: String? = nil, expected: String, actual: String?) {
        self.part = part
        self.name = name
        self.expected = expected
        self.actual = actual
    }

    /// `path: expected template /v1/items/:id, got /v1/item/3`; `header Accept: expected 'a', got none`.
    public var description: String {
        "\(part.rawValue)\(name.map { " \($0)" } ?? ""): expected \(expected), got \(actual ?? "none")"
    }
}

/// A request with its host, path and query worked out once, for matching against many matchers.
struct RequestFacts {
    let request: NetworkRequest
    let host: String?
    let path: String
    private var cachedQuery: [String: String]?

    init(_ request: NetworkRequest) {
        self.request = request
        self.host = request.host
        self.path = request.path
    }

    /// The query as a dictionary (the first value of a repeated name wins).
    var query: [String: String] {
        mutating get {
            if let cachedQuery { return cachedQuery }
            var result: [String: String] = [:]
            for item in request.queryItems where result[item.name] == nil {
                result[item.name] = item.value ?? ""
            }
            cachedQuery = result
            return result
        }
    }
}
