import Foundation

extension ControlClient {
    /// `GET /v1/journal[?point=P][&limit=N]`: the call journal; only the calls of `point`
    /// when it is given, and the newest `limit` of them when that is.
    public func journal(point: String? = nil, limit: Int? = nil) throws(ControlError) -> ControlAPI.Journal {
        try decode(ControlAPI.Journal.self, try checked(send("GET", Self.journalPath(point: point, limit: limit))))
    }

    /// `PUT /v1/journal`: which points the call journal records.
    @discardableResult
    public func setJournal(_ selection: ControlAPI.JournalSelection) throws(ControlError) -> ControlAPI.Journal {
        let body: Data
        do {
            body = try ControlAPI.encoder().encode(selection)
        } catch {
            throw ControlError("badRequest", "the selection cannot be encoded: \(error)")
        }
        return try decode(ControlAPI.Journal.self, try checked(send("PUT", "/v1/journal?limit=0", body: body)))
    }

    /// `GET /v1/journal?follow`: the calls kept (of `point`, when given), then every call
    /// journaled from then on, each handed to `handle` until it returns false or the
    /// endpoint stops. `onOpen` runs once the endpoint has subscribed.
    public func followJournal(
        point: String? = nil, limit: Int? = nil, onOpen: () -> Void = {},
        _ handle: (ControlAPI.Call) throws(ControlError) -> Bool
    ) throws(ControlError) {
        try follow(
            Self.journalPath(point: point, limit: limit, follow: true), event: "call", as: ControlAPI.Call.self,
            onOpen: onOpen, handle)
    }

    static func journalPath(point: String?, limit: Int?, follow: Bool = false) -> String {
        var query: [String] = []
        if let point {
            query.append("point=\(point.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")")
        }
        if let limit { query.append("limit=\(limit)") }
        if follow { query.append("follow") }
        return "/v1/journal" + (query.isEmpty ? "" : "?" + query.joined(separator: "&"))
    }
}
