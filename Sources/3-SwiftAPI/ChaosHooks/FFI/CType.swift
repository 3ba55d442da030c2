public import ChaosKit

/// A C type described at run time, as libffi needs it to build or call a function.
///
/// Sizes and alignments follow the C ABI of the platform (LP64 on Linux and Apple
/// platforms); they are cross-checked against libffi's own layout when a
/// ``CSignature`` is turned into a call interface.
public enum CType: Sendable, Hashable, CustomStringConvertible {
    /// `void` — only valid as a return type.
    case void
    /// C `_Bool` / `bool` (one byte).
    case bool
    case int8, int16, int32, int64
    case uint8, uint16, uint32, uint64
    case float, double
    /// Any data or function pointer (`void *`).
    case pointer
    /// A `const char *` that points at a NUL-terminated string (a pointer for the ABI).
    case cString
    /// A struct passed or returned by value, with its members in declaration order.
    /// Members may be structs themselves. Arrays inside structs: repeat the element.
    case structure([CType])

    /// C `int`.
    public static var int: CType { .int32 }
    /// C `unsigned int`.
    public static var uint: CType { .uint32 }
    /// C `long` (pointer-sized on LP64).
    public static var long: CType { MemoryLayout<Int>.size == 8 ? .int64 : .int32 }
    /// C `unsigned long` / `size_t`.
    public static var size: CType { MemoryLayout<Int>.size == 8 ? .uint64 : .uint32 }
    /// C `ssize_t` / `off_t` on LP64.
    public static var ssize: CType { long }

    /// The size in bytes, as `sizeof` would report it.
    public var size: Int {
        switch self {
        case .void: return 0
        case .bool, .int8, .uint8: return 1
        case .int16, .uint16: return 2
        case .int32, .uint32, .float: return 4
        case .int64, .uint64, .double: return 8
        case .pointer, .cString: return MemoryLayout<UnsafeRawPointer>.size
        case .structure(let members):
            let (size, _, _) = CType.structLayout(members)
            return size
        }
    }

    /// The alignment in bytes, as `_Alignof` would report it.
    public var alignment: Int {
        switch self {
        case .void: return 1
        case .bool, .int8, .uint8: return 1
        case .int16, .uint16: return 2
        case .int32, .uint32, .float: return 4
        case .int64, .uint64: return MemoryLayout<Int64>.alignment
        case .double: return MemoryLayout<Double>.alignment
        case .pointer, .cString: return MemoryLayout<UnsafeRawPointer>.alignment
        case .structure(let members):
            let (_, alignment, _) = CType.structLayout(members)
            return alignment
        }
    }

    /// The byte offset of each member of a struct (empty for other types).
    public var fieldOffsets: [Int] {
        guard case .structure(let members) = self else { return [] }
        return CType.structLayout(members).offsets
    }

    /// Whether this is one of the integer types (including `bool`).
    public var isInteger: Bool {
        switch self {
        case .bool, .int8, .int16, .int32, .int64, .uint8, .uint16, .uint32, .uint64: return true
        default: return false
        }
    }

    /// Whether this is a signed integer type.
    public var isSignedInteger: Bool {
        switch self {
        case .int8, .int16, .int32, .int64: return true
        default: return false
        }
    }

    public var description: String {
        switch self {
        case .void: return "void"
        case .bool: return "bool"
        case .int8: return "int8_t"
        case .int16: return "int16_t"
        case .int32: return "int32_t"
        case .int64: return "int64_t"
        case .uint8: return "uint8_t"
        case .uint16: return "uint16_t"
        case .uint32: return "uint32_t"
        case .uint64: return "uint64_t"
        case .float: return "float"
        case .double: return "double"
        case .pointer: return "void *"
        case .cString: return "const char *"
        case .structure(let members):
            return "struct { " + members.map { "\($0); " }.joined() + "}"
        }
    }

    static func structLayout(_ members: [CType]) -> (size: Int, alignment: Int, offsets: [Int]) {
        var offset = 0
        var alignment = 1
        var offsets: [Int] = []
        offsets.reserveCapacity(members.count)
        for member in members {
            let a = member.alignment
            offset = (offset + a - 1) / a * a
            offsets.append(offset)
            offset += member.size
            alignment = max(alignment, a)
        }
        let size = (offset + alignment - 1) / alignment * alignment
        return (size, alignment, offsets)
    }

    /// Throws when the type cannot be a member, argument or return value.
    func validate(as role: String) throws(ChaosError) {
        guard case .structure(let members) = self else { return }
        if members.isEmpty {
            throw ChaosError(
                .signatureMismatch,
                "\(role) is an empty struct; C structs need at least one member (describe a struct you only pass by address as .pointer)"
            )
        }
        for (index, member) in members.enumerated() {
            if member == .void {
                throw ChaosError(
                    .signatureMismatch,
                    "member \(index) of the struct in \(role) is void; remove it or give it a real type")
            }
            try member.validate(as: "member \(index) of \(role)")
        }
    }
}

/// A C function type: return type, argument types and, for variadic functions
/// (`printf`-style), how many of the arguments are the fixed ones before `...`.
///
/// Creating a signature validates it; an invalid one throws
/// `ChaosError(.signatureMismatch)` with the fix in the message.
public struct CSignature: Sendable, Hashable, CustomStringConvertible {
    /// The return type (`.void` for none).
    public let returns: CType
    /// The argument types in order (the variadic ones of one call included).
    public let arguments: [CType]
    /// For a variadic function, the number of fixed arguments; `nil` otherwise.
    public let fixedArgumentCount: Int?

    /// Describes and validates a C function type.
    ///
    /// - Parameters:
    ///   - returns: the return type; `.void` for none.
    ///   - arguments: every argument type; `[]` for `f(void)`. `.void` is not an argument.
    ///   - fixedArgumentCount: for a variadic function, how many arguments come before
    ///     `...` (at least 1). The variadic ones must be of promoted types (`int`/`long`
    ///     sized integers, `double`, pointers, structs).
    public init(returns: CType, arguments: [CType] = [], fixedArgumentCount: Int? = nil) throws(ChaosError) {
        try returns.validate(as: "the return type")
        for (index, argument) in arguments.enumerated() {
            if argument == .void {
                throw ChaosError(
                    .signatureMismatch, "argument \(index) is void; a C function without parameters has arguments: []")
            }
            try argument.validate(as: "argument \(index)")
        }
        if let fixed = fixedArgumentCount {
            guard fixed >= 1, fixed <= arguments.count else {
                throw ChaosError(
                    .signatureMismatch,
                    "fixedArgumentCount is \(fixed) but a variadic function needs between 1 and arguments.count (\(arguments.count)) fixed arguments; list the fixed arguments first, then the variadic ones of this call"
                )
            }
            for index in fixed..<arguments.count {
                switch arguments[index] {
                case .bool, .int8, .int16, .uint8, .uint16:
                    throw ChaosError(
                        .signatureMismatch,
                        "variadic argument \(index) is \(arguments[index]); C promotes it, describe it as .int32")
                case .float:
                    throw ChaosError(
                        .signatureMismatch, "variadic argument \(index) is float; C promotes it, describe it as .double"
                    )
                default:
                    break
                }
            }
        }
        self.returns = returns
        self.arguments = arguments
        self.fixedArgumentCount = fixedArgumentCount
    }

    /// Whether the function is variadic.
    public var isVariadic: Bool { fixedArgumentCount != nil }

    public var description: String {
        var parts = arguments.map(\.description)
        if let fixed = fixedArgumentCount { parts.insert("...", at: fixed) }
        return "\(returns) (\(parts.isEmpty ? "void" : parts.joined(separator: ", ")))"
    }
}
