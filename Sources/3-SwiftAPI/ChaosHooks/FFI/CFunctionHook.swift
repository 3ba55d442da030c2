import CChaosGrace
@_spi(Hooks) public import ChaosKit
import Logging

/// The providers of a ``CFunctionHook``'s point.
public typealias CHookProvider = ChaosProvider<CArguments, CValue, Never>

/// A C function made into an injection point: an imported symbol (every GOT slot that
/// calls it) or one function-pointer slot (a callbacks table member), driven by the same
/// providers and modifiers as every other point.
///
/// ```swift
/// let getenvHook = try CFunctionHook(
///     name: "c.getenv", symbol: "getenv",
///     signature: CSignature(returns: .cString, arguments: [.cString]))
/// try Chaos().profile(ProfileEntry(getenvHook.point, .nil)).apply()   // getenv → NULL
/// ```
///
/// The slots are patched only while something uses the point (a global entry or a
/// `Chaos.with` scope), through its `PointActivation`: the first apply patches them —
/// and fails with nothing changed when the symbol is imported nowhere or the slot is
/// already hooked by something else — and the last revert restores them byte for byte.
/// Every call then runs a libffi closure that dispatches through the point, so a
/// synchronous C call made inside a `Chaos.with` task sees that task's scoped chaos.
///
/// What each provider means here:
/// - `.original` calls the real function; `.constant(v)` returns `v`, converted losslessly
///   to the C return type (a value that does not fit makes the apply fail);
/// - `.nil` returns zero of the return type (NULL, 0, 0.0, an all-zero struct);
/// - `.random()` returns a random value of the return type (seeded);
/// - `ChaosProvider/failing(returning:errno:)` returns a value and sets `errno`
///   (the C analogue of `.throwing`);
/// - `.block { env in … }` gets the call as ``CArguments`` (`env.arguments`), may read
///   and change arguments, write through pointers, set `errno` and `env.callOriginal()`;
///   a block result that does not fit the return type falls back to the original (the
///   error is in ``closure``'s ``FFIClosure/lastError``);
/// - `.sequential`, `.composite` (conditions over ``CArguments``) and the modifiers as
///   everywhere.
///
/// A hooked function called again on the same thread from inside a hook's chaos (a block
/// that logs, or calls `getenv`) runs the original, so chaos never recurses.
///
/// What a hook cannot see: calls inside the library that defines the function (libc's own
/// internal calls), function pointers fetched with `dlsym` or copied out of a slot before
/// the hook, inlined or builtin calls, direct system calls and the vDSO, statically linked
/// code. Hooks are process-wide: serialize code that applies them.
public final class CFunctionHook: Sendable {
    /// The point profiles and entries target.
    public let point: InjectionPoint<CArguments, CValue, Never>
    /// The libffi closure the slots point at while the point is active.
    public let closure: FFIClosure
    /// The C signature of the hooked function.
    public var signature: CSignature { closure.signature }
    /// The point's name.
    public var name: String { point.name }
    private let binder: any HookBinder

    /// A hook point named `name` over every GOT slot of the imported `symbol` in the
    /// images `images` selects.
    ///
    /// - Throws: `.symbolNotFound` when no loaded image defines `symbol`; signature errors
    ///   from closure creation; `.unsupportedPlatform` outside Linux. A symbol defined but
    ///   imported by no image is reported when the point is first applied.
    public convenience init(
        name: String, symbol: String, signature: CSignature, images: ImageFilter = .all
    ) throws(ChaosError) {
        try self.init(name: name, signature: signature) { closure throws(ChaosError) in
            try SymbolRebinding(symbol: symbol, closure: closure, images: images)
        }
    }

    /// A hook point named `name` over one function-pointer slot of type `Function` (a
    /// `@convention(c)` function type, usually optional, as C struct members import).
    ///
    /// - Throws: `.signatureMismatch` when `signature`'s arity or a spelled-out scalar type
    ///   disagrees with `Function`.
    public convenience init<Function>(
        name: String, slot: UnsafeMutablePointer<Function>, signature: CSignature
    ) throws(ChaosError) {
        try CFunctionTypeCheck.check(Function.self, against: signature, name: name)
        let slot = try FunctionPointerSlot(slot)
        try self.init(name: name, signature: signature) { closure in SlotBinder(slot: slot, closure: closure) }
    }

    /// A hook point named `name` over the function-pointer slot at `slotAddress`.
    public convenience init(name: String, slotAddress: UnsafeMutableRawPointer, signature: CSignature)
        throws(ChaosError)
    {
        let slot = try FunctionPointerSlot(slotAddress)
        try self.init(name: name, signature: signature) { closure in SlotBinder(slot: slot, closure: closure) }
    }

    private init(
        name: String, signature: CSignature,
        makeBinder: (FFIClosure) throws(ChaosError) -> any HookBinder
    ) throws(ChaosError) {
        let activation = HookActivation()
        let point = InjectionPoint<CArguments, CValue, Never>(
            name, catalogue: CHookProvider.catalogue(name: name, returning: signature.returns), activation: activation
        ) { arguments in
            arguments.callOriginal()
        }
        let closure = try FFIClosure(signature: signature, hookPoint: point)
        self.point = point
        self.closure = closure
        self.binder = try makeBinder(closure)
        activation.setTarget(binder)
    }

    /// Whether the slots are patched right now (the point is in use).
    public var isPatched: Bool { binder.isBound }

    /// An entry for this hook's point.
    public func entry(_ provider: CHookProvider) -> ProfileEntry {
        ProfileEntry(point, provider)
    }
}

/// The per-call path of every ``CFunctionHook``: run the point, store its answer.
@inline(__always)
func hookDispatch(_ point: InjectionPoint<CArguments, CValue, Never>, _ call: inout CCall) throws {
    let entered = chaos_hook_enter_counted()
    guard entered != 0 else {
        // Already inside a hook's chaos on this thread: no chaos within chaos.
        try call.callOriginal()
        return
    }
    defer { chaos_hook_leave_entered(entered) }
    // Inside the section a reverted entry stays alive (readsEntriesInHookSections), so the
    // point may read its newest entry without a lock or a reference.
    // Unprotected: `CCall` holds no buffer a stack canary could guard, and the canary
    // check costs as much as the rest of the section bookkeeping on every call.
    try _withUnprotectedUnsafeMutablePointer(to: &call) { (call: UnsafeMutablePointer<CCall>) throws(ChaosError) in
        try call.pointee.storeResult(point.callWithoutRetaining(CArguments(call)))
    }
}

extension CCall {
    /// Stores a provider's answer as the return value (`.pointer(nil)` is zero of any type).
    @inline(__always)
    mutating func storeResult(_ value: CValue) throws(ChaosError) {
        if storeExactReturn(value) { return }
        switch (value, interface.returnKind) {
        case (_, .void):
            returnWritten = true
        case (.pointer(nil), let kind) where kind != .pointer:
            clearReturn()
        default:
            try setReturn(value)
        }
    }
}

extension CValue: ExpressibleByNilLiteral {
    /// NULL; as the answer of a hook it stands for zero of any return type.
    public init(nilLiteral: ()) {
        self = .pointer(nil)
    }

    /// Throws when `value` cannot be returned as `type` (used when an entry is applied).
    static func checkReturnable(_ value: CValue, as type: CType, pointName: String) throws(ChaosError) {
        if type == .void || value == .pointer(nil) { return }
        do {
            _ = try value.converted(to: type)
        } catch {
            throw ChaosError(
                .valueTypeMismatch, subject: pointName,
                "the constant \(value) does not fit the C return type \(type): \(error.message)")
        }
    }

    /// A random value of `type` drawn from `source`: integers and floating point through
    /// their `RandomChaosValue` edges, pointers as NULL or a random address is never
    /// produced (callers would dereference it): NULL.
    public static func random(of type: CType, using source: inout SeededRandom) -> CValue {
        switch type {
        case .void: return .void
        case .bool: return .bool(Bool.randomChaosValue(using: &source))
        case .int8: return .int8(Int8.randomChaosValue(using: &source))
        case .int16: return .int16(Int16.randomChaosValue(using: &source))
        case .int32: return .int32(Int32.randomChaosValue(using: &source))
        case .int64: return .int64(Int64.randomChaosValue(using: &source))
        case .uint8: return .uint8(UInt8.randomChaosValue(using: &source))
        case .uint16: return .uint16(UInt16.randomChaosValue(using: &source))
        case .uint32: return .uint32(UInt32.randomChaosValue(using: &source))
        case .uint64: return .uint64(UInt64.randomChaosValue(using: &source))
        case .float: return .float(Float.randomChaosValue(using: &source))
        case .double: return .double(Double.randomChaosValue(using: &source))
        case .pointer, .cString: return .pointer(nil)
        case .structure: return .structure((0..<type.size).map { _ in UInt8.random(in: 0...255, using: &source) })
        }
    }
}

extension ChaosProvider where Arguments == CArguments, Result == CValue, Failure == Never {
    /// The C analogue of `.throwing`: return `value` (converted to the return type) and set
    /// `errno`, e.g. `.failing(returning: -1, errno: ECONNREFUSED)`.
    public static func failing(returning value: CValue, errno: Int32) -> ChaosProvider {
        .block { env in
            env.arguments.errno = errno
            return value
        }
    }

    /// The catalogue every C hook point has: `random` (a value of the return type), and a
    /// result validator that refuses constants the C return type cannot hold.
    static func catalogue(
        name: String, returning returnType: CType, _ items: [CatalogueItem<ChaosProvider>] = []
    ) -> PointCatalogue<ChaosProvider> {
        PointCatalogue(
            [CatalogueItem("random", "a random value of the return type, from the seed") { _ in random() }] + items,
            resultValidator: { value in try CValue.checkReturnable(value, as: returnType, pointName: name) }
        )
    }

    /// A random value of the hooked function's return type, from the seeded source
    /// (pointers: NULL, never a made-up address).
    public static func random() -> ChaosProvider {
        .block { env in
            var source = env.random
            return CValue.random(of: env.arguments.signature.returns, using: &source)
        }
    }
}

// MARK: - Binding slots on activation

/// Something a hook patches while its point is active.
protocol HookBinder: AnyObject, Sendable {
    func bind() throws(ChaosError)
    func unbind() throws(ChaosError)
    var isBound: Bool { get }
}

extension SymbolRebinding: HookBinder {
    func bind() throws(ChaosError) { try apply() }
    func unbind() throws(ChaosError) { try revert() }
    var isBound: Bool { isApplied }
}

/// A function-pointer slot and the closure it gets while active.
final class SlotBinder: HookBinder {
    let slot: FunctionPointerSlot
    let closure: FFIClosure

    init(slot: FunctionPointerSlot, closure: FFIClosure) {
        self.slot = slot
        self.closure = closure
    }

    func bind() throws(ChaosError) { try slot.bind(to: closure) }
    func unbind() throws(ChaosError) { try slot.revert() }
    var isBound: Bool { slot.isBound }
}

/// Several binders bound all-or-nothing (a system point over several functions). Binders
/// marked optional may be missing (`.symbolNotFound`: nothing imports that function).
final class BinderGroup: HookBinder {
    let members: [(binder: any HookBinder, optional: Bool)]
    private let bound = Locked<[Int]>([])
    let subject: String

    init(subject: String, _ members: [(binder: any HookBinder, optional: Bool)]) {
        self.subject = subject
        self.members = members
    }

    func bind() throws(ChaosError) {
        try bound.withLock { (done: inout [Int]) throws(ChaosError) in
            var fresh: [Int] = []
            for (index, member) in members.enumerated() {
                do throws(ChaosError) {
                    try member.binder.bind()
                    fresh.append(index)
                } catch  where member.optional && error.kind == .symbolNotFound {
                    continue
                } catch {
                    for undo in fresh.reversed() { try? members[undo].binder.unbind() }
                    throw error
                }
            }
            guard !fresh.isEmpty else {
                throw ChaosError(
                    .symbolNotFound, subject: subject,
                    "none of its functions is imported by any loaded image; nothing can be hooked")
            }
            done = fresh
        }
    }

    func unbind() throws(ChaosError) {
        let done = bound.withLock { done -> [Int] in
            defer { done = [] }
            return done
        }
        var first: ChaosError?
        for index in done.reversed() {
            do throws(ChaosError) { try members[index].binder.unbind() } catch { first = first ?? error }
        }
        if let first { throw first }
    }

    var isBound: Bool { bound.withLock { !$0.isEmpty } }
}

/// The activation of hook points: binds on first use, unbinds after the last.
///
/// Holds its binder weakly while inactive (the hook object owns it), strongly while
/// active: patched slots point at the binder's closure, which must stay alive until
/// they are restored, even if the hook object is dropped in between.
final class HookActivation: PointActivation {
    private struct State: @unchecked Sendable {
        // Only accessed inside `state`'s lock.
        weak var target: (any HookBinder)?
        var pinned: (any HookBinder)?
    }

    private let state = Locked(State())
    /// Hooked calls read the point's newest entry inside hook sections, without a reference.
    var readsEntriesInHookSections: Bool { true }
    static let logger = Logger(label: "ChaosHooks")

    func setTarget(_ binder: any HookBinder) {
        state.withLock { $0.target = binder }
    }

    func activate() throws(ChaosError) {
        try state.withLock { (state: inout State) throws(ChaosError) in
            guard let target = state.target else {
                throw ChaosError(
                    .notApplied, "the hook owning this point was released; keep the hook alive while its point is used")
            }
            try target.bind()
            state.pinned = target
        }
    }

    func deactivate() {
        let released = state.withLock { state -> (any HookBinder)? in
            defer { state.pinned = nil }
            return state.pinned
        }
        guard let released else { return }
        do throws(ChaosError) {
            try released.unbind()
        } catch {
            Self.logger.warning("hook revert reported a problem", metadata: ["error": "\(error)"])
        }
    }
}
