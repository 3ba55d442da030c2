import ChaosKit
import ChaosNetwork
import ExampleApps
import Foundation
import HTTPTypes

#if Console
import ChaosConsole
#endif

// The control endpoint's example: a program that greets someone and asks for the weather
// every 10 ms, printing each answer when it changes, while chaos is steered from outside.
//
//   swift run --traits Console ConsoleDemo                           (listens on 127.0.0.1, a free port)
//   CHAOS_CONTROL=127.0.0.1:4567 swift run --traits Console ConsoleDemo (a fixed port)
//   CHAOS_CONTROL_WAIT=1 swift run --traits Console ConsoleDemo        (waits for `chaos ctl go PID`)
//
// Then `chaos ctl list`, `chaos ctl apply PID Examples/ConsoleDemo/Profiles/shout.json`, or open
// the console URL it prints. Standard output: `ready URL CONSOLE-URL`, then
// `<unix ms> greeting: …` and `<unix ms> weather: …` lines; logs go to standard error.
bootstrapDemoLogging()

/// The point the console changes: a greeting for a name.
let greeting = InjectionPoint<String, String, Never>(
    "demo.greeting",
    catalogue: [
        CatalogueItem("shout", "the greeting in capitals") { _ in
            .block { environment in environment.callOriginal().uppercased() }
        },
        CatalogueItem(
            "replace", "another greeting", parameters: [.string("text", "what to say instead", default: "go away")]
        ) { parameters in
            .constant(try parameters.string("text"))
        },
        CatalogueItem(
            "stutter", "the name said several times",
            parameters: [.integer("times", "how many times", default: 3, range: 1...20)]
        ) { parameters in
            let times = try parameters.int("times")
            return .block { environment in
                "hello, " + Array(repeating: environment.arguments, count: times).joined(separator: "-")
            }
        },
    ]
) { name in "hello, \(name)" }

/// MMBarricade's selection: the weather service's answers, switched from the console.
let store = try ResponseSetStore()
try store.add(
    ResponseSet(
        "weather", matching: .get("/today"),
        [
            .init("sunny", .string("sunny, 24°C")),
            .init("storm", .string("storm warning")),
            .init("server down", .status(503)),
        ]))
let stubs = StubSet()
stubs.stub(try .get("/forecast/:day"), name: "forecast", .string("cloudy later"))
stubs.add(store)
// Through the `network.send` point, so that network chaos reaches it and the request
// journal (`chaos ctl requests PID`) lists every request.
let client = ChaosNetworkClient(stubs)

#if Console
let started = try await Chaos.bootstrap(control: .always(.init(responseSets: [store], program: "ConsoleDemo")))
if let console = started.console {
    say("ready \(console.url) \(console.consoleURL ?? "-")")
} else {
    say("ready - - (no control endpoint: a release build)")
}

// Now and then (first, then every 500 turns, ~5 s): a request with a typo in its path, which
// the stub set refuses; the request journal shows it with the stub it nearly matched and why
// it missed. Again and again, because the journal keeps the newest 1,000 requests (~10 s).
let typo = HTTPRequest(method: .get, scheme: "https", authority: "weather.example", path: "/forcast/monday")

var lastGreeting = ""
var lastWeather = ""
let request = HTTPRequest(method: .get, scheme: "https", authority: "weather.example", path: "/today")
let iterations = Int(ProcessInfo.processInfo.environment["CHAOS_DEMO_ITERATIONS"] ?? "") ?? Int.max
for turn in 0..<iterations {
    if turn % 500 == 0 { _ = try? await client.send(typo, body: nil) }
    let now = Int(Date().timeIntervalSince1970 * 1_000)
    let said = greeting("world")
    if said != lastGreeting {
        say("\(now) greeting: \(said)")
        lastGreeting = said
    }
    let weather: String
    do {
        let (head, body) = try await client.send(request, body: nil)
        weather = head.status.code == 200 ? String(decoding: body, as: UTF8.self) : "HTTP \(head.status.code)"
    } catch {
        weather = "failed: \(error)"
    }
    if weather != lastWeather {
        say("\(now) weather: \(weather)")
        lastWeather = weather
    }
    try await Task.sleep(for: .milliseconds(10))
}
await started.console?.stop()
#else
FileHandle.standardError.write(
    Data("ConsoleDemo needs the package trait Console: swift run --traits Console ConsoleDemo\n".utf8))
exit(64)
#endif
