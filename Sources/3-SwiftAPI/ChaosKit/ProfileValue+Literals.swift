/// JSON values written as Swift literals: `["total": 2, "tags": ["a", "b"], "ok": true]`.
extension ProfileValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    /// A string.
    public init(stringLiteral value: String) { self = .string(value) }
    /// A whole number.
    public init(integerLiteral value: Int) { self = .number(Double(value)) }
    /// A number.
    public init(floatLiteral value: Double) { self = .number(value) }
    /// `true` or `false`.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    /// An array.
    public init(arrayLiteral elements: ProfileValue...) { self = .array(elements) }
    /// An object (a name given twice keeps its last value).
    public init(dictionaryLiteral elements: (String, ProfileValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}
