/// Every live point by name, so profiles can find them. Holds points weakly: a point that
/// goes away leaves the registry.
final class PointRegistry: Sendable {
    static let shared = PointRegistry()

    private struct WeakPoint {
        weak var point: (any AnyPointCore)?
        let id: ObjectIdentifier
    }

    private let points = Locked<[String: [WeakPoint]]>([:])

    /// An entry waiting for a point of its name to be created (see ``Chaos/MissingPoints``).
    struct Waiter: Sendable {
        let id: ProfileEntry.ID
        /// Applies the entry; runs on the thread that creates the point, outside every lock.
        let bind: @Sendable () -> Void
    }

    /// Waiting entries by point name. Only creating a point and applying read it, so calls
    /// of points never pay for entries that wait.
    private let waiters = Locked<[String: [Waiter]]>([:])

    func register(_ point: any AnyPointCore) {
        let entry = WeakPoint(point: point, id: ObjectIdentifier(point))
        points.withLock { $0[point.name, default: []].append(entry) }
        // Listed first, then waiters taken: `wait(for:_:)` adds first, then looks, so one
        // of the two always sees the other.
        let due = waiters.withLock { $0.removeValue(forKey: point.name) } ?? []
        for waiter in due { waiter.bind() }
    }

    /// Makes `waiter` bind when a point named `name` is created. False when such a point
    /// is live already and the waiter was withdrawn: the caller resolves the entry itself.
    func wait(for name: String, _ waiter: Waiter) -> Bool {
        waiters.withLock { $0[name, default: []].append(waiter) }
        guard !live(name).isEmpty else { return true }
        // Created meanwhile. If `register` took the waiter already, it binds it.
        return !withdraw(waiter.id, name: name)
    }

    /// Removes the waiter for entry `id`; whether it was still waiting.
    @discardableResult
    func withdraw(_ id: ProfileEntry.ID, name: String) -> Bool {
        waiters.withLock { table in
            guard let list = table[name], let index = list.firstIndex(where: { $0.id == id }) else { return false }
            var rest = list
            rest.remove(at: index)
            table[name] = rest.isEmpty ? nil : rest
            return true
        }
    }

    func unregister(_ id: ObjectIdentifier) {
        points.withLock { table in
            for (name, list) in table where list.contains(where: { $0.id == id }) {
                let rest = list.filter { $0.id != id }
                table[name] = rest.isEmpty ? nil : rest
            }
        }
    }

    /// The live points named `name`. Strong references are made inside the lock but
    /// released by the caller, so a point's deinit never runs under the lock.
    private func live(_ name: String) -> [any AnyPointCore] {
        points.withLock { table in (table[name] ?? []).compactMap(\.point) }
    }

    /// The one live point named `name`.
    func point(named name: String) throws(ChaosError) -> any AnyPointCore {
        var found = live(name)
        if found.isEmpty && createLazily(name) { found = live(name) }
        if found.count > 1 { throw Self.duplicate(name, found.count) }
        guard let point = found.first else {
            let known = names
            let hint: String
            if known.isEmpty {
                hint = "; no points exist yet: create the point (or import the module that declares it) before applying"
            } else {
                let near = Suggestions.hint(for: name, in: known)
                let listed =
                    known.count <= 12
                    ? "known points: \(known.joined(separator: ", "))"
                    : "\(known.count) points are live (`chaos list` shows the built-in ones)"
                hint = near.isEmpty ? "; \(listed)" : near
            }
            throw ChaosError(
                .unknownPoint, subject: InputExcerpt.of(name, limit: 200),
                "no live injection point has this name\(hint)")
        }
        return point
    }

    /// Fails when another live point shares `point`'s name.
    func checkUnique(_ point: any AnyPointCore) throws(ChaosError) {
        // The usual case, told without loading a weak reference: the point is the only one
        // listed under its name (and alive: the caller holds it).
        let me = ObjectIdentifier(point)
        let alone = points.withLock { table in table[point.name].map { $0.count == 1 && $0[0].id == me } ?? false }
        if alone { return }
        let found = live(point.name)
        if found.count > 1 { throw Self.duplicate(point.name, found.count) }
    }

    private static func duplicate(_ name: String, _ count: Int) -> ChaosError {
        ChaosError(
            .duplicatePointName, subject: name,
            "\(count) live injection points share this name; give each point its own name (e.g. a module prefix)"
        )
    }

    /// Calls `body` with every live point (outside the registry's lock).
    func forEachPoint(_ body: (PointState) -> Void) {
        let alive = points.withLock { table in table.values.flatMap { $0.compactMap(\.point) } }
        for point in alive { body(point) }
    }

    /// The names of all live points, sorted.
    var names: [String] {
        // Strong references are taken under the lock but dropped after it, so that a
        // point's deinit (which unregisters under the same lock) never runs inside it.
        let alive = points.withLock { table in table.map { (name: $0.key, points: $0.value.compactMap(\.point)) } }
        return alive.filter { !$0.points.isEmpty }.map(\.name).sorted()
    }

    /// Every live point with its signature and the catalogue items it offers, for tools such as `chaos list`.
    var catalogue: [PointInfo] {
        names.compactMap { name in
            (try? point(named: name)).map {
                PointInfo(
                    name: name, signature: $0.signature, items: $0.catalogueItems, matchConditions: $0.matchConditions,
                    typicalFaults: $0.typicalFaults)
            }
        }
    }
}
