import CFFI
public import ChaosKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// One call into an ``FFIClosure``, as its handler sees it: typed arguments, the return
/// value, the original function and `errno`.
///
/// A `CCall` is only valid inside the handler it was passed to; never store it.
///
/// - Arguments are read with ``argument(_:as:)`` (a ``CScalar`` type that must match
///   the signature) or as ``CValue`` with ``value(at:)``; they can be changed before
///   ``callOriginal()`` with ``setArgument(_:_:)``.
/// - The return value is whatever ``callOriginal()`` produced, or what
///   `setReturn(_:)` stored last; when neither happened the function returns zero.
/// - `errno` set through ``errno`` is applied after everything else, right before
///   control returns to C, so it survives the Swift code that ran. When the handler
///   sets none, the caller sees the `errno` the original left behind, or — when the
///   original was not called — the `errno` it had before the call: Swift code run by the
///   handler never leaks an `errno` of its own.
public struct CCall {
    @usableFromInline unowned(unsafe) let interface: FFIInterface
    @usableFromInline let original: UInt
    @usableFromInline let returnBuffer: UnsafeMutableRawPointer
    @usableFromInline let arguments: UnsafeMutablePointer<UnsafeMutableRawPointer?>?
    @usableFromInline var returnWritten = false
    @usableFromInline var originalCalled = false
    /// Whether the handler set `errno` (`handlerErrno`, applied last, wins over the original's).
    @usableFromInline var handlerSetErrno = false
    @usableFromInline var handlerErrno: Int32 = 0
    /// The `errno` the caller gets unless the handler sets one: the caller's own when the
    /// call started, then the original's right after each call of it. Restored last, so
    /// that the Swift code in between cannot leak an `errno` of its own.
    @usableFromInline var callerErrno: Int32
    /// This thread's `errno`.
    @usableFromInline let errnoLocation: UnsafeMutablePointer<Int32>

    init(
        interface: FFIInterface, original: UInt, returnBuffer: UnsafeMutableRawPointer,
        arguments: UnsafeMutablePointer<UnsafeMutableRawPointer?>?, errnoLocation: UnsafeMutablePointer<Int32>
    ) {
        self.interface = interface
        self.original = original
        self.returnBuffer = returnBuffer
        self.arguments = arguments
        self.errnoLocation = errnoLocation
        self.callerErrno = errnoLocation.pointee
    }

    /// The signature of the function being called.
    public var signature: CSignature { interface.signature }

    /// The number of arguments.
    public var argumentCount: Int { interface.argumentKinds.count }

    // MARK: Arguments

    @usableFromInline
    func argumentAddress(_ index: Int) throws(ChaosError) -> UnsafeMutableRawPointer {
        guard index >= 0, index < interface.argumentKinds.count, let arguments, let address = arguments[index] else {
            throw ChaosError(
                .signatureMismatch,
                "argument index \(index) is out of range; \(interface.signature) has \(interface.argumentKinds.count) argument(s)"
            )
        }
        return address
    }

    @usableFromInline
    func typeMismatch<T>(_ type: T.Type, argument index: Int) -> ChaosError {
        ChaosError(
            .signatureMismatch,
            "argument \(index) is \(interface.argumentTypes[index]), not \(T.self); read it as the Swift type of that C type (Int32 for int32_t, an optional pointer for pointers)"
        )
    }

    /// Argument `index` as `T`, which must correspond to its C type (`Int32` for
    /// `.int32`, an optional pointer for `.pointer`/`.cString`, …).
    @inlinable
    public func argument<T: CScalar>(_ index: Int, as type: T.Type) throws(ChaosError) -> T {
        let address = try argumentAddress(index)
        guard ScalarKind(T.cType) == interface.argumentKinds[index] else {
            throw typeMismatch(T.self, argument: index)
        }
        return address.loadUnaligned(as: T.self)
    }

    /// Replaces argument `index` for a following ``callOriginal()``.
    @inlinable
    public func setArgument<T: CScalar>(_ index: Int, _ value: T) throws(ChaosError) {
        let address = try argumentAddress(index)
        guard ScalarKind(T.cType) == interface.argumentKinds[index] else {
            throw typeMismatch(T.self, argument: index)
        }
        address.storeBytes(of: value, as: T.self)
    }

    /// Argument `index` as a ``CValue`` of its C type (structs as their bytes).
    public func value(at index: Int) throws(ChaosError) -> CValue {
        let address = try argumentAddress(index)
        return CValue.load(from: address, as: interface.argumentTypes[index])
    }

    /// Replaces argument `index` with `value`, converted losslessly to its C type.
    public func setValue(_ value: CValue, at index: Int) throws(ChaosError) {
        let address = try argumentAddress(index)
        let type = interface.argumentTypes[index]
        try value.converted(to: type).store(to: address, as: type)
    }

    /// A struct argument passed by value, as a Swift type of the same size (usually
    /// the C struct imported into Swift). Changes go through ``setStructure(_:_:)``.
    public func structure<T: BitwiseCopyable>(_ index: Int, as type: T.Type) throws(ChaosError) -> T {
        let address = try argumentAddress(index)
        let ctype = interface.argumentTypes[index]
        guard case .structure = ctype, ctype.size == MemoryLayout<T>.size else {
            throw ChaosError(
                .signatureMismatch,
                "argument \(index) is \(ctype) (\(ctype.size) bytes), not \(T.self) (\(MemoryLayout<T>.size) bytes); describe the struct's members exactly"
            )
        }
        return address.loadUnaligned(as: T.self)
    }

    /// Replaces a struct argument passed by value.
    public func setStructure<T: BitwiseCopyable>(_ index: Int, _ value: T) throws(ChaosError) {
        _ = try structure(index, as: T.self)
        try argumentAddress(index).storeBytes(of: value, as: T.self)
    }

    /// A `.cString` (or `.pointer`) argument as a Swift string; `nil` for NULL.
    public func string(at index: Int) throws(ChaosError) -> String? {
        let pointer = try argument(index, as: UnsafePointer<CChar>?.self)
        return pointer.map { String(cString: $0) }
    }

    /// Writes `value` to the memory pointer argument `index` points to (an out-parameter
    /// such as `struct timespec *`). Throws `.signatureMismatch` for a NULL pointer.
    public func write<T>(_ value: T, throughArgument index: Int) throws(ChaosError) {
        guard let pointer = try argument(index, as: UnsafeMutableRawPointer?.self) else {
            throw ChaosError(.signatureMismatch, "argument \(index) is NULL; check it before writing through it")
        }
        pointer.assumingMemoryBound(to: T.self).pointee = value
    }

    // MARK: Return value

    /// Stores the return value; `T` must correspond to the return type.
    @inlinable
    public mutating func setReturn<T: CScalar>(_ value: T) throws(ChaosError) {
        let kind = ScalarKind(T.cType)
        guard kind == interface.returnKind else {
            throw ChaosError(
                .signatureMismatch,
                "the function returns \(interface.returnType), not \(T.self); return a value of that C type")
        }
        if kind.widensReturn {
            // libffi expects narrow integer results widened to a full ffi_arg register.
            let wide = withUnsafeBytes(of: value) { CCall.widen($0, kind) }
            if MemoryLayout<UInt>.size == 8 {
                returnBuffer.storeBytes(of: wide, as: UInt64.self)
            } else {
                returnBuffer.storeBytes(of: UInt32(truncatingIfNeeded: wide), as: UInt32.self)
            }
        } else {
            returnBuffer.storeBytes(of: value, as: T.self)
        }
        returnWritten = true
    }

    /// Stores the return value, converting `value` losslessly to the return type.
    public mutating func setReturn(_ value: CValue) throws(ChaosError) {
        let type = interface.returnType
        let converted = try value.converted(to: type)
        switch converted {
        case .bool(let v): try setReturn(v)
        case .int8(let v): try setReturn(v)
        case .int16(let v): try setReturn(v)
        case .int32(let v): try setReturn(v)
        case .uint8(let v): try setReturn(v)
        case .uint16(let v): try setReturn(v)
        case .uint32(let v): try setReturn(v)
        default:
            converted.store(to: returnBuffer, as: type)
            returnWritten = true
        }
    }

    /// Stores a struct return value given as a Swift type of the same size.
    public mutating func setReturnStructure<T: BitwiseCopyable>(_ value: T) throws(ChaosError) {
        let type = interface.returnType
        guard case .structure = type, type.size == MemoryLayout<T>.size else {
            throw ChaosError(
                .signatureMismatch,
                "the function returns \(type) (\(type.size) bytes), not \(T.self) (\(MemoryLayout<T>.size) bytes)")
        }
        returnBuffer.storeBytes(of: value, as: T.self)
        returnWritten = true
    }

    /// The return value so far (after ``callOriginal()`` or `setReturn(_:)`), as `T`.
    @inlinable
    public func returnValue<T: CScalar>(as type: T.Type) throws(ChaosError) -> T {
        let kind = ScalarKind(T.cType)
        guard kind == interface.returnKind else {
            throw ChaosError(.signatureMismatch, "the function returns \(interface.returnType), not \(T.self)")
        }
        if kind.widensReturn {
            let wide =
                MemoryLayout<UInt>.size == 8
                ? returnBuffer.load(as: UInt64.self) : UInt64(returnBuffer.load(as: UInt32.self))
            return withUnsafeBytes(of: wide) { $0.loadUnaligned(as: T.self) }
        }
        return returnBuffer.loadUnaligned(as: T.self)
    }

    /// The return value so far as a ``CValue`` (zero if nothing produced one yet).
    @inline(__always)
    public func returnValue() -> CValue {
        guard returnWritten else { return .zero(of: interface.returnType) }
        switch interface.returnKind {
        case .void: return .void
        case .bool: return .bool(narrowReturn(UInt8.self) != 0)
        case .int8: return .int8(narrowReturn(Int8.self))
        case .int16: return .int16(narrowReturn(Int16.self))
        case .int32: return .int32(narrowReturn(Int32.self))
        case .uint8: return .uint8(narrowReturn(UInt8.self))
        case .uint16: return .uint16(narrowReturn(UInt16.self))
        case .uint32: return .uint32(narrowReturn(UInt32.self))
        case .int64: return .int64(returnBuffer.load(as: Int64.self))
        case .uint64: return .uint64(returnBuffer.load(as: UInt64.self))
        case .float: return .float(returnBuffer.load(as: Float.self))
        case .double: return .double(returnBuffer.load(as: Double.self))
        case .pointer: return .pointer(returnBuffer.load(as: UnsafeMutableRawPointer?.self))
        case .structure: return CValue.load(from: returnBuffer, as: interface.returnType)
        }
    }

    /// A narrow integer return value; libffi keeps it widened to a full `ffi_arg`.
    @inline(__always)
    func narrowReturn<T: FixedWidthInteger>(_ type: T.Type) -> T {
        if MemoryLayout<UInt>.size == 8 {
            return T(truncatingIfNeeded: returnBuffer.load(as: UInt64.self))
        }
        return T(truncatingIfNeeded: returnBuffer.load(as: UInt32.self))
    }

    /// Stores a narrow integer return value widened to a full `ffi_arg`, as libffi expects.
    @inline(__always)
    mutating func storeNarrowReturn<T: FixedWidthInteger>(_ value: T) {
        if MemoryLayout<UInt>.size == 8 {
            storeReturnBits(T.isSigned ? UInt64(bitPattern: Int64(value)) : UInt64(value))
        } else {
            storeReturnBits(T.isSigned ? UInt32(bitPattern: Int32(value)) : UInt32(value))
        }
    }

    /// Writes the return buffer only when it does not already hold `bits`. A provider
    /// usually answers what the original just left there; not rewriting it keeps the
    /// answer's way back to the C caller as short as in a plain libffi closure (the
    /// caller's reload would otherwise wait for this store).
    @inline(__always)
    mutating func storeReturnBits<T: FixedWidthInteger>(_ bits: T) {
        if returnBuffer.load(as: T.self) != bits {
            returnBuffer.storeBytes(of: bits, as: T.self)
        }
        returnWritten = true
    }

    /// Stores `value` when it already has exactly the return type's representation (what
    /// a provider usually answers: the original's result, a constant of the right type);
    /// false when it needs `setReturn(_:)`'s conversion.
    @inline(__always)
    mutating func storeExactReturn(_ value: CValue) -> Bool {
        // The common C return types are tested first, each with one comparison, before
        // the jump table of the rest: this runs on every hooked call.
        let kind = interface.returnKind
        if kind == .int32, case .int32(let v) = value {
            storeNarrowReturn(v)
            return true
        }
        if kind == .int64, case .int64(let v) = value {
            storeReturnBits(v)
            return true
        }
        if kind == .pointer, case .pointer(let v) = value {
            storeReturnBits(UInt(bitPattern: v))
            return true
        }
        switch (value, kind) {
        case (.uint32(let v), .uint32): storeNarrowReturn(v)
        case (.uint64(let v), .uint64): storeReturnBits(v)
        case (.bool(let v), .bool): storeNarrowReturn(UInt8(v ? 1 : 0))
        case (.int8(let v), .int8): storeNarrowReturn(v)
        case (.int16(let v), .int16): storeNarrowReturn(v)
        case (.uint8(let v), .uint8): storeNarrowReturn(v)
        case (.uint16(let v), .uint16): storeNarrowReturn(v)
        case (.double(let v), .double): storeReturnBits(v.bitPattern)
        case (.float(let v), .float): storeReturnBits(v.bitPattern)
        default: return false
        }
        return true
    }

    /// The return buffer itself (`CType.size` bytes, an `ffi_arg` for narrow integers).
    public var returnPointer: UnsafeMutableRawPointer { returnBuffer }

    /// A narrow integer's bytes, sign- or zero-extended to 64 bits.
    @usableFromInline
    static func widen(_ bytes: UnsafeRawBufferPointer, _ kind: ScalarKind) -> UInt64 {
        switch kind {
        case .int8: return UInt64(bitPattern: Int64(bytes.loadUnaligned(as: Int8.self)))
        case .int16: return UInt64(bitPattern: Int64(bytes.loadUnaligned(as: Int16.self)))
        case .int32: return UInt64(bitPattern: Int64(bytes.loadUnaligned(as: Int32.self)))
        case .bool, .uint8: return UInt64(bytes.loadUnaligned(as: UInt8.self))
        case .uint16: return UInt64(bytes.loadUnaligned(as: UInt16.self))
        case .uint32: return UInt64(bytes.loadUnaligned(as: UInt32.self))
        default: return bytes.loadUnaligned(as: UInt64.self)
        }
    }

    @usableFromInline
    mutating func clearReturn() {
        if interface.returnClearSize > 0 {
            returnBuffer.initializeMemory(as: UInt8.self, repeating: 0, count: interface.returnClearSize)
        }
        returnWritten = true
    }

    // MARK: Original

    /// Whether there is an original function to call.
    public var hasOriginal: Bool { original != 0 }

    /// Calls the original function with the current (possibly changed) arguments; its
    /// result becomes the return value and its `errno` is what the caller sees unless
    /// the handler sets ``errno``. May be called more than once.
    /// Throws `.notApplied` when the closure has no original.
    public mutating func callOriginal() throws(ChaosError) {
        guard original != 0 else {
            throw ChaosError(
                .notApplied,
                "this closure has no original function to call; pass original: to FFIClosure or bind it to a slot that holds one"
            )
        }
        invokeOriginal()
    }

    /// `callOriginal()` once `original` is known to be set.
    @inline(__always)
    mutating func invokeOriginal() {
        ffi_call(interface.cif, unsafeBitCast(original, to: (@convention(c) () -> Void).self), returnBuffer, arguments)
        callerErrno = errnoLocation.pointee
        originalCalled = true
        returnWritten = true
    }

    // MARK: errno

    /// `errno` as the caller will see it. Setting it takes effect when the handler has
    /// returned, after all other work, so nothing in between can overwrite it.
    public var errno: Int32 {
        get { handlerSetErrno ? handlerErrno : errnoLocation.pointee }
        set {
            handlerErrno = newValue
            handlerSetErrno = true
        }
    }

    mutating func finishErrno() {
        errnoLocation.pointee = handlerSetErrno ? handlerErrno : callerErrno
    }
}
