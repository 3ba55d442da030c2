// Needs the console's server: runs with `swift test --traits Console`.
#if Console
@testable import ChaosConsole
@testable import ChaosControl
import ChaosKit
import ChaosNetwork
import Foundation
import HTTPTypes
import TestHelpers
import Testing

/// The control API over real loopback HTTP, against an endpoint in this process.
@Suite struct ControlEndpointTests {
    @Test func appliesAProfileAndListsItsEntryWithCounters() async throws {
        let endpoint = try await TestEndpoint.start()
        let name = uniqueName()
        let point = makePoint(name)
        let client = endpoint.client
        let applied = try await offload {
            try client.apply(profile: profile(name, item: "add", parameters: #"{"amount": 5}"#))
        }
        #expect(applied.entries.count == 1)
        #expect(point(1) == 6)
        #expect(point(2) == 7)
        let entries = try await offload { try client.entries() }
        let entry = try #require(entries.first { $0.id == applied.entries[0] })
        #expect(entry.point == name)
        #expect(entry.seen == 2 && entry.acted == 2 && entry.passed == 0 && entry.enabled)
        #expect(entry.lastAct?.callIndex == 1)
        let points = try await offload { try client.points() }
        let listed = try #require(points.first { $0.name == name })
        let add = try #require(listed.items.first { $0.name == "add" })
        #expect(add.parameters.first?.kind == "integer")
        #expect(add.parameters.first?.minimum == 1 && add.parameters.first?.maximum == 100)
        #expect(add.parameters.first?.defaultValue == .number(1))
        _ = try await offload { try client.revert(entry: applied.entries[0]) }
        #expect(point(1) == 1)
        await endpoint.finish()
    }

    @Test func aBadProfileAppliesNothingAndGetsTheLocatedError() async throws {
        let endpoint = try await TestEndpoint.start()
        let name = uniqueName()
        let point = makePoint(name)
        let client = endpoint.client
        // The first entry is fine, the second one's parameter is out of range: nothing applies.
        let body = Data(
            #"""
            {"entries": [
              {"point": "\#(name)", "provider": {"item": "double"}},
              {"point": "\#(name)", "provider": {"item": "add", "parameters": {"amount": 500}}}
            ]}
            """#.utf8)
        let error = await #expect(throws: ControlError.self) {
            _ = try await offload { try client.apply(profile: body, source: "flaky.json") }
        }
        #expect(error?.status == 422)
        #expect(error?.kind == "invalidProvider")
        let third = String(decoding: body, as: UTF8.self).split(separator: "\n")[2]
        let column = third.distance(from: third.startIndex, to: try #require(third.range(of: "500")).lowerBound) + 1
        #expect(error?.subject == "flaky.json:3:\(column) at $.entries[1].provider.parameters.amount")
        #expect(error?.message.contains("outside 1…100") == true)
        #expect(point(3) == 3)
        let entries = try await offload { try client.entries() }
        #expect(!entries.contains { $0.point == name })

        let syntax = await #expect(throws: ControlError.self) {
            _ = try await offload { try client.apply(profile: Data(#"{"entries": [}"#.utf8)) }
        }
        #expect(syntax?.status == 422)
        #expect(syntax?.kind == "invalidProfile")
        #expect(syntax?.subject?.hasPrefix("<control request>:1:") == true)
        await endpoint.finish()
    }

    @Test func aPointWithoutArgumentsListsItsSignatureWithEmptyParentheses() async throws {
        let endpoint = try await TestEndpoint.start()
        let name = uniqueName()
        let now = InjectionPoint(name) { Date(timeIntervalSince1970: 0) }
        let fetch = AsyncInjectionPoint<Void, Int, ChaosError>(name + ".fetch") { 1 }
        let points = try await offload { try endpoint.client.points() }
        #expect(points.first { $0.name == name }?.signature == "() -> Date")
        #expect(points.first { $0.name == name + ".fetch" }?.signature == "() async throws(ChaosError) -> Int")
        #expect(!points.contains { $0.signature.contains("(())") })
        withExtendedLifetime((now, fetch)) {}
        await endpoint.finish()
    }

    @Test func theApplyLogLineSaysWhatWasApplied() throws {
        let name = uniqueName()
        let point = makePoint(name)
        let entries = try ChaosProfile.decode(json: profile(name, item: "add", parameters: #"{"amount": 5}"#))
            .profileEntries
        let line = ChaosConsole.logSummary(entries)
        #expect(line == "\(entries[0].id) \(name) ← add(amount: 5)", "\(line)")
        #expect(point(1) == 1)
    }

    @Test func revertsEnablesAndDisablesOneEntry() async throws {
        let endpoint = try await TestEndpoint.start()
        let name = uniqueName()
        let point = makePoint(name)
        let client = endpoint.client
        let applied = try await offload { try client.apply(profile: profile(name, item: "double")) }
        let id = try #require(applied.entries.first)
        #expect(point(4) == 8)
        let disabled = try await offload { try client.setEnabled(false, entry: id) }
        #expect(!disabled.enabled)
        #expect(point(4) == 4)
        let enabled = try await offload { try client.setEnabled(true, entry: id) }
        #expect(enabled.enabled)
        #expect(point(4) == 8)
        let reverted = try await offload { try client.revert(entry: id) }
        #expect(reverted.entries == [id])
        #expect(point(4) == 4)
        let again = await #expect(throws: ControlError.self) { _ = try await offload { try client.revert(entry: id) } }
        #expect(again?.status == 404)
        #expect(again?.kind == "notApplied")
        let missing = await #expect(throws: ControlError.self) {
            _ = try await offload { try client.setEnabled(true, entry: id) }
        }
        #expect(missing?.status == 404)
        await endpoint.finish()
    }

    @Test func selectsAResponseInAResponseSet() async throws {
        let store = try ResponseSetStore()
        let setName = uniqueName()
        try store.add(
            ResponseSet(
                setName, matching: .get("/login"),
                [
                    .init("success", .status(200)), .init("offline", .error(.offline)),
                ]))
        let endpoint = try await TestEndpoint.start(responseSets: [ResponseSetStoreBox(store: store)])
        let client = endpoint.client
        let sets = try await offload { try client.responseSets() }
        let listed = try #require(sets.first { $0.name == setName })
        #expect(listed.responses == ["success", "offline"])
        #expect(listed.selected == "success")
        let selected = try await offload { try client.select("offline", in: setName) }
        #expect(selected.selected == "offline")
        #expect(store.selection(for: setName) == "offline")
        let wrong = await #expect(throws: ControlError.self) {
            _ = try await offload { try client.select("nope", in: setName) }
        }
        #expect(wrong?.status == 422)
        #expect(wrong?.message.contains("'success', 'offline'") == true)
        let unknown = await #expect(throws: ControlError.self) {
            _ = try await offload { try client.select("offline", in: "no-such-set") }
        }
        #expect(unknown?.status == 404)
        await endpoint.finish()
    }

    // A time limit: a stream that never delivers must fail the test, not hang the run (a CI
    // run once waited here for good; the cause is not found yet).
    @Test(.timeLimit(.minutes(2))) func serverSentEventsDeliverAnActAfterACall() async throws {
        let endpoint = try await TestEndpoint.start()
        let name = uniqueName()
        let point = makePoint(name)
        let client = endpoint.client
        let applied = try await offload { try client.apply(profile: profile(name, item: "double")) }
        let opened = Signal()
        let received = Recorder<ControlAPI.Event>()
        let follower = Task.detached {
            try await offload {
                try client.events(onOpen: { opened.fire() }) { event in
                    guard event.point == name else { return true }
                    received.record(event)
                    return false
                }
            }
        }
        await opened.wait()
        // Calls until the stream has delivered an act: the subscription may be registered a
        // moment after the response head that `onOpen` reports.
        var calls = 0
        while received.values.isEmpty && calls < 600 {
            #expect(point(21) == 42)
            calls += 1
            try await Task.sleep(for: .milliseconds(100))
        }
        try await follower.value
        let event = try #require(received.values.first)
        #expect(event.entry == applied.entries.first)
        #expect(event.provider == "double")
        #expect(event.callIndex < calls)
        let entries = try await offload { try client.entries() }
        let lastAct = entries.first { $0.id == event.entry }?.lastAct
        #expect(lastAct?.callIndex == calls - 1)
        // The act the stream delivered is the entry's last one unless a later call overtook it.
        if event.callIndex == calls - 1 { #expect(lastAct?.entrySeed == event.entrySeed) }
        _ = try await offload { try client.revert(entry: applied.entries[0]) }
        await endpoint.finish()
    }

    @Test func statusAndGo() async throws {
        let endpoint = try await TestEndpoint.start()
        let client = endpoint.client
        let status = try await offload { try client.status() }
        #expect(status.pid == getpid())
        #expect(status.program == "console-tests")
        #expect(status.kind == "swift")
        #expect(!status.waiting)
        #expect(!endpoint.console.goReceived)
        try await offload { try client.go() }
        #expect(endpoint.console.goReceived)
        #expect(await endpoint.console.waitForGo(timeout: .milliseconds(1)))
        await endpoint.finish()
    }

    /// A pending entry is switched on but acts on nothing: the status counts it as waiting,
    /// and the words tools print (and the banner mirrors) never call it active.
    @Test func theStatusCountsAPendingEntryAsWaitingNotActive() async throws {
        let endpoint = try await TestEndpoint.start()
        let client = endpoint.client
        let name = uniqueName()
        let applied = try await offload {
            try client.apply(profile: profile(name + "-later", item: "double"), allowPending: true)
        }
        let status = try await offload { try client.status() }
        // Other suites' entries may be live in this process: counted, not matched.
        #expect((status.pendingEntries ?? 0) >= 1, "\(status)")
        #expect(status.activeEntries <= status.enabledEntries - 1, "\(status)")
        for id in applied.entries { _ = try await offload { try client.revert(entry: id) } }
        await endpoint.finish()

        func summary(_ entries: Int, enabled: Int, pending: Int?, unfit: Int? = nil) -> String {
            ControlAPI.Status(
                pid: 1, program: "p", kind: "swift", entries: entries, enabledEntries: enabled, pendingEntries: pending,
                notAppliedEntries: unfit, waiting: false, features: []
            ).entriesSummary
        }
        #expect(summary(1, enabled: 1, pending: 1) == "0 of 1 entries active, 1 waiting for its point")
        #expect(summary(3, enabled: 3, pending: 2) == "1 of 3 entries active, 2 waiting for their points")
        #expect(
            summary(3, enabled: 2, pending: 0, unfit: 1)
                == "1 of 3 entries active, 1 not applied (the point did not fit)")
        // A chaos run child sends no pending count: every switched-on entry there acts.
        #expect(summary(2, enabled: 2, pending: nil) == "2 of 2 entries active")
    }

    @Test func theRequestJournalListsWhatAnsweredAndWhyARefusedRequestMissed() async throws {
        let endpoint = try await TestEndpoint.start()
        let client = endpoint.client
        let run = uniqueName()
        let stubs = StubSet()
        stubs.stub(try .get("/v1/items/:id"), name: "items", .string("item"))
        stubs.stub(try .post("/v1/orders"), name: "orders", .status(201))
        let network = ChaosNetworkClient(stubs)
        _ = try await network.send(
            HTTPRequest(method: .get, url: URL(string: "https://api.test/v1/items/3?run=\(run)")!), body: nil)
        await #expect(throws: NetworkError.self) {
            _ = try await network.send(
                HTTPRequest(method: .get, url: URL(string: "https://api.test/v1/item/3?run=\(run)")!), body: nil)
        }

        let journal = try await offload { try client.requests() }
        #expect(journal.capacity == RequestJournal.shared.capacity && journal.recorded >= 2)
        let mine = journal.requests.filter { $0.url.contains(run) }
        try #require(mine.count == 2)
        #expect(mine[0].answer == "stub" && mine[0].answeredBy == "items" && mine[0].summary == "stub 'items'")
        #expect(mine[0].route == "client" && mine[0].method == "GET" && mine[0].status == 200 && mine[0].bytes == 4)
        #expect(mine[0].nearMisses == nil && mine[0].milliseconds >= 0)
        #expect(mine[1].answer == "refused" && mine[1].status == nil && mine[1].error?.contains("no stub") == true)
        let nearest = try #require(mine[1].nearMisses?.first)
        #expect(nearest.stub == "items" && nearest.criteria == 2 && nearest.satisfied == 1)
        #expect(
            nearest.differences == [
                ControlAPI.Difference(
                    part: "path", name: nil, expected: "template /v1/items/:id", actual: "/v1/item/3",
                    description: "path: expected template /v1/items/:id, got /v1/item/3")
            ])
        #expect(mine[1].nearMisses?.map(\.stub) == ["items", "orders"])

        let refused = try await offload { try client.requests(answer: "refused") }
        #expect(refused.requests.allSatisfy { $0.answer == "refused" })
        #expect(refused.requests.contains { $0.number == mine[1].number })
        #expect(!refused.requests.contains { $0.number == mine[0].number })
        let newest = try await offload { try client.requests(limit: 1) }
        #expect(newest.requests.count == 1 && newest.requests[0].number >= mine[1].number)
        let (badLimit, post) = try await offload {
            (try client.send("GET", "/v1/requests?limit=many"), try client.send("POST", "/v1/requests"))
        }
        #expect(badLimit.status == 400 && post.status == 405)
        #expect(try await offload { try client.status() }.features.contains("requests"))
        await endpoint.finish()
    }

    @Test func unknownRoutesMethodsAndIdsAreJSONErrors() async throws {
        let endpoint = try await TestEndpoint.start()
        let client = endpoint.client
        let (route, method, id, large) = try await offload {
            (
                try client.send("GET", "/v1/nothing"),
                try client.send("PATCH", "/v1/entries"),
                try client.send("DELETE", "/v1/entries/abc"),
                try client.send("POST", "/v1/entries", body: Data(repeating: 32, count: (1 << 20) + 1))
            )
        }
        for (response, status, kind) in [
            (route, 404, "notFound"), (method, 405, "methodNotAllowed"), (id, 400, "badRequest"),
            (large, 413, "payloadTooLarge"),
        ] {
            #expect(response.status == status)
            let body = try ControlAPI.decoder().decode(ControlAPI.ErrorBody.self, from: response.body)
            #expect(body.error.kind == kind)
        }
        #expect(method.headers["allow"] == "GET, POST, DELETE")
        await endpoint.finish()
    }

    @Test func theEndpointFileIsPrivateAndGoesAwayOnStop() async throws {
        let endpoint = try await TestEndpoint.start()
        let file = endpoint.directory.appendingPathComponent("\(getpid()).json")
        let attributes = try FileManager.default.attributesOfItem(atPath: file.path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        // The directory was the test's: its mode is left as it was (others may not write).
        let directory = try FileManager.default.attributesOfItem(atPath: endpoint.directory.path)
        #expect(((directory[.posixPermissions] as? NSNumber)?.intValue ?? 0) & 0o022 == 0)
        let record = try ControlEndpoint.find(pid: getpid(), in: endpoint.directory)
        #expect(record.url == endpoint.console.url)
        #expect(record.token == endpoint.console.token)
        #expect(record.token.count == 64)
        #expect(record.consoleURL == "\(endpoint.console.url)/console?token=\(endpoint.console.token)")
        await endpoint.console.stop()
        #expect(!FileManager.default.fileExists(atPath: file.path))
        #expect(throws: ControlError.self) { _ = try ControlEndpoint.find(pid: getpid(), in: endpoint.directory) }
        try? FileManager.default.removeItem(at: endpoint.directory)
    }

    @Test func aUnixSocketEndpointAnswers() async throws {
        let directory = temporaryDirectory()
        let path = "/tmp/chaos-\(getpid())-\(UInt32.random(in: 0 ... .max)).sock"
        let console = try #require(
            try await ChaosConsole.start(.init(address: .unixSocket(path: path), endpointDirectory: directory)))
        #expect(console.url == "unix:\(path)")
        let client = ControlClient(url: console.url, token: console.token, timeout: testTimeout)
        let status = try await offload { try client.status() }
        #expect(status.pid == getpid())
        await console.stop()
        #expect(!FileManager.default.fileExists(atPath: path))
        try? FileManager.default.removeItem(at: directory)
    }

    @Test func nothingListensInAReleaseBuildUnlessTheAppOptsIn() async throws {
        let directory = temporaryDirectory()
        let refused = try await ChaosConsole.start(.init(endpointDirectory: directory, buildConfiguration: .release))
        #expect(refused == nil)
        #expect(ControlEndpoint.all(in: directory).isEmpty)
        let opted = try #require(
            try await ChaosConsole.start(
                .init(endpointDirectory: directory, allowInReleaseBuilds: true, buildConfiguration: .release)))
        await opted.stop()
        let environment = ["CHAOS_CONTROL": "127.0.0.1:0", "CHAOS_CONTROL_DIR": directory.path]
        let bootstrapped = try await Chaos.bootstrap(
            control: .environment, environment: environment, buildConfiguration: .release)
        #expect(bootstrapped.console == nil)
        let none = try await Chaos.bootstrap(control: .environment, environment: ["CHAOS_CONTROL_DIR": directory.path])
        #expect(none.console == nil && none.session == nil)
        try? FileManager.default.removeItem(at: directory)
    }

    @Test func environmentActivationTakesAConfigurationLikeAlways() async throws {
        let directory = temporaryDirectory()
        let store = try ResponseSetStore()
        let setName = uniqueName()
        try store.add(ResponseSet(setName, matching: .get("/login"), [.init("success", .status(200))]))
        let configuration = ChaosConsole.Configuration(responseSets: [store], program: "configured")
        // Without CHAOS_CONTROL nothing listens, configuration or not.
        let quiet = try await Chaos.bootstrap(
            control: .environment(configuration), environment: ["CHAOS_CONTROL_DIR": directory.path])
        #expect(quiet.console == nil)
        // With it, the endpoint serves the configured response sets under the configured name.
        let environment = ["CHAOS_CONTROL": "127.0.0.1:0", "CHAOS_CONTROL_DIR": directory.path]
        let started = try await Chaos.bootstrap(control: .environment(configuration), environment: environment)
        let console = try #require(started.console)
        let client = ControlClient(url: console.url, token: console.token, timeout: testTimeout)
        let sets = try await offload { try client.responseSets() }
        #expect(sets.map(\.name).contains(setName))
        #expect(try await offload { try client.status() }.program == "configured")
        await console.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    // Known issue, to be found: in ThreadSanitizer's whole suite (never alone, nor with the
    // console suites, nor without the sanitizer) the bootstrap is not seen waiting in
    // 12,000 looks. Run in the README's suite and the console step.
    @Test(
        .disabled(
            if: Sanitizers.thread,
            "under ThreadSanitizer's whole suite the bootstrap is not seen waiting (known issue, under investigation)"))
    func bootstrapWaitsForGoUpToItsBound() async throws {
        let directory = temporaryDirectory()
        let environment = [
            "CHAOS_CONTROL": "127.0.0.1:0", "CHAOS_CONTROL_DIR": directory.path, "CHAOS_CONTROL_WAIT": "1",
            "CHAOS_CONTROL_WAIT_TIMEOUT": "90s",
        ]
        let bootstrap = Task { try await Chaos.bootstrap(control: .environment, environment: environment) }
        // The runner side: find the process, see it waiting, say go.
        let status = try await offload { () throws -> ControlAPI.Status in
            // Counted waits, not a clock: suites beside this one move the process's clocks
            // (a jumped Date() once ended this loop before its first look) and may scale its
            // sleeps (12,000 looks once ended under ThreadSanitizer before the bootstrap
            // waited), so each look waits in poll, whose timeout no speed entry touches.
            for _ in 0..<12_000 {
                if let endpoint = ControlEndpoint.all(in: directory).first(where: { $0.pid == getpid() }),
                    let status = try? ControlClient(endpoint, timeout: testTimeout).status(), status.waiting
                {
                    try ControlClient(endpoint, timeout: testTimeout).go()
                    return status
                }
                _ = poll(nil, 0, 5)  // a speed entry scales sleeps, never poll's timeout
            }
            throw TestFailure("the bootstrap never waited")
        }
        #expect(status.waiting)
        let result = try await bootstrap.value
        let console = try #require(result.console)
        #expect(console.goReceived, "the wait ended by go, not by its 90 s bound")
        await console.stop()

        // Nobody says go: bootstrap goes on after the bound.
        var short = environment
        short["CHAOS_CONTROL_WAIT_TIMEOUT"] = "50ms"
        let alone = try await Chaos.bootstrap(control: .environment, environment: short)
        #expect(alone.console?.goReceived == false)
        await alone.console?.stop()

        short["CHAOS_CONTROL_WAIT_TIMEOUT"] = "soon"
        await #expect(throws: ChaosError.self) {
            _ = try await Chaos.bootstrap(control: .environment, environment: short)
        }
        try? FileManager.default.removeItem(at: directory)
    }

    @Test func theBlockingBootstrapStartsTheEndpointForASynchronousStart() async throws {
        let directory = temporaryDirectory()
        let environment = ["CHAOS_CONTROL": "127.0.0.1:0", "CHAOS_CONTROL_DIR": directory.path]
        // On a thread of its own, as an app's synchronous start runs.
        let started = try await offload {
            try Chaos.bootstrapSynchronously(control: .environment, environment: environment)
        }
        let console = try #require(started.console)
        let status = try await offload {
            try ControlClient(try ControlEndpoint.find(pid: getpid(), in: directory), timeout: testTimeout).status()
        }
        #expect(status.pid == getpid())
        await console.stop()
        let refused = await #expect(throws: ChaosError.self) {
            _ = try await offload {
                try Chaos.bootstrapSynchronously(control: .environment, environment: ["CHAOS_CONTROL": "nowhere"])
            }
        }
        #expect(refused?.subject == "CHAOS_CONTROL")
        try? FileManager.default.removeItem(at: directory)
    }

    @Test func endpointDirectoriesAreMadePrivateOrLeftAsTheyAre() async throws {
        let base = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: base) }
        let record = ControlEndpoint(pid: getpid(), program: "tests", url: "http://127.0.0.1:1", token: "t")
        func mode(_ url: URL) -> mode_t {
            var info = stat()
            return lstat(url.path, &info) == 0 ? info.st_mode & 0o7777 : 0
        }
        // Made here: 0700, parents too.
        let made = base.appendingPathComponent("a/b", isDirectory: true)
        try record.publish(in: made)
        #expect(mode(made) == 0o700 && mode(made.deletingLastPathComponent()) == 0o700)
        // Shared and sticky (/tmp): left as it is, the files go into chaoskit-UID.
        let shared = base.appendingPathComponent("shared", isDirectory: true)
        try FileManager.default.createDirectory(at: shared, withIntermediateDirectories: false)
        chmod(shared.path, 0o1777)
        let file = try record.publish(in: shared)
        let own = shared.appendingPathComponent("chaoskit-\(geteuid())", isDirectory: true)
        #expect(mode(shared) == 0o1777)
        #expect(mode(own) == 0o700)
        #expect(file.path == own.appendingPathComponent("\(getpid()).json").path)
        #expect(ControlEndpoint.directory(environment: ["CHAOS_CONTROL_DIR": shared.path]) == own)
        #expect(ControlEndpoint.filesDirectory(for: own) == own)
        #expect(try ControlEndpoint.find(pid: getpid(), in: shared).token == "t")
        record.withdraw(from: shared)
        #expect(!FileManager.default.fileExists(atPath: file.path))
        // Others may write and no sticky bit: refused, untouched, with what to do.
        let open = base.appendingPathComponent("open", isDirectory: true)
        try FileManager.default.createDirectory(at: open, withIntermediateDirectories: false)
        chmod(open.path, 0o777)
        let refused = caught { () throws(ControlError) in try record.publish(in: open) }
        #expect(refused?.kind == "endpointFiles" && refused?.message.contains("chmod go-w") == true)
        #expect(mode(open) == 0o777)
        // Ours and readable by others: used as it is (each file and socket is 0600).
        let readable = base.appendingPathComponent("readable", isDirectory: true)
        try FileManager.default.createDirectory(at: readable, withIntermediateDirectories: false)
        chmod(readable.path, 0o755)
        try record.publish(in: readable)
        #expect(mode(readable) == 0o755)
        // A private subdirectory someone else prepared, or a link, is refused.
        let squatted = base.appendingPathComponent("squatted", isDirectory: true)
        try FileManager.default.createDirectory(at: squatted, withIntermediateDirectories: false)
        chmod(squatted.path, 0o1777)
        let planted = squatted.appendingPathComponent("chaoskit-\(geteuid())")
        try FileManager.default.createDirectory(at: planted, withIntermediateDirectories: false)
        chmod(planted.path, 0o755)
        let open755 = caught { () throws(ControlError) in try record.publish(in: squatted) }
        #expect(open755?.message.contains("not a private directory of yours") == true)
        try FileManager.default.removeItem(at: planted)
        try FileManager.default.createSymbolicLink(at: planted, withDestinationURL: made)
        let linked = caught { () throws(ControlError) in try record.publish(in: squatted) }
        #expect(linked?.message.contains("not a private directory of yours") == true)
    }

    @Test func anInProcessEndpointInASharedDirectoryIsFoundByChaosCtl() async throws {
        let shared = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: shared) }
        chmod(shared.path, 0o1777)
        let environment = ["CHAOS_CONTROL": "127.0.0.1:0", "CHAOS_CONTROL_DIR": shared.path]
        let started = try await Chaos.bootstrap(control: .environment, environment: environment)
        let console = try #require(started.console)
        var info = stat()
        #expect(lstat(shared.path, &info) == 0 && info.st_mode & 0o7777 == 0o1777)
        // Asked again when it is missing: once, under ThreadSanitizer with every suite at
        // once, a listing came back empty although the file had been written a moment
        // before. A second look tells a slow machine from a file that is not there.
        var listed = try await offload { try ChaosToolRun.chaos(["ctl", "list", "--directory", shared.path]) }
        // Under load (ThreadSanitizer, every suite at once) the endpoint itself can be slow to
        // answer the listing's status request: looked at for up to ten seconds.
        for _ in 0..<10 where !listed.output.contains("\(getpid())  ") {
            try await Task.sleep(for: .seconds(1))
            listed = try await offload { try ChaosToolRun.chaos(["ctl", "list", "--directory", shared.path]) }
        }
        let files = (try? FileManager.default.contentsOfDirectory(atPath: shared.path + "/chaoskit-\(geteuid())")) ?? []
        #expect(listed.output.contains("\(getpid())  "), "\(listed.output) \(listed.errors) files: \(files)")
        await console.stop()
    }

    @Test func addressesFromTheEnvironment() throws {
        typealias Address = ChaosConsole.Configuration.Address
        #expect(try Address.parse("127.0.0.1:0") == .loopback(port: 0))
        #expect(try Address.parse("1") == .loopback(port: 0))
        #expect(try Address.parse("4567") == .loopback(port: 4567))
        #expect(try Address.parse("localhost:80") == .loopback(port: 80))
        #expect(try Address.parse("[::1]:9") == .host("::1", port: 9))
        #expect(try Address.parse("0.0.0.0:8080") == .host("0.0.0.0", port: 8080))
        #expect(try Address.parse("unix:/tmp/x.sock") == .unixSocket(path: "/tmp/x.sock"))
        for bad in ["", "host", "1.2.3.4:99999", "unix:relative", "a b:1", "[::1]"] {
            #expect(throws: ChaosError.self, "\(bad)") { _ = try Address.parse(bad) }
        }
    }
}
#endif
