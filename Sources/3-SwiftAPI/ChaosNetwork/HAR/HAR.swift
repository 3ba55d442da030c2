import Foundation
import HTTPTypes

// The HTTP Archive format, version 1.2 (http://www.softwareishard.com/blog/har-12-spec/), as
// the tools people use write it: Chromium and its DevTools, Playwright, Firefox, Safari,
// Charles, mitmproxy, Polly.JS, WebPageTest.
//
// Strict where replay depends on a field: the request's method and URL, the response status
// (0 or -1 for a failed request), the request body used for matching, and the bytes of the
// response body. Lenient everywhere else: a field of the wrong shape that replay does not
// need is passed over with a note, never rejected, and every member is kept as it was read
// (``HARJSON``), so an archive written back out loses nothing it did not change.

/// A fault in a HAR file, located by its JSON path (`log.entries[3].response.status`), or a
/// note on a lenient decision made while reading one.
public struct HARProblem: Error, Sendable, Equatable, CustomStringConvertible {
    /// Where: a JSON path such as `log.entries[3].response.status` (`$` for the file itself).
    public let path: String
    /// What is wrong there, or what was decided, and what to do about it.
    public let message: String

    /// A problem at `path`.
    public init(path: String, message: String) {
        self.path = path
        self.message = message
    }

    /// `log.entries[3].response.status: -5 is not an HTTP status; …`.
    public var description: String { "\(path): \(message)" }
}

/// What a replayed entry does when its archive has no body for it: Chrome's and
/// WebPageTest's exports often leave content out, and Playwright records no redirect bodies.
public enum HARMissingBodyPolicy: Sendable, Equatable {
    /// Replay the entry with an empty body (and log, for each such entry, that it does).
    case emptyBody
    /// Do not replay the entry: a request that matches only such entries fails as
    /// unmatched, and the error names the entry and why.
    case unmatched
}

/// A HAR document: the whole JSON tree (for writing back) and its entries.
struct HARArchive: Sendable {
    var root: HARJSON
    var entries: [HARJSON]

    /// An empty archive written by ChaosKit.
    static func empty(comment: String) -> HARArchive {
        let log: HARJSON = .object([
            .init(key: "version", value: .string("1.2")),
            .init(
                key: "creator",
                value: .object([
                    .init(key: "name", value: .string("ChaosKit")), .init(key: "version", value: .string("1.0")),
                ])),
            .init(key: "entries", value: .array([])),
            .init(key: "comment", value: .string(comment)),
        ])
        return HARArchive(root: .object([.init(key: "log", value: log)]), entries: [])
    }

    /// Reads the document shell: JSON, a `log` object, a 1.x `version` if there is one, and
    /// an `entries` array. Entries themselves are checked one by one (``HARRecord/read``).
    static func read(_ data: Data) throws(HARProblem) -> HARArchive {
        let root: HARJSON
        do {
            root = try HARJSON.parse(data)
        } catch {
            throw HARProblem(path: "$", message: error.message)
        }
        guard case .object = root else {
            throw HARProblem(path: "$", message: "expected an object with a 'log' member, found \(root.kind)")
        }
        guard let log = root["log"] else {
            throw HARProblem(
                path: "log", message: "the member is missing; a HAR file is {\"log\": {\"entries\": [...]}}")
        }
        guard case .object = log else {
            throw HARProblem(path: "log", message: "expected an object, found \(log.kind)")
        }
        if let version = log["version"] {
            guard let text = version.string else {
                throw HARProblem(
                    path: "log.version", message: "expected a string such as \"1.2\", found \(version.kind)")
            }
            guard text.hasPrefix("1.") else {
                throw HARProblem(
                    path: "log.version",
                    message: "version '\(HARText.quote(text))' is not HAR 1.x; ChaosKit reads HAR 1.1 and 1.2")
            }
        }
        guard let entries = log["entries"] else {
            throw HARProblem(
                path: "log.entries", message: "the member is missing; give an array of entries (it may be empty)")
        }
        guard let list = entries.array else {
            throw HARProblem(path: "log.entries", message: "expected an array, found \(entries.kind)")
        }
        return HARArchive(root: root, entries: list)
    }

    /// The document with `entries` as its entries, as pretty-printed JSON.
    func encoded() -> Data {
        var root = self.root
        root.update("log") { $0.set("entries", .array(entries)) }
        return Data((root.text() + "\n").utf8)
    }
}

/// What replay needs of one entry, read from its JSON with every problem located.
struct HARRecord: Sendable {
    /// The entry's position in the archive.
    var index: Int
    var method: String
    var url: String
    /// The request body as sent (empty without one).
    var requestBody: Data
    /// The request's content type (from postData or its headers), for redacting its body.
    var requestContentType: String?
    var outcome: Outcome
    /// Whether the archive holds no body for this response (see ``HARMissingBodyPolicy``).
    var bodyMissing: Bool

    enum Outcome: Sendable {
        case response(status: Int, reason: String, headers: [(name: String, value: String)], body: Data)
        case failure(NetworkError)
    }

    var path: String { "log.entries[\(index)]" }

    /// Reads entry `index`: the record, or the problems that keep it from being replayed;
    /// `notes` gets the lenient decisions made on the way.
    static func read(_ entry: HARJSON, index: Int, notes: inout [HARProblem]) -> Result<HARRecord, HARProblemList> {
        let at = "log.entries[\(index)]"
        var problems: [HARProblem] = []
        guard case .object = entry else {
            return .failure(
                HARProblemList([HARProblem(path: at, message: "expected an entry object, found \(entry.kind)")]))
        }
        // The request: method and URL are what matching uses.
        let request = entry["request"]
        var method = ""
        var url = ""
        if let request, case .object = request {
            switch request["method"] {
            case .string(let text)? where HTTPRequest.Method(text.uppercased()) != nil: method = text.uppercased()
            case .string(let text)?:
                problems.append(
                    HARProblem(
                        path: at + ".request.method",
                        message: "'\(HARText.quote(text))' is not an HTTP method; write one such as \"GET\""))
            case nil:
                problems.append(
                    HARProblem(
                        path: at + ".request.method", message: "the member is missing; give the method, e.g. \"GET\""))
            case let other?:
                problems.append(
                    HARProblem(
                        path: at + ".request.method", message: "expected a string such as \"GET\", found \(other.kind)")
                )
            }
            switch request["url"] {
            case .string(let text)?:
                if let absolute = HARText.absoluteURL(text) {
                    url = absolute
                } else {
                    problems.append(
                        HARProblem(
                            path: at + ".request.url",
                            message:
                                "'\(HARText.quote(text))' is not an absolute URL; write it with scheme and host, e.g. \"https://api.example.com/v1\""
                        ))
                }
            case nil:
                problems.append(
                    HARProblem(path: at + ".request.url", message: "the member is missing; give the absolute URL"))
            case let other?:
                problems.append(
                    HARProblem(path: at + ".request.url", message: "expected a string, found \(other.kind)"))
            }
        } else {
            problems.append(
                HARProblem(
                    path: at + ".request",
                    message: request == nil ? "the member is missing" : "expected an object, found \(request!.kind)"))
        }
        var requestBody = Data()
        if let post = entry["request"]?["postData"] {
            switch HARBody.requestBody(post, path: at + ".request.postData", notes: &notes) {
            case .success(let body): requestBody = body
            case .failure(let problem): problems.append(problem)
            }
        }
        // The response: its status decides between an HTTP answer and a failure.
        var outcome: Outcome?
        var bodyMissing = false
        let response = entry["response"]
        if let response, case .object = response {
            switch response["status"] {
            case nil:
                problems.append(
                    HARProblem(
                        path: at + ".response.status",
                        message: "the member is missing; give the HTTP status (100…999), or 0 for a request that failed"
                    ))
            case let value?:
                guard let status = value.integer else {
                    let found = value.string.map { "a string (\"\(HARText.quote($0))\")" } ?? value.kind
                    problems.append(
                        HARProblem(
                            path: at + ".response.status",
                            message: "expected a number, found \(found); write the status as a number, e.g. 200"))
                    break
                }
                if status == 0 || status == -1 {
                    outcome = .failure(
                        HARFailure.error(for: response, entry: entry, host: URLComponents(string: url)?.host ?? ""))
                } else if (100...999).contains(status) {
                    var headers = HARText.nameValues(response["headers"], path: at + ".response.headers", notes: &notes)
                    headers.removeAll { name, _ in
                        let lower = name.lowercased()
                        return lower.hasPrefix(":") || HARRecord.transferHeaders.contains(lower)
                            || HTTPField.Name(name) == nil
                    }
                    let reason = response["statusText"]?.string ?? ""
                    switch HARBody.responseBody(
                        response["content"], status: status, path: at + ".response.content", notes: &notes)
                    {
                    case .success(let body?):
                        outcome = .response(status: status, reason: reason, headers: headers, body: body.data)
                        if !headers.contains(where: { $0.name.lowercased() == "content-type" }),
                            let mime = body.mimeType, !mime.isEmpty
                        {
                            headers.append((name: "Content-Type", value: mime))
                            outcome = .response(status: status, reason: reason, headers: headers, body: body.data)
                        }
                    case .success(nil):
                        bodyMissing = true
                        outcome = .response(status: status, reason: reason, headers: headers, body: Data())
                    case .failure(let problem):
                        problems.append(problem)
                    }
                } else {
                    problems.append(
                        HARProblem(
                            path: at + ".response.status",
                            message:
                                "\(status) is not an HTTP status; use 100…999, or 0 (or -1) for a request that failed"))
                }
            }
        } else {
            problems.append(
                HARProblem(
                    path: at + ".response",
                    message: response == nil ? "the member is missing" : "expected an object, found \(response!.kind)"))
        }
        guard problems.isEmpty, let outcome else { return .failure(HARProblemList(problems)) }
        var ignored: [HARProblem] = []
        let contentType =
            entry["request"]?["postData"]?["mimeType"]?.string
            ?? HARText.nameValues(entry["request"]?["headers"], path: "", notes: &ignored).first {
                $0.name.lowercased() == "content-type"
            }?.value
        return .success(
            HARRecord(
                index: index, method: method, url: url, requestBody: requestBody, requestContentType: contentType,
                outcome: outcome, bodyMissing: bodyMissing
            ))
    }

    /// Headers a replayed response does not repeat: HTTP/2 pseudo-headers and those that
    /// describe the transfer rather than the (decoded) content HAR holds.
    static let transferHeaders: Set<String> = [
        "content-encoding", "content-length", "transfer-encoding", "connection", "keep-alive",
    ]

    /// The response to replay (or the failure to throw).
    func response() throws(NetworkError) -> NetworkResponse {
        switch outcome {
        case .failure(let error):
            throw error
        case .response(let status, let reason, let headers, let body):
            var fields = HTTPFields()
            for (name, value) in headers {
                if let fieldName = HTTPField.Name(name) { fields.append(HTTPField(name: fieldName, value: value)) }
            }
            // `status` was checked to be within 100…999 when the entry was read.
            return NetworkResponse(
                HTTPResponse(status: HTTPResponse.Status(code: status, reasonPhrase: reason), headerFields: fields),
                body: body)
        }
    }
}

/// Several problems (Error, for Result).
struct HARProblemList: Error, Sendable {
    var problems: [HARProblem]
    init(_ problems: [HARProblem]) { self.problems = problems }
}

/// Bodies: text in its charset, base64, form parameters.
enum HARBody {
    struct Content {
        var data: Data
        var mimeType: String?
    }

    /// The bytes of a response's `content`, nil when the archive has none for it.
    static func responseBody(_ content: HARJSON?, status: Int, path: String, notes: inout [HARProblem]) -> Result<
        Content?, HARProblem
    > {
        let noBodyStatus = (100..<200).contains(status) || status == 204 || status == 304
        guard let content else { return .success(noBodyStatus ? Content(data: Data(), mimeType: nil) : nil) }
        guard case .object = content else {
            notes.append(
                HARProblem(
                    path: path, message: "expected an object, found \(content.kind); read as content without a body"))
            return .success(noBodyStatus ? Content(data: Data(), mimeType: nil) : nil)
        }
        let mimeType = content["mimeType"]?.string
        guard let textValue = content["text"], case .string(let text) = textValue else {
            if let other = content["text"], other != .null {
                notes.append(
                    HARProblem(
                        path: path + ".text",
                        message: "expected a string, found \(other.kind); read as content without a body"))
            }
            // A size of 0 says the body was empty; anything else (-1, absent, more) that it was not kept.
            if noBodyStatus || content["size"]?.integer == 0 {
                return .success(Content(data: Data(), mimeType: mimeType))
            }
            return .success(nil)
        }
        switch content["encoding"] {
        case .none, .some(.null), .some(.string("")):
            let (data, note) = HARText.bytes(of: text, mimeType: mimeType)
            if let note { notes.append(HARProblem(path: path + ".text", message: note)) }
            return .success(Content(data: data, mimeType: mimeType))
        case .string(let encoding)? where encoding.lowercased() == "base64":
            guard let data = HARText.base64(text) else {
                return .failure(
                    HARProblem(
                        path: path + ".text",
                        message: "the text is not base64 although encoding says so; fix the text or remove \"encoding\""
                    ))
            }
            return .success(Content(data: data, mimeType: mimeType))
        case .string(let encoding)?:
            return .failure(
                HARProblem(
                    path: path + ".encoding",
                    message:
                        "'\(HARText.quote(encoding))' is not an encoding HAR uses; write \"base64\" or leave it out for text"
                ))
        case let other?:
            return .failure(
                HARProblem(
                    path: path + ".encoding", message: "expected a string such as \"base64\", found \(other.kind)"))
        }
    }

    /// The bytes of a request's `postData` (text, base64 text, or form `params`).
    static func requestBody(_ post: HARJSON, path: String, notes: inout [HARProblem]) -> Result<Data, HARProblem> {
        guard case .object = post else {
            if post != .null {
                notes.append(
                    HARProblem(
                        path: path,
                        message: "expected an object, found \(post.kind); the request is matched as having no body"))
            }
            return .success(Data())
        }
        let mimeType = post["mimeType"]?.string
        if case .string(let text)? = post["text"] {
            if case .string(let encoding)? = post["encoding"], encoding.lowercased() == "base64" {
                guard let data = HARText.base64(text) else {
                    return .failure(
                        HARProblem(
                            path: path + ".text",
                            message:
                                "the text is not base64 although encoding says so; fix the text or remove \"encoding\"")
                    )
                }
                return .success(data)
            }
            let (data, note) = HARText.bytes(of: text, mimeType: mimeType)
            if let note { notes.append(HARProblem(path: path + ".text", message: note)) }
            return .success(data)
        }
        if let params = post["params"]?.array, !params.isEmpty {
            var components = URLComponents()
            components.queryItems = params.compactMap { param in
                guard let name = param["name"]?.string else { return nil }
                return URLQueryItem(name: name, value: param["value"]?.string ?? "")
            }
            return .success(Data((components.percentEncodedQuery ?? "").utf8))
        }
        return .success(Data())
    }
}

/// Text helpers: charsets, base64, header lists, quoting untrusted text in messages.
enum HARText {
    /// `text` cut to 80 characters (with …) and with line breaks escaped, for messages.
    static func quote(_ text: some StringProtocol, limit: Int = 80) -> String {
        var result = ""
        for character in text.prefix(limit) {
            switch character {
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            default: result.append(character)
            }
        }
        return text.count > limit ? result + "…" : result
    }

    /// The URL when `text` is absolute (scheme and host); spaces and other characters some
    /// tools leave unescaped are percent-encoded first.
    static func absoluteURL(_ text: String) -> String? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        for candidate in [trimmed, trimmed.addingPercentEncoding(withAllowedCharacters: urlAllowed) ?? trimmed] {
            if let components = URLComponents(string: candidate), let host = components.host, !host.isEmpty,
                components.scheme != nil
            {
                return candidate
            }
        }
        return nil
    }

    private static let urlAllowed: CharacterSet = {
        var set = CharacterSet.urlQueryAllowed
        set.insert(charactersIn: "#%")
        return set
    }()

    /// Base64 as HAR tools write it (line breaks and padding optional).
    static func base64(_ text: String) -> Data? {
        var compact = text.filter { !$0.isWhitespace }
        if compact.count % 4 != 0 { compact += String(repeating: "=", count: 4 - compact.count % 4) }
        return Data(base64Encoded: compact)
    }

    /// The `charset` parameter of a MIME type, lower-cased.
    static func charset(in mimeType: String?) -> String? {
        guard let mimeType else { return nil }
        for parameter in mimeType.split(separator: ";").dropFirst() {
            let parts = parameter.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, parts[0].trimmingCharacters(in: .whitespaces).lowercased() == "charset" else {
                continue
            }
            return parts[1].trimmingCharacters(in: CharacterSet(charactersIn: " \"'")).lowercased()
        }
        return nil
    }

    static func encoding(named charset: String) -> String.Encoding? {
        switch charset {
        case "utf-8", "utf8": .utf8
        case "iso-8859-1", "iso8859-1", "iso_8859-1", "latin1", "latin-1", "l1", "iso-ir-100", "cp819": .isoLatin1
        case "us-ascii", "ascii": .ascii
        case "windows-1252", "cp1252", "x-cp1252": .windowsCP1252
        case "windows-1250", "cp1250": .windowsCP1250
        case "windows-1251", "cp1251": .windowsCP1251
        case "windows-1253", "cp1253": .windowsCP1253
        case "windows-1254", "cp1254": .windowsCP1254
        case "iso-8859-2", "latin2": .isoLatin2
        case "utf-16": .utf16
        case "utf-16le": .utf16LittleEndian
        case "utf-16be": .utf16BigEndian
        case "shift_jis", "shift-jis", "sjis": .shiftJIS
        case "euc-jp": .japaneseEUC
        case "iso-2022-jp": .iso2022JP
        case "macintosh", "mac": .macOSRoman
        default: nil
        }
    }

    /// The bytes `text` stood for: HAR keeps bodies as decoded text, so a body sent as
    /// iso-8859-1 is encoded back to iso-8859-1 (its exact recorded bytes). A charset that
    /// is unknown, or cannot write the text, leaves UTF-8 and a note.
    static func bytes(of text: String, mimeType: String?) -> (Data, String?) {
        guard let charset = charset(in: mimeType), charset != "utf-8", charset != "utf8" else {
            return (Data(text.utf8), nil)
        }
        guard let encoding = encoding(named: charset) else {
            return (
                Data(text.utf8), "charset '\(quote(charset))' is not known to ChaosKit; the text is replayed as UTF-8"
            )
        }
        guard let data = text.data(using: encoding, allowLossyConversion: false) else {
            return (Data(text.utf8), "the text has characters charset \(charset) cannot write; it is replayed as UTF-8")
        }
        return (data, nil)
    }

    /// A body as HAR text: UTF-8 as it is; text in the charset its content type names, when
    /// that gives back the same bytes; anything else base64.
    static func text(_ body: Data, mimeType: String?) -> (String, String?) {
        if body.isEmpty { return ("", nil) }
        if let text = String(data: body, encoding: .utf8) { return (text, nil) }
        if let charset = charset(in: mimeType), let encoding = encoding(named: charset),
            let text = String(data: body, encoding: encoding), text.data(using: encoding) == body
        {
            return (text, nil)
        }
        return (body.base64EncodedString(), "base64")
    }

    /// A `[{name, value}]` list, read leniently: values that are arrays (Polly.JS) become one
    /// pair per value, numbers and booleans become text, an object map (`{"name": "value"}`)
    /// is read as pairs, and items without a name are passed over with a note.
    static func nameValues(_ json: HARJSON?, path: String, notes: inout [HARProblem]) -> [(name: String, value: String)]
    {
        guard let json, json != .null else { return [] }
        func text(_ value: HARJSON?) -> [String]? {
            switch value {
            case nil, .null?: [""]
            case .string(let text)?: [text]
            case .number(let text)?: [text]
            case .bool(let flag)?: [flag ? "true" : "false"]
            case .array(let items)?: items.compactMap { text($0)?.first }
            case .object?: nil
            }
        }
        var pairs: [(name: String, value: String)] = []
        switch json {
        case .array(let items):
            for (position, item) in items.enumerated() {
                guard let name = item["name"]?.string, let values = text(item["value"]) else {
                    notes.append(
                        HARProblem(
                            path: "\(path)[\(position)]",
                            message:
                                "expected {\"name\": …, \"value\": …}, found \(item.kind) without them; passed over"))
                    continue
                }
                pairs += values.map { (name: name, value: $0) }
            }
        case .object(let members):
            for member in members {
                guard let values = text(member.value) else { continue }
                pairs += values.map { (name: member.key, value: $0) }
            }
        default:
            notes.append(
                HARProblem(path: path, message: "expected an array of {name, value}, found \(json.kind); passed over"))
        }
        return pairs
    }
}

/// A failed request's note (`net::ERR_CONNECTION_REFUSED`, mitmproxy's `[Errno 111] …`,
/// Firefox's `NS_ERROR_…`) as the `NetworkError` that replays it: the `URLError` code
/// URLSession reports for the same failure.
enum HARFailure {
    /// Where tools put the note of a failed request.
    static func note(in response: HARJSON, entry: HARJSON) -> String {
        let candidates = [
            response["_failureText"], response["_error"], response["_errorText"], entry["_error"],
            entry["_failureText"], response["statusText"],
            response["comment"], entry["comment"],
        ]
        for candidate in candidates {
            if let text = candidate?.string?.trimmingCharacters(in: .whitespaces), !text.isEmpty { return text }
        }
        return ""
    }

    static func error(for response: HARJSON, entry: HARJSON, host: String) -> NetworkError {
        let note = note(in: response, entry: entry)
        // ChaosKit's own recordings carry the URLError code, which says it exactly.
        if let code = response["_urlErrorCode"]?.integer, (-9_999...0).contains(code) {
            return NetworkError(
                URLError(
                    NetworkError.urlError(code: code, "").urlErrorCode, userInfo: [NSLocalizedDescriptionKey: note]),
                host: host)
        }
        return error(fromNote: note, host: host)
    }

    /// Rules in order: the first whose words appear in the note wins.
    private static let rules: [(words: [String], make: @Sendable (String, String) -> NetworkError)] = [
        (
            [
                "connection_refused", "connection refused", "econnrefused", "errno 111", "connect call failed",
                "ns_error_connection_refused", "err_address_unreachable",
            ],
            { host, _ in .refused(host: host) }
        ),
        (
            [
                "name_not_resolved", "name_resolution_failed", "err_name", "unknown host", "unknownhost",
                "ns_error_unknown_host", "could not resolve", "couldn't resolve",
                "name or service not known", "nodename nor servname", "getaddrinfo", "errno -2", "errno -3",
                "dns failure", "dns",
            ],
            { host, _ in .dnsFailure(host: host) }
        ),
        (["timed_out", "timed out", "timeout", "ns_error_net_timeout", "errno 110"], { _, _ in .timeout }),
        (["internet_disconnected", "ns_error_offline", "offline", "network_changed"], { _, _ in .offline }),
        (
            [
                "connection_reset", "connection reset", "econnreset", "errno 104", "connection_closed",
                "connection closed", "empty_response",
                "content_length_mismatch", "incomplete_chunked", "connection_aborted", "ns_error_net_reset",
                "ns_error_net_interrupt", "ns_error_net_partial_transfer",
                "connection lost", "broken pipe",
            ],
            { _, _ in .connectionLost }
        ),
        (["err_aborted", "ns_binding_aborted", "aborted", "cancel"], { _, _ in .cancelled }),
        (
            ["cert_authority", "certificate verify failed", "self signed", "self-signed", "untrusted"],
            { _, note in .urlError(code: URLError.Code.serverCertificateUntrusted.rawValue, note) }
        ),
        (
            ["err_cert", "cert", "ssl", "tls", "ns_error_generate_failure"],
            { _, note in .urlError(code: URLError.Code.secureConnectionFailed.rawValue, note) }
        ),
        (
            ["err_blocked", "blocked", "ns_error_dom_bad_uri", "cors"],
            { _, note in .urlError(code: URLError.Code.cancelled.rawValue, note) }
        ),
    ]

    static func error(fromNote raw: String, host: String = "") -> NetworkError {
        let note = HARText.quote(raw)
        let lower = raw.lowercased()
        for rule in rules where rule.words.contains(where: { lower.contains($0) }) {
            return rule.make(host, note)
        }
        return .transport(note.isEmpty ? "the recorded request failed without a note of why" : note)
    }
}
