/// A module's set of injection points that exist only once something creates them (a
/// Swift `static let` is lazy), and that can be created on demand: a profile, a trait or
/// a control request naming one of them then finds it even when the program never touched
/// the module before.
///
/// ChaosKit looks the sources of this package's other modules up by type name at run time
/// (`SystemPoints` of ChaosHooks, when it is linked), so it needs no dependency on them.
public protocol LazyPointSource {
    /// The prefix every point name of this source starts with (`"system."`).
    static var pointNamePrefix: String { get }

    /// Creates every point of this source.
    static func register()
}

extension PointRegistry {
    /// The mangled type names of this package's lazy point sources.
    private static let lazySourceTypeNames = ["10ChaosHooks12SystemPointsO"]

    /// Whether an entry for `name`, which no live point carries, may wait for the point to
    /// be created: not when a lazy source owns its prefix (`system.`), whose points are all
    /// made at once, so a name it lacks is a typo.
    func mayWait(for name: String) -> Bool {
        !Self.lazySourceTypeNames.contains { typeName in
            (_typeByName(typeName) as? any LazyPointSource.Type).map { name.hasPrefix($0.pointNamePrefix) } ?? false
        }
    }

    /// Creates the points of the lazy source whose prefix `name` has, when that source is
    /// linked into the process; whether one did.
    func createLazily(_ name: String) -> Bool {
        for typeName in Self.lazySourceTypeNames {
            guard let source = _typeByName(typeName) as? any LazyPointSource.Type,
                name.hasPrefix(source.pointNamePrefix)
            else { continue }
            source.register()
            return true
        }
        return false
    }
}
