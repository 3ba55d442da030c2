import Foundation

/// What a ``HARCassette`` keeps out of its archive: header values, query parameters, JSON
/// body fields and cookie values, replaced by ``replacement``.
///
/// Redaction is applied to every entry the cassette writes or reads, and to each request
/// before it is matched, so a redacted archive still replays: a request whose `api_key`
/// differs from the recorded one matches all the same, because both read `[redacted]`.
///
/// ```swift
/// var redaction = HARRedaction.default
/// redaction.queryParameters.insert("session")
/// redaction.jsonFields.insert("pin")
/// let cassette = try HARCassette(file: url, mode: .recordOnce, redaction: redaction)
/// ```
public struct HARRedaction: Sendable, Equatable {
    /// Which cookies lose their values.
    public enum Cookies: Sendable, Equatable {
        /// Every cookie's value (names and attributes stay).
        case all
        /// The values of cookies with these names (compared without regard to case).
        case named(Set<String>)
        /// None.
        case none

        func covers(_ name: String) -> Bool {
            switch self {
            case .all: true
            case .named(let names): names.contains { $0.caseInsensitiveCompare(name) == .orderedSame }
            case .none: false
            }
        }
    }

    /// Header names (any case) whose whole value is replaced. `Cookie` and `Set-Cookie` are
    /// governed by ``cookies`` instead, value by value.
    public var headers: Set<String>
    /// Query parameter names (exact) whose values are replaced, in the URL and `queryString`,
    /// and in form bodies (`application/x-www-form-urlencoded`, `postData.params`).
    public var queryParameters: Set<String>
    /// JSON member names (exact, at any depth) whose values are replaced in request and
    /// response bodies.
    public var jsonFields: Set<String>
    /// Which cookies lose their values (in `Cookie`, `Set-Cookie` and the `cookies` lists).
    public var cookies: Cookies
    /// What stands in for a redacted value.
    public var replacement: String

    /// A redaction of your own.
    public init(
        headers: Set<String> = [], queryParameters: Set<String> = [], jsonFields: Set<String> = [],
        cookies: Cookies = .all, replacement: String = "[redacted]"
    ) {
        self.headers = Set(headers.map { $0.lowercased() })
        self.queryParameters = queryParameters
        self.jsonFields = jsonFields
        self.cookies = cookies
        self.replacement = replacement
    }

    /// Credentials by their usual names: `Authorization`, `Proxy-Authorization`, `X-Api-Key`,
    /// `X-Auth-Token`; query parameters and JSON fields such as `access_token`, `api_key`,
    /// `password`, `token`, `client_secret`; and every cookie's value.
    public static let `default` = HARRedaction(
        headers: ["authorization", "proxy-authorization", "x-api-key", "x-auth-token", "x-csrf-token"],
        queryParameters: [
            "access_token", "id_token", "refresh_token", "api_key", "apikey", "client_secret", "password", "secret",
            "token", "sig", "signature",
        ],
        jsonFields: [
            "password", "passwd", "secret", "client_secret", "token", "access_token", "refresh_token", "id_token",
            "api_key", "apikey",
        ],
        cookies: .all
    )

    /// Nothing is redacted.
    public static let none = HARRedaction(cookies: .none)

    /// This redaction with `headers` added.
    func adding(headers names: Set<String>) -> HARRedaction {
        var copy = self
        copy.headers.formUnion(names.map { $0.lowercased() })
        return copy
    }

    // MARK: Entries

    /// Redacts a HAR entry in place (request and response alike).
    func redact(entry: inout HARJSON) {
        entry.update("request") { request in
            request.update("url") { url in
                if let text = url.string { url = .string(redact(url: text)) }
            }
            request.update("headers") { redactHeaders(&$0) }
            request.update("queryString") { redactPairs(&$0, names: queryParameters) }
            request.update("cookies") { redactCookieList(&$0) }
            request.update("postData") { post in
                let mimeType = post["mimeType"]?.string
                let base64 = post["encoding"]?.string?.lowercased() == "base64"
                post.update("text") { text in
                    if let body = text.string, !base64 { text = .string(redact(bodyText: body, mimeType: mimeType)) }
                }
                post.update("params") { redactPairs(&$0, names: queryParameters) }
            }
        }
        entry.update("response") { response in
            response.update("headers") { redactHeaders(&$0) }
            response.update("cookies") { redactCookieList(&$0) }
            response.update("content") { content in
                let mimeType = content["mimeType"]?.string
                let base64 = content["encoding"]?.string?.lowercased() == "base64"
                content.update("text") { text in
                    if let body = text.string, !base64 { text = .string(redact(bodyText: body, mimeType: mimeType)) }
                }
            }
        }
    }

    private func redactHeaders(_ list: inout HARJSON) {
        guard case .array(var items) = list else { return }
        for index in items.indices {
            guard let name = items[index]["name"]?.string?.lowercased() else { continue }
            if name == "cookie" {
                items[index].update("value") { value in
                    if let text = value.string { value = .string(redact(cookieHeader: text)) }
                }
            } else if name == "set-cookie" {
                items[index].update("value") { value in
                    if let text = value.string { value = .string(redact(setCookie: text)) }
                }
            } else if headers.contains(name) {
                items[index].set("value", .string(replacement))
            }
        }
        list = .array(items)
    }

    private func redactPairs(_ list: inout HARJSON, names: Set<String>) {
        guard case .array(var items) = list, !names.isEmpty else { return }
        for index in items.indices where items[index]["name"]?.string.map(names.contains) == true {
            items[index].set("value", .string(replacement))
        }
        list = .array(items)
    }

    private func redactCookieList(_ list: inout HARJSON) {
        guard case .array(var items) = list else { return }
        for index in items.indices where items[index]["name"]?.string.map(cookies.covers) == true {
            items[index].set("value", .string(replacement))
        }
        list = .array(items)
    }

    // MARK: Values

    /// The URL with the values of redacted query parameters replaced.
    func redact(url text: String) -> String {
        guard !queryParameters.isEmpty, var components = URLComponents(string: text),
            let items = components.percentEncodedQueryItems,
            items.contains(where: { queryParameters.contains($0.name.removingPercentEncoding ?? $0.name) })
        else { return text }
        let encoded = replacement.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? replacement
        components.percentEncodedQueryItems = items.map { item in
            queryParameters.contains(item.name.removingPercentEncoding ?? item.name)
                ? URLQueryItem(name: item.name, value: encoded) : item
        }
        return components.string ?? text
    }

    /// `a=1; session=[redacted]`.
    func redact(cookieHeader text: String) -> String {
        text.split(separator: ";", omittingEmptySubsequences: false).map { pair -> String in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = parts[0].trimmingCharacters(in: .whitespaces)
            guard parts.count == 2, cookies.covers(name) else { return String(pair) }
            return "\(parts[0])=\(replacement)"
        }.joined(separator: ";")
    }

    /// `session=[redacted]; Path=/; HttpOnly` (the attributes stay).
    func redact(setCookie text: String) -> String {
        guard let equals = text.firstIndex(of: "=") else { return text }
        let name = text[..<equals].trimmingCharacters(in: .whitespaces)
        guard cookies.covers(name) else { return text }
        let rest = text[text.index(after: equals)...]
        let attributes = rest.firstIndex(of: ";").map { String(rest[$0...]) } ?? ""
        return "\(text[..<equals])=\(replacement)\(attributes)"
    }

    /// A body's text with redacted JSON fields or form parameters replaced (unchanged when
    /// it has none, so its spelling is kept).
    func redact(bodyText text: String, mimeType: String?) -> String {
        let mime = mimeType?.lowercased() ?? ""
        if !jsonFields.isEmpty, let first = text.first(where: { !$0.isWhitespace }), first == "{" || first == "[",
            var json = try? HARJSON.parse(Data(text.utf8))
        {
            return redactJSON(&json) ? json.text(pretty: false) : text
        }
        if !queryParameters.isEmpty, mime.contains("x-www-form-urlencoded") {
            var components = URLComponents()
            components.percentEncodedQuery = text
            guard let items = components.percentEncodedQueryItems,
                items.contains(where: { queryParameters.contains($0.name) })
            else { return text }
            let encoded = replacement.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? replacement
            components.percentEncodedQueryItems = items.map {
                queryParameters.contains($0.name) ? URLQueryItem(name: $0.name, value: encoded) : $0
            }
            return components.percentEncodedQuery ?? text
        }
        return text
    }

    /// Replaces redacted members at any depth; true when one was.
    private func redactJSON(_ value: inout HARJSON) -> Bool {
        switch value {
        case .object(var members):
            var changed = false
            for index in members.indices {
                if jsonFields.contains(members[index].key) {
                    if members[index].value != .string(replacement) {
                        members[index].value = .string(replacement)
                        changed = true
                    }
                } else if redactJSON(&members[index].value) {
                    changed = true
                }
            }
            value = .object(members)
            return changed
        case .array(var items):
            var changed = false
            for index in items.indices where redactJSON(&items[index]) { changed = true }
            value = .array(items)
            return changed
        default:
            return false
        }
    }

    /// A request body as it is matched: redacted like the archive's.
    func redact(body: Data, contentType: String?) -> Data {
        guard !body.isEmpty, let text = String(data: body, encoding: .utf8) else { return body }
        let redacted = redact(bodyText: text, mimeType: contentType)
        return redacted == text ? body : Data(redacted.utf8)
    }
}
