import CFFI
import ChaosKit

/// A prepared libffi call interface for one ``CSignature``: the `ffi_cif`, the
/// argument type table and every `ffi_type` built for structs (with their element
/// arrays). All memory is owned here and freed in `deinit`.
///
/// Immutable after `init` (libffi only reads the cif once `ffi_prep_cif` filled it),
/// which is what makes sharing it between threads safe.
@usableFromInline
final class FFIInterface: @unchecked Sendable {
    let signature: CSignature
    let cif: UnsafeMutablePointer<ffi_cif>
    private var allocations: [UnsafeMutableRawPointer] = []

    @usableFromInline let argumentKinds: [ScalarKind]
    @usableFromInline let argumentTypes: [CType]
    @usableFromInline let returnKind: ScalarKind
    @usableFromInline let returnType: CType
    /// Bytes to clear in the return buffer for a zero return (at least an `ffi_arg` for scalars).
    @usableFromInline let returnClearSize: Int

    init(_ signature: CSignature) throws(ChaosError) {
        self.signature = signature
        self.argumentTypes = signature.arguments
        self.argumentKinds = signature.arguments.map(ScalarKind.init)
        self.returnType = signature.returns
        self.returnKind = ScalarKind(signature.returns)
        switch signature.returns {
        case .void: returnClearSize = 0
        case .structure: returnClearSize = signature.returns.size
        default: returnClearSize = max(signature.returns.size, chaos_ffi_arg_size())
        }
        cif = .allocate(capacity: 1)
        cif.initialize(to: ffi_cif())

        let count = signature.arguments.count
        let table = UnsafeMutablePointer<UnsafeMutablePointer<ffi_type>?>.allocate(capacity: max(count, 1))
        allocations.append(UnsafeMutableRawPointer(table))
        for (index, argument) in signature.arguments.enumerated() {
            table[index] = makeType(argument)
        }
        let returnType = makeType(signature.returns)
        let status: ffi_status
        if let fixed = signature.fixedArgumentCount {
            status = ffi_prep_cif_var(cif, chaos_ffi_default_abi(), UInt32(fixed), UInt32(count), returnType, table)
        } else {
            status = ffi_prep_cif(cif, chaos_ffi_default_abi(), UInt32(count), returnType, table)
        }
        guard status == FFI_OK else {
            throw ChaosError(
                .signatureMismatch,
                "libffi rejected the signature \(signature) (ffi_status \(status.rawValue)); check struct members and the variadic fixed count"
            )
        }
        // libffi has now laid out every struct type: it must agree with CType.
        for (index, argument) in signature.arguments.enumerated() {
            try Self.check(argument, table[index]!, role: "argument \(index)")
        }
        try Self.check(signature.returns, returnType, role: "the return type")
    }

    deinit {
        for pointer in allocations { pointer.deallocate() }
        cif.deinitialize(count: 1)
        cif.deallocate()
    }

    private static func check(_ type: CType, _ ffiType: UnsafeMutablePointer<ffi_type>, role: String) throws(ChaosError)
    {
        guard case .structure = type else { return }
        if ffiType.pointee.size != type.size || Int(ffiType.pointee.alignment) != type.alignment {
            throw ChaosError(
                .signatureMismatch,
                "\(role): libffi lays out \(type) as \(ffiType.pointee.size) bytes aligned to \(ffiType.pointee.alignment), CType computed \(type.size)/\(type.alignment); this platform's C ABI is not supported, describe the struct as separate arguments"
            )
        }
    }

    /// Builds (or returns libffi's static) `ffi_type` for `type`; struct types and
    /// their null-terminated element arrays are owned by this interface.
    private func makeType(_ type: CType) -> UnsafeMutablePointer<ffi_type> {
        switch type {
        case .void: return chaos_ffi_type_void()
        case .bool, .uint8: return chaos_ffi_type_uint8()
        case .int8: return chaos_ffi_type_sint8()
        case .int16: return chaos_ffi_type_sint16()
        case .uint16: return chaos_ffi_type_uint16()
        case .int32: return chaos_ffi_type_sint32()
        case .uint32: return chaos_ffi_type_uint32()
        case .int64: return chaos_ffi_type_sint64()
        case .uint64: return chaos_ffi_type_uint64()
        case .float: return chaos_ffi_type_float()
        case .double: return chaos_ffi_type_double()
        case .pointer, .cString: return chaos_ffi_type_pointer()
        case .structure(let members):
            let elements = UnsafeMutablePointer<UnsafeMutablePointer<ffi_type>?>.allocate(capacity: members.count + 1)
            allocations.append(UnsafeMutableRawPointer(elements))
            for (index, member) in members.enumerated() {
                elements[index] = makeType(member)
            }
            elements[members.count] = nil
            let structType = UnsafeMutablePointer<ffi_type>.allocate(capacity: 1)
            allocations.append(UnsafeMutableRawPointer(structType))
            structType.initialize(
                to: ffi_type(size: 0, alignment: 0, type: chaos_ffi_type_struct_tag(), elements: elements))
            return structType
        }
    }

    /// libffi's layout of `type` (size, alignment, member offsets), for cross-checks.
    static func libffiLayout(of type: CType) throws(ChaosError) -> (size: Int, alignment: Int, offsets: [Int]) {
        let interface = try FFIInterface(CSignature(returns: type))
        let returnType = interface.cif.pointee.rtype!
        var offsets: [Int] = []
        if case .structure(let members) = type {
            var raw = [Int](repeating: 0, count: members.count)
            let status = raw.withUnsafeMutableBufferPointer {
                ffi_get_struct_offsets(chaos_ffi_default_abi(), returnType, $0.baseAddress)
            }
            guard status == FFI_OK else {
                throw ChaosError(.signatureMismatch, "libffi could not lay out \(type)")
            }
            offsets = raw
        }
        return (Int(returnType.pointee.size), Int(returnType.pointee.alignment), offsets)
    }
}
