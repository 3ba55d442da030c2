// Needs the console's server: runs with `swift test --traits Console`.
#if Console
@testable import ChaosControl
import ChaosConsole
import ChaosKit
import Foundation
import TestHelpers
import Testing

/// `/v1/journal`: the call journal read, followed and switched over the control API.
/// Serialized: the journal's selection is process-wide.
@Suite(.serialized, .processWideCallJournal) struct JournalRouteTests {
    @Test func listsTheCallsOfAJournaledPointWithWhatTheyReturned() async throws {
        let endpoint = try await TestEndpoint.start()
        defer { CallJournal.shared.selection = .none }
        let name = uniqueName()
        let point = makePoint(name)
        let other = makePoint(uniqueName("other"))
        let client = endpoint.client
        let before = try await offload { try client.journal(limit: 0) }
        #expect(before.selection == ControlAPI.JournalSelection(), "off by default")
        let selected = try await offload {
            try client.setJournal(ControlAPI.JournalSelection(points: [name, other.name]))
        }
        #expect(selected.selection.points == [name, other.name].sorted())
        #expect(point(1) == 1)
        let applied = try await offload { try client.apply(profile: profile(name, item: "double")) }
        #expect(point(4) == 8)
        #expect(other(5) == 5)
        let journal = try await offload { try client.journal(point: name) }
        #expect(journal.calls.map(\.arguments) == ["1", "4"])
        #expect(journal.calls.map(\.returned) == ["1", "8"])
        #expect(journal.calls[0].entry == nil && !journal.calls[0].acted)
        #expect(journal.calls[1].entry == applied.entries.first && journal.calls[1].acted)
        #expect(journal.calls[1].callIndex == 0 && journal.calls[1].entrySeed != nil)
        #expect(journal.capacity == CallJournal.defaultCapacity && journal.bytes > 0)
        let newest = try await offload { try client.journal(limit: 1) }
        #expect(newest.calls.map(\.point) == [other.name])
        let off = try await offload { try client.setJournal(ControlAPI.JournalSelection()) }
        #expect(off.selection == ControlAPI.JournalSelection())
        _ = point(9)
        #expect(try await offload { try client.journal(point: name) }.calls.count == 2, "off records nothing more")
        // Only its own entry: other suites in this process have theirs applied meanwhile.
        for id in applied.entries { _ = try await offload { try client.revert(entry: id) } }
        await endpoint.finish()
    }

    @Test func refusesBadQueriesAndBodies() async throws {
        let endpoint = try await TestEndpoint.start()
        let client = endpoint.client
        let cases: [(String, String, Data?, Int)] = [
            ("GET", "/v1/journal?limit=-1", nil, 400),
            ("GET", "/v1/journal?limit=many", nil, 400),
            ("PUT", "/v1/journal", Data("{\"points\": 3}".utf8), 400),
            ("PUT", "/v1/journal", Data("{\"everyPoint\": false, \"points\": [], \"capacity\": -4}".utf8), 422),
            ("DELETE", "/v1/journal", nil, 405),
        ]
        for (method, path, body, status) in cases {
            let response = try await offload { try client.send(method, path, body: body) }
            #expect(response.status == status, "\(method) \(path)")
        }
        #expect(CallJournal.shared.selection == .none, "a refused request changes nothing")
        await endpoint.finish()
    }

    @Test(.timeLimit(.minutes(2))) func followingDeliversTheKeptCallsThenNewOnesOfOnePoint() async throws {
        let endpoint = try await TestEndpoint.start()
        defer { CallJournal.shared.selection = .none }
        let name = uniqueName()
        let point = makePoint(name)
        let other = makePoint(uniqueName("other"))
        CallJournal.shared.selection = .init(points: [name, other.name])
        _ = point(1)
        _ = other(2)
        let client = endpoint.client
        let opened = Recorder<Bool>()
        let follower = Task {
            try await offload {
                var calls: [ControlAPI.Call] = []
                try client.followJournal(point: name, onOpen: { opened.record(true) }) { call in
                    calls.append(call)
                    return calls.count < 3
                }
                return calls
            }
        }
        while opened.values.isEmpty { try await Task.sleep(for: .milliseconds(10)) }
        for index in 3...5 {
            _ = other(index)
            _ = point(index)
        }
        let calls = try await follower.value
        #expect(calls.map(\.arguments) == ["1", "3", "4"], "the kept call, then new ones, of that point only")
        #expect(calls.allSatisfy { $0.point == name })
        await endpoint.finish()
    }
}
#endif
