public import Foundation

extension ControlAPI {
    /// `GET /v1/explorations`: one exploration of the process (`Chaos.explore`, or the
    /// `.exploringChaos` trait), running or among the last ten finished, as ChaosKit's
    /// `Chaos.explorations` lists it; the web console shows them live.
    public struct Exploration: Codable, Sendable, Hashable {
        /// Its number in the process, from 1 in the order explorations started: the `ID` of
        /// `POST /v1/explorations/ID/failures/N/replay`.
        public var id: Int
        /// When it started (real time).
        public var started: Date
        /// The seed every placement runs with, decimal: the replays apply with it.
        public var seed: String
        /// The entries explored, with the calls each targeted in the baseline (empty until
        /// the baseline has run).
        public var candidates: [Candidate]
        /// How many placements it runs (0 until the baseline has run).
        public var placements: Int
        /// How many of them have run.
        public var done: Int
        /// Whether it has ended: then ``failures`` is the result's, in its order (candidate by
        /// candidate, call by call), and ``Failure/flaky`` is known.
        public var finished: Bool
        /// Why it ended without exploring (the baseline failed, an entry was refused), if it did.
        public var error: String?
        /// The placements that broke the body so far, numbered from 1. While it runs they
        /// come in the order the placements ended; the finished list may order them anew.
        public var failures: [Failure]

        /// An exploration.
        public init(
            id: Int, started: Date, seed: String, candidates: [Candidate], placements: Int, done: Int,
            finished: Bool, error: String? = nil, failures: [Failure]
        ) {
            self.id = id
            self.started = started
            self.seed = seed
            self.candidates = candidates
            self.placements = placements
            self.done = done
            self.finished = finished
            self.error = error
            self.failures = failures
        }

        /// One entry the exploration places, at each of the calls it targeted in the baseline.
        public struct Candidate: Codable, Sendable, Hashable {
            /// The point it is on.
            public var point: String
            /// Its provider, rendered.
            public var provider: String
            /// How many calls it targeted with no fault placed: it is placed at calls 1…`calls`.
            public var calls: Int

            /// A candidate.
            public init(point: String, provider: String, calls: Int) {
                self.point = point
                self.provider = provider
                self.calls = calls
            }
        }

        /// A placement that broke an exploration's body, and the entry that replays it.
        public struct Failure: Codable, Sendable, Hashable {
            /// Its place in ``ControlAPI/Exploration/failures``, from 1: the `N` of
            /// `POST /v1/explorations/ID/failures/N/replay`.
            public var number: Int
            /// The point the fault was placed on.
            public var point: String
            /// The fault (the candidate's provider, rendered).
            public var provider: String
            /// Which of the calls the candidate targets it acted at, from 1.
            public var call: Int
            /// How many calls the candidate targeted in the baseline.
            public var of: Int
            /// What the body threw (or the issue it recorded), as text.
            public var error: String
            /// The body failed once, then passed when run again (known once the exploration has
            /// finished; false until then).
            public var flaky: Bool
            /// The placed entry the replay applies (`point ← provider at call K`), with the
            /// exploration's seed.
            public var replay: String

            /// A failure.
            public init(
                number: Int, point: String, provider: String, call: Int, of: Int, error: String, flaky: Bool,
                replay: String
            ) {
                self.number = number
                self.point = point
                self.provider = provider
                self.call = call
                self.of = of
                self.error = error
                self.flaky = flaky
                self.replay = replay
            }
        }
    }
}
