extension ControlAPI {
    /// `GET /v1/processes`: every control endpoint of this user on the machine (what
    /// `chaos ctl list` finds), as the answering process saw them; the console's
    /// `/console/processes` page shows it.
    public struct Processes: Codable, Sendable, Hashable {
        /// The directory of endpoint files that was read.
        public var directory: String
        /// One per endpoint file of a live process, by pid.
        public var processes: [Process]

        /// A listing.
        public init(directory: String, processes: [Process]) {
            self.directory = directory
            self.processes = processes
        }
    }

    /// One endpoint in ``Processes``.
    public struct Process: Codable, Sendable, Hashable {
        /// Its process id: the program's own.
        public var pid: Int32
        /// For a `chaos run` program: the pid of `chaos run`.
        public var runner: Int32?
        /// The program's name.
        public var program: String
        /// `swift`, or `preload` / `seccomp` for a `chaos run` child.
        public var kind: String
        /// Where its endpoint listens.
        public var url: String
        /// Whether it is the process that answered.
        public var isCurrent: Bool
        /// Its web console's address, token included; nil when it serves none (a `chaos run`
        /// child, or a Unix socket).
        public var console: String?
        /// Its status; nil when it did not answer.
        public var status: Status?
        /// Why it has no status, when it did not answer.
        public var problem: String?

        /// A listed process.
        public init(
            pid: Int32, runner: Int32? = nil, program: String, kind: String, url: String, isCurrent: Bool,
            console: String?, status: Status?, problem: String?
        ) {
            self.pid = pid
            self.runner = runner
            self.program = program
            self.kind = kind
            self.url = url
            self.isCurrent = isCurrent
            self.console = console
            self.status = status
            self.problem = problem
        }
    }
}

extension ControlEndpoint {
    /// The page that lists every endpoint on the machine with links to their consoles,
    /// token included, when this endpoint serves a web console; nil otherwise.
    public var processesURL: String? {
        guard !isChaosRun, url.hasPrefix("http://") else { return nil }
        return "\(url)/console/processes?token=\(token)"
    }
}
