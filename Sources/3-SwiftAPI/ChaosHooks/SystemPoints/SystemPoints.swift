import CChaosFaults
import CChaosIntercept
@_spi(Hooks) public import ChaosKit
import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The built-in system points: files, sockets, name resolution, the environment and the
/// wall clock, for the whole process, through the C library (Linux/glibc; elsewhere
/// applying them throws `.unsupportedPlatform`).
///
/// They are delivered by the same C fault engine as `chaos run`: applying an entry
/// compiles the point's entries into the engine's plan (Docs/FaultPlan.md) and rebinds
/// the C functions the point needs — GOT slots and the function-pointer tables the
/// dynamic linker filled at load time (SQLite's system-call table) in every loaded image —
/// to the engine's interceptors. The engine decides each call without Swift; blocks,
/// random outcomes and task scopes (`Chaos.with`) are answered by Swift when it asks.
///
/// | point | functions | catalogue items |
/// |---|---|---|
/// | `system.files` | open…creat, fopen, read/pread/readv/preadv, write/pwrite/writev/pwritev, stdio writes and flushes, fsync/fdatasync/sync_file_range, ftruncate/truncate/fallocate, rename, unlink/rmdir, mkdir, link, symlink, close, copy_file_range, sendfile | `eio`, `enospc`, `eacces`, `fail` {errno or any}, `short-read`, `short-write`, `corrupt`, `latency`; each with `path` and `operations`; `power-loss` {path, torn} under `chaos run` (``FileSystemPowerLoss`` in-process) |
/// | `system.connect` | connect | `refused`, `timeout` {after}, `reset`, `unreachable`, `fail`, `latency`; with `host`, `port`, `families` |
/// | `system.accept` | accept, accept4 | `aborted`, `fail`, `latency` |
/// | `system.send`, `system.recv` | send/sendto/sendmsg, recv/recvfrom/recvmsg, and reads and writes on sockets | `reset`, `broken-pipe` (send), `fail`, `short`, `latency`; with `families`, `roles` |
/// | `system.getaddrinfo` | getaddrinfo, gethostbyname* | `dns-failure`, `temporary-failure`, `fail` {code}, `latency`; with `host` |
/// | `system.getenv` | getenv, secure_getenv | `set` {name, value}, `unset` {name} |
/// | `system.clock` | every realtime clock id, gettimeofday, time, timespec_get, ftime; file times; sleeps under speed | `offset`, `frozen`, `speed`, `jump`; with `clocks`, `monotonic`, `fileTimes`, `sleeps` |
/// | `system.stat` | stat, lstat, fstat, fstatat, statx (and glibc's older `__xstat` names) | `attributes` {size, mtime, mode, nlink}, `enoent`, `eacces`, `fail`, `latency`; with `path` |
/// | `system.process` | fork, vfork, clone (never a thread), posix_spawn, posix_spawnp, system, popen | `eagain`, `enomem`, `fail` {errno or any}, `latency` |
/// | `system.dir` | opendir, fdopendir, readdir, readdir64, getdents64 | `eacces`, `enoent`, `fail`, `omit` {name or every}, `latency`; with `path` |
/// | `system.memory` | malloc, calloc, realloc, the aligned allocators, anonymous mmap (C code only) | `enomem` {images, after}; with `above` |
///
/// Entries on one point stack: the newest decides, and where it does not act (a call it
/// does not aim at, a probability that misses, `times` used up) the next older one does.
/// Monotonic clocks stay real unless an entry opts in, so sleeps and timeouts keep
/// working. The points patch nothing until an entry or scope uses them, and restore
/// every slot after the last.
///
/// What they cannot see: calls inside the C library itself (glibc's `fopen` does not call
/// `open` through a slot, which is why stdio is intercepted at the stdio level), function
/// pointers copied at run time or fetched with `dlsym`, direct system calls, and
/// statically linked programs.
public enum SystemPoints: LazyPointSource {
    /// File calls: see ``FileOperationKind`` and ``SystemTarget/files(path:operations:descriptor:kinds:)``.
    public static let files = makePoint(.files)
    /// `connect(2)`.
    public static let connect = makePoint(.connect)
    /// `accept`, `accept4`.
    public static let accept = makePoint(.accept)
    /// Sending on sockets.
    public static let send = makePoint(.send)
    /// Receiving on sockets.
    public static let recv = makePoint(.recv)
    /// Name resolution: `getaddrinfo`, `gethostbyname*`.
    public static let getaddrinfo = makePoint(.dns)
    /// `getenv`, `secure_getenv`.
    public static let getenv = makePoint(.getenv)
    /// The wall clock (`Date()`, `clock_gettime`, `gettimeofday`, `time` …), file times, sleeps.
    public static let clock = makePoint(.clock)
    /// The attributes files seem to have: `stat`, `lstat`, `fstat`, `fstatat`, `statx`.
    public static let stat = makePoint(.stat)
    /// Creating processes: `fork`, `vfork`, `clone` (never a thread), `posix_spawn`,
    /// `posix_spawnp`, `system`, `popen`. Off unless an entry names it.
    public static let process = makePoint(.process)
    /// Directories: `opendir`, `fdopendir`, `readdir`, `readdir64`, `getdents64`.
    public static let dir = makePoint(.dir)
    /// Allocations: `malloc`, `calloc`, `realloc`, `posix_memalign`, `aligned_alloc`,
    /// `memalign`, `valloc`, `pvalloc` and anonymous `mmap` fail with `ENOMEM`. Off unless an
    /// entry names it. For C code: in-process only the C images an entry names
    /// (``SystemOutcome/outOfMemory(images:)``) are affected, never the Swift runtime, which
    /// traps on a failed allocation by design.
    public static let memory = makePoint(.memory)

    /// The point of `kind`.
    public static func point(for kind: SystemPointKind) -> InjectionPoint<SystemCall, SystemOutcome, Never> {
        switch kind {
        case .files: files
        case .connect: connect
        case .accept: accept
        case .send: send
        case .recv: recv
        case .dns: getaddrinfo
        case .getenv: getenv
        case .clock: clock
        case .stat: stat
        case .process: process
        case .dir: dir
        case .memory: memory
        }
    }

    /// The prefix of every system point's name.
    public static var pointNamePrefix: String { "system." }

    /// Creates every system point, so that `Chaos.catalogue` and `chaos list` show them.
    /// A profile entry naming one creates them by itself.
    public static func register() {
        for kind in SystemPointKind.allCases { _ = point(for: kind) }
    }

    private static func makePoint(_ kind: SystemPointKind) -> InjectionPoint<SystemCall, SystemOutcome, Never> {
        // Virtual time runs through the clock point: from here the control endpoint can step it.
        if kind == .clock { _ = VirtualTime.registerControl }
        return InjectionPoint(
            kind.pointName, catalogue: SystemCatalogues.catalogue(kind), activation: SystemPointActivation(kind: kind)
        ) { _ in .real }
    }
}

extension SystemPointKind {
    /// The kind of the system point called `name` (`"system.files"` …).
    public init?(pointName name: String) {
        guard let kind = Self.allCases.first(where: { $0.pointName == name }) else { return nil }
        self = kind
    }
}

/// The activation of one system point: the shared in-process delivery does the work.
struct SystemPointActivation: PointActivation {
    let kind: SystemPointKind

    func activate() throws(ChaosError) { try InProcessDelivery.shared.activate(kind) }
    func deactivate() { InProcessDelivery.shared.deactivate(kind) }
    func changed() { InProcessDelivery.shared.recompile() }
    func admit() throws(ChaosError) { try InProcessDelivery.shared.admit(kind) }
    func dismiss() { InProcessDelivery.shared.dismiss() }
}

/// The fault engine in this process: which interceptors are bound, the installed plan,
/// and the counters of entries whose calls the engine decided.
final class InProcessDelivery: Sendable {
    static let shared = InProcessDelivery()

    private struct State {
        var active: Set<SystemPointKind> = []
        /// Rebindings of intercepted symbols, by symbol.
        var bound: [String: SymbolRebinding] = [:]
        /// The engine's counts of each entry it decided calls for: every plan that compiles
        /// the entry counts into the same ones.
        var counts: [InstalledEntryReference: EngineCounts] = [:]
        /// A FileSystemPowerLoss records: the files interceptors stay bound for it.
        var recordingPowerLoss = false
        /// The images whose allocation slots are rebound for system.memory (the union of its
        /// entries' `images`): never every image, which would fail the Swift runtime's.
        var memoryImages: Set<String> = []
    }

    private let state = Locked(State())
    private static let logger = Logger(label: "ChaosHooks.system")
    /// Entries and task scopes on every system point: the plan holds one engine entry for
    /// each at most, and the engine takes `CHAOS_PLAN_MAX_ENTRIES`. Counted apart from
    /// `state` because admitting runs under a point's lifecycle lock, before its entry exists.
    private let users = Locked(0)

    /// Counts one more user of `kind`, refusing the one past the engine's limit: a plan
    /// over it would be refused whole, silencing every entry.
    func admit(_ kind: SystemPointKind) throws(ChaosError) {
        let limit = Int(CHAOS_PLAN_MAX_ENTRIES)
        try users.withLock { (count: inout Int) throws(ChaosError) in
            guard count < limit else {
                throw ChaosError(
                    .invalidProvider, subject: kind.pointName,
                    "the fault engine takes at most \(limit) system entries and task scopes at once in a process, and \(count) are applied; revert some first"
                )
            }
            count += 1
        }
    }

    /// Counts one user less.
    func dismiss() {
        users.withLock { $0 -= 1 }
    }

    /// Binds the interceptors `kind` needs (all or nothing).
    func activate(_ kind: SystemPointKind) throws(ChaosError) {
        #if os(Linux)
        try state.withLock { (state: inout State) throws(ChaosError) in
            try bind(kind, &state)
            state.active.insert(kind)
        }
        #else
        throw ChaosError(
            .unsupportedPlatform, subject: kind.pointName,
            "system points need Linux and glibc; use a protocol injection point instead")
        #endif
    }

    /// Binds the files interceptors for a FileSystemPowerLoss, which records through them
    /// whatever entries are applied; false when another one records already.
    func startRecordingPowerLoss(_ start: () -> Bool) throws(ChaosError) -> Bool {
        #if os(Linux)
        try state.withLock { (state: inout State) throws(ChaosError) -> Bool in
            guard !state.recordingPowerLoss else { return false }
            try bind(.files, &state)
            guard start() else {
                unbindUnneeded(&state)
                return false
            }
            state.recordingPowerLoss = true
            return true
        }
        #else
        throw ChaosError(
            .unsupportedPlatform, subject: "FileSystemPowerLoss",
            "power loss in this process needs Linux and glibc; run the program under chaos run")
        #endif
    }

    /// Ends the recording (`stop` ends the engine's side) and unbinds what no point needs.
    func stopRecordingPowerLoss(_ stop: () -> Void) {
        state.withLock { state in
            stop()
            state.recordingPowerLoss = false
            unbindUnneeded(&state)
        }
    }

    #if os(Linux)
    private func bind(_ kind: SystemPointKind, _ state: inout State) throws(ChaosError) {
        chaos_fault_set_ask(systemAsk)
        // Memory slots are rebound in the images the entries name, once they are known.
        if kind == .memory { return }
        var fresh: [SymbolRebinding] = []
        for (symbol, target) in Self.interceptors(for: kind) where state.bound[symbol] == nil {
            fresh.append(try SymbolRebinding(symbol: symbol, rawTarget: target))
        }
        do throws(ChaosError) {
            // One walk and one batch of writes; a symbol nothing loaded imports is skipped.
            for rebinding in try SymbolRebinding.apply(together: fresh, isOptional: { _ in true }) {
                state.bound[rebinding.symbol] = rebinding
            }
        } catch {
            throw ChaosError(
                error.kind, subject: kind.pointName,
                "could not hook \(error.subject ?? "a function"): \(error.message)")
        }
    }
    #endif

    /// Takes `kind` out of the plan and unbinds what no other active point needs.
    func deactivate(_ kind: SystemPointKind) {
        state.withLock { state in
            state.active.remove(kind)
            install(&state)
            unbindUnneeded(&state)
        }
    }

    /// Unbinds the interceptors no active point (nor a recording power loss) needs.
    private func unbindUnneeded(_ state: inout State) {
        let kinds = state.recordingPowerLoss ? state.active.union([.files]) : state.active
        let needed = Set(kinds.flatMap { Self.interceptors(for: $0).map(\.symbol) })
        let unneeded = state.bound.filter { !needed.contains($0.key) }
        do throws(ChaosError) {
            try SymbolRebinding.revert(together: Array(unneeded.values))
        } catch {
            Self.logger.warning(
                "reverting system functions reported a problem", metadata: ["error": "\(error)"])
        }
        for symbol in unneeded.keys { state.bound[symbol] = nil }
    }

    /// Compiles every active point's entries again and installs the plan.
    func recompile() {
        state.withLock { install(&$0) }
    }

    /// Rebinds the allocation slots of exactly the images system.memory's entries name.
    private func bindMemoryImages(_ state: inout State) {
        #if os(Linux)
        var images = Set<String>()
        if state.active.contains(.memory) {
            for entry in SystemPoints.memory.globalEntries {
                entry.tree.forEachLeaf { leaf in
                    if case .constant(.outOfMemory(let named)) = leaf { images.formUnion(named) }
                }
            }
        }
        guard images != state.memoryImages else { return }
        let symbols = Self.interceptors(for: .memory)
        let old = symbols.compactMap { state.bound[$0.symbol] }
        do throws(ChaosError) {
            try SymbolRebinding.revert(together: old)
        } catch {
            Self.logger.warning("reverting allocation functions reported a problem", metadata: ["error": "\(error)"])
        }
        for (symbol, _) in symbols { state.bound[symbol] = nil }
        state.memoryImages = images
        guard !images.isEmpty else { return }
        let loaded = LoadedImages.paths()
        for image in images where !loaded.contains(where: { LoadedImages.path($0, isNamedBy: image) }) {
            Self.logger.error(
                "system.memory names an image that is not loaded: none of its allocations can fail until it is (then apply the entry again)",
                metadata: ["image": "\(image)"])
        }
        let named = images
        let filter = ImageFilter.matching("the images \(images.sorted().joined(separator: ", "))") { path in
            named.contains { LoadedImages.path(path, isNamedBy: $0) }
        }
        do throws(ChaosError) {
            let fresh = try symbols.map { (symbol, target) throws(ChaosError) in
                try SymbolRebinding(symbol: symbol, rawTarget: target, images: filter)
            }
            // An image that never calls, say, valloc has no slot for it.
            for rebinding in try SymbolRebinding.apply(together: fresh, isOptional: { _ in true }) {
                state.bound[rebinding.symbol] = rebinding
            }
        } catch {
            Self.logger.error(
                "could not rebind the allocation functions of the named images",
                metadata: ["images": "\(images.sorted())", "error": "\(error)"])
        }
        #endif
    }

    /// The plan of the active points' entries, each counting where its earlier plans did.
    private func install(_ state: inout State) {
        bindMemoryImages(&state)
        var lines = ["chaos-plan 1", "seed 0"]
        var planEntries: [Int32: InstalledEntryReference] = [:]
        var index: Int32 = 0
        var alive = Set<InstalledEntryReference>()
        for kind in SystemPointKind.allCases where state.active.contains(kind) {
            let point = SystemPoints.point(for: kind)
            let entries = point.globalEntries
            alive.formUnion(entries.map(\.entry))
            let compiled: [[String]]? =
                point.hasLiveScopes
                ? nil
                : try? entries.reversed().map { entry throws(SystemPlanCompiler.Unsupported) in
                    try SystemPlanCompiler.entry(
                        entry.tree, point: kind, label: "\(kind.pointName) ← \(entry.tree.summary.prefix(200))",
                        delivery: .inProcess, entrySeed: entry.seed)
                }
            if let compiled {
                for (offset, entry) in entries.reversed().enumerated() {
                    lines += compiled[offset]
                    planEntries[index] = entry.entry
                    index += 1
                }
            } else if !entries.isEmpty || point.hasLiveScopes {
                // Swift answers every call: blocks, random outcomes, Swift conditions, scopes.
                lines += SystemPlanCompiler.askingEntry(
                    point: kind, label: "\(kind.pointName) (Swift)",
                    scopes: entries.flatMap { SystemPlanCompiler.clockScopes(in: $0.tree) })
                index += 1
            }
        }
        let text = lines.joined(separator: "\n") + "\n"
        var error = chaos_plan_error()
        if index == 0 {
            chaos_plan_clear()
        } else if let plan = chaos_plan_parse(text, text.utf8.count, &error) {
            // No count moves between plans: a call the old plan decides while this one is
            // installed counts once, in the counts the entry keeps.
            for (planIndex, entry) in planEntries {
                if let counts = state.counts[entry] {
                    chaos_plan_count_into(plan, planIndex, counts.pointer)
                } else if let pointer = chaos_plan_counts(plan, planIndex) {
                    state.counts[entry] = EngineCounts(pointer)
                }
            }
            chaos_plan_install(plan)
        } else {
            // The compiler writes only what the engine reads: this is a defect, not input.
            Self.logger.error(
                "the fault engine refused a compiled plan",
                metadata: [
                    "line": "\(error.line)", "column": "\(error.column)",
                    "message":
                        "\(withUnsafeBytes(of: error.message) { CText.string(Array($0.bindMemory(to: CChar.self))) })",
                ])
            chaos_plan_clear()
            planEntries = [:]
        }
        state.counts = state.counts.filter { alive.contains($0.key) }
        for entry in planEntries.values {
            let id = entry.id  // not the entry: its closure must not keep it alive
            entry.countAlso { [weak self] in self?.counts(of: id) }
        }
    }

    /// What the engine counted for an entry, under every plan that compiled it.
    private func counts(of id: ObjectIdentifier) -> ExternalCounts? {
        guard let counts = state.withLock({ $0.counts.first { $0.key.id == id }?.value }) else { return nil }
        var counters = chaos_entry_counters()
        chaos_counts_read(counts.pointer, &counters)
        return ExternalCounts(
            seen: Int(counters.seen), acted: Int(counters.acted),
            lastActedCall: counters.acted > 0 ? Int(counters.last_fire_call) : -1, lastActedTime: counters.last_fire_ns)
    }

    /// The interceptors (symbol, replacement) that entries on `kind` need, for symbols the
    /// running C library defines.
    static func interceptors(for kind: SystemPointKind) -> [(symbol: String, target: UnsafeRawPointer)] {
        var found: [(String, UnsafeRawPointer)] = []
        var element = chaos_intercepts()
        while let current = element, let symbol = current.pointee.symbol {
            if current.pointee.points & (1 << UInt32(kind.rawValue)) != 0, let target = current.pointee.replacement,
                dlsym(nil, symbol) != nil
            {  // RTLD_DEFAULT: libc defines it
                found.append((String(cString: symbol), UnsafeRawPointer(target)))
            }
            element = current + 1
        }
        return found
    }
}

/// A reference to counts of the engine (chaos_counts), dropped with the last holder.
final class EngineCounts: @unchecked Sendable {
    // Unchecked: the pointer never changes, and the engine's counts are thread-safe.
    let pointer: OpaquePointer

    init(_ pointer: OpaquePointer) { self.pointer = pointer }

    deinit { chaos_counts_release(pointer) }
}

/// Answers the engine's `ask` nodes: the point decides in Swift, with its scopes.
private let systemAsk: chaos_ask_fn = { call, _, _, out in
    guard let call, let out, let kind = SystemPointKind(rawValue: call.pointee.point) else { return 0 }
    let systemCall = SystemCall(call.pointee)
    // A target a fault must name (the program's own stdout, /dev, /proc) is left alone
    // when Swift decides: only a compiled path condition can name it.
    if kind == .files || kind == .stat,
        systemCall.isProtected || (systemCall.path.map(SystemTarget.isUnderSpecialDirectory) ?? false)
    {
        return 0
    }
    return SystemOutcomeAnswer.fill(out, with: SystemPoints.point(for: kind)(systemCall), for: systemCall) ? 1 : 0
}

/// An outcome as the engine's interceptors execute it.
enum SystemOutcomeAnswer {
    /// Fills `out`; false for the original (or an errno the function cannot return).
    static func fill(_ out: UnsafeMutablePointer<chaos_outcome>, with outcome: SystemOutcome, for call: SystemCall)
        -> Bool
    {
        switch outcome {
        case .real, .pass:
            return false
        case .fail(let code):
            guard chaos_fault_errno_allowed(call.functionCode, code) != 0 else { return false }
            out.pointee.action = Int32(CHAOS_ACT_FAIL.rawValue)
            out.pointee.ret = -1
            out.pointee.err = code
        case .failWithAnyErrno:
            // Answered by Swift (a block or a scope around it), where no entry seed reaches:
            // drawn in the order this process answers such calls.
            var codes = [Int32](repeating: 0, count: 64)
            let count = min(Int(chaos_fault_errnos(call.functionCode, &codes, 64)), 64)
            guard count > 0 else { return false }
            let index = SystemAnswers.nextAnyErrnoDraw()
            out.pointee.action = Int32(CHAOS_ACT_FAIL.rawValue)
            out.pointee.ret = -1
            out.pointee.err = codes[Int(chaos_fault_draw(0, UInt64(call.functionCode), index) * Double(count))]
        case .resolverFailure(let code):
            guard chaos_fault_errno_allowed(call.functionCode, code) != 0 else { return false }
            out.pointee.action = Int32(CHAOS_ACT_FAIL.rawValue)
            out.pointee.ret = Int64(code)
        case .short(let max):
            out.pointee.action = Int32(CHAOS_ACT_SHORT.rawValue)
            out.pointee.max_bytes = Int64(max ?? 0)
        case .corrupt(let bytes, let offset, let with):
            // Answered by Swift, where no entry seed reaches: drawn in the order this process
            // answers such calls.
            out.pointee.action = Int32(CHAOS_ACT_CORRUPT.rawValue)
            out.pointee.corrupt_bytes = Int64(bytes)
            out.pointee.corrupt_offset = Int64(offset ?? -1)
            out.pointee.corrupt_with = with.engineValue
            out.pointee.corrupt_seed = SystemAnswers.nextAnyErrnoDraw() &* 0x9E37_79B9_7F4A_7C15
        case .offset(let ns, _):
            out.pointee.action = Int32(CHAOS_ACT_OFFSET.rawValue)
            out.pointee.clock_ns = ns
        case .frozen(let ns, _):
            out.pointee.action = Int32(CHAOS_ACT_FROZEN.rawValue)
            out.pointee.clock_ns = ns
        case .speed(let factor, let since, _):
            out.pointee.action = Int32(CHAOS_ACT_SPEED.rawValue)
            out.pointee.factor = factor
            out.pointee.anchor_ns = since
        case .virtual:
            // Virtual time runs while a plan holds its node; an answer from Swift reads it
            // when it runs and is the real time otherwise.
            out.pointee.action = Int32(CHAOS_ACT_VIRTUAL.rawValue)
        case .set(let value):
            out.pointee.action = Int32(CHAOS_ACT_SET.rawValue)
            out.pointee.value = chaos_fault_intern(value)
        case .unset:
            out.pointee.action = Int32(CHAOS_ACT_UNSET.rawValue)
        case .omit(let entries):
            // Answered by Swift, where no entry seed reaches: a name is left out by seed 0.
            out.pointee.action = Int32(CHAOS_ACT_OMIT.rawValue)
            switch entries {
            case .named(let pattern): out.pointee.omit_name = chaos_fault_intern(pattern)
            case .oneIn(let count): out.pointee.omit_every = Int64(count)
            }
        case .outOfMemory:
            out.pointee.action = Int32(CHAOS_ACT_FAIL.rawValue)
            out.pointee.ret = -1
            out.pointee.err = ENOMEM
        case .powerLoss:
            // Refused when applied in-process (SystemCatalogues' result check): no answer here.
            return false
        case .attributes(let attributes):
            var engine = chaos_attributes()
            if let size = attributes.size {
                engine.set |= UInt32(CHAOS_ATTRIBUTE_SIZE)
                engine.size = size
            }
            if let modified = attributes.modifiedNanosecondsSince1970 {
                engine.set |= UInt32(CHAOS_ATTRIBUTE_MTIME)
                engine.mtime_ns = modified
            }
            if let permissions = attributes.permissions {
                engine.set |= UInt32(CHAOS_ATTRIBUTE_MODE)
                engine.mode = UInt32(permissions)
            }
            if let links = attributes.links {
                engine.set |= UInt32(CHAOS_ATTRIBUTE_NLINK)
                engine.nlink = links
            }
            out.pointee.action = Int32(CHAOS_ACT_ATTRIBUTES.rawValue)
            out.pointee.attributes = engine
        case .slice(let bytes, let variation):
            // Answered by Swift, where no entry seed reaches: drawn in the order this process
            // answers such calls.
            let spread = UInt64(2 * variation + 1)
            out.pointee.action = Int32(CHAOS_ACT_SHORT.rawValue)
            out.pointee.max_bytes = Int64(bytes) + Int64(SystemAnswers.nextAnyErrnoDraw() % spread) - Int64(variation)
        case .slowClose(let duration):
            guard call.functionCode == Int32(CHAOS_FN_SOCKET_CLOSE.rawValue) else { return false }
            out.pointee.action = Int32(CHAOS_ACT_ORIGINAL.rawValue)
            out.pointee.delay_ns += duration.wholeNanosecondsForPlan
        case .pace, .limit, .stall:
            // The connection's state is the engine's: it decides as the plan's node would.
            return call.withEngineCall { engineCall in
                switch outcome {
                case .pace(let rate):
                    chaos_stream_answer(Int32(CHAOS_NODE_PACE.rawValue), UInt64(rate), 0, 0, &engineCall, out) != 0
                case .limit(let bytes, let end):
                    chaos_stream_answer(
                        Int32(CHAOS_NODE_LIMIT.rawValue), UInt64(max(bytes, 0)), 0, end.engineValue, &engineCall, out)
                        != 0
                case .stall(let duration, let end):
                    chaos_stream_answer(
                        Int32(CHAOS_NODE_STALL.rawValue), 0, duration.wholeNanosecondsForPlan, end.engineValue,
                        &engineCall, out) != 0
                default: false
                }
            }
        }
        return true
    }
}

extension SystemTarget {
    /// Whether `path` is under `/dev`, `/proc` or `/sys`.
    static func isUnderSpecialDirectory(_ path: String) -> Bool {
        ["/dev", "/proc", "/sys"].contains { path == $0 || path.hasPrefix($0 + "/") }
    }
}

/// What Swift answers for system points needs of its own between calls.
enum SystemAnswers {
    /// How many drawn answers (`failWithAnyErrno`, `corrupt`) Swift has made in this
    /// process: each draws the next.
    private static let anyErrnoDraws = Atomic<UInt64>(0)

    static func nextAnyErrnoDraw() -> UInt64 {
        anyErrnoDraws.add(1, ordering: .relaxed).oldValue
    }
}
