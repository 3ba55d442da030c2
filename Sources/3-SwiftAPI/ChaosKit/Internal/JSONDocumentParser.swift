package import Foundation

/// A JSON value that remembers where it stood in its file, so profile errors can say
/// "line 12, column 9, at $.entries[2].provider", and how its numbers were spelled and its
/// members ordered, so that a file read and written again (a HAR archive) is unchanged.
///
/// It is the reader's tree, not a value type of its own: everything it reads becomes a
/// ``ProfileValue`` (the one JSON value of the package) or, for HAR files, `HARJSON`.
package struct JSONNode: Sendable {
    package enum Content: Sendable {
        case null
        case bool(Bool)
        /// The number's value and its text as written (`200`, `183.0679999`, `1e3`).
        case number(Double, text: String)
        case string(String)
        case array([JSONNode])
        case object([(key: String, keyLine: Int, keyColumn: Int, value: JSONNode)])
    }

    package let content: Content
    package let line: Int
    package let column: Int

    /// The plain value, without positions.
    package var value: ProfileValue {
        switch content {
        case .null: .null
        case .bool(let flag): .bool(flag)
        case .number(let number, _): .number(number)
        case .string(let text): .string(text)
        case .array(let items): .array(items.map(\.value))
        case .object(let members):
            .object(Dictionary(members.map { ($0.key, $0.value.value) }, uniquingKeysWith: { _, last in last }))
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

/// Where a JSON syntax error is, and what to fix.
package struct JSONSyntaxError: Error {
    package let line: Int
    package let column: Int
    /// Bytes from the start of the document.
    package let offset: Int
    package let message: String
}

/// A strict JSON parser (RFC 8259) that keeps the line and column of every value, which
/// Foundation's does not: one value per document, UTF-8 only, numbers as the RFC writes
/// them (no leading zeros, no `+`, digits on both sides of a point), and — for profiles —
/// no member name twice in one object. Columns count characters, not bytes.
package struct JSONDocumentParser {
    private let bytes: [UInt8]
    private let duplicates: JSONDuplicateMembers
    private var index = 0
    private var line = 1
    private var column = 1
    private var depth = 0

    private init(_ bytes: [UInt8], duplicates: JSONDuplicateMembers) {
        self.bytes = bytes
        self.duplicates = duplicates
    }

    package static func parse(_ text: String, duplicates: JSONDuplicateMembers = .refuse) throws(JSONSyntaxError)
        -> JSONNode
    {
        try parse(Array(text.utf8), duplicates: duplicates)
    }

    package static func parse(_ data: Data, duplicates: JSONDuplicateMembers = .refuse) throws(JSONSyntaxError)
        -> JSONNode
    {
        try parse([UInt8](data), duplicates: duplicates)
    }

    package static func parse(_ bytes: [UInt8], duplicates: JSONDuplicateMembers = .refuse) throws(JSONSyntaxError)
        -> JSONNode
    {
        try UTF8Check.validate(bytes)
        var parser = JSONDocumentParser(bytes, duplicates: duplicates)
        // A byte order mark is not JSON, but editors write one; skip it.
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { parser.index = 3 }
        parser.skipWhitespace()
        let node = try parser.parseValue()
        parser.skipWhitespace()
        if parser.index < parser.bytes.count {
            throw parser.error("unexpected text after the end of the document: \(parser.excerpt())")
        }
        return node
    }

    private func error(_ message: String) -> JSONSyntaxError {
        JSONSyntaxError(line: line, column: column, offset: index, message: message)
    }

    /// The input from here, quoted for a message.
    private func excerpt() -> String {
        let end = Swift.min(bytes.count, index + 4 * InputExcerpt.limit)
        return "'\(InputExcerpt.of(String(decoding: bytes[index..<end], as: UTF8.self)))'"
    }

    /// Moves past one byte, keeping line and column (columns count characters, so UTF-8
    /// continuation bytes do not move it).
    private mutating func advance() {
        let byte = bytes[index]
        index += 1
        if byte == UInt8(ascii: "\n") {
            line += 1
            column = 1
        } else if byte & 0xC0 != 0x80 {
            column += 1
        }
    }

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\r"), UInt8(ascii: "\n"): advance()
            default: return
            }
        }
    }

    private mutating func parseValue() throws(JSONSyntaxError) -> JSONNode {
        guard index < bytes.count else { throw error("unexpected end of the document; a value is missing") }
        let startLine = line
        let startColumn = column
        func node(_ content: JSONNode.Content) -> JSONNode {
            JSONNode(content: content, line: startLine, column: startColumn)
        }
        switch bytes[index] {
        case UInt8(ascii: "{"): return node(try parseObject())
        case UInt8(ascii: "["): return node(try parseArray())
        case UInt8(ascii: "\""): return node(.string(try parseString()))
        case UInt8(ascii: "t"):
            try expectWord("true")
            return node(.bool(true))
        case UInt8(ascii: "f"):
            try expectWord("false")
            return node(.bool(false))
        case UInt8(ascii: "n"):
            try expectWord("null")
            return node(.null)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            let (number, text) = try parseNumber()
            return node(.number(number, text: text))
        case UInt8(ascii: "'"): throw error("strings need double quotes, not single quotes: \(excerpt())")
        default:
            throw error(
                "unexpected \(excerpt()); expected a JSON value (an object, array, string, number, true, false or null)"
            )
        }
    }

    private mutating func expectWord(_ word: String) throws(JSONSyntaxError) {
        let utf8 = Array(word.utf8)
        guard index + utf8.count <= bytes.count, Array(bytes[index..<index + utf8.count]) == utf8 else {
            throw error("unexpected \(excerpt()); expected \(word) (strings need double quotes)")
        }
        for _ in utf8 { advance() }
    }

    private mutating func nest() throws(JSONSyntaxError) {
        depth += 1
        if depth > 200 { throw error("nested more than 200 levels deep") }
    }

    private mutating func parseObject() throws(JSONSyntaxError) -> JSONNode.Content {
        try nest()
        defer { depth -= 1 }
        advance()
        var members: [(key: String, keyLine: Int, keyColumn: Int, value: JSONNode)] = []
        var seen: [String: Int] = [:]
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            advance()
            return .object(members)
        }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else {
                throw error(
                    index < bytes.count && bytes[index] == UInt8(ascii: "}")
                        ? "a trailing comma before '}'; remove it"
                        : "expected a member name in double quotes, found \(excerpt())")
            }
            let keyLine = line
            let keyColumn = column
            let key = try parseString()
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else {
                throw error("expected ':' after member name \"\(InputExcerpt.of(key))\"")
            }
            advance()
            skipWhitespace()
            let value = try parseValue()
            if let first = seen[key] {
                switch duplicates {
                case .refuse:
                    throw JSONSyntaxError(
                        line: keyLine, column: keyColumn, offset: index,
                        message:
                            "member \"\(InputExcerpt.of(key))\" appears twice in one object (first at line \(members[first].keyLine), column \(members[first].keyColumn)); keep one"
                    )
                case .lastWins:
                    members[first] = (key, keyLine, keyColumn, value)
                }
            } else {
                seen[key] = members.count
                members.append((key, keyLine, keyColumn, value))
            }
            skipWhitespace()
            guard index < bytes.count else {
                throw error("unexpected end of the document; an object is not closed with '}'")
            }
            if bytes[index] == UInt8(ascii: ",") {
                advance()
                continue
            }
            if bytes[index] == UInt8(ascii: "}") {
                advance()
                return .object(members)
            }
            throw error("expected ',' or '}' in an object, found \(excerpt())")
        }
    }

    private mutating func parseArray() throws(JSONSyntaxError) -> JSONNode.Content {
        try nest()
        defer { depth -= 1 }
        advance()
        var items: [JSONNode] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            advance()
            return .array(items)
        }
        while true {
            skipWhitespace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
                throw error("a trailing comma before ']'; remove it")
            }
            items.append(try parseValue())
            skipWhitespace()
            guard index < bytes.count else {
                throw error("unexpected end of the document; an array is not closed with ']'")
            }
            if bytes[index] == UInt8(ascii: ",") {
                advance()
                continue
            }
            if bytes[index] == UInt8(ascii: "]") {
                advance()
                return .array(items)
            }
            throw error("expected ',' or ']' in an array, found \(excerpt())")
        }
    }

    private mutating func parseString() throws(JSONSyntaxError) -> String {
        advance()
        var scalars = String.UnicodeScalarView()
        var rawStart = index
        func flush(_ end: Int) {
            if end > rawStart {
                scalars.append(contentsOf: String(decoding: bytes[rawStart..<end], as: UTF8.self).unicodeScalars)
            }
        }
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                flush(index)
                advance()
                return String(scalars)
            case UInt8(ascii: "\\"):
                flush(index)
                advance()
                guard index < bytes.count else { break }
                let escape = bytes[index]
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
                    advance()
                    scalars.append(try parseUnicodeEscape())
                    rawStart = index
                    continue
                default:
                    throw error(
                        "unknown escape '\\\(Character(Unicode.Scalar(escape)))' in a string; use \\\", \\\\, \\/, \\b, \\f, \\n, \\r, \\t or \\uXXXX"
                    )
                }
                advance()
                rawStart = index
            case 0..<0x20:
                throw error("a control character (U+\(String(format: "%04X", byte))) in a string; escape it (e.g. \\n)")
            default:
                advance()
            }
        }
        throw error("unexpected end of the document; a string is not closed with '\"'")
    }

    /// After `\u`: four hex digits, a surrogate pair made whole.
    private mutating func parseUnicodeEscape() throws(JSONSyntaxError) -> Unicode.Scalar {
        let code = try parseHex4()
        if (0xD800..<0xDC00).contains(code) {
            guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u")
            else {
                throw error(
                    "\\u\(String(code, radix: 16)) is the first half of a surrogate pair; the second half (\\uDC00…\\uDFFF) must follow"
                )
            }
            advance()
            advance()
            let low = try parseHex4()
            guard (0xDC00..<0xE000).contains(low) else {
                throw error("\\u\(String(low, radix: 16)) cannot end a surrogate pair; use \\uDC00…\\uDFFF")
            }
            return Unicode.Scalar(0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00))!
        }
        guard let scalar = Unicode.Scalar(code) else {
            throw error("\\u\(String(code, radix: 16)) is half of a surrogate pair without its first half")
        }
        return scalar
    }

    private mutating func parseHex4() throws(JSONSyntaxError) -> UInt32 {
        guard index + 4 <= bytes.count,
            bytes[index..<index + 4].allSatisfy({
                ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x66)
            }),
            let code = UInt32(String(decoding: bytes[index..<index + 4], as: UTF8.self), radix: 16)
        else {
            throw error("\\u must be followed by four hexadecimal digits")
        }
        for _ in 0..<4 { advance() }
        return code
    }

    /// A number as RFC 8259 writes it: `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`.
    private mutating func parseNumber() throws(JSONSyntaxError) -> (Double, String) {
        let start = index
        let startColumn = column
        let startLine = line
        func isDigit(_ i: Int) -> Bool {
            i < bytes.count && bytes[i] >= UInt8(ascii: "0") && bytes[i] <= UInt8(ascii: "9")
        }
        func fail(_ why: String) -> JSONSyntaxError {
            var end = start
            while end < bytes.count, "+-0123456789.eE".utf8.contains(bytes[end]) { end += 1 }
            let text = String(decoding: bytes[start..<Swift.max(end, start + 1)], as: UTF8.self)
            return JSONSyntaxError(
                line: startLine, column: startColumn, offset: start,
                message: "'\(InputExcerpt.of(text))' is not a JSON number: \(why)")
        }
        var cursor = index
        if bytes[cursor] == UInt8(ascii: "-") { cursor += 1 }
        guard isDigit(cursor) else { throw fail("a digit must follow '-'") }
        if bytes[cursor] == UInt8(ascii: "0") {
            cursor += 1
            if isDigit(cursor) { throw fail("no leading zeros (write 7, not 007)") }
        } else {
            while isDigit(cursor) { cursor += 1 }
        }
        if cursor < bytes.count, bytes[cursor] == UInt8(ascii: ".") {
            cursor += 1
            guard isDigit(cursor) else { throw fail("a digit must follow the decimal point") }
            while isDigit(cursor) { cursor += 1 }
        }
        if cursor < bytes.count, bytes[cursor] | 0x20 == UInt8(ascii: "e") {
            cursor += 1
            if cursor < bytes.count, bytes[cursor] == UInt8(ascii: "+") || bytes[cursor] == UInt8(ascii: "-") {
                cursor += 1
            }
            guard isDigit(cursor) else { throw fail("the exponent needs digits") }
            while isDigit(cursor) { cursor += 1 }
        }
        if cursor < bytes.count,
            bytes[cursor] == UInt8(ascii: ".") || bytes[cursor] | 0x20 == UInt8(ascii: "e") || isDigit(cursor)
        {
            throw fail("unexpected characters after the number")
        }
        let text = String(decoding: bytes[start..<cursor], as: UTF8.self)
        guard let number = Double(text), number.isFinite else {
            throw fail("it is too large for a 64-bit floating-point number")
        }
        while index < cursor { advance() }
        return (number, text)
    }
}

/// UTF-8 validation that says where the first bad byte is (JSON documents, GPX files).
package enum UTF8Check {
    /// Throws at the first byte that is not valid UTF-8 (overlong forms, surrogates and
    /// code points past U+10FFFF included), with its line, column and byte offset.
    package static func validate(_ bytes: [UInt8]) throws(JSONSyntaxError) {
        var index = 0
        var line = 1
        var column = 1
        while index < bytes.count {
            let byte = bytes[index]
            if byte < 0x80 {
                if byte == UInt8(ascii: "\n") {
                    line += 1
                    column = 0
                }
                index += 1
                column += 1
                continue
            }
            let length: Int
            var minimum: UInt32
            var scalar: UInt32
            switch byte {
            case 0xC2...0xDF:
                length = 2
                minimum = 0x80
                scalar = UInt32(byte & 0x1F)
            case 0xE0...0xEF:
                length = 3
                minimum = 0x800
                scalar = UInt32(byte & 0x0F)
            case 0xF0...0xF4:
                length = 4
                minimum = 0x10000
                scalar = UInt32(byte & 0x07)
            default:
                length = 0
                minimum = 0
                scalar = 0
            }
            var valid = length > 0 && index + length <= bytes.count
            if valid {
                for offset in 1..<length {
                    let continuation = bytes[index + offset]
                    guard continuation & 0xC0 == 0x80 else {
                        valid = false
                        break
                    }
                    scalar = (scalar << 6) | UInt32(continuation & 0x3F)
                }
            }
            if valid, scalar < minimum || scalar > 0x10FFFF || (0xD800...0xDFFF).contains(scalar) { valid = false }
            guard valid else {
                throw JSONSyntaxError(
                    line: line, column: column, offset: index,
                    message:
                        "byte 0x\(String(byte, radix: 16, uppercase: true)) at byte offset \(index) is not valid UTF-8; save the file as UTF-8"
                )
            }
            index += length
            column += 1
        }
    }
}
