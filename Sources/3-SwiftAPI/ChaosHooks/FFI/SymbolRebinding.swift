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
    public static func matching(_ description: String, _ predicate: @escaping @Sendable (String) -> Bool) -> ImageFilter
    {
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
    public convenience init(
        symbol: String, signature: CSignature, images: ImageFilter = .all,
        handler: @escaping FFIClosure.Handler
    ) throws(ChaosError) {
        #if os(Linux)
        let original = try Self.resolve(symbol)
        let closure = try FFIClosure(
            signature: signature, original: UnsafeRawPointer(bitPattern: original), handler: handler)
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
        _ = try Self.apply(together: [self])
    }

    /// Applies several rebindings as one: a single walk over the loaded images finds the
    /// slots of all their symbols, and a single batch writes them, so a read-only page
    /// (RELRO) shared by several symbols is made writable and restored once, not once per
    /// symbol. Cheaper than applying them one by one (a system point rebinding dozens of
    /// functions), with the same checks and errors as ``apply()``.
    ///
    /// All-or-nothing: if any rebinding is refused or any write fails, none is applied.
    /// - Parameters:
    ///   - rebindings: the group; one listed twice is applied once.
    ///   - isOptional: rebindings whose symbol may have no slot at all (nothing imports
    ///     it); they are left unapplied instead of failing the group.
    /// - Returns: the rebindings applied (the group less the optional ones without slots).
    /// - Throws: `.alreadyApplied`, `.symbolNotFound`, `.alreadyHooked` (also for one slot
    ///   claimed by two rebindings of the group), `.systemFailure`.
    @discardableResult
    public static func apply(
        together rebindings: [SymbolRebinding],
        isOptional: (SymbolRebinding) -> Bool = { _ in false }
    ) throws(ChaosError) -> [SymbolRebinding] {
        let group = unique(rebindings)
        return try withStates(group) {
            (states: [UnsafeMutablePointer<[PatchedSlot]?>]) throws(ChaosError) -> [SymbolRebinding] in
            for (rebinding, state) in zip(group, states) where state.pointee != nil {
                throw ChaosError(
                    .alreadyApplied, subject: rebinding.symbol,
                    "this rebinding is already applied; call revert() first or use refresh() for newly loaded images")
            }
            let applied = try HookRegistry.state.withLock {
                (registry: inout HookRegistryState) throws(ChaosError) -> [(Int, [PatchedSlot])] in
                let scans = try ImageScan.slots(of: group)
                var chosen: [(member: Int, slot: ImageScan.Slot)] = []
                var claimed: [UInt: Int] = [:]
                var members: [Int] = []
                for (index, rebinding) in group.enumerated() {
                    if scans[index].isEmpty {
                        if isOptional(rebinding) { continue }
                        throw try rebinding.notFound()
                    }
                    for slot in try rebinding.choose(scans[index], registry: registry) {
                        if let other = claimed[slot.address] {
                            throw ChaosError(
                                .alreadyHooked, subject: rebinding.symbol,
                                "the slot in \(slot.imagePath) is also rebound by the rebinding of \(group[other].symbol) in the same group; apply them separately"
                            )
                        }
                        claimed[slot.address] = index
                        chosen.append((index, slot))
                    }
                    members.append(index)
                }
                // One batch: each page's protection is looked up and lifted once.
                let results = SlotMemory.write(
                    chosen.map { ($0.slot.address, group[$0.member].target) },
                    what: {
                        "\(group[chosen[$0].member].symbol) in \(chosen[$0].slot.imagePath)"
                    })
                var written: [Int: [PatchedSlot]] = [:]
                var failure: ChaosError?
                for ((member, slot), result) in zip(chosen, results) {
                    switch result {
                    case .success(let previous):
                        written[member, default: []].append(
                            PatchedSlot(
                                addressBits: slot.address, imagePath: slot.imagePath, isJumpSlot: slot.isJumpSlot,
                                isData: slot.isData,
                                originalBytes: previous))
                    case .failure(let error):
                        failure = failure ?? error
                    }
                }
                if let failure {
                    let undo = written.values.flatMap { $0 }
                    _ = SlotMemory.write(undo.map { ($0.addressBits, $0.originalBytes) }, what: { _ in "undo" })
                    throw failure
                }
                return members.map { member in
                    let slots = written[member] ?? []
                    let rebinding = group[member]
                    let owner = SlotOwner(
                        owner: ObjectIdentifier(rebinding), description: "the rebinding of \(rebinding.symbol)",
                        closure: rebinding.ownedClosure)
                    for slot in slots { registry.ownedSlots[slot.addressBits] = owner }
                    return (member, slots)
                }
            }
            for (member, slots) in applied {
                states[member].pointee = slots
                group[member].ownedClosure?.bindings.add(1, ordering: .relaxed)
            }
            return applied.map { group[$0.0] }
        }
    }

    /// Patches slots of images loaded since ``apply()`` (or the last refresh) and
    /// returns how many were added. All-or-nothing like ``apply()``.
    @discardableResult
    public func refresh() throws(ChaosError) -> Int {
        try state.withLock { (patched: inout [PatchedSlot]?) throws(ChaosError) -> Int in
            guard let current = patched else {
                throw ChaosError(
                    .notApplied, subject: symbol,
                    "refresh() only adds slots to an applied rebinding; call apply() first")
            }
            var kept = current
            let added = try HookRegistry.state.withLock {
                (registry: inout HookRegistryState) throws(ChaosError) -> [PatchedSlot] in
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
        try Self.revert(together: [self])
    }

    /// Reverts several rebindings as one: a single walk checks which of their slots are
    /// still loaded and a single batch writes the original bytes back (each read-only
    /// page lifted once). Each rebinding ends as ``revert()`` would leave it; the first
    /// error is thrown once every rebinding was handled.
    /// - Throws: `.notApplied` (before anything is reverted) when one of them is not
    ///   applied; `.alreadyHooked`, `.systemFailure` as ``revert()``.
    public static func revert(together rebindings: [SymbolRebinding]) throws(ChaosError) {
        let group = unique(rebindings)
        try withStates(group) { (states: [UnsafeMutablePointer<[PatchedSlot]?>]) throws(ChaosError) in
            for (rebinding, state) in zip(group, states) where state.pointee == nil {
                throw ChaosError(
                    .notApplied, subject: rebinding.symbol, "this rebinding is not applied; nothing to revert")
            }
            var failures: [[PatchedSlot]] = Array(repeating: [], count: group.count)
            var foreign: [[String]] = Array(repeating: [], count: group.count)
            var firstFailure: ChaosError?
            HookRegistry.state.withLock { (registry: inout HookRegistryState) in
                // Only slots still mapped in a loaded image of the same path are touched.
                let patched = states.flatMap { $0.pointee ?? [] }
                let alive = ImageScan.alive(symbols: group.map(\.symbol), patched)
                var restore: [(member: Int, slot: PatchedSlot)] = []
                for (member, rebinding) in group.enumerated() {
                    for slot in states[member].pointee ?? [] {
                        guard alive.contains(slot.addressBits) else {
                            registry.ownedSlots[slot.addressBits] = nil
                            continue
                        }
                        let current = SlotMemory.read(slot.addressBits)
                        if current == rebinding.target {
                            restore.append((member, slot))
                        } else {
                            foreign[member].append("\(slot.imagePath) (now \(SlotMemory.hex(current)))")
                            registry.ownedSlots[slot.addressBits] = nil
                        }
                    }
                }
                // One batch: each page's protection is looked up and lifted once.
                let results = SlotMemory.write(
                    restore.map { ($0.slot.addressBits, $0.slot.originalBytes) },
                    what: {
                        "\(group[restore[$0].member].symbol) in \(restore[$0].slot.imagePath)"
                    })
                for ((member, slot), result) in zip(restore, results) {
                    switch result {
                    case .success: registry.ownedSlots[slot.addressBits] = nil
                    case .failure(let error):
                        failures[member].append(slot)
                        firstFailure = firstFailure ?? error
                    }
                }
            }
            var firstForeign: ChaosError?
            for (member, rebinding) in group.enumerated() {
                if !failures[member].isEmpty {
                    states[member].pointee = failures[member]
                    continue
                }
                states[member].pointee = nil
                rebinding.ownedClosure?.bindings.subtract(1, ordering: .relaxed)
                if !foreign[member].isEmpty, firstForeign == nil {
                    firstForeign = ChaosError(
                        .alreadyHooked, subject: rebinding.symbol,
                        "slots changed by something else after apply were left alone: \(foreign[member].joined(separator: ", ")); restore them yourself if needed"
                    )
                }
            }
            if let error = firstFailure ?? firstForeign { throw error }
        }
    }

    /// The group without repeats, in one fixed order (their locks are taken in it).
    private static func unique(_ rebindings: [SymbolRebinding]) -> [SymbolRebinding] {
        var seen = Set<ObjectIdentifier>()
        return rebindings.filter { seen.insert(ObjectIdentifier($0)).inserted }.sorted {
            ObjectIdentifier($0) < ObjectIdentifier($1)
        }
    }

    /// Runs `body` holding the state lock of every rebinding of `group` (taken in order),
    /// with a pointer to each state.
    private static func withStates<R>(
        _ group: [SymbolRebinding], from index: Int = 0, _ held: [UnsafeMutablePointer<[PatchedSlot]?>] = [],
        _ body: ([UnsafeMutablePointer<[PatchedSlot]?>]) throws(ChaosError) -> R
    ) throws(ChaosError) -> R {
        guard index < group.count else { return try body(held) }
        return try group[index].state.withLock { (state: inout [PatchedSlot]?) throws(ChaosError) -> R in
            try withUnsafeMutablePointer(to: &state) { (pointer) throws(ChaosError) -> R in
                try withStates(group, from: index + 1, held + [pointer], body)
            }
        }
    }

    private func notFound() throws(ChaosError) -> ChaosError {
        let searched = try ImageScan(symbol: symbol, images: images, listingImages: true).searched
        return ChaosError(
            .symbolNotFound, subject: symbol,
            "no GOT slot for '\(symbol)' in the \(searched.count) image(s) searched (\(images)): \(searched.joined(separator: ", ")); check the spelling, load the library that calls it first, or widen the image filter"
        )
    }

    /// The slots to patch among `slots`; throws when one is already hooked. A data pointer
    /// the program changed itself is left out.
    private func choose(_ slots: [ImageScan.Slot], registry: HookRegistryState) throws(ChaosError) -> [ImageScan.Slot] {
        var chosen: [ImageScan.Slot] = []
        for slot in slots {
            if let owner = registry.ownedSlots[slot.address] {
                throw ChaosError(
                    .alreadyHooked, subject: symbol,
                    "the slot in \(slot.imagePath) is already hooked by \(owner.description); revert that hook first")
            }
            let current = SlotMemory.read(slot.address)
            if current == originalBits || slot.valueIsPLTStub {
                chosen.append(slot)
                continue
            }
            if registry.liveClosures.contains(current) {
                throw ChaosError(
                    .alreadyHooked, subject: symbol,
                    "the slot in \(slot.imagePath) points at a ChaosHooks closure not registered for it; restore the real function first"
                )
            }
            let (name, image) = Self.describe(current)
            if name == symbol {  // another version of the same symbol
                chosen.append(slot)
                continue
            }
            if slot.isData { continue }  // the program changed its own pointer: its choice
            throw ChaosError(
                .alreadyHooked, subject: symbol,
                "the slot in \(slot.imagePath) holds \(SlotMemory.hex(current)) (\(name ?? "unknown") in \(image ?? "no image")), not the real \(symbol) at \(SlotMemory.hex(originalBits)): something else already hooks it; remove that hook or exclude the image with images:"
            )
        }
        return chosen
    }

    /// Validates every candidate, then writes them all (undoing on failure) and registers them.
    private func patch(_ slots: [ImageScan.Slot], registry: inout HookRegistryState) throws(ChaosError) -> [PatchedSlot]
    {
        let chosen = try choose(slots, registry: registry)
        // One batch: each page's protection is looked up and lifted once.
        let results = SlotMemory.write(
            chosen.map { ($0.address, target) }, what: { "\(symbol) in \(chosen[$0].imagePath)" })
        var written: [PatchedSlot] = []
        var failure: ChaosError?
        for (slot, result) in zip(chosen, results) {
            switch result {
            case .success(let previous):
                written.append(
                    PatchedSlot(
                        addressBits: slot.address, imagePath: slot.imagePath, isJumpSlot: slot.isJumpSlot,
                        isData: slot.isData, originalBytes: previous))
            case .failure(let error):
                failure = failure ?? error
            }
        }
        if let failure {
            _ = SlotMemory.write(written.map { ($0.addressBits, $0.originalBytes) }, what: { _ in self.symbol })
            throw failure
        }
        let owner = SlotOwner(
            owner: ObjectIdentifier(self), description: "the rebinding of \(symbol)", closure: ownedClosure)
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
            throw ChaosError(
                .symbolNotFound, subject: symbol,
                "no loaded image defines '\(symbol)' (dlsym failed); check the spelling (C names, no version suffix) or dlopen its library first"
            )
        }
        return UInt(bitPattern: address)
    }

    private static func unsupported(_ symbol: String) -> ChaosError {
        ChaosError(
            .unsupportedPlatform, subject: symbol,
            "symbol rebinding needs ELF (Linux); on this platform hook function-pointer slots with FunctionPointerSlot or use protocol injection points"
        )
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

    /// The slots of `patched` that a scan of every image still reports for one of `symbols`,
    /// in an image of the same path (compared in place: no string is made per slot).
    static func alive(symbols: [String], _ patched: [SymbolRebinding.PatchedSlot]) -> Set<UInt> {
        final class Check {
            let expected: [UInt: String]
            var alive: Set<UInt> = []
            init(_ expected: [UInt: String]) { self.expected = expected }
        }
        let check = Check(Dictionary(patched.map { ($0.addressBits, $0.imagePath) }) { first, _ in first })
        let names = Array(Set(symbols))
        guard !names.isEmpty else { return [] }
        _ = withExtendedLifetime(check) {
            names.withCStrings { pointers in
                chaos_elf_find_slots_many(
                    pointers, names.count, nil,
                    { context, _, info in
                        let check = Unmanaged<Check>.fromOpaque(context!).takeUnretainedValue()
                        let info = info!.pointee
                        let address = UInt(bitPattern: info.slot)
                        // A native string is contiguous and NUL-terminated: comparing it allocates nothing.
                        if let path = check.expected[address], strcmp(info.image_path, path) == 0 {
                            check.alive.insert(address)
                        }
                    }, Unmanaged.passUnretained(check).toOpaque())
            }
        }
        return check.alive
    }

    /// The slots of each rebinding of `group` (same order), from one walk over the images
    /// for all their symbols.
    static func slots(of group: [SymbolRebinding]) throws(ChaosError) -> [[Slot]] {
        final class Collector {
            let group: [SymbolRebinding]
            let names: [String]
            let members: [[Int]]  // per name, the rebindings of that symbol
            var slots: [[Slot]]
            var seen: [Set<UInt>]
            init(_ group: [SymbolRebinding]) {
                self.group = group
                var names: [String] = []
                var index: [String: Int] = [:]
                var members: [[Int]] = []
                for (member, rebinding) in group.enumerated() {
                    if let at = index[rebinding.symbol] {
                        members[at].append(member)
                    } else {
                        index[rebinding.symbol] = names.count
                        names.append(rebinding.symbol)
                        members.append([member])
                    }
                }
                self.names = names
                self.members = members
                slots = Array(repeating: [], count: group.count)
                seen = Array(repeating: [], count: group.count)
            }
        }
        guard !group.isEmpty else { return [] }
        let collector = Collector(group)
        let everything = group.allSatisfy { $0.images.matchesAll }
        let onImage: chaos_elf_image_fn? =
            everything
            ? nil
            : { context, path, _ in
                let collector = Unmanaged<Collector>.fromOpaque(context!).takeUnretainedValue()
                let path = String(cString: path!)
                return collector.group.contains { $0.images.matchesAll || $0.images.predicate(path) } ? 1 : 0
            }
        let status = withExtendedLifetime(collector) {
            collector.names.withCStrings { pointers in
                chaos_elf_find_slots_many(
                    pointers, collector.names.count, onImage,
                    { context, which, info in
                        let collector = Unmanaged<Collector>.fromOpaque(context!).takeUnretainedValue()
                        let info = info!.pointee
                        let address = UInt(bitPattern: info.slot)
                        let path = String(cString: info.image_path)
                        for member in collector.members[which] {
                            let filter = collector.group[member].images
                            guard filter.matchesAll || filter.predicate(path),
                                collector.seen[member].insert(address).inserted
                            else { continue }
                            collector.slots[member].append(
                                Slot(
                                    address: address, imagePath: path,
                                    isJumpSlot: info.kind == Int32(CHAOS_ELF_SLOT_JUMP),
                                    isData: info.kind == Int32(CHAOS_ELF_SLOT_DATA),
                                    valueIsPLTStub: info.value_is_plt_stub != 0))
                        }
                    }, Unmanaged.passUnretained(collector).toOpaque())
            }
        }
        guard status == 0 else {
            throw ChaosError(
                .unsupportedPlatform, subject: group.first?.symbol ?? "symbols",
                "walking loaded ELF images is not supported here (error \(status)); use FunctionPointerSlot instead")
        }
        return collector.slots
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
        let onImage: chaos_elf_image_fn? =
            images.matchesAll && !listingImages
            ? nil
            : { context, path, _ in
                let collector = Unmanaged<Collector>.fromOpaque(context!).takeUnretainedValue()
                let path = String(cString: path!)
                guard collector.filter.predicate(path) else { return 0 }
                collector.searched.append(path)
                return 1
            }
        let status = withExtendedLifetime(collector) {
            chaos_elf_find_slots(
                symbol, onImage,
                { context, info in
                    let collector = Unmanaged<Collector>.fromOpaque(context!).takeUnretainedValue()
                    let info = info!.pointee
                    let address = UInt(bitPattern: info.slot)
                    guard collector.seen.insert(address).inserted else { return }
                    collector.slots.append(
                        Slot(
                            address: address, imagePath: String(cString: info.image_path),
                            isJumpSlot: info.kind == Int32(CHAOS_ELF_SLOT_JUMP),
                            isData: info.kind == Int32(CHAOS_ELF_SLOT_DATA),
                            valueIsPLTStub: info.value_is_plt_stub != 0))
                }, context)
        }
        guard status == 0 else {
            throw ChaosError(
                .unsupportedPlatform, subject: symbol,
                "walking loaded ELF images is not supported here (error \(status)); use FunctionPointerSlot instead")
        }
        slots = collector.slots
        searched = collector.searched
    }
}

extension Array where Element == String {
    /// Calls `body` with the strings as a C array of C strings (valid during the call).
    func withCStrings<R>(_ body: (UnsafePointer<UnsafePointer<CChar>?>) -> R) -> R {
        let copies = map { strdup($0) }
        defer { copies.forEach { free($0) } }
        let pointers = copies.map { UnsafePointer($0) } + [nil]
        return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
    }
}
