import Foundation

// The HTTP Archive format, version 1.2 (http://www.softwareishard.com/blog/har-12-spec/):
// what ChaosKit writes, and what it reads back, browsers' exports included. Fields that
// HAR requires are written always; when reading, only what replay needs is required
// (method, url, status), everything else may be absent, and unknown members (`_initiator`,
// `_priority`, `pages` …) are ignored.

struct HARDocument: Codable {
    var log: HARLog
}

struct HARLog: Codable {
    var version: String
    var creator: HARCreator
    var browser: HARCreator?
    var entries: [HAREntry]
    var comment: String?
}

struct HARCreator: Codable {
    var name: String
    var version: String
}

struct HAREntry: Codable {
    var pageref: String?
    var startedDateTime: String
    var time: Double
    var request: HARRequest
    var response: HARResponse
    var cache: HARCache?
    var timings: HARTimings?
    var serverIPAddress: String?
    var connection: String?
    var comment: String?
}

struct HARNameValue: Codable {
    var name: String
    var value: String
}

struct HARRequest: Codable {
    var method: String
    var url: String
    var httpVersion: String?
    var cookies: [HARNameValue]?
    var headers: [HARNameValue]?
    var queryString: [HARNameValue]?
    var postData: HARPostData?
    var headersSize: Int?
    var bodySize: Int?
}

struct HARPostData: Codable {
    var mimeType: String?
    var text: String?
    /// Not in HAR 1.2, but written by several tools for binary bodies (as for content).
    var encoding: String?
}

struct HARResponse: Codable {
    var status: Int
    var statusText: String?
    var httpVersion: String?
    var cookies: [HARNameValue]?
    var headers: [HARNameValue]?
    var content: HARContent?
    var redirectURL: String?
    var headersSize: Int?
    var bodySize: Int?
    /// Chrome's (and ChaosKit's) note of a request that failed below HTTP (status 0).
    var _error: String?
}

struct HARContent: Codable {
    var size: Int?
    var compression: Int?
    var mimeType: String?
    var text: String?
    var encoding: String?
}

struct HARCache: Codable {}

struct HARTimings: Codable {
    var blocked: Double?
    var dns: Double?
    var connect: Double?
    var send: Double?
    var wait: Double?
    var receive: Double?
    var ssl: Double?
}

extension HARDocument {
    /// Reads a HAR document; a malformed one is an error naming the JSON path at fault.
    static func read(_ data: Data, source: String) throws(HARFormatError) -> HARDocument {
        let document: HARDocument
        do {
            document = try JSONDecoder().decode(HARDocument.self, from: data)
        } catch let error as DecodingError {
            throw HARFormatError(error)
        } catch {
            throw HARFormatError(path: "", problem: "\(error)")
        }
        guard document.log.version.hasPrefix("1.") else {
            throw HARFormatError(path: "log.version", problem: "version '\(document.log.version)' is not HAR 1.x")
        }
        return document
    }

    func encoded() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .withoutEscapingSlashes]
        return try encoder.encode(self)
    }
}

/// Where and why a HAR document is malformed.
struct HARFormatError: Error {
    /// A JSON path such as `log.entries[2].response.status` (empty: the document as a whole).
    var path: String
    var problem: String

    init(path: String, problem: String) {
        self.path = path
        self.problem = problem
    }

    init(_ error: DecodingError) {
        func spell(_ keys: [any CodingKey]) -> String {
            var text = ""
            for key in keys {
                if let index = key.intValue { text += "[\(index)]" } else { text += text.isEmpty ? key.stringValue : ".\(key.stringValue)" }
            }
            return text
        }
        switch error {
        case .keyNotFound(let key, let context):
            self.init(path: spell(context.codingPath + [key]), problem: "the member is missing")
        case .typeMismatch(let type, let context):
            self.init(path: spell(context.codingPath), problem: "expected \(Self.kind(type))")
        case .valueNotFound(let type, let context):
            self.init(path: spell(context.codingPath), problem: "expected \(Self.kind(type)), found null")
        case .dataCorrupted(let context):
            let underlying = (context.underlyingError.map { "\($0)" } ?? context.debugDescription)
            self.init(path: spell(context.codingPath), problem: context.codingPath.isEmpty ? "the file is not JSON (\(underlying))" : context.debugDescription)
        @unknown default:
            self.init(path: "", problem: "\(error)")
        }
    }

    static func kind(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is Int.Type, is Double.Type: "a number"
        case is Bool.Type: "true or false"
        default: String(describing: type).hasPrefix("Array") ? "an array" : "an object"
        }
    }

    var message: String {
        path.isEmpty ? "malformed HAR: \(problem)" : "malformed HAR at \(path): \(problem)"
    }
}
