import CChaosELF
public import ChaosKit
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Which loaded images a ``SymbolRebinding`` patches, chosen by image path.
public struct ImageFilter: Sendable, CustomStringConvertible {
    let predicate: @Sendable (String) -> Bool
    public let description: String
    /// Whether every image passes (scans then skip asking about each image's path).
    let matchesAll: Bool

    /// Every loaded image: the main program and all shared libraries.
    public static let all = ImageFilter(description: "all images", matchesAll: true) { _ in true }

    /// Images whose path contains `fragment` (e.g. `"libFoundation"`).
    public static func pathContains(_ fragment: String) -> ImageFilter {
        ImageFilter(description: "images whose path contains \"\(fragment)\"") { $0.contains(fragment) }
    }

    /// Images for which `predicate(path)` is true; `description` appears in errors.
    public static func matching(_ description: String, _ predicate: @escaping @Sendable (String) -> Bool) -> ImageFilter {
        ImageFilter(description: description, predicate: predicate)
    }

    init(description: String, matchesAll: Bool = false, predicate: @escaping @Sendable (String) -> Bool) {
        self.description = description
        self.matchesAll = matchesAll
        self.predicate = predicate
    }
}

/// Rebinds an imported C symbol (e.g. `clock_gettime`, `getenv`, `connect`) in the
/// GOT of every loaded ELF image, so every call made through those slots — from the
/// app, Foundation, or any other library — runs an ``FFIClosure`` instead. Pointers to
/// the symbol that the dynamic linker stored in an image's data at load time
/// (`R_X86_64_64`/`R_AARCH64_ABS64` relocations: tables of function pointers such as
/// SQLite's system-call table) are rebound too.
///
/// ```swift
/// let hook = try SymbolRebinding(symbol: "getenv",
///                                signature: CSignature(returns: .cString, arguments: [.cString])) { call in
///     try call.callOriginal()
/// }
/// try hook.apply()     // all-or-nothing
/// defer { try? hook.revert() }   // every slot gets its exact original bytes back
/// ```
///
/// - The original function is resolved with `dlsym(RTLD_DEFAULT, symbol)`, never read
///   from a slot (a lazily bound slot holds the PLT resolver stub: slow, and calling it
///   would rebind the slot).
/// - ``apply()`` refuses with `.alreadyHooked` when a slot is owned by another
///   ChaosHooks hook, or a GOT slot holds something that is neither the real function, a
///   lazy-binding stub of its own image, nor another version of the same symbol —
///   i.e. something else (another interposer) already hooks it. Nothing changes then.
///   A data pointer that no longer holds the real function was changed by the program
///   itself (SQLite's `xSetSystemCall`, say): it is the program's to decide, and left alone.
/// - ``refresh()`` patches images loaded (`dlopen`) after ``apply()``.
/// - Symbol hooks are process-wide by nature: serialize the code that applies them
///   (in Swift Testing, one `.serialized` suite).
///
/// What a GOT rebinding cannot see:
/// - calls inside the library that defines the symbol (libc calling its own
///   `clock_gettime` uses internal aliases, not the GOT);
/// - function pointers obtained with `dlsym` or copied at run time (a table filled by
///   code rather than by the dynamic linker; hook those with ``FunctionPointerSlot``),
///   and pointers to functions of the same image (`RELATIVE` relocations name no symbol);
/// - inlined or compiler-builtin calls, system calls made directly, and the vDSO's own
///   fast paths (only the libc wrapper's callers are redirected);
/// - statically linked programs (no GOT), and calls racing with `apply()` that already
///   loaded the old pointer.
///
/// Dropping an applied rebinding does not revert it: the slots stay patched and the
/// closure stays alive (held by the process-wide hook registry), so nothing can call
/// freed code. Call ``revert()``.
///
/// Only Linux (ELF) is supported; elsewhere the initializers throw `.unsupportedPlatform`.
public final class SymbolRebinding: Sendable {
    /// The symbol name as it appears in the dynamic symbol table (no version suffix).
    public let symbol: String
    /// The closure every patched slot points at.
    public var closure: FFIClosure {
        // Every public initializer sets one; only ChaosHooks' own typed clock hooks (made
        // with the internal raw-target initializer) have none, and never ask for it.
        ownedClosure!
    }
    /// Which images are patched.
    public let images: ImageFilter
    private let originalBits: UInt
    private let ownedClosure: FFIClosure?
    /// The code every patched slot points at: the closure's entry, or a C function.
    let target: UInt
    private let state = Locked<[PatchedSlot]?>(nil)

    /// One GOT slot this rebinding patched.
    public struct PatchedSlot: Sendable, Hashable {
        /// The slot's address, as a bit pattern.
        public let addressBits: UInt
        /// Path of the image the slot belongs to.
        public let imagePath: String
        /// `true` for a `JUMP_SLOT` (PLT call), `false` for a `GLOB_DAT` or data slot.
        public let isJumpSlot: Bool
        /// `true` for a pointer in the image's data (a table of function pointers filled
        /// at load time), `false` for a GOT slot.
        public let isData: Bool
        /// The exact bytes the slot held before it was patched.
        public let originalBytes: UInt

        /// The slot's address.
        public var address: UnsafeMutableRawPointer { UnsafeMutableRawPointer(bitPattern: addressBits)! }
    }

    /// Prepares a rebinding of `symbol` to a new closure of `signature` running `handler`.
    /// Nothing is patched until ``apply()``.
    ///
    /// - Throws: `.symbolNotFound` when no loaded image defines `symbol`,
    ///   `.signatureMismatch`/`.systemFailure` from closure creation,
    ///   `.unsupportedPlatform` outside Linux.
    public convenience init(symbol: String, signature: CSignature, images: ImageFilter = .all,
                            handler: @escaping FFIClosure.Handler) throws(ChaosError) {
        #if os(Linux)
        let original = try Self.resolve(symbol)
        let closure = try FFIClosure(signature: signature, original: UnsafeRawPointer(bitPattern: original), handler: handler)
        try self.init(symbol: symbol, closure: closure, images: images)
        #else
        throw Self.unsupported(symbol)
        #endif
    }

    /// Prepares a rebinding of `symbol` to an existing closure; the closure's
    /// ``FFIClosure/original`` is set to the real function when it has none.
    public init(symbol: String, closure: FFIClosure, images: ImageFilter = .all) throws(ChaosError) {
        #if os(Linux)
        self.originalBits = try Self.resolve(symbol)
        self.symbol = symbol
        self.ownedClosure = closure
        self.target = closure.code
        self.images = images
        closure.adoptOriginal(originalBits)
        #else
        throw Self.unsupported(symbol)
        #endif
    }

    /// A rebinding of `symbol` straight to the C function at `target` (no libffi), which
    /// must have the symbol's exact C type and call the real function itself.
    init(symbol: String, rawTarget: UnsafeRawPointer, images: ImageFilter = .all) throws(ChaosError) {
        #if os(Linux)
        self.originalBits = try Self.resolve(symbol)
        self.symbol = symbol
        self.ownedClosure = nil
        self.target = UInt(bitPattern: rawTarget)
        self.images = images
        #else
        throw Self.unsupported(symbol)
        #endif
    }

    /// The real function (`dlsym(RTLD_DEFAULT, symbol)`).
    public var original: UnsafeRawPointer { UnsafeRawPointer(bitPattern: originalBits)! }

    /// Whether the slots are currently patched.
    public var isApplied: Bool { state.withLock { $0 != nil } }

    /// The slots currently patched (empty when not applied).
    public var patchedSlots: [PatchedSlot] { state.withLock { $0 ?? [] } }

    /// Patches every slot for ``symbol`` in the images selected by ``images``.
    ///
    /// All-or-nothing: if a slot is refused or a write fails, every slot written so far
    /// gets its original bytes back and the error says which image and why.
    /// - Throws: `.alreadyApplied`, `.symbolNotFound` (lists the images searched),
    ///   `.alreadyHooked`, `.systemFailure`.
    public func apply() throws(ChaosError) {
        try state.withLock { (patched: inout [PatchedSlot]?) throws(ChaosError) in
            guard patched == nil else {
                throw ChaosError(.alreadyApplied, subject: symbol, "this rebinding is already applied; call revert() first or use refresh() for newly loaded images")
            }
            patched = try HookRegistry.state.withLock { (registry: inout HookRegistryState) throws(ChaosError) -> [PatchedSlot] in
                let scan = try ImageScan(symbol: symbol, images: images)
                guard !scan.slots.isEmpty else {
                    let searched = try ImageScan(symbol: symbol, images: images, listingImages: true).searched
                    throw ChaosError(.symbolNotFound, subject: symbol, "no GOT slot for '\(symbol)' in the \(searched.count) image(s) searched (\(images)): \(searched.joined(separator: ", ")); check the spelling, load the library that calls it first, or widen the image filter")
                }
                return try patch(scan.slots, registry: &registry)
            }
            ownedClosure?.bindings.add(1, ordering: .relaxed)
        }
    }

    /// Patches slots of images loaded since ``apply()`` (or the last refresh) and
    /// returns how many were added. All-or-nothing like ``apply()``.
    @discardableResult
    public func refresh() throws(ChaosError) -> Int {
        try state.withLock { (patched: inout [PatchedSlot]?) throws(ChaosError) -> Int in
            guard let current = patched else {
                throw ChaosError(.notApplied, subject: symbol, "refresh() only adds slots to an applied rebinding; call apply() first")
            }
            var kept = current
            let added = try HookRegistry.state.withLock { (registry: inout HookRegistryState) throws(ChaosError) -> [PatchedSlot] in
                let scan = try ImageScan(symbol: symbol, images: images)
                // Forget slots of images unloaded since (their addresses may be reused).
                let alive = Set(scan.slots.map { "\($0.address)|\($0.imagePath)" })
                kept = current.filter { alive.contains("\($0.addressBits)|\($0.imagePath)") }
                for gone in current where !alive.contains("\(gone.addressBits)|\(gone.imagePath)") {
                    registry.ownedSlots[gone.addressBits] = nil
                }
                let known = Set(kept.map(\.addressBits))
                let fresh = scan.slots.filter { !known.contains($0.address) }
                return fresh.isEmpty ? [] : try patch(fresh, registry: &registry)
            }
            patched = kept + added
            return added.count
        }
    }

    /// Writes every patched slot's original bytes back (byte-identical).
    ///
    /// Slots of images unloaded in the meantime are skipped. A slot that something else
    /// changed after ``apply()`` is left alone and reported with `.alreadyHooked` once
    /// everything else is reverted; the rebinding then counts as reverted.
    /// - Throws: `.notApplied`, `.alreadyHooked`, `.systemFailure` (that slot stays patched
    ///   and the rebinding stays applied, so revert can be retried).
    public func revert() throws(ChaosError) {
        try state.withLock { (patched: inout [PatchedSlot]?) throws(ChaosError) in
            guard let slots = patched else {
                throw ChaosError(.notApplied, subject: symbol, "this rebinding is not applied; nothing to revert")
            }
            var failures: [PatchedSlot] = []
            var foreign: [String] = []
            var firstFailure: ChaosError?
            HookRegistry.state.withLock { (registry: inout HookRegistryState) in
                // Only slots still mapped in a loaded image of the same path are touched.
                let alive = ImageScan.alive(symbol: symbol, slots)
                var restore: [PatchedSlot] = []
                for slot in slots {
                    guard alive.contains(slot.addressBits) else {
                        registry.ownedSlots[slot.addressBits] = nil
                        continue
                    }
                    let current = SlotMemory.read(slot.addressBits)
                    if current == target {
                        restore.append(slot)
                    } else {
                        foreign.append("\(slot.imagePath) (now \(SlotMemory.hex(current)))")
                        registry.ownedSlots[slot.addressBits] = nil
                    }
                }
                // One batch: each page's protection is looked up and lifted once.
                let results = SlotMemory.write(restore.map { ($0.addressBits, $0.originalBytes) }, what: { "\(symbol) in \(restore[$0].imagePath)" })
                for (slot, result) in zip(restore, results) {
                    switch result {
                    case .success: registry.ownedSlots[slot.addressBits] = nil
                    case .failure(let error):
                        failures.append(slot)
                        firstFailure = firstFailure ?? error
                    }
                }
            }
            if let firstFailure {
                patched = failures
                throw firstFailure
            }
            patched = nil
            ownedClosure?.bindings.subtract(1, ordering: .relaxed)
            if !foreign.isEmpty {
                throw ChaosError(.alreadyHooked, subject: symbol, "slots changed by something else after apply were left alone: \(foreign.joined(separator: ", ")); restore them yourself if needed")
            }
        }
    }

    /// Validates every candidate, then writes them all (undoing on failure) and registers them.
    private func patch(_ slots: [ImageScan.Slot], registry: inout HookRegistryState) throws(ChaosError) -> [PatchedSlot] {
        var chosen: [ImageScan.Slot] = []
        for slot in slots {
            if let owner = registry.ownedSlots[slot.address] {
                throw ChaosError(.alreadyHooked, subject: symbol, "the slot in \(slot.imagePath) is already hooked by \(owner.description); revert that hook first")
            }
            let current = SlotMemory.read(slot.address)
            if current == originalBits || slot.valueIsPLTStub {
                chosen.append(slot)
                continue
            }
            if registry.liveClosures.contains(current) {
                throw ChaosError(.alreadyHooked, subject: symbol, "the slot in \(slot.imagePath) points at a ChaosHooks closure not registered for it; restore the real function first")
            }
            let (name, image) = Self.describe(current)
            if name == symbol { // another version of the same symbol
                chosen.append(slot)
                continue
            }
            if slot.isData { continue } // the program changed its own pointer: its choice
            throw ChaosError(.alreadyHooked, subject: symbol, "the slot in \(slot.imagePath) holds \(SlotMemory.hex(current)) (\(name ?? "unknown") in \(image ?? "no image")), not the real \(symbol) at \(SlotMemory.hex(originalBits)): something else already hooks it; remove that hook or exclude the image with images:")
        }
        // One batch: each page's protection is looked up and lifted once.
        let results = SlotMemory.write(chosen.map { ($0.address, target) }, what: { "\(symbol) in \(chosen[$0].imagePath)" })
        var written: [PatchedSlot] = []
        var failure: ChaosError?
        for (slot, result) in zip(chosen, results) {
            switch result {
            case .success(let previous):
                written.append(PatchedSlot(addressBits: slot.address, imagePath: slot.imagePath, isJumpSlot: slot.isJumpSlot,
                                           isData: slot.isData, originalBytes: previous))
            case .failure(let error):
                failure = failure ?? error
            }
        }
        if let failure {
            _ = SlotMemory.write(written.map { ($0.addressBits, $0.originalBytes) }, what: { _ in self.symbol })
            throw failure
        }
        let owner = SlotOwner(owner: ObjectIdentifier(self), description: "the rebinding of \(symbol)", closure: ownedClosure)
        for slot in written { registry.ownedSlots[slot.addressBits] = owner }
        return written
    }

    private static func describe(_ address: UInt) -> (name: String?, image: String?) {
        var image: UnsafePointer<CChar>?
        let name = chaos_elf_describe_address(UnsafeRawPointer(bitPattern: address), &image)
        return (name.map { String(cString: $0) }, image.map { String(cString: $0) })
    }

    private static func resolve(_ symbol: String) throws(ChaosError) -> UInt {
        guard let address = chaos_elf_dlsym_default(symbol) else {
            throw ChaosError(.symbolNotFound, subject: symbol, "no loaded image defines '\(symbol)' (dlsym failed); check the spelling (C names, no version suffix) or dlopen its library first")
        }
        return UInt(bitPattern: address)
    }

    private static func unsupported(_ symbol: String) -> ChaosError {
        ChaosError(.unsupportedPlatform, subject: symbol, "symbol rebinding needs ELF (Linux); on this platform hook function-pointer slots with FunctionPointerSlot or use protocol injection points")
    }
}

/// The GOT and data slots for one symbol in the selected images (CChaosELF does the
/// walking, from its per-image index).
struct ImageScan {
    struct Slot {
        let address: UInt
        let imagePath: String
        let isJumpSlot: Bool
        let isData: Bool
        let valueIsPLTStub: Bool
    }

    private(set) var slots: [Slot] = []
    /// The images searched (only with `listingImages`, or a filter other than `.all`).
    private(set) var searched: [String] = []

    /// The slots of `patched` that a scan of every image still reports for `symbol`, in an
    /// image of the same path (compared in place: no string is made per slot).
    static func alive(symbol: String, _ patched: [SymbolRebinding.PatchedSlot]) -> Set<UInt> {
        final class Check {
            var expected: [UInt: String]
            var alive: Set<UInt> = []
            init(_ expected: [UInt: String]) { self.expected = expected }
        }
        let check = Check(Dictionary(patched.map { ($0.addressBits, $0.imagePath) }) { first, _ in first })
        _ = withExtendedLifetime(check) {
            chaos_elf_find_slots(symbol, nil, { context, info in
                let check = Unmanaged<Check>.fromOpaque(context!).takeUnretainedValue()
                let info = info!.pointee
                let address = UInt(bitPattern: info.slot)
                // A native string is contiguous and NUL-terminated: comparing it allocates nothing.
                if let path = check.expected[address], strcmp(info.image_path, path) == 0 { check.alive.insert(address) }
            }, Unmanaged.passUnretained(check).toOpaque())
        }
        return check.alive
    }

    private final class Collector {
        let filter: ImageFilter
        var slots: [Slot] = []
        var seen: Set<UInt> = []
        var searched: [String] = []
        init(filter: ImageFilter) { self.filter = filter }
    }

    /// - Parameter listingImages: collect the path of every image searched, also for
    ///   `.all` (which otherwise makes no string per image).
    init(symbol: String, images: ImageFilter, listingImages: Bool = false) throws(ChaosError) {
        let collector = Collector(filter: images)
        let context = Unmanaged.passUnretained(collector).toOpaque()
        let onImage: chaos_elf_image_fn? = images.matchesAll && !listingImages ? nil : { context, path, _ in
            let collector = Unmanaged<Collector>.fromOpaque(context!).takeUnretainedValue()
            let path = String(cString: path!)
            guard collector.filter.predicate(path) else { return 0 }
            collector.searched.append(path)
            return 1
        }
        let status = withExtendedLifetime(collector) {
            chaos_elf_find_slots(symbol, onImage, { context, info in
                let collector = Unmanaged<Collector>.fromOpaque(context!).takeUnretainedValue()
                let info = info!.pointee
                let address = UInt(bitPattern: info.slot)
                guard collector.seen.insert(address).inserted else { return }
                collector.slots.append(Slot(
                    address: address, imagePath: String(cString: info.image_path),
                    isJumpSlot: info.kind == Int32(CHAOS_ELF_SLOT_JUMP), isData: info.kind == Int32(CHAOS_ELF_SLOT_DATA),
                    valueIsPLTStub: info.value_is_plt_stub != 0))
            }, context)
        }
        guard status == 0 else {
            throw ChaosError(.unsupportedPlatform, subject: symbol, "walking loaded ELF images is not supported here (error \(status)); use FunctionPointerSlot instead")
        }
        slots = collector.slots
        searched = collector.searched
    }
}
