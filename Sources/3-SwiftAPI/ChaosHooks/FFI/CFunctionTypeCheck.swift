import ChaosKit

/// Cross-checks a ``CSignature`` against the Swift type of a function-pointer slot
/// (`Optional<@convention(c) (Int32, Int32) -> Int32>` …), from the type's name: the
/// number of arguments always, scalar types where Swift spells them out (structs and
/// type aliases it cannot map are not checked).
enum CFunctionTypeCheck {
    static func check<Function>(_ type: Function.Type, against signature: CSignature, name: String) throws(ChaosError) {
        let spelled = String(describing: type)
        guard let (arguments, result) = parse(spelled) else { return }
        if signature.isVariadic { return }
        guard arguments.count == signature.arguments.count else {
            throw ChaosError(
                .signatureMismatch, subject: name,
                "the slot's type \(spelled) takes \(arguments.count) argument(s) but the signature \(signature) lists \(signature.arguments.count); describe every C parameter, in order"
            )
        }
        for (index, (swiftName, ctype)) in zip(arguments, signature.arguments).enumerated() {
            if let expected = kind(of: swiftName), expected != ScalarKind(ctype) {
                throw ChaosError(
                    .signatureMismatch, subject: name,
                    "argument \(index) of the slot's type is \(swiftName) but the signature says \(ctype); use the C type matching \(swiftName)"
                )
            }
        }
        if let expected = kind(of: result), expected != ScalarKind(signature.returns) {
            throw ChaosError(
                .signatureMismatch, subject: name,
                "the slot's type returns \(result) but the signature says \(signature.returns); use the C type matching \(result)"
            )
        }
    }

    /// The argument and result type names of a `@convention(c)` function type's name.
    static func parse(_ spelled: String) -> (arguments: [String], result: String)? {
        guard let start = spelled.range(of: "@convention(c) (") else { return nil }
        var depth = 1
        var index = start.upperBound
        var current = ""
        var arguments: [String] = []
        while index < spelled.endIndex {
            let character = spelled[index]
            switch character {
            case "(", "<", "[": depth += 1
            case ")", ">", "]": depth -= 1
            default: break
            }
            if depth == 0 { break }
            if depth == 1 && character == "," {
                arguments.append(current.trimmingSpaces)
                current = ""
            } else {
                current.append(character)
            }
            index = spelled.index(after: index)
        }
        guard index < spelled.endIndex else { return nil }
        if !current.trimmingSpaces.isEmpty { arguments.append(current.trimmingSpaces) }
        var rest = spelled[spelled.index(after: index)...].trimmingSpaces
        guard rest.hasPrefix("->") else { return nil }
        rest = String(rest.dropFirst(2)).trimmingSpaces
        // Drop the closing `>` of an enclosing Optional<…>.
        if spelled.hasPrefix("Optional<"), rest.hasSuffix(">") { rest = String(rest.dropLast()).trimmingSpaces }
        return (arguments, rest)
    }

    /// The scalar kind a Swift type name stands for, or nil when it cannot tell.
    static func kind(of swiftName: String) -> ScalarKind? {
        var name = swiftName
        if name.hasSuffix("?") { name.removeLast() }
        if name.hasPrefix("Optional<") && name.hasSuffix(">") { name = String(name.dropFirst(9).dropLast()) }
        if name.hasPrefix("Unsafe") || name == "OpaquePointer" { return .pointer }
        switch name {
        case "()", "Void": return .void
        case "Bool": return .bool
        case "Int8", "CChar", "CSignedChar": return .int8
        case "Int16", "CShort": return .int16
        case "Int32", "CInt": return .int32
        case "Int64", "Int", "CLong", "CLongLong": return .int64
        case "UInt8", "CUnsignedChar": return .uint8
        case "UInt16", "CUnsignedShort": return .uint16
        case "UInt32", "CUnsignedInt": return .uint32
        case "UInt64", "UInt", "CUnsignedLong", "CUnsignedLongLong": return .uint64
        case "Float", "CFloat": return .float
        case "Double", "CDouble": return .double
        default: return nil
        }
    }
}

extension StringProtocol {
    var trimmingSpaces: String {
        String(drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
    }
}
