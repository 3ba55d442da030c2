import ChaosKit
import Foundation
import TestHelpers

@testable import ChaosControl

#if Console
import ChaosConsole
#endif
#if Console
import ChaosNetwork
#endif

/// Runs blocking client calls on a thread of their own, never on the concurrency pool the
/// in-process endpoint answers from.
func offload<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread {
            do {
                continuation.resume(returning: try body())
            } catch {
                continuation.resume(throwing: error)
            }
        }
        thread.start()
    }
}

/// A private directory for endpoint files, removed by the caller.
func temporaryDirectory(_ label: String = #function) -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent(
        "chaos-console-\(getpid())-\(uniqueName(label))")
    try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

#if Console
/// An in-process endpoint with its client; stop it with `finish()`.
struct TestEndpoint {
    let console: ChaosConsole
    let client: ControlClient
    let directory: URL

    static func start(responseSets: [ResponseSetStoreBox] = [], label: String = #function) async throws -> TestEndpoint
    {
        let directory = temporaryDirectory(label)
        let configuration = ChaosConsole.Configuration(
            responseSets: responseSets.map(\.store), endpointDirectory: directory, program: "console-tests"
        )
        guard let console = try await ChaosConsole.start(configuration) else {
            throw TestFailure("the endpoint did not start in a debug build")
        }
        return TestEndpoint(
            console: console, client: ControlClient(url: console.url, token: console.token, timeout: testTimeout),
            directory: directory)
    }

    func finish() async {
        await console.stop()
        try? FileManager.default.removeItem(at: directory)
    }
}

/// Names a store for `TestEndpoint.start` (keeps the helper's signature free of defaults
/// that need ChaosNetwork at every call site).
struct ResponseSetStoreBox {
    let store: ResponseSetStore
}
#endif

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A point of `Int -> Int` with a catalogue: `double` and `add(amount)`; with `matching`,
/// its entries may also `match` on `above` (calls with a larger argument).
func makePoint(_ name: String, matching: Bool = false) -> InjectionPoint<Int, Int, Never> {
    let matcher = ArgumentMatcher<Int>(conditions: [.integer("above", "calls with a larger argument")]) {
        conditions in
        let above = try conditions.int("above")
        return { $0 > above }
    }
    return InjectionPoint(
        name,
        catalogue: PointCatalogue(
            [
                CatalogueItem("double", "twice the argument") { _ in .block { $0.arguments * 2 } },
                CatalogueItem(
                    "add", "the argument plus an amount",
                    parameters: [.integer("amount", "what to add", default: 1, range: 1...100)]
                ) { parameters in
                    let amount = try parameters.int("amount")
                    return .block { $0.arguments + amount }
                },
            ], matcher: matching ? matcher : nil)
    ) { $0 }
}

/// A one-entry profile for `point` naming `item` (with `parameters` as JSON text).
func profile(_ point: String, item: String, parameters: String = "{}") -> Data {
    Data(#"{"entries": [{"point": "\#(point)", "provider": {"item": "\#(item)", "parameters": \#(parameters)}}]}"#.utf8)
}

/// How long a test's client waits for an in-process endpoint. A liveness bound, not a speed
/// figure: the endpoint answers on this process's cooperative pool, which on a two-core CI
/// machine other suites' synchronous tests can hold for seconds.
let testTimeout: Duration = .seconds(60)
