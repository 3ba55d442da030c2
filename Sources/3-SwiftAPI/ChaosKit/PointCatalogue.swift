/// The named providers a point offers to profiles, how profiles' `match` objects read its
/// arguments, and which constants it can return. Given when the point is made.
///
/// ```swift
/// static let now = InjectionPoint<Void, Date, Never>("app.now", catalogue: [
///     CatalogueItem("frozen", "time stands still", parameters: [.date("date", "the instant shown")]) { parameters in
///         .constant(try parameters.date("date"))
///     },
/// ]) { Date() }
/// ```
public struct PointCatalogue<Provider: ChaosProviderProtocol>: Sendable, ExpressibleByArrayLiteral {
    /// The items, by the names profiles use.
    public var items: [CatalogueItem<Provider>]
    /// How a profile's `"match": {…}` narrows an entry to some calls; nil when the point
    /// takes no match conditions.
    public var matcher: ArgumentMatcher<Provider.Arguments>?
    /// Refuses constants the point cannot return (a C hook: a value that does not fit the C
    /// return type): it runs on every constant of a provider when the entry is applied, and
    /// its error makes the apply fail with nothing changed.
    public var resultValidator: (@Sendable (Provider.Result) throws -> Void)?
    /// The items (by name, each usable without parameters) that are this point's typical
    /// faults: what an exploration of every point places on it (a full disk and an I/O
    /// error for files, a refused and a reset connection for sockets, a thrown error for a
    /// throwing app point).
    public var typicalFaults: [String]

    /// A catalogue of `items`, with an optional `match` reader and result validator, and
    /// the names of the items that are the point's `typicalFaults`.
    public init(
        _ items: [CatalogueItem<Provider>] = [],
        matcher: ArgumentMatcher<Provider.Arguments>? = nil,
        resultValidator: (@Sendable (Provider.Result) throws -> Void)? = nil,
        typicalFaults: [String] = []
    ) {
        self.items = items
        self.matcher = matcher
        self.resultValidator = resultValidator
        self.typicalFaults = typicalFaults
    }

    /// A catalogue of these items.
    public init(arrayLiteral items: CatalogueItem<Provider>...) {
        self.init(items)
    }
}

/// A provider a point names for profiles (`"offset"`, `"double-length"` …), with the
/// parameters it takes.
public struct CatalogueItem<Provider: ChaosProviderProtocol>: Sendable {
    /// The name profiles use.
    public let name: String
    /// What it does, in a few words.
    public let summary: String
    /// The parameters it takes; the first is the one the `CHAOS` grammar's unnamed value
    /// (`offset(-1d)`) fills.
    public let parameters: [CatalogueParameter]
    let makeProvider: @Sendable (ProfileParameters) throws -> Provider

    /// An item called `name` whose provider `make` builds from parameters already checked
    /// against `parameters`. Throw a ``ChaosError`` (``ProfileParameters/invalid(_:parameter:)``
    /// makes one) for values that are well-typed but unusable together.
    public init(
        _ name: String, _ summary: String = "", parameters: [CatalogueParameter] = [],
        make: @escaping @Sendable (ProfileParameters) throws -> Provider
    ) {
        self.name = name
        self.summary = summary
        self.parameters = parameters
        self.makeProvider = make
    }

    /// The item's provider for checked `parameters`; any error becomes a ``ChaosError``.
    func make(_ parameters: ProfileParameters) throws(ChaosError) -> Provider {
        do {
            return try makeProvider(parameters)
        } catch let error as ChaosError {
            throw error
        } catch {
            throw parameters.invalid("\(error)")
        }
    }

    /// The item as tools list it.
    public var info: CatalogueItemInfo {
        CatalogueItemInfo(name: name, summary: summary, declaredParameters: parameters)
    }
}

/// How a point reads a profile's `"match": {…}` object: the conditions it takes, and the
/// test over the call's arguments they stand for.
public struct ArgumentMatcher<Arguments>: Sendable {
    /// The conditions a `match` object may hold (all optional unless declared otherwise).
    public let conditions: [CatalogueParameter]
    let makeCondition: @Sendable (ProfileParameters) throws -> ArgumentCondition<Arguments>

    /// A matcher taking `conditions`; `make` turns checked conditions into a test.
    public init(
        conditions: [CatalogueParameter],
        make: @escaping @Sendable (ProfileParameters) throws -> @Sendable (Arguments) -> Bool
    ) {
        self.conditions = conditions
        self.makeCondition = { parameters in ArgumentCondition("a condition", try make(parameters)) }
    }

    /// A matcher taking `conditions`; `make` turns checked conditions into a whole
    /// condition, with a tag for points that compile their providers.
    public init(
        conditions: [CatalogueParameter],
        makeCondition: @escaping @Sendable (ProfileParameters) throws -> ArgumentCondition<Arguments>
    ) {
        self.conditions = conditions
        self.makeCondition = makeCondition
    }

    /// The condition checked `conditions` stand for; any error becomes a ``ChaosError``.
    func make(_ conditions: ProfileParameters) throws(ChaosError) -> ArgumentCondition<Arguments> {
        do {
            return try makeCondition(conditions)
        } catch let error as ChaosError {
            throw error
        } catch {
            throw conditions.invalid("\(error)")
        }
    }
}

/// A catalogue item as tools list it.
public struct CatalogueItemInfo: Sendable, Hashable {
    /// The name profiles use.
    public let name: String
    /// What it does.
    public let summary: String
    /// The parameters it takes.
    public let declaredParameters: [CatalogueParameter]

    /// What parameters it takes, one line, e.g. `"factor: number = 1, from: ISO-8601 date (optional)"`;
    /// empty when none.
    public var parameters: String {
        declaredParameters.map { parameter in
            var text = "\(parameter.name): \(parameter.typeDescription)"
            switch parameter.requirement {
            case .required: break
            case .optional: text += " (optional)"
            case .defaulted(let value): text += " = \(value)"
            }
            return text
        }.joined(separator: ", ")
    }
}
