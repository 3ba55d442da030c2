/// A JSON value that remembers where it stood in its file, so profile errors can say
/// "line 12, column 9, at $.entries[2].provider".
struct JSONNode: Sendable {
    enum Content: Sendable {
        case null
        case bool(Bool)
        case number(Double)
        case string(String)
        case array([JSONNode])
        case object([(key: String, value: JSONNode)])
    }

    let content: Content
    let line: Int
    let column: Int

    /// The plain value, without positions.
    var value: ProfileValue {
        switch content {
        case .null: .null
        case .bool(let flag): .bool(flag)
        case .number(let number): .number(number)
        case .string(let text): .string(text)
        case .array(let items): .array(items.map(\.value))
        case .object(let members): .object(Dictionary(members.map { ($0.key, $0.value.value) }, uniquingKeysWith: { _, last in last }))
        }
    }

    var typeName: String {
        switch content {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}

/// Where a JSON syntax error is.
struct JSONSyntaxError: Error {
    let line: Int
    let column: Int
    let message: String
}

/// A small JSON parser that keeps line and column of every value (Foundation's does not).
struct JSONDocumentParser {
    private let bytes: [UInt8]
    private var index = 0
    private var line = 1
    private var lineStart = 0
    private var depth = 0

    init(_ text: String) {
        bytes = Array(text.utf8)
    }

    static func parse(_ text: String) throws(JSONSyntaxError) -> JSONNode {
        var parser = JSONDocumentParser(text)
        parser.skipWhitespace()
        let node = try parser.parseValue()
        parser.skipWhitespace()
        if parser.index < parser.bytes.count { throw parser.error("unexpected text after the end of the document") }
        return node
    }

    private var column: Int { index - lineStart + 1 }

    private func error(_ message: String) -> JSONSyntaxError {
        JSONSyntaxError(line: line, column: column, message: message)
    }

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: "\n"):
                index += 1
                line += 1
                lineStart = index
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\r"):
                index += 1
            default:
                return
            }
        }
    }

    private mutating func parseValue() throws(JSONSyntaxError) -> JSONNode {
        guard index < bytes.count else { throw error("unexpected end of the document; a value is missing") }
        let startLine = line, startColumn = column
        func node(_ content: JSONNode.Content) -> JSONNode { JSONNode(content: content, line: startLine, column: startColumn) }
        switch bytes[index] {
        case UInt8(ascii: "{"): return node(try parseObject())
        case UInt8(ascii: "["): return node(try parseArray())
        case UInt8(ascii: "\""): return node(.string(try parseString()))
        case UInt8(ascii: "t"): try expectWord("true"); return node(.bool(true))
        case UInt8(ascii: "f"): try expectWord("false"); return node(.bool(false))
        case UInt8(ascii: "n"): try expectWord("null"); return node(.null)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return node(.number(try parseNumber()))
        default:
            throw error("unexpected character '\(Character(Unicode.Scalar(bytes[index])))'; expected a JSON value")
        }
    }

    private mutating func expectWord(_ word: String) throws(JSONSyntaxError) {
        let utf8 = Array(word.utf8)
        guard index + utf8.count <= bytes.count, Array(bytes[index..<index + utf8.count]) == utf8 else {
            throw error("unknown word; expected \(word) (strings need double quotes)")
        }
        index += utf8.count
    }

    private mutating func nest() throws(JSONSyntaxError) {
        depth += 1
        if depth > 200 { throw error("nested more than 200 levels deep") }
    }

    private mutating func parseObject() throws(JSONSyntaxError) -> JSONNode.Content {
        try nest()
        defer { depth -= 1 }
        index += 1
        var members: [(key: String, value: JSONNode)] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") { index += 1; return .object(members) }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else {
                throw error("expected a member name in double quotes")
            }
            let key = try parseString()
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw error("expected ':' after member name \"\(key)\"") }
            index += 1
            skipWhitespace()
            members.append((key, try parseValue()))
            skipWhitespace()
            guard index < bytes.count else { throw error("unexpected end of the document; an object is not closed with '}'") }
            if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
            if bytes[index] == UInt8(ascii: "}") { index += 1; return .object(members) }
            throw error("expected ',' or '}' in an object")
        }
    }

    private mutating func parseArray() throws(JSONSyntaxError) -> JSONNode.Content {
        try nest()
        defer { depth -= 1 }
        index += 1
        var items: [JSONNode] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") { index += 1; return .array(items) }
        while true {
            skipWhitespace()
            items.append(try parseValue())
            skipWhitespace()
            guard index < bytes.count else { throw error("unexpected end of the document; an array is not closed with ']'") }
            if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
            if bytes[index] == UInt8(ascii: "]") { index += 1; return .array(items) }
            throw error("expected ',' or ']' in an array")
        }
    }

    private mutating func parseString() throws(JSONSyntaxError) -> String {
        index += 1
        var scalars = String.UnicodeScalarView()
        var raw: [UInt8] = []
        func flush() {
            if !raw.isEmpty { scalars.append(contentsOf: String(decoding: raw, as: UTF8.self).unicodeScalars); raw = [] }
        }
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                flush()
                return String(scalars)
            case UInt8(ascii: "\\"):
                flush()
                index += 1
                guard index < bytes.count else { break }
                let escape = bytes[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""): scalars.append("\"")
                case UInt8(ascii: "\\"): scalars.append("\\")
                case UInt8(ascii: "/"): scalars.append("/")
                case UInt8(ascii: "b"): scalars.append("\u{08}")
                case UInt8(ascii: "f"): scalars.append("\u{0C}")
                case UInt8(ascii: "n"): scalars.append("\n")
                case UInt8(ascii: "r"): scalars.append("\r")
                case UInt8(ascii: "t"): scalars.append("\t")
                case UInt8(ascii: "u"):
                    var code = try parseHex4()
                    if (0xD800..<0xDC00).contains(code), index + 1 < bytes.count,
                       bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") {
                        index += 2
                        let low = try parseHex4()
                        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                    }
                    scalars.append(Unicode.Scalar(code) ?? "\u{FFFD}")
                default:
                    index -= 1
                    throw error("unknown escape '\\\(Character(Unicode.Scalar(escape)))' in a string")
                }
            case 0..<0x20:
                throw error("control character in a string; escape it (e.g. \\n)")
            default:
                raw.append(byte)
                index += 1
            }
        }
        throw error("unexpected end of the document; a string is not closed with '\"'")
    }

    private mutating func parseHex4() throws(JSONSyntaxError) -> UInt32 {
        guard index + 4 <= bytes.count, let code = UInt32(String(decoding: bytes[index..<index + 4], as: UTF8.self), radix: 16) else {
            throw error("\\u must be followed by four hexadecimal digits")
        }
        index += 4
        return code
    }

    private mutating func parseNumber() throws(JSONSyntaxError) -> Double {
        let start = index
        let allowed = Set("+-0123456789.eE".utf8)
        while index < bytes.count, allowed.contains(bytes[index]) { index += 1 }
        let text = String(decoding: bytes[start..<index], as: UTF8.self)
        guard let number = Double(text), number.isFinite else {
            index = start
            throw error("'\(text)' is not a number")
        }
        return number
    }
}
