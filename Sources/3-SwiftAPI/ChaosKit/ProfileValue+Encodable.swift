/// A ``ProfileValue`` encodes as the JSON it stands for, so a tree built in code (a stub
/// body, a JSON:API document) goes out through `JSONEncoder` like any model.
extension ProfileValue: Encodable {
    /// Encodes the value: whole numbers up to 2^53 as integers (`7`, not `7.0`).
    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .null:
            var container = encoder.singleValueContainer()
            try container.encodeNil()
        case .bool(let flag):
            var container = encoder.singleValueContainer()
            try container.encode(flag)
        case .number(let number):
            var container = encoder.singleValueContainer()
            if number.rounded() == number, abs(number) <= 9_007_199_254_740_992 {
                try container.encode(Int64(number))
            } else {
                try container.encode(number)
            }
        case .string(let text):
            var container = encoder.singleValueContainer()
            try container.encode(text)
        case .array(let items):
            var container = encoder.unkeyedContainer()
            for item in items { try container.encode(item) }
        case .object(let members):
            var container = encoder.container(keyedBy: MemberKey.self)
            for (key, value) in members { try container.encode(value, forKey: MemberKey(key)) }
        }
    }

    /// An object member's name as a coding key.
    private struct MemberKey: CodingKey {
        let stringValue: String
        var intValue: Int? { nil }
        init(_ name: String) { stringValue = name }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}
