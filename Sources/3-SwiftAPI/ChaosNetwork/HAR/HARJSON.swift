import ChaosKit
import Foundation

/// A JSON value as a HAR file holds it: object members keep their order and numbers keep
/// their spelling, so that an archive read and written again differs only where ChaosKit
/// changed it (fields it does not know are kept as they were).
///
/// Why not ``ProfileValue``, the package's JSON value: its objects are dictionaries and its
/// numbers doubles, so an archive passed through it would come back reordered, with
/// `183.0679999` respelled and large integers rounded. HAR files are other tools' files, and
/// a cassette must not rewrite them.
///
/// It is read by the package's one JSON reader, written for untrusted input: it never
/// traps, nests at most 200 levels deep, and reports the line and column of the first fault.
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

    /// Reads an archive's JSON with the package's one strict reader (RFC 8259, UTF-8, line
    /// and column in errors), keeping member order and numbers as written. A member name
    /// given twice keeps its last value, as browsers' readers do.
    static func parse(_ data: Data) throws(SyntaxError) -> HARJSON {
        do throws(JSONSyntaxError) {
            return HARJSON(try JSONDocumentParser.parse(data, duplicates: .lastWins))
        } catch {
            throw SyntaxError(line: error.line, column: error.column, problem: error.message)
        }
    }

    private init(_ node: JSONNode) {
        switch node.content {
        case .null: self = .null
        case .bool(let flag): self = .bool(flag)
        case .number(_, let text): self = .number(text)
        case .string(let text): self = .string(text)
        case .array(let items): self = .array(items.map(HARJSON.init))
        case .object(let members): self = .object(members.map { Member(key: $0.key, value: HARJSON($0.value)) })
        }
    }

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
            guard !items.isEmpty else {
                output += "[]"
                return
            }
            output += "["
            for (position, item) in items.enumerated() {
                if position > 0 { output += "," }
                if let indent { output += "\n" + String(repeating: "  ", count: indent + 1) }
                item.write(into: &output, indent: indent.map { $0 + 1 })
            }
            if let indent { output += "\n" + String(repeating: "  ", count: indent) }
            output += "]"
        case .object(let members):
            guard !members.isEmpty else {
                output += "{}"
                return
            }
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
        ProfileValue.quote(text, into: &output)
    }

    /// A number value from an Int or a Double (written without a needless `.0`).
    static func number(_ value: Double) -> HARJSON {
        if value.isFinite, value.rounded() == value, abs(value) < 1e15 { return .number(String(Int64(value))) }
        return .number(value.isFinite ? String(value) : "0")
    }

    static func number(_ value: Int) -> HARJSON { .number(String(value)) }
}
