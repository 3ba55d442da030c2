import ArgumentParser
import ChaosKit
import Foundation

/// The README's main job: a guided tour of chaos applied and reverted on real points.
struct Demo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "A guided tour: the same calls with and without chaos."
    )

    @Option(help: "Seed for every random choice; the same seed replays the same tour.")
    var seed: UInt64 = 2061

    func run() async throws {
        var tour = Tour(seed: seed)
        try await tour.run()
    }
}

/// Points a small app would declare; the demo treats them as the app's code.
enum DemoApp {
    static let greeting = InjectionPoint<String, String, Never>("demo.greeting") { name in "Hello, \(name)!" }
    static let today = InjectionPoint<Void, Date, Never>("demo.today") { Date() }
    static let fetchScore = AsyncInjectionPoint<String, Int, DemoError>("demo.fetch-score") { player in
        player.count * 100
    }
}

enum DemoError: Error, CustomStringConvertible {
    case offline
    var description: String { "offline" }
}

struct Tour {
    let seed: UInt64
    var step = 0

    init(seed: UInt64) { self.seed = seed }

    mutating func heading(_ text: String) {
        step += 1
        print("\n\(step). \(text)")
    }

    func show(_ label: String, _ value: some Any) {
        print("   \(label.padding(toLength: 34, withPad: " ", startingAt: 0)) \(value)")
    }

    func score(_ player: String) async -> String {
        do { return String(try await DemoApp.fetchScore(player)) } catch { return "error: \(error)" }
    }

    mutating func run() async throws {
        let day = Date.FormatStyle(date: .abbreviated, time: .omitted).locale(Locale(identifier: "en_US_POSIX"))
        print("ChaosKit demo — seed \(seed) (run again with --seed \(seed) to replay exactly)")

        heading("No chaos: every point calls its original.")
        show("greeting(\"Ada\")", DemoApp.greeting("Ada"))
        show("today()", DemoApp.today().formatted(day))
        show("fetchScore(\"Ada\")", await score("Ada"))

        heading("Global chaos: constant, random and throwing providers, applied together.")
        let chaos = Chaos(seed: seed)
        let past = ProfileEntry(DemoApp.today, .constant(Date(timeIntervalSince1970: -86_400 * 365 * 30)))
        let randomGreeting = ProfileEntry(DemoApp.greeting, .random(.string(length: 8...16)))
        let offline = ProfileEntry(DemoApp.fetchScore, .sequential([.throwing(.offline), .throwing(.offline), .original]))
        try chaos.profile(past, randomGreeting, offline).apply()
        show("today()", DemoApp.today().formatted(day))
        show("greeting(\"Ada\")", DemoApp.greeting("Ada"))
        for attempt in 1...3 { show("fetchScore(\"Ada\") attempt \(attempt)", await score("Ada")) }

        heading("A stack: a later entry wins, reverting it brings the earlier back.")
        let shout = ProfileEntry(DemoApp.greeting, .block { env in env.callOriginal().uppercased() + "!!" })
        try chaos.profile(shout).apply()
        show("greeting(\"Ada\") with shout on top", DemoApp.greeting("Ada"))
        try chaos.revert(shout)
        show("after revert(shout)", DemoApp.greeting("Ada"))

        heading("Revert: the originals again, exactly.")
        chaos.revertAll()
        show("greeting(\"Ada\")", DemoApp.greeting("Ada"))
        show("today()", DemoApp.today().formatted(day))
        show("fetchScore(\"Ada\")", await score("Ada"))

        heading("Task-scoped chaos: only the task inside Chaos.with sees it.")
        let rtl = ProfileEntry(DemoApp.greeting, .block { env in "\u{202E}" + env.callOriginal() })
        let inside = try Chaos.with(rtl, seed: seed) { DemoApp.greeting("Ada") }
        show("inside the scope", inside.unicodeScalars.map { $0.value < 128 ? String($0) : "\\u{\(String($0.value, radix: 16))}" }.joined())
        show("outside the scope", DemoApp.greeting("Ada"))

        heading("Mistakes are typed errors, and nothing is half applied.")
        let good = ProfileEntry(DemoApp.today, .constant(.distantFuture))
        let bad = ProfileEntry(DemoApp.greeting, .constant("?").probability(1.5))
        do {
            try Chaos(seed: seed).profile(good, bad).apply()
        } catch {
            show("apply() threw", error)
        }
        show("today() is untouched", DemoApp.today().formatted(day))
        do {
            try Chaos(seed: seed).profile(ProfileEntry(point: "demo.today", .constant("yesterday"))).apply()
        } catch {
            show("wrong value type", error)
        }
        print("\nDone: every point is back to its original.")
    }
}
