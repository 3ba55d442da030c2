#if os(Linux)
import CHookFixtures
import ChaosKit
import Foundation
import Synchronization
import Testing

@testable import ChaosHooks

#if canImport(Glibc)
import Glibc
#endif

/// Reverted `clock_gettime` rebindings, kept for the life of the test process. libdispatch's
/// threads call `clock_gettime` all the time: one that loaded the patched slot just before
/// revert still enters the closure afterwards, and a closure freed when its test ended was
/// entered after free (a ThreadSanitizer run caught it). Dropping a reverted raw-handler
/// rebinding while other threads may call the symbol is that race in ChaosHooks itself
/// (see the closing note of the stop that added this); the tests do not drop theirs.
private let revertedButKept = Mutex<[SymbolRebinding]>([])

private let testVariable = "CHAOSKIT_HOOKS_TEST_VARIABLE"
// C strings that live for the whole test process (addresses only, so Sendable).
private let testVariableC = UInt(bitPattern: strdup(testVariable))
private let hookedValueC = UInt(bitPattern: strdup("hooked"))

private func getenvRebinding(images: ImageFilter = .all) throws -> SymbolRebinding {
    try SymbolRebinding(
        symbol: "getenv", signature: CSignature(returns: .cString, arguments: [.cString]), images: images
    ) { call in
        if let name = try call.argument(0, as: UnsafePointer<CChar>?.self),
            strcmp(name, UnsafePointer(bitPattern: testVariableC)!) == 0
        {
            try call.setReturn(UnsafeRawPointer(bitPattern: hookedValueC))
        } else {
            try call.callOriginal()
        }
    }
}

/// Snapshot of every GOT slot for `symbol`: address → (bytes, page protection).
private func slotSnapshot(_ symbol: String) throws -> [UInt: (UInt, Int32)] {
    var snapshot: [UInt: (UInt, Int32)] = [:]
    for slot in try ImageScan(symbol: symbol, images: .all).slots {
        snapshot[slot.address] = (SlotMemory.read(slot.address), SlotMemory.protection(slot.address))
    }
    return snapshot
}

/// Whether a slot holds what it held, or what the dynamic linker legitimately put there
/// since: other tests in this process keep calling `getenv`, and a lazily bound slot that
/// held its PLT stub gets bound to the real function on such a call.
private func sameOrBound(_ now: UInt?, _ was: UInt, resolved: UInt) -> Bool {
    now == was || now == resolved
}

private func expectIdentical(
    _ a: [UInt: (UInt, Int32)], _ b: [UInt: (UInt, Int32)],
    resolved: UInt = UInt(bitPattern: chaos_elf_dlsym_default_for_tests("getenv"))
) {
    #expect(a.count == b.count)
    for (address, (bytes, protection)) in a {
        #expect(sameOrBound(b[address]?.0, bytes, resolved: resolved), "slot \(SlotMemory.hex(address)) bytes changed")
        #expect(b[address]?.1 == protection, "slot \(SlotMemory.hex(address)) protection changed")
    }
}

private func getenvString(_ name: String) -> String? {
    chaos_fx_getenv(name).map { String(cString: $0) }
}

/// These tests rebind process-wide symbols: they run one at a time.
extension ProcessWideHookTests {
    @Suite(.serialized) struct SymbolRebindingTests {
        @Test func getenvRebindingChangesResultsAndRevertRestoresBytes() throws {
            setenv(testVariable, "real", 1)
            _ = getenvString(testVariable)  // resolve this binary's lazy slot first
            let before = try slotSnapshot("getenv")
            #expect(!before.isEmpty)
            let rebinding = try getenvRebinding()
            #expect(rebinding.original == UnsafeRawPointer(chaos_elf_dlsym_default_for_tests("getenv")))

            try rebinding.apply()
            #expect(rebinding.isApplied)
            #expect(getenvString(testVariable) == "hooked")  // C code in this binary
            #expect(getenv(testVariable).map { String(cString: $0) } == "hooked")  // Swift code
            #expect(getenvString("PATH") == String(cString: realGetenv("PATH")))  // pass-through
            let patched = rebinding.patchedSlots
            #expect(patched.count == before.count)
            for slot in patched {
                #expect(slot.originalBytes == before[slot.addressBits]?.0)
                #expect(SlotMemory.read(slot.addressBits) == rebinding.closure.code)
                // RELRO pages are read-only again after the write.
                #expect(SlotMemory.protection(slot.addressBits) == before[slot.addressBits]?.1)
            }

            try rebinding.revert()
            let after = try slotSnapshot("getenv")
            #expect(!rebinding.isApplied)
            #expect(getenvString(testVariable) == "real")
            let resolved = UInt(bitPattern: chaos_elf_dlsym_default_for_tests("getenv"))
            expectIdentical(before, after, resolved: resolved)
            for slot in patched {
                #expect(sameOrBound(after[slot.addressBits]?.0, slot.originalBytes, resolved: resolved))
            }
            unsetenv(testVariable)
        }

        @Test func clockGettimeRebindingMovesFoundationDate() throws {
            let shift = 30 * 365 * 86_400
            // The slots are process-wide, but only this (synchronous) test's thread sees the
            // shift: tests running in parallel keep the real time.
            let testThread = pthread_self()
            let rebinding = try SymbolRebinding(
                symbol: "clock_gettime", signature: CSignature(returns: .int32, arguments: [.int32, .pointer])
            ) { call in
                try call.callOriginal()
                if pthread_equal(pthread_self(), testThread) != 0,
                    try call.argument(0, as: Int32.self) == CLOCK_REALTIME,
                    let time = try call.argument(1, as: UnsafeMutablePointer<timespec>?.self)
                {
                    time.pointee.tv_sec -= shift
                }
            }
            let real = Date()  // also resolves Foundation's lazy slot before the snapshot
            let before = try slotSnapshot("clock_gettime")
            try rebinding.apply()
            let shifted = Date()
            try rebinding.revert()
            revertedButKept.withLock { $0.append(rebinding) }
            let after = try slotSnapshot("clock_gettime")
            let restored = Date()

            #expect(abs(shifted.timeIntervalSince(real) + Double(shift)) < 5)
            #expect(abs(restored.timeIntervalSince1970 - Double(time(nil))) < 2)  // time() truncates to whole seconds
            expectIdentical(
                before, after, resolved: UInt(bitPattern: chaos_elf_dlsym_default_for_tests("clock_gettime")))
        }

        @Test func unknownSymbolsAreReportedWithTheImagesSearched() throws {
            #expect {
                try SymbolRebinding(symbol: "chaos_no_such_symbol_anywhere", signature: CSignature(returns: .void)) {
                    _ in
                }
            } throws: { error in
                guard let error = error as? ChaosError else { return false }
                return error.kind == .symbolNotFound && error.subject == "chaos_no_such_symbol_anywhere"
            }
            // libc defines getenv but imports it through no GOT slot.
            let rebinding = try getenvRebinding(images: .pathContains("libc.so.6"))
            #expect { try rebinding.apply() } throws: { error in
                guard let error = error as? ChaosError else { return false }
                return error.kind == .symbolNotFound && error.message.contains("libc.so.6")
                    && error.message.contains("1 image(s) searched")
            }
            #expect(!rebinding.isApplied)
        }

        @Test func secondRebindingOfAnOwnedSlotIsRefused() throws {
            let first = try getenvRebinding()
            let second = try getenvRebinding()
            try first.apply()
            let during = try slotSnapshot("getenv")
            #expect { try second.apply() } throws: { ($0 as? ChaosError)?.kind == .alreadyHooked }
            #expect(!second.isApplied)
            expectIdentical(during, try slotSnapshot("getenv"))
            #expect { try first.apply() } throws: { ($0 as? ChaosError)?.kind == .alreadyApplied }
            try first.revert()
            #expect { try first.revert() } throws: { ($0 as? ChaosError)?.kind == .notApplied }
            // Once reverted, the other rebinding may apply.
            try second.apply()
            try second.revert()
        }

        @Test func slotHookedBySomethingElseIsRefusedAndNothingChanges() throws {
            let slots = try ImageScan(symbol: "getenv", images: .all).slots
            let victim = try #require(slots.first)
            let real: @convention(c) (Int32, Int32) -> Int32 = chaos_fx_real_add
            let foreign = UInt(bitPattern: unsafeBitCast(real, to: UnsafeRawPointer.self))
            let saved = try SlotMemory.write(victim.address, foreign, what: "test")
            defer { _ = try? SlotMemory.write(victim.address, saved, what: "test") }
            let before = try slotSnapshot("getenv")

            let rebinding = try getenvRebinding()
            #expect { try rebinding.apply() } throws: { error in
                guard let error = error as? ChaosError else { return false }
                return error.kind == .alreadyHooked && error.message.contains("something else")
                    && error.message.contains(victim.imagePath)
            }
            #expect(!rebinding.isApplied)
            expectIdentical(before, try slotSnapshot("getenv"))
        }

        @Test func refreshPatchesImagesLoadedLater() throws {
            let library = "liblzma.so.5"
            if let loaded = dlopen(library, RTLD_NOW | RTLD_NOLOAD) {
                dlclose(loaded)
                return  // already part of the process: nothing "loaded later" to test with
            }
            let rebinding = try SymbolRebinding(
                symbol: "clock_gettime", signature: CSignature(returns: .int32, arguments: [.int32, .pointer])
            ) { call in try call.callOriginal() }
            #expect { try rebinding.refresh() } throws: { ($0 as? ChaosError)?.kind == .notApplied }
            try rebinding.apply()
            let initial = rebinding.patchedSlots.count
            let handle = try #require(dlopen(library, RTLD_NOW | RTLD_LOCAL))
            let added = try rebinding.refresh()
            #expect(added >= 1)
            #expect(rebinding.patchedSlots.count == initial + added)
            let lzma = rebinding.patchedSlots.filter { $0.imagePath.contains("liblzma") }
            #expect(!lzma.isEmpty)
            for slot in lzma {
                #expect(slot.originalBytes == UInt(bitPattern: rebinding.original))
                #expect(SlotMemory.read(slot.addressBits) == rebinding.closure.code)
            }
            #expect(try rebinding.refresh() == 0)
            try rebinding.revert()
            revertedButKept.withLock { $0.append(rebinding) }
            for slot in lzma {
                #expect(SlotMemory.read(slot.addressBits) == slot.originalBytes)
            }
            dlclose(handle)
        }
    }
}

private func realGetenv(_ name: String) -> UnsafePointer<CChar> {
    let function = unsafeBitCast(
        chaos_elf_dlsym_default_for_tests("getenv"),
        to: (@convention(c) (UnsafePointer<CChar>) -> UnsafePointer<CChar>?).self)
    return function(name) ?? UnsafePointer(strdup("")!)
}

// swift-format-ignore: AlwaysUseLowerCamelCase
private func chaos_elf_dlsym_default_for_tests(_ name: String) -> UnsafeMutableRawPointer? {
    dlsym(UnsafeMutableRawPointer(bitPattern: 0), name)
}
#endif
