import Foundation

/// A JSON value as a HAR file holds it: object members keep their order and numbers keep
/// their spelling, so that an archive read and written again differs only where ChaosKit
/// changed it (fields it does not know are kept as they were).
///
/// The parser is written for untrusted input: it never traps, nests at most
/// ``HARJSON/maximumDepth`` deep, and reports the line and column of the first fault.
enum HARJSON: Sendable, Equatable {
    case null
    case bool(Bool)
    /// The number as written (`200`, `-1`, `183.0679999`).
    case number(String)
    case string(String)
    case array([HARJSON])
    case object([Member])

    struct Member: Sendable, Equatable {
        var key: String
        var value: HARJSON
    }

    /// How deep arrays and objects may nest (HAR needs about 8).
    static let maximumDepth = 200

    // MARK: Reading members

    subscript(key: String) -> HARJSON? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.key == key }?.value
    }

    var string: String? {
        if case .string(let text) = self { return text }
        return nil
    }

    var array: [HARJSON]? {
        if case .array(let items) = self { return items }
        return nil
    }

    var members: [Member]? {
        if case .object(let members) = self { return members }
        return nil
    }

    /// The number as a Double (nil for anything but a number).
    var double: Double? {
        if case .number(let text) = self { return Double(text) }
        return nil
    }

    /// The number as an Int when it is a whole number within Int's range.
    var integer: Int? {
        guard case .number(let text) = self else { return nil }
        if let value = Int(text) { return value }
        guard let value = Double(text), value.rounded() == value, abs(value) < 9e15 else { return nil }
        return Int(value)
    }

    /// `a string`, `a number`, … for messages.
    var kind: String {
        switch self {
        case .null: "null"
        case .bool: "true or false"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }

    /// Sets (or adds, at the end) member `key` of an object; nothing for other values.
    mutating func set(_ key: String, _ value: HARJSON) {
        guard case .object(var members) = self else { return }
        if let index = members.firstIndex(where: { $0.key == key }) {
            members[index].value = value
        } else {
            members.append(Member(key: key, value: value))
        }
        self = .object(members)
    }

    /// Changes member `key` in place when it exists.
    mutating func update(_ key: String, _ change: (inout HARJSON) -> Void) {
        guard case .object(var members) = self, let index = members.firstIndex(where: { $0.key == key }) else { return }
        change(&members[index].value)
        self = .object(members)
    }

    // MARK: Parsing

    /// Where and why a text is not JSON.
    struct SyntaxError: Error, Sendable {
        var line: Int
        var column: Int
        var problem: String

        var message: String { "not JSON at line \(line), column \(column): \(problem)" }
    }

    static func parse(_ data: Data) throws(SyntaxError) -> HARJSON {
        let bytes = [UInt8](data)
        let result = bytes.withUnsafeBufferPointer { buffer -> Result<HARJSON, SyntaxError> in
            var parser = Parser(bytes: buffer)
            // A UTF-8 byte order mark is allowed (some Windows tools write one).
            if buffer.starts(with: [0xEF, 0xBB, 0xBF]) { parser.index = 3 }
            do throws(SyntaxError) {
                parser.skipSpace()
                let value = try parser.value(depth: 0)
                parser.skipSpace()
                guard parser.index == buffer.count else { throw parser.fail("unexpected text after the end of the document") }
                return .success(value)
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// Reads from a buffer that lives for the whole parse (``parse(_:)`` holds it).
    private struct Parser {
        let bytes: UnsafeBufferPointer<UInt8>
        var index = 0

        func fail(_ problem: String) -> SyntaxError {
            var line = 1, column = 1
            var position = 0
            let end = min(index, bytes.count)
            while position < end {
                let byte = bytes[position]
                if byte == 0x0A { line += 1; column = 1 } else if byte & 0xC0 != 0x80 { column += 1 }
                position += 1
            }
            return SyntaxError(line: line, column: column, problem: problem)
        }

        mutating func skipSpace() {
            while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x0A || bytes[index] == 0x0D || bytes[index] == 0x09 {
                index += 1
            }
        }

        mutating func value(depth: Int) throws(SyntaxError) -> HARJSON {
            guard depth < HARJSON.maximumDepth else { throw fail("nested more than \(HARJSON.maximumDepth) levels deep") }
            guard index < bytes.count else { throw fail("the document ends where a value should be") }
            switch bytes[index] {
            case UInt8(ascii: "{"): return try object(depth: depth)
            case UInt8(ascii: "["): return try array(depth: depth)
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "t"): try literal("true"); return .bool(true)
            case UInt8(ascii: "f"): try literal("false"); return .bool(false)
            case UInt8(ascii: "n"): try literal("null"); return .null
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
            default: throw fail("expected a value, found \(describe(bytes[index]))")
            }
        }

        func describe(_ byte: UInt8) -> String {
            (0x21...0x7E).contains(byte) ? "'\(Character(Unicode.Scalar(byte)))'" : String(format: "byte 0x%02X", byte)
        }

        mutating func literal(_ word: String) throws(SyntaxError) {
            let expected = Array(word.utf8)
            guard bytes.count - index >= expected.count, bytes[index..<index + expected.count].elementsEqual(expected) else {
                throw fail("expected \(word)")
            }
            index += expected.count
        }

        mutating func number() throws(SyntaxError) -> HARJSON {
            let start = index
            if bytes[index] == UInt8(ascii: "-") { index += 1 }
            func digits(_ parser: inout Parser) -> Int {
                let from = parser.index
                while parser.index < parser.bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(parser.bytes[parser.index]) { parser.index += 1 }
                return parser.index - from
            }
            guard digits(&self) > 0 else { throw fail("a number needs digits") }
            if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
                index += 1
                guard digits(&self) > 0 else { throw fail("a number needs digits after '.'") }
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
                index += 1
                if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
                guard digits(&self) > 0 else { throw fail("a number needs digits in its exponent") }
            }
            return .number(String(decoding: bytes[start..<index], as: UTF8.self))
        }

        mutating func string() throws(SyntaxError) -> String {
            index += 1  // the opening quote
            let start = index
            // The common case: no escapes, so the bytes between the quotes are the string.
            while index < bytes.count, bytes[index] != UInt8(ascii: "\""), bytes[index] != UInt8(ascii: "\\"), bytes[index] >= 0x20 { index += 1 }
            if index < bytes.count, bytes[index] == UInt8(ascii: "\"") {
                index += 1
                return try text(UnsafeBufferPointer(rebasing: bytes[start..<index - 1]), at: start)
            }
            var buffer = Array(bytes[start..<index])
            while true {
                guard index < bytes.count else { throw fail("the string is not closed") }
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") {
                    index += 1
                    let result = buffer.withUnsafeBufferPointer { utf8 -> Result<String, SyntaxError> in
                        do throws(SyntaxError) { return .success(try text(utf8, at: start)) } catch { return .failure(error) }
                    }
                    return try result.get()
                }
                if byte < 0x20 { throw fail("a control character (\(describe(byte))) must be escaped in a string") }
                if byte != UInt8(ascii: "\\") {
                    buffer.append(byte)
                    index += 1
                    continue
                }
                index += 1
                guard index < bytes.count else { throw fail("the string is not closed") }
                let escape = bytes[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): buffer.append(escape)
                case UInt8(ascii: "b"): buffer.append(0x08)
                case UInt8(ascii: "f"): buffer.append(0x0C)
                case UInt8(ascii: "n"): buffer.append(0x0A)
                case UInt8(ascii: "r"): buffer.append(0x0D)
                case UInt8(ascii: "t"): buffer.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar: Unicode.Scalar = "\u{FFFD}"
                    let unit = try hex4()
                    if (0xD800...0xDBFF).contains(unit), bytes.count - index >= 6, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") {
                        let saved = index
                        index += 2
                        let low = try hex4()
                        if (0xDC00...0xDFFF).contains(low), let pair = Unicode.Scalar(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)) {
                            scalar = pair
                        } else {
                            index = saved  // a lone high surrogate becomes U+FFFD, as lenient readers do
                        }
                    } else if let single = Unicode.Scalar(unit) {
                        scalar = single
                    }
                    buffer.append(contentsOf: UTF8.encode(scalar).map { Array($0) } ?? [0xEF, 0xBF, 0xBD])
                default:
                    index -= 1
                    throw fail("'\\\(describe(escape))' is not a JSON escape")
                }
            }
        }

        /// UTF-8 bytes as a string; invalid UTF-8 is an error located at the string's start.
        func text(_ utf8: UnsafeBufferPointer<UInt8>, at start: Int) throws(SyntaxError) -> String {
            guard let text = String(validating: utf8, as: UTF8.self) else {
                var at = self
                at.index = start
                throw at.fail("the string is not valid UTF-8")
            }
            return text
        }

        mutating func hex4() throws(SyntaxError) -> UInt32 {
            guard bytes.count - index >= 4 else { throw fail("\\u needs four hex digits") }
            var value: UInt32 = 0
            for _ in 0..<4 {
                let byte = bytes[index]
                let digit: UInt32
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
                default: throw fail("\\u needs four hex digits")
                }
                value = value * 16 + digit
                index += 1
            }
            return value
        }

        mutating func array(depth: Int) throws(SyntaxError) -> HARJSON {
            index += 1
            var items: [HARJSON] = []
            skipSpace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "]") { index += 1; return .array(items) }
            while true {
                skipSpace()
                items.append(try value(depth: depth + 1))
                skipSpace()
                guard index < bytes.count else { throw fail("the array is not closed") }
                if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                if bytes[index] == UInt8(ascii: "]") { index += 1; return .array(items) }
                throw fail("expected ',' or ']' in an array, found \(describe(bytes[index]))")
            }
        }

        mutating func object(depth: Int) throws(SyntaxError) -> HARJSON {
            index += 1
            var members: [Member] = []
            skipSpace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "}") { index += 1; return .object(members) }
            while true {
                skipSpace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else {
                    throw fail(index < bytes.count ? "expected a member name in quotes, found \(describe(bytes[index]))" : "the object is not closed")
                }
                let key = try string()
                skipSpace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw fail("expected ':' after the member name \"\(key.prefix(40))\"") }
                index += 1
                skipSpace()
                let value = try value(depth: depth + 1)
                members.append(Member(key: key, value: value))
                skipSpace()
                guard index < bytes.count else { throw fail("the object is not closed") }
                if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                if bytes[index] == UInt8(ascii: "}") { index += 1; return .object(members) }
                throw fail("expected ',' or '}' in an object, found \(describe(bytes[index]))")
            }
        }
    }

    // MARK: Writing

    /// The value as JSON text: indented by two spaces per level when `pretty`, compact otherwise.
    func text(pretty: Bool = true) -> String {
        var output = ""
        write(into: &output, indent: pretty ? 0 : nil)
        return output
    }

    private func write(into output: inout String, indent: Int?) {
        switch self {
        case .null: output += "null"
        case .bool(let flag): output += flag ? "true" : "false"
        case .number(let text): output += text
        case .string(let text): Self.quote(text, into: &output)
        case .array(let items):
            guard !items.isEmpty else { output += "[]"; return }
            output += "["
            for (position, item) in items.enumerated() {
                if position > 0 { output += "," }
                if let indent { output += "\n" + String(repeating: "  ", count: indent + 1) }
                item.write(into: &output, indent: indent.map { $0 + 1 })
            }
            if let indent { output += "\n" + String(repeating: "  ", count: indent) }
            output += "]"
        case .object(let members):
            guard !members.isEmpty else { output += "{}"; return }
            output += "{"
            for (position, member) in members.enumerated() {
                if position > 0 { output += "," }
                if let indent { output += "\n" + String(repeating: "  ", count: indent + 1) }
                Self.quote(member.key, into: &output)
                output += indent == nil ? ":" : ": "
                member.value.write(into: &output, indent: indent.map { $0 + 1 })
            }
            if let indent { output += "\n" + String(repeating: "  ", count: indent) }
            output += "}"
        }
    }

    static func quote(_ text: String, into output: inout String) {
        output += "\""
        // The common case: nothing to escape.
        if !text.utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") || $0 == 0xE2 }) {
            output += text
            output += "\""
            return
        }
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": output += "\\\""
            case "\\": output += "\\\\"
            case "\n": output += "\\n"
            case "\r": output += "\\r"
            case "\t": output += "\\t"
            case _ where scalar.value < 0x20 || scalar.value == 0x2028 || scalar.value == 0x2029:
                output += String(format: "\\u%04x", scalar.value)
            default: output.unicodeScalars.append(scalar)
            }
        }
        output += "\""
    }

    /// A number value from an Int or a Double (written without a needless `.0`).
    static func number(_ value: Double) -> HARJSON {
        if value.isFinite, value.rounded() == value, abs(value) < 1e15 { return .number(String(Int64(value))) }
        return .number(value.isFinite ? String(value) : "0")
    }

    static func number(_ value: Int) -> HARJSON { .number(String(value)) }
}
