import CChaosELF
public import ChaosKit

/// The benchmark floor for ``FFIClosure``: a libffi closure of the same signature whose
/// handler is C code that only forwards to the original with `ffi_call`
/// (`chaos_bench_make_raw_forwarding_closure`). Not for production use.
@_spi(Benchmarks)
public final class RawForwardingClosure: @unchecked Sendable {
    // Immutable after init; the C handle is freed only in deinit.
    private let interface: FFIInterface
    private let handle: UnsafeMutableRawPointer
    /// The callable C function pointer.
    public let functionPointer: UnsafeRawPointer

    /// A raw C forwarding closure of `signature` that calls `original`.
    public init(signature: CSignature, original: UnsafeRawPointer) throws(ChaosError) {
        interface = try FFIInterface(signature)
        var code: UnsafeMutableRawPointer?
        guard let handle = chaos_bench_make_raw_forwarding_closure(
            UnsafeMutableRawPointer(interface.cif), UnsafeMutableRawPointer(mutating: original), &code),
            let code
        else {
            throw ChaosError(.systemFailure, "libffi could not allocate the raw benchmark closure")
        }
        self.handle = handle
        self.functionPointer = UnsafeRawPointer(code)
    }

    deinit {
        chaos_bench_free_raw_forwarding_closure(handle)
    }
}
