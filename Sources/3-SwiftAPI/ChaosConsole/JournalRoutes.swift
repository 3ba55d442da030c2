// The server and its API exist with the package trait `Console` (ConsoleTrait.swift says why).
#if Console
import ChaosControl
import ChaosKit
import Foundation
import HTTPTypes
import Hummingbird

/// `/v1/journal`: the call journal (``CallJournal``), read, followed and switched.
extension ChaosConsole {
    /// `GET /v1/journal[?point=P][&limit=N][&follow]` and `PUT /v1/journal`.
    func journalRoute(_ request: Request) async -> Response {
        switch request.method {
        case .get:
            let point = request.uri.queryParameters["point"].map(String.init).flatMap { $0.isEmpty ? nil : $0 }
            let limit: Int
            switch Self.journalLimit(request) {
            case .success(let number): limit = number
            case .failure(let failure): return failure.response
            }
            if request.uri.queryParameters["follow"] != nil
                || request.uri.query?.split(separator: "&").contains("follow") == true
            {
                return followJournal(point: point, limit: limit)
            }
            return json(Self.journal(point: point, limit: limit))
        case .put:
            return await selectJournal(request)
        default:
            var response = failure(.methodNotAllowed, "methodNotAllowed", subject: nil, "this route takes GET, PUT")
            response.headers[.allow] = "GET, PUT"
            return response
        }
    }

    private static func journalLimit(_ request: Request) -> Result<Int, ResponseFailure> {
        guard let text = request.uri.queryParameters["limit"] else { return .success(Int.max) }
        guard text.count <= 9, let number = Int(text), number >= 0 else {
            return .failure(
                ResponseFailure(
                    errorResponse(
                        .badRequest, "badRequest", subject: "limit '\(InputExcerpt.of(String(text)))'",
                        "limit is how many of the newest calls to list: a whole number, e.g. ?limit=50")))
        }
        return .success(number)
    }

    static func journal(point: String?, limit: Int) -> ControlAPI.Journal {
        let journal = CallJournal.shared
        var calls = journal.calls
        if let point { calls.removeAll { $0.pointName != point } }
        return ControlAPI.Journal(
            capacity: journal.capacity, recorded: journal.recordedCount, bytes: journal.byteCount,
            selection: wire(journal.selection), calls: calls.suffix(limit).map(wire))
    }

    static func wire(_ selection: CallJournal.Selection) -> ControlAPI.JournalSelection {
        ControlAPI.JournalSelection(everyPoint: selection.everyPoint, points: selection.points.sorted())
    }

    static func wire(_ call: JournaledCall) -> ControlAPI.Call {
        ControlAPI.Call(
            number: call.number, date: call.date, point: call.pointName, entry: call.entry?.number,
            callIndex: call.callIndex, entrySeed: call.entrySeed.map(String.init), acted: call.acted,
            arguments: call.arguments, returned: call.returned, error: call.error, status: call.status,
            bytes: call.bytes)
    }

    private func selectJournal(_ request: Request) async -> Response {
        var request = request
        let body: Data
        do {
            let buffer = try await request.collectBody(upTo: Self.maximumBody)
            body = Data(buffer.readableBytesView)
        } catch {
            return failure(
                .contentTooLarge, "payloadTooLarge", subject: "body",
                "the body is larger than \(Self.maximumBody) bytes")
        }
        guard let selection = try? ControlAPI.decoder().decode(ControlAPI.JournalSelection.self, from: body) else {
            return failure(
                .badRequest, "badRequest", subject: "journal selection",
                "the body must be {\"everyPoint\": true|false, \"points\": [\"NAME\", …]} (and optionally \"capacity\": N)"
            )
        }
        if let capacity = selection.capacity {
            guard (0...1_000_000).contains(capacity) else {
                return failure(
                    .init(code: 422), "invalidValue", subject: "capacity \(capacity)",
                    "the journal keeps between 0 and 1,000,000 calls; 10,000 is the default")
            }
            CallJournal.shared.capacity = capacity
        }
        CallJournal.shared.selection = CallJournal.Selection(
            everyPoint: selection.everyPoint, points: Set(selection.points))
        Self.logger.info(
            "chaos control: call journal set",
            metadata: [
                "everyPoint": "\(selection.everyPoint)",
                "points": "\(selection.points.map { InputExcerpt.of($0, limit: 200) })",
            ])
        let limit: Int
        switch Self.journalLimit(request) {
        case .success(let number): limit = number
        case .failure(let failure): return failure.response
        }
        return json(Self.journal(point: nil, limit: limit))
    }

    /// Server-Sent Events: a comment once subscribed, a `call` event for each call kept
    /// (of `point`, the newest `limit`), then one for every call journaled from then on.
    private func followJournal(point: String?, limit: Int) -> Response {
        eventStream { continuation in
            let live = CallJournal.shared.follow(bufferingNewest: 1_024)  // subscribed from here on
            return Task {
                let encoder = ControlAPI.encoder()
                func send(_ call: JournaledCall) {
                    guard let data = try? encoder.encode(ChaosConsole.wire(call)) else { return }
                    continuation.yield("event: call\ndata: \(String(decoding: data, as: UTF8.self))\n\n")
                }
                var last = 0
                var kept = CallJournal.shared.calls
                if let point { kept.removeAll { $0.pointName != point } }
                for call in kept.suffix(limit) {
                    last = call.number
                    send(call)
                }
                for await call in live where call.number > last && (point == nil || call.pointName == point) {
                    send(call)
                }
            }
        }
    }
}
#endif
