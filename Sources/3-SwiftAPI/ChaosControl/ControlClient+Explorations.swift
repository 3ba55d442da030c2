import Foundation

extension ControlClient {
    /// `GET /v1/explorations`: the explorations of the process, running or among the last
    /// ten finished, oldest first.
    public func explorations() throws(ControlError) -> [ControlAPI.Exploration] {
        try decode([ControlAPI.Exploration].self, try checked(send("GET", "/v1/explorations")))
    }

    /// `POST /v1/explorations/ID/failures/N/replay`: applies failure `failure` (its
    /// ``ControlAPI/Exploration/Failure/number``) of exploration `exploration` in the
    /// process, as an entry like any other, with the exploration's seed; the answer names it.
    ///
    /// Give the failure's `call` (and `point`) as listed, and the endpoint refuses (`409
    /// failureChanged`) rather than replay another one should the list be out of date.
    @discardableResult
    public func replay(failure: Int, of exploration: Int, expectingCall call: Int? = nil, point: String? = nil)
        throws(ControlError) -> ControlAPI.Applied
    {
        var query: [String] = []
        if let call { query.append("call=\(call)") }
        if let point {
            query.append("point=\(point.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")")
        }
        let path =
            "/v1/explorations/\(exploration)/failures/\(failure)/replay"
            + (query.isEmpty ? "" : "?" + query.joined(separator: "&"))
        return try decode(ControlAPI.Applied.self, try checked(send("POST", path)))
    }
}
