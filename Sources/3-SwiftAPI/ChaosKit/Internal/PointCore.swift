public import CChaosGrace
public import Synchronization

/// What the rest of ChaosKit needs of a point, whatever its types: its name and
/// catalogue, making installations from descriptions, and the global stack and scope
/// counts that decide what a call does.
protocol AnyPointCore: PointState, Sendable {
    var catalogueItems: [CatalogueItemInfo] { get }
    var matchConditions: [CatalogueParameter]? { get }
    var typicalFaults: [String] { get }
    /// Whether the point can throw (its failure type is not `Never`).
    var canThrow: Bool { get }
    func prepare(_ description: ProviderDescription, seed: UInt64, entry: ProfileEntry.ID?) throws(ChaosError)
        -> PreparedInstallation
}

/// An entry checked and ready to install on its point; installing it cannot fail.
struct PreparedInstallation: Sendable {
    /// The point's state: what installing and removing the entry touch.
    let core: PointState
    let installation: InstalledEntry
}

/// An entry with its installation, made but not yet in effect: a named pair rather than a
/// tuple, which generic code copies through the runtime's tuple witnesses.
struct PreparedEntry: Sendable {
    let entry: ProfileEntry
    let prepared: PreparedInstallation
}

/// The part of a point's core that does not depend on its types: the global stack of
/// applied entries, the atomic words the call path reads, and the activation. Applying and
/// reverting only touch this part, so they run without generic metadata look-ups.
@usableFromInline class PointState: @unchecked Sendable {
    // Unchecked: every stored property is immutable, atomic, or behind a `Locked` (for
    // `journalNameIndex`, the call journal's).

    /// Global entries plus live scopes that involve this point. Zero means "call the original".
    @usableFromInline final let activity = Atomic<Int>(0)
    /// Live scopes that involve this point (a task-local lookup is only worth it then).
    @usableFromInline final let scopes = Atomic<Int>(0)
    /// The newest global entry as an unretained object address (0: none). It is only
    /// written under `stack`'s lock; a removed entry is retired (``RetiredObjects``) and
    /// stays alive until every section that may have read it has ended.
    @usableFromInline final let topAddress = Atomic<UInt>(0)
    /// The applied global entries (installations), oldest first; the last one wins.
    @usableFromInline final let stack = Locked<[any AnyObject & Sendable]>([])
    /// The key under which the runtime keeps the current task's scope: read once here, so
    /// that the call path does not go through the lazy global each time.
    @usableFromInline final let scopeKey: UnsafeMutableRawPointer
    /// Whether someone observes acts (their times, the event stream): the call path then
    /// records more than counts (see ``ChaosObservation``).
    @usableFromInline final let observed = Atomic<Bool>(false)
    /// Whether the call journal records this point's calls (``CallJournal/selection``).
    /// Only changed under the journal's lock; while it is set the point also counts one
    /// more in `activity`, so that calls with nothing applied reach the journal too.
    @usableFromInline final let journaled = Atomic<Bool>(false)
    /// How the journal renders the point's calls: which of its types render themselves,
    /// and whether its arguments may hold secrets (then it is journaled only when named).
    @usableFromInline final let journalTypes: JournalTypes
    /// Whether the point's arguments may hold secrets (see
    /// ``CallJournalRendering/journalMayHoldSecrets``).
    final var argumentsMayHoldSecrets: Bool { journalTypes.secrets }

    final let name: String
    final let signature: String
    /// Where the call journal keeps this point's name (-1: not yet). Only read and written
    /// under the lock of ``CallJournal/shared``, the one journal points record to.
    final var journalNameIndex = -1
    /// What to do when the point starts and stops being used (C hooks patch their slots).
    final let activation: (any PointActivation)?
    /// Users of the activation: global entries plus live scopes. Only touched off the
    /// call path, and only for points that have an activation.
    private final let users = Locked<Int>(0)
    private final let readers: RetiredObjects.Readers
    /// Which sections may still read an entry taken off this point.
    final var retiredReaders: RetiredObjects.Readers { readers }

    init(name: String, signature: String, activation: (any PointActivation)?, journalTypes: JournalTypes) {
        self.journalTypes = journalTypes
        self.name = name
        self.signature = signature
        self.activation = activation
        self.readers = activation?.readsEntriesInHookSections == true ? .hookSections : .pointSections
        self.scopeKey = ScopeFrame.key
        observed.store(ChaosObservation.isObserving, ordering: .relaxed)
    }

    final func pushGlobal(_ installation: any AnyObject & Sendable) {
        stack.withLock { stack in
            stack.append(installation)
            publishTop(stack)
        }
        activity.wrappingAdd(1, ordering: .releasing)
    }

    /// Removes exactly this installation (by identity: one entry may be applied by
    /// several `Chaos` builders, each with its own installation).
    final func removeGlobal(_ installation: AnyObject, retiring: Bool = true) -> Bool {
        let removed = stack.withLock { stack -> Bool in
            guard let index = stack.lastIndex(where: { $0 === installation }) else { return false }
            stack.remove(at: index)
            publishTop(stack)
            return true
        }
        if removed {
            activity.wrappingSubtract(1, ordering: .releasing)
            if retiring { RetiredObjects.shared.retire(installation, readers: readers) }
        }
        return removed
    }

    /// Keeps `topAddress` equal to the stack's last element; called under the stack's lock.
    private final func publishTop(_ stack: [any AnyObject & Sendable]) {
        let address = stack.last.map { UInt(bitPattern: Unmanaged.passUnretained($0 as AnyObject).toOpaque()) } ?? 0
        topAddress.store(address, ordering: .releasing)
    }

    /// Starts or stops journaling this point's calls; called under the journal's lock.
    final func setJournaled(_ on: Bool) {
        guard journaled.load(ordering: .relaxed) != on else { return }
        journaled.store(on, ordering: .relaxed)
        if on {
            activity.wrappingAdd(1, ordering: .releasing)
        } else {
            activity.wrappingSubtract(1, ordering: .releasing)
        }
    }

    final func scopeEntered() {
        scopes.wrappingAdd(1, ordering: .releasing)
        activity.wrappingAdd(1, ordering: .releasing)
    }

    final func scopeLeft() {
        activity.wrappingSubtract(1, ordering: .releasing)
        scopes.wrappingSubtract(1, ordering: .releasing)
    }

    /// Counts one more user; the first one activates the point. On error nothing changed.
    final func retainActivation() throws(ChaosError) {
        guard let activation else { return }
        try users.withLock { (count: inout Int) throws(ChaosError) in
            try activation.admit()
            if count == 0 {
                do throws(ChaosError) {
                    try activation.activate()
                } catch {
                    activation.dismiss()
                    throw error
                }
            }
            count += 1
        }
    }

    /// Counts one user less; the last one deactivates the point.
    final func releaseActivation() {
        guard let activation else { return }
        users.withLock { count in
            count -= 1
            if count == 0 { activation.deactivate() }
            activation.dismiss()
        }
    }

    /// Tells an active point's activation that its entries or scopes changed.
    final func notifyChanged() {
        guard let activation else { return }
        users.withLock { count in
            if count > 0 { activation.changed() }
        }
    }
}

/// The one core of every injection point, sync or async: its catalogue and typed entries
/// over the untyped ``PointState``. ``InjectionPoint`` and ``AsyncInjectionPoint`` are thin
/// drivers over it: they differ only in how they call the original, run a block and wait.
@usableFromInline final class PointCore<Provider: ChaosProviderProtocol>: PointState, AnyPointCore, @unchecked Sendable
{
    // Unchecked: the catalogue and item table are immutable and Sendable; the rest is the
    // base class's.
    @usableFromInline typealias Installed = Installation<
        Provider.Arguments, Provider.Result, Provider.Failure, Provider.Body
    >
    typealias Tree = ChaosProviderNode<Provider.Arguments, Provider.Result, Provider.Failure, Provider.Body>

    let catalogue: PointCatalogue<Provider>
    private let itemsByName: [String: CatalogueItem<Provider>]
    /// Whether the point's results can hand a call on (system points'): looked up once,
    /// where each apply would cast.
    private let resultsPassCallsOn: Bool

    init(name: String, signature: String, catalogue: PointCatalogue<Provider>, activation: (any PointActivation)?) {
        self.catalogue = catalogue
        self.resultsPassCallsOn = Provider.Result.self is any CallPassingResult.Type
        self.itemsByName = Dictionary(catalogue.items.map { ($0.name, $0) }, uniquingKeysWith: { _, last in last })
        super.init(
            name: name, signature: signature, activation: activation,
            journalTypes: JournalTypes(Provider.Arguments.self, Provider.Result.self, Provider.Failure.self))
        PointRegistry.shared.register(self)
        // Read again once listed: observation that started after `super.init` read the flag
        // either finds this point in the registry or is seen here (its flag is set before
        // it walks the registry), so no point stays unobserved and silent on the event stream.
        if ChaosObservation.isObserving { observed.store(true, ordering: .relaxed) }
        CallJournal.shared.pointAppeared(self)
    }

    deinit {
        PointRegistry.shared.unregister(ObjectIdentifier(self))
    }

    // MARK: The call path

    /// The newest global entry as the call path needs it, read inside a point section: no
    /// lock, and no reference at all when the entry is a plain constant.
    @usableFromInline enum Top {
        case none
        case constant(Provider.Result)
        case entry(Installed)
    }

    /// Reads the newest global entry: its constant, or the entry itself (retained, so it
    /// may outlive the section while its provider runs). Notes in `note` which entry
    /// answered with its constant, and as which call (for the journal, which keeps no
    /// reference to the entry).
    @inlinable @inline(__always) func readTop(noting note: inout CallNote) -> Top {
        let entered = chaos_point_enter()
        if entered == UInt64.max {  // CHAOS_POINT_UNPROTECTED
            // A thread that cannot take part in sections (exiting, or out of memory).
            guard let installed = top() else { return .none }
            return .entry(installed)
        }
        defer { chaos_point_leave(entered) }
        guard let address = UnsafeRawPointer(bitPattern: topAddress.load(ordering: .acquiring)) else { return .none }
        let unmanaged = Unmanaged<Installed>.fromOpaque(address)
        if let value = unmanaged._withUnsafeGuaranteedRef({ $0.globalConstant(observed: observed, noting: &note) }) {
            return .constant(value)
        }
        return .entry(unmanaged.takeUnretainedValue())
    }

    /// The newest global entry's constant, counted as one act, when no task scope involves
    /// the point and that entry is a plain `.constant`; nil otherwise (the caller then goes
    /// the whole way). Reads inside a point section, like ``readTop(noting:)``.
    @inlinable @inline(__always) func globalConstantOutsideScopes() -> Provider.Result? {
        // A journaled point goes the whole way, where its calls are recorded.
        guard scopes.load(ordering: .relaxed) == 0, !journaled.load(ordering: .relaxed) else { return nil }
        let entered = chaos_point_enter()
        guard entered != UInt64.max else { return nil }  // CHAOS_POINT_UNPROTECTED: the slow way
        defer { chaos_point_leave(entered) }
        guard let address = UnsafeRawPointer(bitPattern: topAddress.load(ordering: .acquiring)) else { return nil }
        var unused = CallNote()
        return Unmanaged<Installed>.fromOpaque(address)._withUnsafeGuaranteedRef {
            $0.globalConstant(observed: observed, noting: &unused)
        }
    }

    /// The scoped entry of the current task for this point, if any; the task's scope keeps
    /// it alive for as long as the call can run.
    @inlinable @inline(__always) func scopedEntry() -> Unmanaged<Installed>? {
        guard scopes.load(ordering: .relaxed) != 0,
            let address = ScopeFrame.installation(
                for: UInt(bitPattern: Unmanaged.passUnretained(self).toOpaque()), key: scopeKey)
        else { return nil }
        return Unmanaged<Installed>.fromOpaque(address)
    }

    /// The entry that decides a call `installed` passed on: the task's next scoped entry
    /// for this point, else the newest global entry older than `installed` (the newest of
    /// all when `installed` was scoped); nil when none is left (the original answers).
    @usableFromInline func entry(after installed: Installed) -> Installed? {
        let address = UInt(bitPattern: Unmanaged.passUnretained(installed).toOpaque())
        var leftScopes = false
        if scopes.load(ordering: .relaxed) != 0 {
            switch ScopeFrame.successor(
                of: address, for: UInt(bitPattern: Unmanaged.passUnretained(self).toOpaque()), key: scopeKey)
            {
            case .entry(let next): return Unmanaged<Installed>.fromOpaque(next).takeUnretainedValue()
            case .outOfScopes: leftScopes = true
            case .notScoped: break
            }
        }
        let next = stack.withLock { stack -> (any AnyObject & Sendable)? in
            if leftScopes { return stack.last }
            guard let index = stack.lastIndex(where: { $0 === installed }), index > 0 else { return nil }
            return stack[index - 1]
        }
        return next.map { unsafeDowncast($0 as AnyObject, to: Installed.self) }
    }

    /// Every global entry, oldest first.
    func globalInstallations() -> [Installed] {
        stack.withLock { $0 }.map { unsafeDowncast($0 as AnyObject, to: Installed.self) }
    }

    /// The entry that wins globally: the last one applied.
    @usableFromInline func top() -> Installed? {
        stack.withLock { $0.last }.map { unsafeDowncast($0 as AnyObject, to: Installed.self) }
    }

    // MARK: Preparing entries

    var catalogueItems: [CatalogueItemInfo] {
        catalogue.items.map(\.info).sorted { $0.name < $1.name }
    }

    var matchConditions: [CatalogueParameter]? {
        catalogue.matcher?.conditions
    }

    var typicalFaults: [String] { catalogue.typicalFaults }

    var canThrow: Bool { Provider.Failure.self != Never.self }

    func prepare(_ description: ProviderDescription, seed: UInt64, entry: ProfileEntry.ID?) throws(ChaosError)
        -> PreparedInstallation
    {
        try prepare(typed(description), seed: seed, entry: entry, summary: description.summary)
    }

    /// Checks a typed provider for this point (unique name, modifiers in range, constants
    /// the point accepts) and makes its installation.
    func prepare(_ tree: Tree, seed: UInt64, entry: ProfileEntry.ID?, summary: String) throws(ChaosError)
        -> PreparedInstallation
    {
        try PointRegistry.shared.checkUnique(self)
        var tree = tree
        var lease: Duration?
        if case .leaf = tree {
            // A single leaf has no structure or modifier to check.
        } else {
            if let problem = tree.problem { throw ChaosError(.invalidProvider, subject: name, problem) }
            // A lease limits the whole entry: it is kept by the installation, not run per call.
            if case .modified(.lease(let duration), let inner) = tree {
                lease = duration
                tree = inner
            }
            if tree.modifiers.contains(where: \.isLease) {
                throw ChaosError(
                    .invalidProvider, subject: name,
                    "a lease limits a whole entry; put it outermost (e.g. .probability(0.2).lease(.seconds(30)))")
            }
        }
        if let check = catalogue.resultValidator {
            try tree.forEachLeaf { (leaf: ProviderLeaf) throws(ChaosError) in
                guard case .constant(let value) = leaf else { return }
                do {
                    try check(value)
                } catch let error as ChaosError {
                    throw error
                } catch {
                    throw ChaosError(.valueTypeMismatch, subject: name, "the point cannot return \(value): \(error)")
                }
            }
        }
        let installed = Installed(
            pointName: name, seed: seed, entryID: entry, summary: summary, tree: tree, lease: lease,
            resultsPassCallsOn: resultsPassCallsOn)
        return PreparedInstallation(core: self, installation: installed)
    }

    /// The catalogue item called `name`, made from `parameters` once they are checked
    /// against its declaration.
    func makeItem(_ itemName: String, _ parameters: ProfileParameters) throws(ChaosError) -> Tree {
        guard let item = itemsByName[itemName] else {
            let names = catalogue.items.map(\.name).sorted()
            var error = ChaosError(
                .invalidProvider, subject: name,
                names.isEmpty
                    ? "no catalogue item named '\(InputExcerpt.of(itemName))'; this point has no catalogue items"
                    : "no catalogue item named '\(InputExcerpt.of(itemName))'\(Suggestions.hint(for: itemName, in: names)); choose one of: \(names.joined(separator: ", "))"
            )
            error.sourceLocation = parameters.itemLocation ?? parameters.location
            throw error
        }
        var parameters = parameters
        if parameters.context.isEmpty { parameters.context = "\(name) \(itemName)" }
        return try item.make(parameters.checked(against: item.parameters, owner: "'\(itemName)'")).node
    }

    /// Whether the catalogue names an item `itemName`.
    func hasItem(_ itemName: String) -> Bool {
        itemsByName[itemName] != nil
    }

    /// The test a profile's `match` object stands for on this point.
    func condition(for conditions: ProfileParameters) throws(ChaosError) -> ArgumentCondition<Provider.Arguments> {
        var conditions = conditions
        if conditions.context.isEmpty { conditions.context = "\(name) match" }
        guard let matcher = catalogue.matcher else {
            throw conditions.invalid("\(name) takes no match conditions; remove \"match\" from the entry")
        }
        let checked = try conditions.checked(against: matcher.conditions, owner: "\(name) match")
        let made = try matcher.make(checked)
        return ArgumentCondition(ProfileValue.object(checked.values).description, tag: made.tag, made.test)
    }
}
