import Synchronization

/// A point as the registry and name-based entries see it, whatever its types.
protocol RegisteredPoint: AnyObject, Sendable {
    var name: String { get }
    var catalogueItems: [CatalogueItemInfo] { get }
    var kindDescription: String { get }
    func prepare(_ description: ProviderDescription, seed: UInt64) throws(ChaosError) -> PreparedInstallation
}

/// An entry checked and ready to install; installing it cannot fail.
struct PreparedInstallation: Sendable {
    let state: any AnyPointState
    let installation: any AnyObject & Sendable
}

/// Every live point by name, so profiles can find them. Holds points weakly: a point that
/// goes away leaves the registry.
final class PointRegistry: Sendable {
    static let shared = PointRegistry()

    private struct WeakPoint {
        weak var point: (any RegisteredPoint)?
        let id: ObjectIdentifier
    }

    private let points = Locked<[String: [WeakPoint]]>([:])

    func register(_ point: any RegisteredPoint) {
        let entry = WeakPoint(point: point, id: ObjectIdentifier(point))
        points.withLock { $0[point.name, default: []].append(entry) }
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
    private func live(_ name: String) -> [any RegisteredPoint] {
        points.withLock { table in (table[name] ?? []).compactMap(\.point) }
    }

    /// The one live point named `name`.
    func point(named name: String) throws(ChaosError) -> any RegisteredPoint {
        let found = live(name)
        if found.count > 1 { throw Self.duplicate(name, found.count) }
        guard let point = found.first else {
            let known = names
            let close = known.filter { $0.hasPrefix(name.split(separator: ".").first.map(String.init) ?? name) }
            let hint = close.isEmpty
                ? (known.isEmpty ? "no points exist yet; create the point (or import the module that declares it) before applying"
                    : "known points: \(known.joined(separator: ", "))")
                : "did you mean \(close.joined(separator: " or "))?"
            throw ChaosError(.unknownPoint, subject: name, "no live injection point has this name; \(hint)")
        }
        return point
    }

    /// Fails when another live point shares `point`'s name.
    func checkUnique(_ point: some RegisteredPoint) throws(ChaosError) {
        let found = live(point.name)
        if found.count > 1 { throw Self.duplicate(point.name, found.count) }
    }

    private static func duplicate(_ name: String, _ count: Int) -> ChaosError {
        ChaosError(
            .duplicatePointName, subject: name,
            "\(count) live injection points share this name; give each point its own name (e.g. a module prefix)"
        )
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
            (try? point(named: name)).map { PointInfo(name: name, signature: $0.kindDescription, items: $0.catalogueItems) }
        }
    }
}

extension InjectionPoint: RegisteredPoint {
    var catalogueItems: [CatalogueItemInfo] { catalogue.descriptions }
    var kindDescription: String {
        "(\(Arguments.self)) \(Failure.self == Never.self ? "" : "throws(\(Failure.self)) ")-> \(Result.self)"
    }

    func prepare(_ description: ProviderDescription, seed: UInt64) throws(ChaosError) -> PreparedInstallation {
        try prepare(description.typed(as: Provider.self, pointName: name, catalogue: catalogue), seed: seed)
    }

    func prepare(_ provider: Provider, seed: UInt64) throws(ChaosError) -> PreparedInstallation {
        try prepareInstallation(of: self, provider.node, state: state, catalogue: catalogue, seed: seed)
    }
}

extension AsyncInjectionPoint: RegisteredPoint {
    var catalogueItems: [CatalogueItemInfo] { catalogue.descriptions }
    var kindDescription: String {
        "(\(Arguments.self)) async \(Failure.self == Never.self ? "" : "throws(\(Failure.self)) ")-> \(Result.self)"
    }

    func prepare(_ description: ProviderDescription, seed: UInt64) throws(ChaosError) -> PreparedInstallation {
        try prepare(description.typed(as: Provider.self, pointName: name, catalogue: catalogue), seed: seed)
    }

    func prepare(_ provider: Provider, seed: UInt64) throws(ChaosError) -> PreparedInstallation {
        try prepareInstallation(of: self, provider.node, state: state, catalogue: catalogue, seed: seed)
    }
}

/// Checks a typed provider for `point` (unique name, parameters in range, constants the
/// point accepts) and makes its installation; shared by sync and async points.
private func prepareInstallation<Provider: ChaosProviderProtocol>(
    of point: some RegisteredPoint,
    _ node: ChaosProviderNode<Provider.Arguments, Provider.Result, Provider.Failure, Provider.Body>,
    state: PointState<Installation<Provider.Arguments, Provider.Result, Provider.Failure, Provider.Body>>,
    catalogue: Catalogue<Provider>, seed: UInt64
) throws(ChaosError) -> PreparedInstallation {
    try PointRegistry.shared.checkUnique(point)
    if let problem = node.problem() {
        throw ChaosError(.invalidProvider, subject: point.name, problem)
    }
    try catalogue.validateConstants(node)
    let installed = Installation(pointName: point.name, seed: seed, node: node)
    return PreparedInstallation(state: state, installation: installed)
}

/// A point as tools list it.
public struct PointInfo: Sendable {
    /// The point's stable name.
    public let name: String
    /// Its shape, e.g. `(()) -> Date` or `(Request) async throws(NetworkError) -> Response`.
    public let signature: String
    /// The catalogue items profiles can name on it.
    public let items: [CatalogueItemInfo]
}
