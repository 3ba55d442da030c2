#if os(Linux)
import CChaosELF
import CHookFixtures
import ChaosKit
import Foundation
import Testing

@testable import ChaosHooks

#if canImport(Glibc)
import Glibc
#endif

/// Bytes and page protection of every slot of `symbols`.
private func snapshot(_ symbols: [String]) throws -> [UInt: (UInt, Int32)] {
    var result: [UInt: (UInt, Int32)] = [:]
    for symbol in symbols {
        for slot in try ImageScan(symbol: symbol, images: .all).slots {
            result[slot.address] = (SlotMemory.read(slot.address), SlotMemory.protection(slot.address))
        }
    }
    return result
}

/// Equal, except that a lazily bound slot may have been bound to `resolved` meanwhile.
private func sameSlots(_ a: [UInt: (UInt, Int32)], _ b: [UInt: (UInt, Int32)], resolved: Set<UInt>) -> Bool {
    a.count == b.count
        && a.allSatisfy { address, was in
            guard let now = b[address] else { return false }
            return (now.0 == was.0 || resolved.contains(now.0)) && now.1 == was.1
        }
}

private let groupVariable = "CHAOSKIT_GROUP_TEST_VARIABLE"
private let groupVariableC = UInt(bitPattern: strdup(groupVariable))
private let groupValueC = UInt(bitPattern: strdup("grouped"))

private func getenvHook() throws -> SymbolRebinding {
    try SymbolRebinding(symbol: "getenv", signature: CSignature(returns: .cString, arguments: [.cString])) { call in
        if let name = try call.argument(0, as: UnsafePointer<CChar>?.self),
            strcmp(name, UnsafePointer(bitPattern: groupVariableC)!) == 0
        {
            try call.setReturn(UnsafeRawPointer(bitPattern: groupValueC))
        } else {
            try call.callOriginal()
        }
    }
}

private func passThrough(_ symbol: String, _ signature: CSignature) throws -> SymbolRebinding {
    try SymbolRebinding(symbol: symbol, signature: signature) { call in try call.callOriginal() }
}

extension ProcessWideHookTests {
    @Suite(.serialized) struct GroupRebindingTests {
        let resolved = Set(
            (["getenv", "clock_gettime"] as [String]).map { UInt(bitPattern: chaos_elf_dlsym_default($0)) })

        @Test func aGroupAppliesInOneBatchSkipsOptionalSymbolsNobodyImportsAndRevertsByteForByte() throws {
            _ = Date()  // bind lazily bound slots before the snapshot
            let before = try snapshot(["getenv", "clock_gettime"])
            let getenv = try getenvHook()
            let clock = try passThrough("clock_gettime", CSignature(returns: .int32, arguments: [.int32, .pointer]))
            // Defined by libc, imported by nothing loaded here.
            let unused = try passThrough("memfrob", CSignature(returns: .pointer, arguments: [.pointer, .uint64]))
            let applied = try SymbolRebinding.apply(together: [getenv, clock, unused, getenv]) { $0 === unused }
            #expect(Set(applied.map(ObjectIdentifier.init)) == [ObjectIdentifier(getenv), ObjectIdentifier(clock)])
            #expect(getenv.isApplied && clock.isApplied && !unused.isApplied)
            #expect(chaos_fx_getenv_for_group(groupVariable) == "grouped")
            #expect(abs(Date().timeIntervalSince1970 - Double(time(nil))) < 2, "the pass-through clock")
            #expect(getenv.patchedSlots.count + clock.patchedSlots.count == before.count)
            for slot in getenv.patchedSlots + clock.patchedSlots {
                #expect(
                    SlotMemory.protection(slot.addressBits) == before[slot.addressBits]?.1,
                    "protection of \(slot.imagePath)")
            }
            #expect { try SymbolRebinding.apply(together: [clock]) } throws: {
                ($0 as? ChaosError)?.kind == .alreadyApplied
            }

            try SymbolRebinding.revert(together: [clock, getenv])
            #expect(!getenv.isApplied && !clock.isApplied)
            #expect(sameSlots(before, try snapshot(["getenv", "clock_gettime"]), resolved: resolved))
            #expect(chaos_fx_getenv_for_group(groupVariable) == nil)
        }

        @Test func aGroupIsAllOrNothing() throws {
            let before = try snapshot(["getenv"])
            let getenv = try getenvHook()
            let unused = try passThrough("memfrob", CSignature(returns: .pointer, arguments: [.pointer, .uint64]))
            #expect { try SymbolRebinding.apply(together: [getenv, unused]) } throws: {
                ($0 as? ChaosError)?.kind == .symbolNotFound && ($0 as? ChaosError)?.subject == "memfrob"
            }
            let twice = try getenvHook()
            #expect { try SymbolRebinding.apply(together: [getenv, twice]) } throws: {
                ($0 as? ChaosError)?.kind == .alreadyHooked
                    && ($0 as? ChaosError)?.message.contains("same group") == true
            }
            #expect(!getenv.isApplied && !twice.isApplied)
            #expect(sameSlots(before, try snapshot(["getenv"]), resolved: resolved))
            try getenv.apply()
            #expect { try SymbolRebinding.revert(together: [getenv, twice]) } throws: {
                ($0 as? ChaosError)?.kind == .notApplied
            }
            #expect(getenv.isApplied, "nothing was reverted")
            try SymbolRebinding.revert(together: [getenv])
            #expect(sameSlots(before, try snapshot(["getenv"]), resolved: resolved))
            #expect(try SymbolRebinding.apply(together: []).isEmpty)
            try SymbolRebinding.revert(together: [])
        }
    }
}

/// getenv called from C code in the test binary (through its GOT).
// swift-format-ignore: AlwaysUseLowerCamelCase
private func chaos_fx_getenv_for_group(_ name: String) -> String? {
    chaos_fx_getenv(name).map { String(cString: $0) }
}
#endif
