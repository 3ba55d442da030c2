import CSystemProbes
import Foundation
import TestHelpers
import Testing

#if canImport(Glibc)
import Glibc
#endif

#if os(Linux)
/// One suite, both deliveries: every scenario's profile is run by `chaos run` around the
/// probe program and applied in this process around the same probe, and both must answer
/// what the scenario expects — so the deliveries cannot drift apart.
///
/// Serialized, and the only suite of this target that applies system points: the
/// in-process delivery changes process-wide state (GOT slots, the clock) while a scenario
/// runs, and reverts it before the next.
@Suite(
    .serialized, .processWideSystemChaos, .disabled(if: Sanitizers.thread, Sanitizers.threadReason),
    .enabled(if: Needs.cc, "no C compiler (cc) to build the probe program"))
struct SystemConformanceTests {
    /// Runs `scenario` by `chaos run`, then in-process, and expects `expected` from both.
    private func expectBoth(
        _ scenario: Scenario, values: [String: String] = [:], sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let program = try Delivery.program(scenario, values: values)
        let inProcess = try Delivery.inProcess(scenario, values: values)
        #expect(program.status == 0 && program.errors.isEmpty, "chaos run: \(program)", sourceLocation: sourceLocation)
        #expect(program.line == scenario.expected, "chaos run answered otherwise", sourceLocation: sourceLocation)
        #expect(
            inProcess == scenario.expected, "the in-process delivery answered otherwise", sourceLocation: sourceLocation
        )
    }

    @Test(arguments: Scenarios.plain)
    func bothDeliveriesAnswerAsExpected(_ scenario: Scenario) throws {
        try expectBoth(scenario)
    }

    /// The process and directory scenarios: the same line from the preload library, the
    /// seccomp supervisor and the in-process delivery.
    /// One seed for all three, so that seeded choices agree.
    @Test(arguments: Scenarios.everyDelivery)
    func everyDeliveryAnswersAsExpected(_ scenario: Scenario) throws {
        for delivery in ["preload", "seccomp"] {
            let program = try Delivery.program(scenario, seed: 5, delivery: delivery)
            #expect(program.status == 0 && program.errors.isEmpty, "chaos run --delivery \(delivery): \(program)")
            #expect(program.line == scenario.expected, "the \(delivery) delivery answered otherwise")
        }
        #expect(
            try Delivery.inProcess(scenario, seed: 5) == scenario.expected, "the in-process delivery answered otherwise"
        )
    }

    @Test func connectIsRefusedOnOnePortOfARealListenerAndNotOnTheOther() throws {
        let listeners = try Listeners(count: 2)
        let ports = ["PORT_REFUSED": "\(listeners.ports[0])", "PORT_OPEN": "\(listeners.ports[1])"]
        try expectBoth(Scenarios.refusedOnOnePort, values: ports)
        // Without chaos both ports take the connection: the refusal was the profile's.
        let plain = Probe.run(["connect", "127.0.0.1", "a:\(listeners.ports[0])", "b:\(listeners.ports[1])"])
        #expect(plain.line == "a=0 b=0")
    }

    @Test func connectTimeoutWaitsItsDurationBeforeETIMEDOUT() throws {
        let listeners = try Listeners(count: 1)
        try expectBoth(Scenarios.timeout, values: ["PORT_OPEN": "\(listeners.ports[0])"])
    }

    @Test func probabilityReplaysEachDeliveryExactlyFromItsSeed() throws {
        func expectSane(_ line: String, _ label: String) -> String {
            let parts = Dictionary(
                uniqueKeysWithValues: line.split(separator: " ").compactMap { word -> (String, String)? in
                    let pair = word.split(separator: "=", maxSplits: 1)
                    return pair.count == 2 ? (String(pair[0]), String(pair[1])) : nil
                })
            let bits = parts["bits"] ?? ""
            let failed = Int(parts["failed"] ?? "") ?? -1
            #expect(bits.count == 200 && bits.allSatisfy { $0 == "0" || $0 == "1" }, "\(label): \(line)")
            #expect(
                failed == bits.filter { $0 == "0" }.count && (50...150).contains(failed),
                "\(label): p=0.5 over 200 writes failed \(failed) times")
            return bits
        }
        let seeds: [UInt64] = [42, 42, 43]
        let program = try seeds.map { try Delivery.program(Scenarios.draws, seed: $0) }
        for outcome in program { #expect(outcome.status == 0, "\(outcome)") }
        let programBits = zip(program, seeds).map { expectSane($0.line, "chaos run --seed \($1)") }
        #expect(programBits[0] == programBits[1], "chaos run replays --seed 42 exactly")
        #expect(programBits[0] != programBits[2], "another seed draws another sequence")

        let local = try seeds.map { try Delivery.inProcess(Scenarios.draws, seed: $0) }
        let localBits = zip(local, seeds).map { expectSane($0, "in-process, seed \($1)") }
        #expect(localBits[0] == localBits[1], "the in-process delivery replays seed 42 exactly")
        #expect(localBits[0] != localBits[2], "another seed draws another sequence")
        // One draw for both engines: the same seed fails the same writes in either delivery.
        #expect(programBits == localBits, "chaos run and the in-process delivery draw alike from one seed")
    }

    @Test(
        .enabled(
            if: Needs.sqliteLibrary, "libsqlite3.so.0 is not installed (.ci/install-system-test-deps installs sqlite3)"),
        arguments: ["wal", "delete"])
    func sqliteTransactionFailsWithSQLITE_FULLAndTheDatabaseKeepsExactlyItsCommittedRows(mode: String) throws {
        let scenario = Scenarios.sqliteTransaction(mode: mode)
        let setup = "open=0 setup=0 close=0"
        let rows = "open=0 rows=1,2,3 integrity=ok close=0"
        // chaos run: set up and checked by the probe program outside chaos.
        let probe = try Build.probeProgram.get()
        let folder = try workspace("sqlite-program", folders: ["db"])
        defer { remove(folder) }
        let database = folder + "/db/shop.db"
        #expect(try Command.run([probe, "sqlite-setup", database, mode]).line == setup)
        let program = try Delivery.program(scenario, in: folder)
        #expect(program.line == scenario.expected, "chaos run: \(program)")
        #expect(try Command.run([probe, "sqlite-rows", database]).line == rows)

        // In-process: the library is loaded before the profile is applied, so that the
        // rebinding finds its GOT and its table of system calls.
        #expect(chaos_probe_sqlite_load() == 1)
        let local = try workspace("sqlite-inprocess", folders: ["db"])
        defer { remove(local) }
        #expect(Probe.run(["sqlite-setup", local + "/db/shop.db", mode]).line == setup)
        let inProcess = try Delivery.inProcess(scenario, in: local)
        #expect(inProcess == scenario.expected, "in-process")
        #expect(Probe.run(["sqlite-rows", local + "/db/shop.db"]).line == rows)
    }
}
#endif
