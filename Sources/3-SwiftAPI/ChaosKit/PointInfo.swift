/// A point as tools list it.
public struct PointInfo: Sendable {
    /// The point's stable name.
    public let name: String
    /// Its shape, e.g. `() -> Date` or `(Request) async throws(NetworkError) -> Response`.
    public let signature: String
    /// The catalogue items profiles can name on it.
    public let items: [CatalogueItemInfo]
    /// The conditions its entries' `match` objects may hold; nil when it takes none.
    public let matchConditions: [CatalogueParameter]?
    /// The items that are its typical faults (see ``PointCatalogue/typicalFaults``).
    public let typicalFaults: [String]

    /// How a point of these types is shown: `(String) -> String`, `() async throws(E) -> R`.
    /// A point without arguments (`Arguments == Void`) shows `()`, not `(())`.
    static func signature(
        arguments: Any.Type, result: Any.Type, failure: any Error.Type, isAsync: Bool
    ) -> String {
        let parameters = arguments == Void.self ? "()" : "(\(arguments))"
        let effects = (isAsync ? "async " : "") + (failure == Never.self ? "" : "throws(\(failure)) ")
        return "\(parameters) \(effects)-> \(result)"
    }
}
