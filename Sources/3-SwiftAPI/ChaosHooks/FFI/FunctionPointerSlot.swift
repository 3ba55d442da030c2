public import ChaosKit
import Synchronization

/// Any memory that holds a C function pointer — typically a member of a callbacks
/// struct — rebound to an ``FFIClosure`` and later restored byte for byte.
///
/// ```swift
/// let slot = try FunctionPointerSlot(&table.pointee.add)   // UnsafeMutablePointer<fnptr?>
/// try slot.bind(to: closure)      // table.add now calls the closure
/// try slot.revert()               // table.add holds exactly its old bytes again
/// ```
///
/// Binding records the slot's current bytes, fills in the closure's ``FFIClosure/original``
/// when it has none, and registers the slot process-wide: binding a slot that another
/// ChaosHooks hook already owns, or that holds a ChaosHooks closure put there by other
/// means, throws `.alreadyHooked` and changes nothing. The write is atomic, so C code
/// calling through the slot concurrently sees either the old or the new function.
///
/// The slot must stay valid memory until it is reverted. Dropping a bound
/// `FunctionPointerSlot` does not revert it; the closure then stays alive (held by the
/// process-wide hook registry) so the slot never points at freed code.
public final class FunctionPointerSlot: Sendable {
    private let addressBits: UInt
    private let state = Locked<Binding?>(nil)

    private struct Binding {
        let closure: FFIClosure
        let originalBytes: UInt
    }

    /// A slot at `address`, which must be pointer-aligned.
    public init(_ address: UnsafeMutableRawPointer) throws(ChaosError) {
        let bits = UInt(bitPattern: address)
        guard bits % UInt(MemoryLayout<UnsafeRawPointer>.alignment) == 0 else {
            throw ChaosError(
                .signatureMismatch,
                "the slot at \(address) is not pointer-aligned; pass the address of a function-pointer variable or struct member"
            )
        }
        self.addressBits = bits
    }

    /// A slot holding a function pointer of type `Function` (a `@convention(c)`
    /// function type, usually optional, as C struct members import).
    public convenience init<Function>(_ slot: UnsafeMutablePointer<Function>) throws(ChaosError) {
        guard MemoryLayout<Function>.size == MemoryLayout<UnsafeRawPointer>.size else {
            throw ChaosError(
                .signatureMismatch,
                "\(Function.self) is not pointer-sized; pass a pointer to a C function-pointer member")
        }
        try self.init(UnsafeMutableRawPointer(slot))
    }

    /// Where the function pointer lives.
    public var address: UnsafeMutableRawPointer { UnsafeMutableRawPointer(bitPattern: addressBits)! }

    /// What the slot holds right now (atomic read).
    public var currentValue: UnsafeRawPointer? { UnsafeRawPointer(bitPattern: SlotMemory.read(addressBits)) }

    /// The bytes the slot held before ``bind(to:)``, while bound.
    public var originalValue: UnsafeRawPointer? {
        state.withLock { $0.map { UnsafeRawPointer(bitPattern: $0.originalBytes) } ?? nil }
    }

    /// Whether the slot currently points at a closure bound through this object.
    public var isBound: Bool { state.withLock { $0 != nil } }

    /// Points the slot at `closure`.
    ///
    /// - Throws: `.alreadyApplied` if this object is already bound; `.alreadyHooked` if
    ///   another hook owns the slot; `.systemFailure` if the memory cannot be written;
    ///   `.notApplied` if the closure was invalidated. Nothing changes on error.
    public func bind(to closure: FFIClosure) throws(ChaosError) {
        let what = "function-pointer slot \(SlotMemory.hex(addressBits))"
        try state.withLock { (binding: inout Binding?) throws(ChaosError) in
            guard binding == nil else {
                throw ChaosError(
                    .alreadyApplied, subject: what, "this slot is already bound; call revert() before binding it again")
            }
            guard closure.isValid else {
                throw ChaosError(.notApplied, subject: what, "the closure was invalidated; create a new FFIClosure")
            }
            binding = try HookRegistry.state.withLock {
                (registry: inout HookRegistryState) throws(ChaosError) -> Binding in
                if let owner = registry.ownedSlots[addressBits] {
                    throw ChaosError(
                        .alreadyHooked, subject: what,
                        "the slot is already hooked by \(owner.description); revert that hook first")
                }
                let current = SlotMemory.read(addressBits)
                if registry.liveClosures.contains(current) {
                    throw ChaosError(
                        .alreadyHooked, subject: what,
                        "the slot already points at a ChaosHooks closure that was stored there without bind(to:); restore the slot's real function first"
                    )
                }
                closure.adoptOriginal(current)
                let previous = try SlotMemory.write(addressBits, closure.code, what: what)
                registry.ownedSlots[addressBits] = SlotOwner(
                    owner: ObjectIdentifier(self), description: what, closure: closure)
                closure.bindings.add(1, ordering: .relaxed)
                return Binding(closure: closure, originalBytes: previous)
            }
        }
    }

    /// Writes the original bytes back.
    ///
    /// - Throws: `.notApplied` when not bound; `.alreadyHooked` when something else
    ///   overwrote the slot after ``bind(to:)`` (the slot is then left as it is, and this
    ///   object counts as reverted); `.systemFailure` when the write fails (still bound).
    public func revert() throws(ChaosError) {
        let what = "function-pointer slot \(SlotMemory.hex(addressBits))"
        try state.withLock { (binding: inout Binding?) throws(ChaosError) in
            guard let bound = binding else {
                throw ChaosError(.notApplied, subject: what, "the slot is not bound; nothing to revert")
            }
            let overwritten = try HookRegistry.state.withLock {
                (registry: inout HookRegistryState) throws(ChaosError) -> UInt? in
                let current = SlotMemory.read(addressBits)
                if current == bound.closure.code {
                    _ = try SlotMemory.write(addressBits, bound.originalBytes, what: what)
                }
                registry.ownedSlots[addressBits] = nil
                bound.closure.bindings.subtract(1, ordering: .relaxed)
                return current == bound.closure.code ? nil : current
            }
            binding = nil
            if let overwritten {
                throw ChaosError(
                    .alreadyHooked, subject: what,
                    "the slot was changed to \(SlotMemory.hex(overwritten)) by something else after bind; it was left alone, restore it yourself if needed"
                )
            }
        }
    }
}
