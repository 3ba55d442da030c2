import CChaosELF
import ChaosKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Who owns a slot ChaosHooks has written, and the closure it points at (kept alive
/// here for as long as the slot is bound).
struct SlotOwner {
    let owner: ObjectIdentifier
    let description: String
    /// Nil for slots pointed at C code (the system clock's typed hooks).
    let closure: FFIClosure?
}

/// Process-wide bookkeeping: every slot ChaosHooks currently owns and every live closure
/// entry point. All slot writes happen while holding this lock, so "check it is not
/// owned, then write it" is atomic with respect to other ChaosHooks hooks.
struct HookRegistryState {
    var ownedSlots: [UInt: SlotOwner] = [:]
    var liveClosures: Set<UInt> = []
}

enum HookRegistry {
    static let state = Locked(HookRegistryState())
}

/// Reading and writing pointer-sized slots (one place for the system calls).
enum SlotMemory {
    static func read(_ address: UInt) -> UInt {
        let slot = UnsafeRawPointer(bitPattern: address)!.assumingMemoryBound(to: UnsafeMutableRawPointer?.self)
        return UInt(bitPattern: chaos_elf_read_slot(slot))
    }

    /// Writes `value` (making the page writable for the moment when needed) and returns
    /// the previous bytes. On failure nothing was written.
    static func write(_ address: UInt, _ value: UInt, what: String) throws(ChaosError) -> UInt {
        let slot = UnsafeMutableRawPointer(bitPattern: address)!.assumingMemoryBound(to: UnsafeMutableRawPointer?.self)
        var previous: UnsafeMutableRawPointer?
        let status = chaos_elf_write_slot(slot, UnsafeMutableRawPointer(bitPattern: value), &previous)
        guard status == 0 else {
            let reason = String(cString: strerror(status))
            throw ChaosError(.systemFailure, subject: what, "could not write the slot at 0x\(String(address, radix: 16)): \(reason); the page may be sealed or the image unloaded")
        }
        return UInt(bitPattern: previous)
    }

    /// PROT_* bits of the mapping containing `address`, or -1 when unmapped.
    static func protection(_ address: UInt) -> Int32 {
        chaos_elf_protection(UnsafeRawPointer(bitPattern: address))
    }

    static func hex(_ value: UInt) -> String { "0x" + String(value, radix: 16) }
}
