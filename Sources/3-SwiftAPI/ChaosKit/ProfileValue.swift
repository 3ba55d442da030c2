public import Foundation

/// A JSON value: what profiles carry (parameters of catalogue items, constants), and the
/// one JSON value type of every ChaosKit module (stub body matchers, HAR fields).
///
/// Objects compare without regard to member order; numbers compare as `Double`.
public enum ProfileValue: Sendable, Hashable, CustomStringConvertible {
    /// `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// A number.
    case number(Double)
    /// A string.
    case string(String)
    /// An array.
    case array([ProfileValue])
    /// An object.
    case object([String: ProfileValue])

    /// Parses JSON text (RFC 8259: one value, no duplicate member names, strict numbers);
    /// the error gives line, column and what to fix.
    public init(json text: String) throws(ChaosError) {
        try self.init(json: Data(text.utf8))
    }

    /// Parses JSON bytes (UTF-8, RFC 8259); the error gives line, column, byte offset and
    /// what to fix. With `duplicateMembers: .lastWins` a repeated member name is accepted,
    /// as most JSON readers do, instead of refused.
    public init(json data: Data, duplicateMembers: JSONDuplicateMembers = .refuse) throws(ChaosError) {
        do throws(JSONSyntaxError) {
            self = try JSONDocumentParser.parse(data, duplicates: duplicateMembers).value
        } catch {
            throw ChaosError(.invalidProfile, subject: "line \(error.line), column \(error.column)", error.message)
        }
    }

    /// The value as compact JSON text (object members sorted by name).
    public var description: String {
        switch self {
        case .null: "null"
        case .bool(let value): String(value)
        case .number(let value): Self.numberText(value)
        case .string(let value): Self.quoted(value)
        case .array(let values): "[\(values.map(\.description).joined(separator: ","))]"
        case .object(let members):
            "{\(members.sorted { $0.key < $1.key }.map { "\(Self.quoted($0.key)):\($0.value)" }.joined(separator: ","))}"
        }
    }

    /// The value's JSON type, for messages: "a number", "an object" …
    public var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }

    /// `value` as JSON: whole numbers without a fraction.
    package static func numberText(_ value: Double) -> String {
        // Whole numbers up to 2^53 (every seed a profile can carry exactly) print as integers.
        value.rounded() == value && abs(value) <= 9_007_199_254_740_992 ? String(Int64(value)) : String(value)
    }

    /// `text` as a JSON string literal.
    package static func quoted(_ text: String) -> String {
        var result = ""
        quote(text, into: &result)
        return result
    }

    /// Appends `text` as a JSON string literal: control characters and U+2028/U+2029
    /// (line separators some JavaScript readers choke on) escaped.
    package static func quote(_ text: String, into output: inout String) {
        output += "\""
        // The common case: nothing to escape.
        if !text.utf8.contains(where: {
            $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") || $0 == 0xE2
        }) {
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
                let hex = String(scalar.value, radix: 16)
                output += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: output.unicodeScalars.append(scalar)
            }
        }
        output += "\""
    }
}

/// What a JSON reader does with a member name that appears twice in one object.
public enum JSONDuplicateMembers: Sendable {
    /// Refuse the document, naming the member and where it repeats (profiles).
    case refuse
    /// Keep the last one, as most JSON readers do (bodies of other programs' requests).
    case lastWins
}
