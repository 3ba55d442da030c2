public import ChaosKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A C value of a known type: an argument or return value of a hooked function.
///
/// `.pointer` carries only an address; a `CValue` never reads or writes the pointee.
public enum CValue: Hashable, CustomStringConvertible {
    case void
    case bool(Bool)
    case int8(Int8)
    case int16(Int16)
    case int32(Int32)
    case int64(Int64)
    case uint8(UInt8)
    case uint16(UInt16)
    case uint32(UInt32)
    case uint64(UInt64)
    case float(Float)
    case double(Double)
    /// A pointer (also used for `.cString` values).
    case pointer(UnsafeMutableRawPointer?)
    /// The raw bytes of a struct passed by value (`CType.size` bytes, C layout).
    case structure([UInt8])

    /// The zero value of `type`: 0, 0.0, false, NULL, an all-zero struct.
    public static func zero(of type: CType) -> CValue {
        switch type {
        case .void: return .void
        case .bool: return .bool(false)
        case .int8: return .int8(0)
        case .int16: return .int16(0)
        case .int32: return .int32(0)
        case .int64: return .int64(0)
        case .uint8: return .uint8(0)
        case .uint16: return .uint16(0)
        case .uint32: return .uint32(0)
        case .uint64: return .uint64(0)
        case .float: return .float(0)
        case .double: return .double(0)
        case .pointer, .cString: return .pointer(nil)
        case .structure: return .structure([UInt8](repeating: 0, count: type.size))
        }
    }

    /// Whether this value has exactly the representation of `type`.
    public func matches(_ type: CType) -> Bool {
        switch (self, type) {
        case (.void, .void), (.bool, .bool), (.int8, .int8), (.int16, .int16), (.int32, .int32),
            (.int64, .int64), (.uint8, .uint8), (.uint16, .uint16), (.uint32, .uint32),
            (.uint64, .uint64), (.float, .float), (.double, .double),
            (.pointer, .pointer), (.pointer, .cString):
            return true
        case (.structure(let bytes), .structure):
            return bytes.count == type.size
        default:
            return false
        }
    }

    /// The value as a signed integer, when it is an integer or bool that fits.
    public var integerValue: Int64? {
        switch self {
        case .bool(let v): return v ? 1 : 0
        case .int8(let v): return Int64(v)
        case .int16(let v): return Int64(v)
        case .int32(let v): return Int64(v)
        case .int64(let v): return v
        case .uint8(let v): return Int64(v)
        case .uint16(let v): return Int64(v)
        case .uint32(let v): return Int64(v)
        case .uint64(let v): return Int64(exactly: v)
        default: return nil
        }
    }

    /// The value as an unsigned integer, when it is a non-negative integer or bool.
    public var unsignedValue: UInt64? {
        if case .uint64(let v) = self { return v }
        return integerValue.flatMap { UInt64(exactly: $0) }
    }

    /// The value as a `Double`, when it is a floating-point value or an integer.
    public var doubleValue: Double? {
        switch self {
        case .double(let v): return v
        case .float(let v): return Double(v)
        case .uint64(let v): return Double(v)
        default: return integerValue.map(Double.init)
        }
    }

    /// The address, when the value is a pointer (`.some(nil)` for NULL).
    public var pointerValue: UnsafeMutableRawPointer?? {
        if case .pointer(let p) = self { return .some(p) }
        return nil
    }

    /// The same value with the representation of `type`, converting losslessly
    /// between integer widths, integers and floating point, float and double.
    /// Throws `.signatureMismatch` when the value does not fit or is of another kind.
    public func converted(to type: CType) throws(ChaosError) -> CValue {
        if matches(type) { return self }
        func mismatch(_ why: String = "") -> ChaosError {
            ChaosError(.signatureMismatch, "\(self) cannot be used as \(type)\(why); pass a value of that C type")
        }
        switch type {
        case .void:
            throw mismatch(" (a void function returns nothing)")
        case .bool:
            guard let v = integerValue, v == 0 || v == 1 else { throw mismatch() }
            return .bool(v == 1)
        case .int8, .int16, .int32, .int64, .uint8, .uint16, .uint32, .uint64:
            let result: CValue?
            if case .uint64(let u) = self {
                switch type {
                case .uint64: result = .uint64(u)
                case .int64: result = Int64(exactly: u).map(CValue.int64)
                default: result = Int64(exactly: u).flatMap { CValue.integer($0, as: type) }
                }
            } else if let v = integerValue {
                result = CValue.integer(v, as: type)
            } else if case .bool = self {
                result = nil
            } else {
                result = nil
            }
            guard let result else { throw mismatch(" (out of range or not an integer)") }
            return result
        case .float:
            guard let d = doubleValue else { throw mismatch() }
            return .float(Float(d))
        case .double:
            guard let d = doubleValue else { throw mismatch() }
            return .double(d)
        case .pointer, .cString:
            throw mismatch()
        case .structure:
            if case .structure(let bytes) = self {
                throw mismatch(" (\(bytes.count) bytes given, the struct has \(type.size))")
            }
            throw mismatch()
        }
    }

    static func integer(_ v: Int64, as type: CType) -> CValue? {
        switch type {
        case .int8: return Int8(exactly: v).map(CValue.int8)
        case .int16: return Int16(exactly: v).map(CValue.int16)
        case .int32: return Int32(exactly: v).map(CValue.int32)
        case .int64: return .int64(v)
        case .uint8: return UInt8(exactly: v).map(CValue.uint8)
        case .uint16: return UInt16(exactly: v).map(CValue.uint16)
        case .uint32: return UInt32(exactly: v).map(CValue.uint32)
        case .uint64: return UInt64(exactly: v).map(CValue.uint64)
        default: return nil
        }
    }

    public var description: String {
        switch self {
        case .void: return "void"
        case .bool(let v): return "bool(\(v))"
        case .int8(let v): return "int8(\(v))"
        case .int16(let v): return "int16(\(v))"
        case .int32(let v): return "int32(\(v))"
        case .int64(let v): return "int64(\(v))"
        case .uint8(let v): return "uint8(\(v))"
        case .uint16(let v): return "uint16(\(v))"
        case .uint32(let v): return "uint32(\(v))"
        case .uint64(let v): return "uint64(\(v))"
        case .float(let v): return "float(\(v))"
        case .double(let v): return "double(\(v))"
        case .pointer(let p): return p.map { "pointer(\($0))" } ?? "pointer(NULL)"
        case .structure(let bytes): return "struct(\(bytes.count) bytes)"
        }
    }

    /// Reads a value of `type` from `address` (exact C representation).
    static func load(from address: UnsafeRawPointer, as type: CType) -> CValue {
        switch type {
        case .void: return .void
        case .bool: return .bool(address.load(as: UInt8.self) != 0)
        case .int8: return .int8(address.load(as: Int8.self))
        case .int16: return .int16(address.loadUnaligned(as: Int16.self))
        case .int32: return .int32(address.loadUnaligned(as: Int32.self))
        case .int64: return .int64(address.loadUnaligned(as: Int64.self))
        case .uint8: return .uint8(address.load(as: UInt8.self))
        case .uint16: return .uint16(address.loadUnaligned(as: UInt16.self))
        case .uint32: return .uint32(address.loadUnaligned(as: UInt32.self))
        case .uint64: return .uint64(address.loadUnaligned(as: UInt64.self))
        case .float: return .float(address.loadUnaligned(as: Float.self))
        case .double: return .double(address.loadUnaligned(as: Double.self))
        case .pointer, .cString: return .pointer(address.loadUnaligned(as: UnsafeMutableRawPointer?.self))
        case .structure: return .structure(Array(UnsafeRawBufferPointer(start: address, count: type.size)))
        }
    }

    /// Writes this value, already converted to `type`, to `address`.
    func store(to address: UnsafeMutableRawPointer, as type: CType) {
        switch self {
        case .void: break
        case .bool(let v): address.storeBytes(of: v ? 1 : 0, as: UInt8.self)
        case .int8(let v): address.storeBytes(of: v, as: Int8.self)
        case .int16(let v): address.storeBytes(of: v, as: Int16.self)
        case .int32(let v): address.storeBytes(of: v, as: Int32.self)
        case .int64(let v): address.storeBytes(of: v, as: Int64.self)
        case .uint8(let v): address.storeBytes(of: v, as: UInt8.self)
        case .uint16(let v): address.storeBytes(of: v, as: UInt16.self)
        case .uint32(let v): address.storeBytes(of: v, as: UInt32.self)
        case .uint64(let v): address.storeBytes(of: v, as: UInt64.self)
        case .float(let v): address.storeBytes(of: v, as: Float.self)
        case .double(let v): address.storeBytes(of: v, as: Double.self)
        case .pointer(let p): address.storeBytes(of: p, as: UnsafeMutableRawPointer?.self)
        case .structure(let bytes):
            bytes.withUnsafeBytes { address.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
        }
    }
}

// A CValue is plain data: a `.pointer` case is an address that CValue itself never
// dereferences, so sharing one between tasks cannot race on the pointee through CValue.
extension CValue: @unchecked Sendable {}

extension CValue: ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral, ExpressibleByBooleanLiteral {
    /// An integer literal is an `.int64`; it converts to narrower types when it fits.
    public init(integerLiteral value: Int64) { self = .int64(value) }
    /// A floating-point literal is a `.double`.
    public init(floatLiteral value: Double) { self = .double(value) }
    /// A Boolean literal is a `.bool`.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}

/// A Swift type that is read and written as one C scalar type: the fixed-width
/// integers, `Int`/`UInt`, `Bool`, `Float`, `Double`, and optional pointers.
public protocol CScalar: BitwiseCopyable {
    /// The C type this Swift type corresponds to.
    static var cType: CType { get }
}

extension Bool: CScalar { public static var cType: CType { .bool } }
extension Int8: CScalar { public static var cType: CType { .int8 } }
extension Int16: CScalar { public static var cType: CType { .int16 } }
extension Int32: CScalar { public static var cType: CType { .int32 } }
extension Int64: CScalar { public static var cType: CType { .int64 } }
extension UInt8: CScalar { public static var cType: CType { .uint8 } }
extension UInt16: CScalar { public static var cType: CType { .uint16 } }
extension UInt32: CScalar { public static var cType: CType { .uint32 } }
extension UInt64: CScalar { public static var cType: CType { .uint64 } }
extension Int: CScalar { public static var cType: CType { CType.long } }
extension UInt: CScalar { public static var cType: CType { CType.size } }
extension Float: CScalar { public static var cType: CType { .float } }
extension Double: CScalar { public static var cType: CType { .double } }
/// Optional pointers (`UnsafeMutableRawPointer?`, `UnsafePointer<CChar>?`, …) read and
/// write `.pointer` and `.cString` values.
extension Optional: CScalar where Wrapped: _Pointer & BitwiseCopyable {
    public static var cType: CType { .pointer }
}

/// A compact tag per C type, used on the per-call path.
@usableFromInline
enum ScalarKind: UInt8, Sendable {
    case void, bool, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float, double, pointer, structure

    @usableFromInline
    init(_ type: CType) {
        switch type {
        case .void: self = .void
        case .bool: self = .bool
        case .int8: self = .int8
        case .int16: self = .int16
        case .int32: self = .int32
        case .int64: self = .int64
        case .uint8: self = .uint8
        case .uint16: self = .uint16
        case .uint32: self = .uint32
        case .uint64: self = .uint64
        case .float: self = .float
        case .double: self = .double
        case .pointer, .cString: self = .pointer
        case .structure: self = .structure
        }
    }

    /// Integer types narrower than a register: libffi widens these return values to `ffi_arg`.
    @usableFromInline
    var widensReturn: Bool {
        switch self {
        case .bool, .int8, .int16, .int32, .uint8, .uint16, .uint32:
            return MemoryLayout<UInt>.size > 4 || self == .bool || self == .int8 || self == .int16 || self == .uint8
                || self == .uint16
        default: return false
        }
    }

    @usableFromInline
    var isSigned: Bool {
        switch self {
        case .int8, .int16, .int32, .int64: return true
        default: return false
        }
    }
}

extension CValue: Decodable {
    /// A C value as a JSON profile writes it, so that a profile can give a C hook a
    /// constant (`{"constant": -1}`): `null` is NULL (zero of any return type), `true` and
    /// `false` are `bool`s, whole numbers `int64` (or `uint64` past `Int64.max`), other
    /// numbers `double`, and a string a C string that lives for the rest of the process.
    /// When the entry is applied, the value is converted losslessly to the hooked
    /// function's return type, or the apply fails naming the value and the type.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .pointer(nil)
        } else if let flag = try? container.decode(Bool.self) {
            self = .bool(flag)
        } else if let whole = try? container.decode(Int64.self) {
            self = .int64(whole)
        } else if let large = try? container.decode(UInt64.self) {
            self = .uint64(large)
        } else if let number = try? container.decode(Double.self) {
            self = .double(number)
        } else if let text = try? container.decode(String.self) {
            self = .pointer(UnsafeMutableRawPointer(bitPattern: CStrings.intern(text)))
        } else {
            throw DecodingError.dataCorruptedError(
                in: container, debugDescription: "a C value is null, true, false, a number or a string"
            )
        }
    }
}

/// C strings handed out by hooks (e.g. `getenv`'s answer): callers may keep the pointer
/// after chaos is reverted, as they may keep `getenv`'s, so they are never freed; each
/// distinct text is made once.
enum CStrings {
    private static let table = Locked<[String: UInt]>([:])

    static func intern(_ text: String) -> UInt {
        table.withLock { table in
            if let existing = table[text] { return existing }
            let made = UInt(bitPattern: strdup(text))
            table[text] = made
            return made
        }
    }
}
