import CHookFixtures
import ChaosKit
import Dispatch
import Synchronization
import Testing

@testable import ChaosHooks

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The slot of one member of the fixture's global callbacks table.
func tableSlot<F>(_ member: KeyPath<chaos_fx_callbacks, F>) throws -> FunctionPointerSlot {
    let offset = MemoryLayout<chaos_fx_callbacks>.offset(of: member)!
    return try FunctionPointerSlot(UnsafeMutableRawPointer(chaos_fx_table_slot(offset)!))
}

/// Binds a closure to a table member, runs `body`, reverts and checks that the exact
/// original pointer is back.
func withTableHook<F>(
    _ member: KeyPath<chaos_fx_callbacks, F>, _ signature: CSignature,
    _ handler: @escaping FFIClosure.Handler, body: (FFIClosure) throws -> Void
) throws {
    let slot = try tableSlot(member)
    let before = slot.currentValue
    let closure = try FFIClosure(signature: signature, handler: handler)
    try slot.bind(to: closure)
    #expect(slot.isBound)
    #expect(slot.currentValue == closure.functionPointer)
    #expect(slot.originalValue == before)
    #expect(closure.original == before)
    try body(closure)
    try slot.revert()
    #expect(slot.currentValue == before)
    #expect(!slot.isBound)
    try closure.invalidate()
    #expect(!closure.isValid)
}

/// Every test here rewrites the one global callbacks table, so they run one at a time.
extension ProcessWideHookTests {
    @Suite(.serialized) struct CallbackTableTests {
        @Test func intClosureReplacesResultAndRevertRestores() throws {
            let signature = try CSignature(returns: .int32, arguments: [.int32, .int32])
            #expect(chaos_fx_call_add(6, 7) == 13)
            try withTableHook(
                \.add, signature,
                { call in
                    let a = try call.argument(0, as: Int32.self)
                    let b = try call.argument(1, as: Int32.self)
                    try call.setReturn(a * b)
                }
            ) { _ in
                #expect(chaos_fx_call_add(6, 7) == 42)
                #expect(chaos_fx_call_add(-3, 7) == -21)
            }
            #expect(chaos_fx_call_add(6, 7) == 13)
        }

        @Test func callOriginalWithModifiedArguments() throws {
            let signature = try CSignature(returns: .int32, arguments: [.int32, .int32])
            try withTableHook(
                \.add, signature,
                { call in
                    try call.setArgument(1, Int32(100))
                    try call.callOriginal()
                    #expect(try call.returnValue(as: Int32.self) == 101)
                    #expect(call.returnValue() == .int32(101))
                }
            ) { _ in
                #expect(chaos_fx_call_add(1, 2) == 101)
            }
        }

        @Test func doubleClosure() throws {
            let signature = try CSignature(returns: .double, arguments: [.double, .double])
            try withTableHook(
                \.scale, signature,
                { call in
                    try call.callOriginal()
                    try call.setReturn(try call.returnValue(as: Double.self) + 0.5)
                }
            ) { _ in
                #expect(chaos_fx_call_scale(1.5, 4) == 6.5)
            }
            #expect(chaos_fx_call_scale(1.5, 4) == 6)
        }

        @Test func floatAndNarrowIntegers() throws {
            try withTableHook(
                \.half, try CSignature(returns: .float, arguments: [.float]),
                { call in
                    try call.setReturn(try call.argument(0, as: Float.self) * 3)
                }
            ) { _ in
                #expect(chaos_fx_call_half(2) == 6)
            }
            try withTableHook(
                \.negate8, try CSignature(returns: .int8, arguments: [.int8]),
                { call in
                    try call.callOriginal()
                    let negated = try call.returnValue(as: Int8.self)
                    try call.setReturn(CValue.int64(Int64(negated) - 1))
                }
            ) { _ in
                #expect(chaos_fx_call_negate8(5) == -6)
                #expect(chaos_fx_call_negate8(-100) == 99)
            }
        }

        @Test func structByValueArgumentsAndReturn() throws {
            let point = CType.structure([.double, .double])
            let signature = try CSignature(returns: point, arguments: [point, .double, .double])
            try withTableHook(
                \.move, signature,
                { call in
                    var p = try call.structure(0, as: chaos_fx_point.self)
                    p.x *= 10
                    try call.setStructure(0, p)
                    try call.callOriginal()
                    var moved = try #require(call.returnValue().structureBytes)
                    #expect(moved.count == 16)
                    moved.withUnsafeMutableBytes { $0.storeBytes(of: 0.25, toByteOffset: 8, as: Double.self) }
                    try call.setReturn(.structure(moved))
                }
            ) { _ in
                let result = chaos_fx_call_move(chaos_fx_point(x: 1, y: 2), 3, 4)
                #expect(result.x == 13)
                #expect(result.y == 0.25)
            }
            let plain = chaos_fx_call_move(chaos_fx_point(x: 1, y: 2), 3, 4)
            #expect(plain.x == 4 && plain.y == 6)
        }

        @Test func largeNestedStructReturnedInMemory() throws {
            let nested = CType.structure([.structure([.double, .double]), .int32])
            let signature = try CSignature(returns: nested, arguments: [nested, .int32])
            try withTableHook(
                \.tag, signature,
                { call in
                    var n = try call.structure(0, as: chaos_fx_nested.self)
                    n.point.y = -1
                    try call.setReturnStructure(n)
                }
            ) { _ in
                let result = chaos_fx_call_tag(chaos_fx_nested(point: chaos_fx_point(x: 7, y: 8), tag: 1), 99)
                #expect(result.point.x == 7 && result.point.y == -1 && result.tag == 1)
            }
            let real = chaos_fx_call_tag(chaos_fx_nested(point: chaos_fx_point(x: 7, y: 8), tag: 1), 99)
            #expect(real.tag == 99)
        }

        @Test func mixedStructAsValue() throws {
            let mixed = CType.structure([.int32, .int8, .int64])
            try withTableHook(
                \.sum_mixed, try CSignature(returns: .int64, arguments: [mixed]),
                { call in
                    let bytes = try #require(try call.value(at: 0).structureBytes)
                    #expect(bytes.count == 16)
                    let m = try call.structure(0, as: chaos_fx_mixed.self)
                    #expect(m.a == 1 && m.b == 2 && m.c == 3)
                    try call.setValue(
                        .structure(
                            bytes.withUnsafeBytes { raw in
                                var copy = Array(raw)
                                copy.withUnsafeMutableBytes {
                                    $0.storeBytes(of: Int64(1000), toByteOffset: 8, as: Int64.self)
                                }
                                return copy
                            }), at: 0)
                    try call.callOriginal()
                }
            ) { _ in
                #expect(chaos_fx_call_sum_mixed(chaos_fx_mixed(a: 1, b: 2, c: 3)) == 1003)
            }
        }

        @Test func pointerWriteThroughAndCString() throws {
            let signature = try CSignature(returns: .int32, arguments: [.pointer, .cString])
            try withTableHook(
                \.fill, signature,
                { call in
                    #expect(try call.string(at: 1) == "hello")
                    try call.write(Int32(99), throughArgument: 0)
                    try call.setReturn(Int32(7))
                }
            ) { _ in
                var out: Int32 = 0
                #expect(chaos_fx_call_fill(&out, "hello") == 7)
                #expect(out == 99)
            }
            var out: Int32 = 0
            #expect(chaos_fx_call_fill(&out, "hello") == 0)
            #expect(out == 5)
        }

        @Test func voidFunction() throws {
            let signature = try CSignature(returns: .void, arguments: [.int32])
            try withTableHook(
                \.notify, signature,
                { call in
                    try call.setArgument(0, try call.argument(0, as: Int32.self) + 1)
                    try call.callOriginal()
                }
            ) { _ in
                chaos_fx_call_notify(41)
                #expect(chaos_fx_last_notified() == 42)
            }
            try withTableHook(\.notify, signature, { _ in }) { _ in
                chaos_fx_call_notify(7)
                #expect(chaos_fx_last_notified() == 42)
            }
        }

        @Test func errnoSetByHandlerSurvives() throws {
            let signature = try CSignature(returns: .int32, arguments: [.int32])
            try withTableHook(
                \.fail, signature,
                { call in
                    try call.callOriginal()
                    #expect(call.errno == 5)
                    call.errno = ECONNREFUSED
                    try call.setReturn(Int32(-2))
                    _ = String(repeating: "allocate after setting errno", count: 10).uppercased()
                }
            ) { _ in
                var seen: Int32 = 0
                #expect(chaos_fx_call_fail(5, &seen) == -2)
                #expect(seen == ECONNREFUSED)
            }
            // Without an errno from the handler, the original's errno reaches the caller even
            // though Swift code ran after it.
            try withTableHook(
                \.fail, signature,
                { call in
                    try call.callOriginal()
                    _ = [Int](repeating: 1, count: 100).map { String($0) }.joined()
                }
            ) { _ in
                var seen: Int32 = 0
                #expect(chaos_fx_call_fail(EACCES, &seen) == -1)
                #expect(seen == EACCES)
            }
            // Neither the original nor an errno from the handler: the caller keeps the errno it
            // had (0 here), not one left by the handler's own system calls (close(-1): EBADF).
            try withTableHook(
                \.fail, signature,
                { call in
                    #expect(close(-1) == -1 && Glibc.errno == EBADF)
                    try call.setReturn(Int32(7))
                }
            ) { _ in
                var seen: Int32 = -1
                #expect(chaos_fx_call_fail(EACCES, &seen) == 7)
                #expect(seen == 0)
            }
        }

        @Test func throwingHandlerFallsBackToOriginal() throws {
            let signature = try CSignature(returns: .int32, arguments: [.int32, .int32])
            try withTableHook(
                \.add, signature,
                { call in
                    _ = try call.argument(0, as: Double.self)  // wrong type: throws
                    try call.setReturn(Int32(0))
                }
            ) { closure in
                #expect(chaos_fx_call_add(2, 3) == 5)
                let error = try #require(closure.lastError as? ChaosError)
                #expect(error.kind == .signatureMismatch)
                #expect(error.message.contains("int32_t"))
            }
            // No original and nothing returned: zero.
            let lonely = try FFIClosure(signature: signature) { call in try call.callOriginal() }
            let add = try lonely.functionPointer(as: (@convention(c) (Int32, Int32) -> Int32).self)
            #expect(add(2, 3) == 0)
            #expect((lonely.lastError as? ChaosError)?.kind == .notApplied)
        }

        @Test func closureCalledDirectlyWithExplicitOriginal() throws {
            let signature = try CSignature(returns: .int32, arguments: [.int32, .int32])
            let real: @convention(c) (Int32, Int32) -> Int32 = chaos_fx_real_add
            let closure = try FFIClosure(signature: signature, original: unsafeBitCast(real, to: UnsafeRawPointer.self))
            { call in
                try call.callOriginal()
                try call.setReturn(try call.returnValue(as: Int32.self) * 2)
            }
            let doubled = try closure.functionPointer(as: (@convention(c) (Int32, Int32) -> Int32).self)
            #expect(doubled(20, 1) == 42)
            #expect(throws: ChaosError.self) { try closure.functionPointer(as: (Int, Int).self) }
        }

        @Test func secondHookOnOwnedSlotIsRefused() throws {
            let signature = try CSignature(returns: .int32, arguments: [.int32, .int32])
            let first = try tableSlot(\.add)
            let second = try tableSlot(\.add)
            let one = try FFIClosure(signature: signature) { call in try call.setReturn(Int32(1)) }
            let two = try FFIClosure(signature: signature) { call in try call.setReturn(Int32(2)) }
            try first.bind(to: one)
            #expect { try second.bind(to: two) } throws: { ($0 as? ChaosError)?.kind == .alreadyHooked }
            #expect { try first.bind(to: two) } throws: { ($0 as? ChaosError)?.kind == .alreadyApplied }
            #expect(chaos_fx_call_add(5, 5) == 1)
            #expect(!second.isBound)
            #expect { try one.invalidate() } throws: { ($0 as? ChaosError)?.kind == .alreadyApplied }
            try first.revert()
            #expect { try first.revert() } throws: { ($0 as? ChaosError)?.kind == .notApplied }
            #expect(chaos_fx_call_add(5, 5) == 10)

            // A closure pointer stored in a slot without bind(to:) is recognised as ours.
            let raw = try tableSlot(\.scale)
            let before = raw.currentValue
            _ = try SlotMemory.write(UInt(bitPattern: raw.address), one.code, what: "test")
            #expect { try raw.bind(to: two) } throws: { ($0 as? ChaosError)?.kind == .alreadyHooked }
            _ = try SlotMemory.write(UInt(bitPattern: raw.address), UInt(bitPattern: before), what: "test")
        }

        @Test func concurrentCallsWhileTogglingBindAndRevert() throws {
            let signature = try CSignature(returns: .int32, arguments: [.int32, .int32])
            let slot = try tableSlot(\.add)
            let closure = try FFIClosure(signature: signature) { call in
                if try call.argument(0, as: Int32.self) == 2 {
                    try call.setReturn(Int32(1000))
                } else {
                    try call.callOriginal()
                }
            }
            final class Counters: Sendable {
                let done = Atomic<Bool>(false)
                let calls = Atomic<Int>(0)
                let hooked = Atomic<Int>(0)
                let wrong = Atomic<Int>(0)
                let toggles = Atomic<Int>(0)
            }
            let counters = Counters()
            DispatchQueue.concurrentPerform(iterations: 4) { worker in
                if worker == 0 {
                    // Start toggling only once callers are running, so the two overlap.
                    while counters.calls.load(ordering: .relaxed) < 1_000 { sched_yield() }
                    for _ in 0..<2_000 {
                        try? slot.bind(to: closure)
                        try? slot.revert()
                        counters.toggles.add(1, ordering: .relaxed)
                    }
                    counters.done.store(true, ordering: .releasing)
                } else {
                    while !counters.done.load(ordering: .acquiring) {
                        let result = chaos_fx_call_add(2, 3)
                        counters.calls.add(1, ordering: .relaxed)
                        if result == 1000 {
                            counters.hooked.add(1, ordering: .relaxed)
                        } else if result != 5 {
                            counters.wrong.add(1, ordering: .relaxed)
                        }
                    }
                }
            }
            #expect(counters.toggles.load(ordering: .relaxed) == 2_000)
            #expect(counters.wrong.load(ordering: .relaxed) == 0)
            #expect(counters.calls.load(ordering: .relaxed) > 0)
            #expect(!slot.isBound)
            #expect(chaos_fx_call_add(2, 3) == 5)
            try closure.invalidate()
        }

        @Test func hundredThousandCreateBindRevertCycles() throws {
            let signature = try CSignature(returns: .int32, arguments: [.int32, .int32])
            let slot = try tableSlot(\.add)
            let before = slot.currentValue
            weak var last: FFIClosure?
            for i in 0..<100_000 {
                let closure = try FFIClosure(signature: signature) { call in try call.setReturn(Int32(-7)) }
                try slot.bind(to: closure)
                if i % 10_000 == 0 { #expect(chaos_fx_call_add(1, 1) == -7) }
                try slot.revert()
                last = closure
            }
            #expect(slot.currentValue == before)
            #expect(chaos_fx_call_add(1, 1) == 2)
            // Reverted closures are released: nothing (registry included) keeps them alive.
            #expect(last == nil)
            #expect(HookRegistry.state.withLock { $0.ownedSlots[UInt(bitPattern: slot.address)] } == nil)
        }
    }
}

extension CValue {
    var structureBytes: [UInt8]? {
        if case .structure(let bytes) = self { return bytes }
        return nil
    }
}
