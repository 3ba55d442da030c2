// Needs the console's server: runs with `swift test --traits Console`.
#if Console
import ChaosControl
import Foundation
import TestHelpers
import Testing

/// `chaos ctl journal`: the call journal of a running Swift program, switched on, read and
/// followed from the command line.
@Suite struct CtlJournalTests {
    @Test func chaosCtlJournalShowsWhatEachCallReceived() async throws {
        let demo = try RunningDemo()
        defer { demo.stop() }
        _ = try await demo.line(containing: "greeting: hello, world")
        let pid = "\(demo.pid)"

        let off = try await demo.ctl("journal", pid)
        #expect(off.status == 0, "\(off.errors)")
        #expect(off.output.hasPrefix("0 calls shown of 0 journaled (keeps the newest 10000); recording nothing"))

        let on = try await demo.ctl("journal", pid, "--record", "demo.greeting", "--limit", "0")
        #expect(on.status == 0, "\(on.errors)")
        #expect(on.errors.contains("journal of \(demo.pid): recording demo.greeting"))
        let followed = try await demo.ctl("journal", pid, "--point", "demo.greeting", "--follow", "--count", "2")
        #expect(followed.status == 0, "\(followed.errors)")
        let plain = followed.output.split(separator: "\n")
        #expect(plain.count == 2)
        #expect(plain.allSatisfy { $0.contains(" demo.greeting(world) → hello, world (no entry)") }, "\(plain)")

        let shout = try demo.profile(#"{"entries": [{"point": "demo.greeting", "provider": {"item": "shout"}}]}"#)
        let seen = demo.output.count
        let applied = try await demo.ctl("apply", pid, shout)
        let id = String(applied.output.dropFirst("applied #".count).prefix { $0.isNumber })
        _ = try await demo.line(containing: "greeting: HELLO, WORLD", after: seen)
        let newest = try await demo.ctl("journal", pid, "--point", "demo.greeting", "--limit", "1")
        #expect(
            newest.output.contains("demo.greeting(world) → HELLO, WORLD acted by #\(id) on call "), "\(newest.output)")
        let json = try await demo.ctl("journal", pid, "--limit", "1", "--json")
        let journal = try ControlAPI.decoder().decode(ControlAPI.Journal.self, from: Data(json.output.utf8))
        #expect(journal.calls.count == 1 && journal.calls[0].acted && journal.calls[0].entry == Int(id))
        #expect(journal.selection.points == ["demo.greeting"] && !journal.selection.everyPoint)

        let stopped = try await demo.ctl("journal", pid, "--off", "--limit", "0")
        #expect(stopped.errors.contains("recording nothing"))
        let refused = try await demo.ctl("journal", pid, "--off", "--record", "x")
        #expect(refused.status != 0 && refused.errors.contains("--off cannot be given with --record"))
    }
}
#endif
