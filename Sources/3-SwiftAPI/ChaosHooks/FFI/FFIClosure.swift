import CChaosGrace
import CFFI
public import ChaosKit
import Synchronization

/// A real C function pointer whose calls run a Swift handler: the closure factory
/// under every ChaosHooks hook (libffi `ffi_closure_alloc` + `ffi_prep_closure_loc`).
///
/// ```swift
/// let signature = try CSignature(returns: .int32, arguments: [.int32, .int32])
/// let closure = try FFIClosure(signature: signature, original: realAdd) { call in
///     try call.setArgument(1, 100 as Int32)   // change an argument…
///     try call.callOriginal()                 // …call the real function with it
/// }
/// table.add = closure.functionPointer(as: AddFunction.self)
/// ```
///
/// The closure owns the `ffi_cif`, every `ffi_type` it needed (struct element arrays
/// included) and the closure memory; ``invalidate()`` or `deinit` frees them.
/// **After that the function pointer must never be called again**: keep the closure
/// alive until no thread can be inside it (reverting a slot does not wait for calls
/// already in flight). Slots bound with ``FunctionPointerSlot`` or
/// ``SymbolRebinding`` keep their closure alive while bound.
///
/// The handler runs on whatever thread the C code calls from, possibly many at once;
/// it must not call the hooked function through the hooked slot (use
/// ``CCall/callOriginal()``), and a hook on something the Swift runtime itself uses
/// (`malloc`, locks) needs its own re-entrancy guard.
public final class FFIClosure: Sendable {
    /// The Swift side of a hook: inspect and change the call through `CCall`.
    ///
    /// If the handler throws, the error is kept in ``lastError`` and the call falls back
    /// to the original (or returns zero when there is none).
    public typealias Handler = @Sendable (inout CCall) throws -> Void

    /// The C type of the function pointer.
    public let signature: CSignature
    let interface: FFIInterface
    /// Keeps the handler or hook point alive.
    let route: Route
    /// The hook point of `.hook` again, unretained: points are weakly registered by name,
    /// which makes their reference counting slow, and `route` already keeps this one alive.
    private let hookPoint: Unmanaged<InjectionPoint<CArguments, CValue, Never>>?
    /// The executable entry point (libffi's trampoline), as a bit pattern.
    let code: UInt
    /// Address of the writable `ffi_closure` block, 0 once freed.
    private let closureMemory: Locked<UInt>
    private let originalBits: Atomic<UInt>
    private let failure = Locked<(any Error)?>(nil)
    /// How many slots currently point at this closure (owned by the hook registry).
    let bindings = Atomic<Int>(0)

    /// Creates a C function pointer of type `signature` that calls `handler`.
    ///
    /// - Parameters:
    ///   - signature: the C type of the function pointer.
    ///   - original: the function ``CCall/callOriginal()`` calls; binding the closure to a
    ///     slot fills it in when `nil`.
    ///   - handler: runs for every call; see ``CCall``.
    /// - Throws: `.systemFailure` when libffi cannot allocate executable memory.
    public convenience init(signature: CSignature, original: UnsafeRawPointer? = nil, handler: @escaping Handler)
        throws(ChaosError)
    {
        try self.init(signature: signature, original: original, route: .handler(handler))
    }

    /// A closure whose calls go straight to a hook point's dispatch (``CFunctionHook`` and
    /// the system points), without a handler closure in between.
    convenience init(signature: CSignature, hookPoint: InjectionPoint<CArguments, CValue, Never>) throws(ChaosError) {
        try self.init(signature: signature, original: nil, route: .hook(hookPoint))
    }

    /// What a call runs.
    enum Route: Sendable {
        case handler(Handler)
        case hook(InjectionPoint<CArguments, CValue, Never>)
    }

    private init(signature: CSignature, original: UnsafeRawPointer?, route: Route) throws(ChaosError) {
        self.signature = signature
        self.interface = try FFIInterface(signature)
        self.route = route
        if case .hook(let point) = route { hookPoint = Unmanaged.passUnretained(point) } else { hookPoint = nil }
        var codePointer: UnsafeMutableRawPointer?
        guard let memory = ffi_closure_alloc(chaos_ffi_closure_size(), &codePointer), let codePointer else {
            throw ChaosError(
                .systemFailure,
                "libffi could not allocate an executable closure (ffi_closure_alloc failed); check that the process may map executable memory (SELinux/W^X policy)"
            )
        }
        self.code = UInt(bitPattern: codePointer)
        self.closureMemory = Locked(UInt(bitPattern: memory))
        self.originalBits = Atomic(UInt(bitPattern: original))
        let status = ffi_prep_closure_loc(
            memory.assumingMemoryBound(to: ffi_closure.self), interface.cif, chaosClosureEntry,
            Unmanaged.passUnretained(self).toOpaque(), codePointer)
        guard status == FFI_OK else {
            throw ChaosError(
                .systemFailure, "libffi could not prepare the closure for \(signature) (ffi_status \(status.rawValue))")
        }
        HookRegistry.state.withLock { _ = $0.liveClosures.insert(code) }
    }

    deinit {
        release()
    }

    /// The C function pointer. Valid until ``invalidate()`` or deinitialization.
    public var functionPointer: UnsafeRawPointer { UnsafeRawPointer(bitPattern: code)! }

    /// The C function pointer as a `@convention(c)` function type (or optional of one).
    /// Throws `.signatureMismatch` when `F` is not pointer-sized.
    public func functionPointer<F>(as type: F.Type) throws(ChaosError) -> F {
        guard MemoryLayout<F>.size == MemoryLayout<UnsafeRawPointer>.size else {
            throw ChaosError(
                .signatureMismatch, "\(F.self) is not a C function pointer type; use a @convention(c) function type")
        }
        return unsafeBitCast(functionPointer, to: F.self)
    }

    /// The function ``CCall/callOriginal()`` calls (`nil` for none). Slot binding fills it
    /// in when it is `nil`. Changing it while calls are in flight is safe: each call uses
    /// the value it saw when it started.
    public var original: UnsafeRawPointer? {
        get { UnsafeRawPointer(bitPattern: originalBits.load(ordering: .acquiring)) }
        set { originalBits.store(UInt(bitPattern: newValue), ordering: .releasing) }
    }

    /// Sets ``original`` only if it is still `nil`.
    func adoptOriginal(_ candidate: UInt) {
        guard candidate != 0 else { return }
        _ = originalBits.compareExchange(expected: 0, desired: candidate, ordering: .acquiringAndReleasing)
    }

    /// The last error thrown by the handler (the call then fell back to the original).
    public var lastError: (any Error)? { failure.withLock { $0 } }

    /// Whether the function pointer is still callable.
    public var isValid: Bool { closureMemory.withLock { $0 != 0 } }

    /// Frees the libffi closure now instead of at deinitialization. Calling the function
    /// pointer afterwards crashes. Throws `.alreadyApplied` while a slot still points
    /// here: revert the hooks first.
    public func invalidate() throws(ChaosError) {
        let bound = bindings.load(ordering: .acquiring)
        guard bound == 0 else {
            throw ChaosError(
                .alreadyApplied, "the closure is still bound to \(bound) hook(s); revert them before invalidating it")
        }
        release()
    }

    private func release() {
        let memory = closureMemory.withLock { memory -> UInt in
            defer { memory = 0 }
            return memory
        }
        guard memory != 0 else { return }
        HookRegistry.state.withLock { _ = $0.liveClosures.remove(code) }
        ffi_closure_free(UnsafeMutableRawPointer(bitPattern: memory))
    }

    /// The per-call path: build the call view, run the handler, finish return and errno.
    @inline(__always)
    fileprivate func dispatch(
        _ result: UnsafeMutableRawPointer, _ arguments: UnsafeMutablePointer<UnsafeMutableRawPointer?>?
    ) {
        var call = CCall(
            interface: interface, original: originalBits.load(ordering: .relaxed),
            returnBuffer: result, arguments: arguments, errnoLocation: chaos_errno_location())
        if let hookPoint {
            do {
                // On success the hook path has always written the return value.
                try hookPoint._withUnsafeGuaranteedRef { try hookDispatch($0, &call) }
            } catch {
                recover(from: error, &call)
            }
        } else {
            do {
                if case .handler(let handler) = route { try handler(&call) }
            } catch {
                recover(from: error, &call)
            }
            if !call.returnWritten { call.clearReturn() }
        }
        call.finishErrno()
    }

    /// After a handler threw: keep the error, fall back to the original (or zero).
    private func recover(from error: any Error, _ call: inout CCall) {
        failure.withLock { $0 = error }
        if call.original != 0 && !call.originalCalled {
            call.invokeOriginal()
        } else if !call.returnWritten {
            call.clearReturn()
        }
    }
}

/// The C entry point libffi calls for every ChaosHooks closure; `userData` is the
/// unretained `FFIClosure` (kept alive by its owner while the pointer is callable).
private let chaosClosureEntry:
    @convention(c) (
        UnsafeMutablePointer<ffi_cif>?, UnsafeMutableRawPointer?,
        UnsafeMutablePointer<UnsafeMutableRawPointer?>?, UnsafeMutableRawPointer?
    ) -> Void = { _, result, arguments, userData in
        Unmanaged<FFIClosure>.fromOpaque(userData.unsafelyUnwrapped)._withUnsafeGuaranteedRef {
            $0.dispatch(result.unsafelyUnwrapped, arguments)
        }
    }
