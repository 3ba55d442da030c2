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
            throw ChaosError(
                .systemFailure, subject: what,
                "could not write the slot at 0x\(String(address, radix: 16)): \(reason); the page may be sealed or the image unloaded"
            )
        }
        return UInt(bitPattern: previous)
    }

    /// Writes many slots at once (each page's protection is looked up and lifted once) and
    /// returns, per write, the previous bytes or the error; a failed write changed nothing.
    /// `what(i)` names write i in its error.
    static func write(_ writes: [(address: UInt, value: UInt)], what: (Int) -> String) -> [Result<UInt, ChaosError>] {
        guard !writes.isEmpty else { return [] }
        var batch = writes.map { write in
            chaos_elf_write(
                slot: UnsafeMutableRawPointer(bitPattern: write.address)!.assumingMemoryBound(
                    to: UnsafeMutableRawPointer?.self),
                value: UnsafeMutableRawPointer(bitPattern: write.value), previous: nil, result: 0)
        }
        _ = batch.withUnsafeMutableBufferPointer { chaos_elf_write_slots($0.baseAddress, $0.count) }
        return batch.enumerated().map { index, write in
            guard write.result == 0 else {
                let reason = String(cString: strerror(write.result))
                return .failure(
                    ChaosError(
                        .systemFailure, subject: what(index),
                        "could not write the slot at 0x\(String(writes[index].address, radix: 16)): \(reason); the page may be sealed or the image unloaded"
                    ))
            }
            return .success(UInt(bitPattern: write.previous))
        }
    }

    /// PROT_* bits of the mapping containing `address`, or -1 when unmapped.
    static func protection(_ address: UInt) -> Int32 {
        chaos_elf_protection(UnsafeRawPointer(bitPattern: address))
    }

    static func hex(_ value: UInt) -> String { "0x" + String(value, radix: 16) }
}
