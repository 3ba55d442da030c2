// The server and its API exist with the package trait `Console` (ConsoleTrait.swift says why).
#if Console
import ChaosControl
import ChaosKit
import Foundation
import HTTPTypes
import Hummingbird

/// `/v1/explorations`: the explorations of this process as they run (`Chaos.explorations`),
/// and the replay of a failure they found, applied here as an entry like any other.
extension ChaosConsole {
    /// Held while a replay checks that its entry is not live and applies it: two requests
    /// for one failure would otherwise both apply its entry, and two live entries with one
    /// id could not be told apart by id (revert, enable).
    private static let replaying = Locked<Void>(())

    /// `GET /v1/explorations`: every exploration listed, oldest first.
    func explorationsRoute(_ request: Request) -> Response {
        request.method == .get ? json(Chaos.explorations.map(Self.wire)) : notAllowed("GET")
    }

    /// `POST /v1/explorations/ID/failures/N/replay[?call=K][&point=NAME]`: applies failure N's
    /// placed entry with the exploration's seed, so that the next calls through its point
    /// meet the fault where the placement put it. `call` and `point`, when given, must be
    /// the failure's: the page sends them, so that a replay is exactly the failure it shows.
    func replayRoute(_ request: Request, exploration idText: String, failure numberText: String) -> Response {
        guard request.method == .post else { return notAllowed("POST") }
        guard let id = Self.number(idText) else {
            return failure(
                .badRequest, "badRequest", subject: "exploration '\(InputExcerpt.of(idText))'",
                "an exploration id is a whole number, as GET /v1/explorations lists them")
        }
        guard let number = Self.number(numberText) else {
            return failure(
                .badRequest, "badRequest", subject: "failure '\(InputExcerpt.of(numberText))'",
                "a failure is named by its number, a whole number from 1, as GET /v1/explorations lists them")
        }
        let explorations = Chaos.explorations
        guard let exploration = explorations.first(where: { $0.id == id }) else {
            let ids = explorations.map { String($0.id) }.joined(separator: ", ")
            return failure(
                .notFound, "notFound", subject: "exploration \(id)",
                "no exploration has this id; \(ids.isEmpty ? "this process has none listed (Chaos.explore lists each one while it runs, and the last ten finished)" : "there are \(ids)") (GET /v1/explorations)"
            )
        }
        let failures = exploration.failures
        guard !failures.isEmpty, (1...failures.count).contains(number) else {
            return failure(
                .notFound, "notFound", subject: "failure \(number) of exploration \(id)",
                failures.isEmpty
                    ? "exploration \(id) has found no failure\(exploration.finished ? "" : " yet")"
                    : "exploration \(id) has \(failures.count) failure\(failures.count == 1 ? "" : "s"): give a number from 1 to \(failures.count)"
            )
        }
        let found = failures[number - 1]
        if let changed = Self.changed(found, request) {
            return failure(
                .conflict, "failureChanged", subject: "failure \(number) of exploration \(id)",
                "it is \(found.point) at call \(found.call), not \(changed) as the request expects; list them again (GET /v1/explorations)"
            )
        }
        let entry = found.replay
        let outcome = Self.replaying.withLock { _ -> Result<Chaos, ChaosError> in
            if Chaos.liveEntries.contains(where: { $0.entry.id == entry.id }) {
                return .failure(
                    ChaosError(
                        .alreadyApplied,
                        subject: "entry \(entry.id) (\(InputExcerpt.of(entry.description, limit: 200)))",
                        "this failure's replay is applied already; revert it first (DELETE /v1/entries/\(entry.id.number)) to replay it again"
                    ))
            }
            // The placements ran with the exploration's seed: so does the replay, so that
            // every random choice of the fault is the one that broke the body.
            let chaos = Chaos(seed: found.seed)
            do throws(ChaosError) {
                try chaos.profile(entry).apply()
            } catch {
                return .failure(error)
            }
            return .success(chaos)
        }
        switch outcome {
        case .failure(let error):
            return failure(error)
        case .success(let chaos):
            keep(chaos)
            Self.logger.info(
                "chaos control: exploration failure replayed",
                metadata: [
                    "exploration": "\(id)", "failure": "\(number)", "entries": "\(Self.logSummary([entry]))",
                    "seed": "\(found.seed)",
                ])
            return json(ControlAPI.Applied(entries: [entry.id.number], seed: String(found.seed)), status: .created)
        }
    }

    /// What the request expected of the failure (`call 3`, `app.fetch`), when it is not
    /// what the failure is.
    private static func changed(_ failure: ChaosExploration.Failure, _ request: Request) -> String? {
        if let call = request.uri.queryParameters["call"], Int(call) != failure.call {
            return "call \(InputExcerpt.of(String(call)))"
        }
        if let point = request.uri.queryParameters["point"], point != failure.point {
            return "'\(InputExcerpt.of(String(point)))'"
        }
        return nil
    }

    /// A whole number as a path names it (`0` and `-1` too: they name nothing, which is a
    /// 404 saying what there is, not a malformed request).
    private static func number(_ text: String) -> Int? {
        text.count <= 18 ? Int(text) : nil
    }

    static func wire(_ progress: ExplorationProgress) -> ControlAPI.Exploration {
        ControlAPI.Exploration(
            id: progress.id, started: progress.started, seed: String(progress.seed),
            candidates: progress.candidates.map {
                ControlAPI.Exploration.Candidate(
                    point: $0.entry.pointName, provider: $0.entry.providerSummary, calls: $0.calls)
            },
            placements: progress.placements, done: progress.done, finished: progress.finished, error: progress.error,
            failures: progress.failures.enumerated().map { index, failure in
                ControlAPI.Exploration.Failure(
                    number: index + 1, point: failure.point, provider: failure.provider, call: failure.call,
                    of: failure.of, error: String(describing: failure.error), flaky: failure.flaky,
                    replay: failure.replay.description)
            })
    }
}
#endif
