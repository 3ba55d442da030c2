extension ControlAPI {
    /// One route of the control protocol: its path, the methods it answers, and which of the
    /// two servers answer it.
    ///
    /// Two servers speak the protocol: a Swift program's endpoint (ChaosConsole, on
    /// Hummingbird) and the endpoint of a `chaos run` program (C, in the preload library or
    /// the seccomp supervisor), which serves a subset. ``ControlAPI/routes`` is the one list
    /// of both: tests hold each server to it, and the documentation's table of routes is
    /// made from it (Scripts/generate-docs.py reads this file).
    public struct Route: Sendable, Hashable, Codable {
        /// The path, with `{NAME}` for a part the caller fills in (`/v1/entries/{id}`).
        public let path: String
        /// The methods it answers (a request with another method gets 405).
        public let methods: [String]
        /// Whether a `chaos run` program's endpoint answers it too.
        public let inChaosRun: Bool
        /// What it is for, in a few words.
        public let summary: String

        /// A route of the protocol.
        public init(_ methods: [String], _ path: String, inChaosRun: Bool = false, _ summary: String) {
            self.path = path
            self.methods = methods
            self.inChaosRun = inChaosRun
            self.summary = summary
        }

        /// The path with each `{NAME}` part filled in from `values` (by name).
        public func path(filling values: [String: String]) -> String {
            path.split(separator: "/", omittingEmptySubsequences: false).map { part in
                guard part.hasPrefix("{"), part.hasSuffix("}") else { return String(part) }
                return values[String(part.dropFirst().dropLast())] ?? String(part)
            }.joined(separator: "/")
        }
    }

    /// Every route of the control protocol, in the order the documentation lists them.
    public static let routes: [Route] = [
        Route(["GET"], "/v1/status", inChaosRun: true, "the process, its entries and what its endpoint serves"),
        Route(["GET"], "/v1/points", "the live points and their catalogue items"),
        Route(["GET", "POST", "DELETE"], "/v1/entries", inChaosRun: true, "the live entries; apply; revert all"),
        Route(["GET", "DELETE"], "/v1/entries/{id}", inChaosRun: true, "one entry; revert it"),
        Route(["POST"], "/v1/entries/{id}/enable", inChaosRun: true, "switch an entry on"),
        Route(["POST"], "/v1/entries/{id}/disable", inChaosRun: true, "switch an entry off"),
        Route(["GET"], "/v1/profile", "every live entry as one profile"),
        Route(["POST"], "/v1/profile/validate", "check a profile as an apply would, applying nothing"),
        Route(["GET"], "/v1/response-sets", "the response sets and their selections"),
        Route(["GET", "PUT"], "/v1/response-sets/{name}", "one response set; select its response"),
        Route(["GET"], "/v1/requests", "the request journal"),
        Route(["GET"], "/v1/events", "every act, as Server-Sent Events"),
        Route(["GET", "PUT"], "/v1/journal", "the call journal; what it records"),
        Route(["GET"], "/v1/time", inChaosRun: true, "virtual time"),
        Route(["POST", "DELETE"], "/v1/time/advance", inChaosRun: true, "advance virtual time; stop an advance"),
        Route(["GET"], "/v1/processes", "every endpoint of the endpoint directory, with its status"),
        Route(["GET"], "/v1/explorations", "the explorations of the process"),
        Route(
            ["POST"], "/v1/explorations/{exploration}/failures/{failure}/replay",
            "apply a failure's placed entry again"),
        Route(["POST"], "/v1/go", inChaosRun: true, "let a waiting program go on"),
    ]

    /// The routes as one line for error messages: `/v1/status, /v1/points, …`.
    public static var routeList: String { routes.map(\.path).joined(separator: ", ") }
}
