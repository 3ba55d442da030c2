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

    /// Whether `entry`, refused with `error`, waits for its point under `missingPoints`
    /// (``Chaos/MissingPoints/wait`` or ``Chaos/MissingPoints/waitUnlessMisspelt``). Only a
    /// missing point whose name could be a point's waits; a name no point could have (junk,
    /// or 100,000 characters sent to the control endpoint) is refused here, at the name,
    /// saying what a point name looks like. Under `waitUnlessMisspelt`, so is a name a couple
    /// of letters off a live point's, with "did you mean".
    func waits(_ entry: ProfileEntry, after error: ChaosError, _ missingPoints: Chaos.MissingPoints)
        throws(ChaosError) -> Bool
    {
        guard missingPoints != .refuse, error.kind == .unknownPoint, mayWait(for: entry.pointName) else {
            return false
        }
        guard PendingPointName.isPlausible(entry.pointName) else {
            throw entry.attributed(
                ChaosError(
                    .unknownPoint, subject: InputExcerpt.of(entry.pointName, limit: 200),
                    "no live injection point has this name, and no point can be created with it, so the entry cannot wait for one: \(PendingPointName.rule)"
                ))
        }
        if missingPoints == .waitUnlessMisspelt {
            let near = nearMisses(of: entry.pointName)
            guard near.isEmpty else {
                throw entry.attributed(
                    ChaosError(
                        .unknownPoint, subject: InputExcerpt.of(entry.pointName, limit: 200),
                        "no live injection point has this name\(Suggestions.hint(for: entry.pointName, in: near)) A name this near a live point's is taken for a misspelling, not left to wait for a point of its own; if the program makes a point of exactly this name later, let the entry wait on purpose (allow pending entries: chaos ctl apply --allow-pending, or the console's checkbox)"
                    ))
            }
        }
        return true
    }

    /// The live point names at most two edits from `name`: an entry that names one of them
    /// and waits is far likelier misspelt than early.
    func nearMisses(of name: String) -> [String] {
        Suggestions.within(PendingPointName.misspellingDistance, of: name, in: names)
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

/// What a point name an entry may wait for looks like. Names written by code may be
/// anything; an entry from outside waits only for a name that could be one of them.
enum PendingPointName {
    /// The longest name an entry waits for, in characters.
    static let maxLength = 200

    /// How many edits from a live point's name a waiting entry's name is taken for a
    /// misspelling of it (``Chaos/MissingPoints/waitUnlessMisspelt``, bootstrap's warning).
    static let misspellingDistance = 2

    /// The rule, as error messages say it.
    static let rule = "a point name is 1 to \(maxLength) letters, digits, '.', '-' or '_' (e.g. app.fetch-user)"

    /// Whether `name` keeps the rule. Stops at the first character past it, so a huge name
    /// costs no more than a short one.
    static func isPlausible(_ name: String) -> Bool {
        var count = 0
        for character in name {
            count += 1
            guard count <= maxLength,
                character.isLetter || character.isNumber || character == "." || character == "-" || character == "_"
            else { return false }
        }
        return count > 0
    }
}
