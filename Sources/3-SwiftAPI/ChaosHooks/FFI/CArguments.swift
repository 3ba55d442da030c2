public import ChaosKit

/// The C call a hook point is handling, as its providers see it: the `Arguments` of a
/// ``CFunctionHook``'s point. Composite conditions read it, `.block` providers get it as
/// `env.arguments`.
///
/// - Typed argument reads: ``argument(_:as:)``, ``value(at:)``, ``string(at:)``.
/// - Changes before calling the original: ``setArgument(_:_:)``, ``setValue(_:at:)``;
///   writes through pointer arguments (out-parameters): ``write(_:throughArgument:)``.
/// - ``errno`` as the C caller will see it (settable).
/// - `env.callOriginal()` calls the real function with the current arguments and returns
///   its result as a ``CValue``.
///
/// Only valid while the hooked call runs: never store it or hand it to another thread.
public struct CArguments {
    @usableFromInline let call: UnsafeMutablePointer<CCall>

    @usableFromInline init(_ call: UnsafeMutablePointer<CCall>) {
        self.call = call
    }

    /// The hooked function's C signature.
    public var signature: CSignature { call.pointee.signature }

    /// The number of arguments.
    public var count: Int { call.pointee.argumentCount }

    /// Argument `index` as `T`, which must correspond to its C type (`Int32` for `.int32`,
    /// an optional pointer for `.pointer`/`.cString`, …); a wrong index or type throws
    /// `.signatureMismatch` naming the signature.
    @inlinable
    public func argument<T: CScalar>(_ index: Int, as type: T.Type) throws(ChaosError) -> T {
        try call.pointee.argument(index, as: type)
    }

    /// Argument `index` as a ``CValue`` of its C type.
    public func value(at index: Int) throws(ChaosError) -> CValue {
        try call.pointee.value(at: index)
    }

    /// The value pointer argument `index` points at, read as `T` (a C struct such as
    /// `sockaddr_in` or `timespec`); nil for a NULL pointer. The read makes no assumption
    /// about alignment. A wrong index, or an argument that is no pointer, throws
    /// `.signatureMismatch`.
    ///
    /// ```swift
    /// .block { env in
    ///     let address = try? env.arguments.pointee(1, as: sockaddr_in.self)   // connect's
    ///     …
    /// }
    /// ```
    public func pointee<T: BitwiseCopyable>(_ index: Int, as type: T.Type) throws(ChaosError) -> T? {
        guard let pointer = try argument(index, as: UnsafeRawPointer?.self) else { return nil }
        return pointer.loadUnaligned(as: T.self)
    }

    /// A `.cString` argument as a Swift string (`nil` for NULL).
    public func string(at index: Int) throws(ChaosError) -> String? {
        try call.pointee.string(at: index)
    }

    /// Replaces argument `index` for a following `callOriginal()`.
    @inlinable
    public func setArgument<T: CScalar>(_ index: Int, _ value: T) throws(ChaosError) {
        try call.pointee.setArgument(index, value)
    }

    /// Replaces argument `index`, converting `value` losslessly to its C type.
    public func setValue(_ value: CValue, at index: Int) throws(ChaosError) {
        try call.pointee.setValue(value, at: index)
    }

    /// Writes `value` where pointer argument `index` points (e.g. a `struct timespec *`
    /// out-parameter). Throws for a NULL pointer.
    public func write<T>(_ value: T, throughArgument index: Int) throws(ChaosError) {
        try call.pointee.write(value, throughArgument: index)
    }

    /// `errno` as the caller will see it; setting it takes effect when the call returns
    /// to C, after everything else.
    public var errno: Int32 {
        get { call.pointee.errno }
        nonmutating set { call.pointee.errno = newValue }
    }

    /// Calls the real function with the current arguments and returns its result (zero
    /// of the return type when there is no original, e.g. a slot that held NULL).
    @inline(__always)
    public func callOriginal() -> CValue {
        guard call.pointee.hasOriginal else { return .zero(of: call.pointee.interface.returnType) }
        call.pointee.invokeOriginal()
        return call.pointee.returnValue()
    }
}

extension CallEnvironment where Arguments == CArguments, Result == CValue, Failure == Never {
    /// Calls the real C function with the call's current arguments and returns its result
    /// — what the hook point's original does, without the detour through the point's
    /// generic closure (a C hook's block usually calls it on every call).
    public func callOriginal() -> CValue {
        arguments.callOriginal()
    }
}
