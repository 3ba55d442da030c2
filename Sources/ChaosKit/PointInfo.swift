/// A point as tools list it.
public struct PointInfo: Sendable {
    /// The point's stable name.
    public let name: String
    /// Its shape, e.g. `(()) -> Date` or `(Request) async throws(NetworkError) -> Response`.
    public let signature: String
    /// The catalogue items profiles can name on it.
    public let items: [CatalogueItemInfo]
    /// The conditions its entries' `match` objects may hold; nil when it takes none.
    public let matchConditions: [CatalogueParameter]?
}
