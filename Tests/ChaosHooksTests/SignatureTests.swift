import CHookFixtures
import ChaosKit
import Testing

@testable import ChaosHooks

@Suite struct SignatureTests {
    @Test func voidArgumentIsRejected() {
        #expect(throws: ChaosError.self) { try CSignature(returns: .int32, arguments: [.int32, .void]) }
        do {
            _ = try CSignature(returns: .int32, arguments: [.void])
        } catch {
            #expect(error.kind == .signatureMismatch)
            #expect(error.message.contains("arguments: []"))
        }
    }

    @Test func emptyAndVoidMemberStructsAreRejected() {
        #expect { try CSignature(returns: .structure([])) } throws: { ($0 as? ChaosError)?.kind == .signatureMismatch }
        #expect { try CSignature(returns: .void, arguments: [.structure([.int32, .structure([])])]) } throws: {
            ($0 as? ChaosError)?.message.contains("empty struct") == true
        }
        #expect { try CSignature(returns: .void, arguments: [.structure([.double, .void])]) } throws: {
            ($0 as? ChaosError)?.kind == .signatureMismatch
        }
    }

    @Test func variadicRules() throws {
        let printfLike = try CSignature(returns: .int32, arguments: [.cString, .double, .int32], fixedArgumentCount: 1)
        #expect(printfLike.isVariadic)
        #expect(printfLike.description == "int32_t (const char *, ..., double, int32_t)")
        #expect { try CSignature(returns: .int32, arguments: [.cString, .float], fixedArgumentCount: 1) } throws: {
            ($0 as? ChaosError)?.message.contains(".double") == true
        }
        #expect { try CSignature(returns: .int32, arguments: [.cString, .int8], fixedArgumentCount: 1) } throws: {
            ($0 as? ChaosError)?.message.contains(".int32") == true
        }
        #expect(throws: ChaosError.self) {
            try CSignature(returns: .int32, arguments: [.cString], fixedArgumentCount: 0)
        }
        #expect(throws: ChaosError.self) {
            try CSignature(returns: .int32, arguments: [.cString], fixedArgumentCount: 2)
        }
        // libffi accepts the variadic call interface.
        _ = try FFIClosure(signature: printfLike) { _ in }
    }

    @Test(arguments: [
        CType.bool, .int8, .uint16, .int32, .uint64, .float, .double, .pointer, .cString,
        .structure([.int32, .int8, .int64]),
        .structure([.structure([.double, .double]), .int32]),
        .structure([.int8, .structure([.int16, .int8]), .float, .int8]),
        .structure([.uint8, .uint8, .uint8]),
    ])
    func layoutAgreesWithLibffi(type: CType) throws {
        let ffi = try FFIInterface.libffiLayout(of: type)
        #expect(ffi.size == type.size)
        #expect(ffi.alignment == type.alignment)
        #expect(ffi.offsets == type.fieldOffsets)
    }

    @Test func layoutAgreesWithTheCCompiler() {
        let mixed = CType.structure([.int32, .int8, .int64])
        #expect(mixed.size == chaos_fx_sizeof_mixed())
        #expect(mixed.alignment == chaos_fx_alignof_mixed())
        #expect(mixed.size == MemoryLayout<chaos_fx_mixed>.size)
        let nested = CType.structure([.structure([.double, .double]), .int32])
        #expect(nested.size == chaos_fx_sizeof_nested())
        #expect(nested.fieldOffsets == [0, chaos_fx_offsetof_nested_tag()])
    }

    @Test func valueConversions() throws {
        let five: CValue = 5
        #expect(try five.converted(to: .int32) == .int32(5))
        #expect(try five.converted(to: .double) == .double(5))
        #expect(try CValue.int32(-1).converted(to: .int64) == .int64(-1))
        #expect(try CValue.uint64(.max).converted(to: .uint64) == .uint64(.max))
        #expect(try CValue.bool(true).converted(to: .int32) == .int32(1))
        #expect(CValue.zero(of: .structure([.int32, .double])) == .structure([UInt8](repeating: 0, count: 16)))
        #expect(CValue.pointer(nil).matches(.cString))
        #expect { try CValue.int64(300).converted(to: .int8) } throws: {
            ($0 as? ChaosError)?.kind == .signatureMismatch
        }
        #expect { try CValue.int32(-1).converted(to: .uint32) } throws: {
            ($0 as? ChaosError)?.kind == .signatureMismatch
        }
        #expect { try CValue.double(1.5).converted(to: .int32) } throws: {
            ($0 as? ChaosError)?.kind == .signatureMismatch
        }
        #expect { try CValue.pointer(nil).converted(to: .int64) } throws: {
            ($0 as? ChaosError)?.kind == .signatureMismatch
        }
        #expect { try CValue.structure([1, 2]).converted(to: .structure([.int32])) } throws: {
            ($0 as? ChaosError)?.message.contains("2 bytes given") == true
        }
        #expect { try CValue.int32(1).converted(to: .void) } throws: { ($0 as? ChaosError)?.kind == .signatureMismatch }
    }
}
