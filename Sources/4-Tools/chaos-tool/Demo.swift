import ArgumentParser
import ChaosHooks
import ChaosKit
import ChaosPoints
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

extension Tour {
    /// The built-in points (clock, strings, location), switched on by a JSON profile, the
    /// way a debug build would from CHAOS_PROFILE.
    mutating func builtInPoints(day: Date.FormatStyle) async throws {
        Chaos.registerBuiltInPoints()
        let clock = ChaosWallClock()
        let strings = ChaosLocalizedStrings(base: DemoStrings())
        let location = ChaosLocationProvider(
            base: FixedLocationProvider(Location(latitude: 51.5072, longitude: -0.1276)))
        func describe(_ provider: ChaosLocationProvider) async -> String {
            do {
                let fix = try await provider.currentLocation()
                return String(format: "%.4f, %.4f ±%.0f m", fix.latitude, fix.longitude, fix.horizontalAccuracy)
            } catch {
                return "error: \(error)"
            }
        }

        heading("Built-in points: clock, localized strings and location, from a JSON profile.")
        show("clock.now", clock.now.formatted(day))
        show("strings: greeting", strings.string(forKey: "greeting", value: nil, table: nil))
        show("location.current", await describe(location))
        let profile = try ChaosProfile.decode(
            json: """
                { "seed": \(seed), "entries": [
                  { "point": "clock.now", "provider": { "item": "offset", "parameters": { "by": "-30y" } } },
                  { "point": "strings.localized", "provider": { "item": "right-to-left" }, "match": { "key": "greeting" } },
                  { "point": "location.current", "provider": { "sequential": [ { "item": "city", "parameters": { "name": "tokyo" } }, "denied" ] } }
                ] }
                """, file: "demo-profile.json")
        let chaos = try profile.apply()
        show("clock.now (offset -30y)", clock.now.formatted(day))
        show("strings: farewell (not matched)", strings.string(forKey: "farewell", value: nil, table: nil))
        let rtl = strings.string(forKey: "greeting", value: nil, table: nil)
        show(
            "strings: greeting (right-to-left)",
            rtl.unicodeScalars.map { $0.value < 128 ? String($0) : "\\u{\(String($0.value, radix: 16))}" }.joined())
        show("location.current (city tokyo)", await describe(location))
        show("location.current (then denied)", await describe(location))
        chaos.revertAll()
        show("after revert: clock.now", clock.now.formatted(day))
        show("after revert: location.current", await describe(location))
    }
}

extension Tour {
    /// C hooks: code that was never written to be injected — Foundation itself — sees chaos.
    mutating func systemPoints(day: Date.FormatStyle) throws {
        #if os(Linux)
        SystemPoints.register()
        heading("System points (C hooks): Foundation's own Date() and getenv, no app change.")
        show("Date()", Date().formatted(day))
        show(
            "getenv(\"HOME\")",
            ProcessInfo.processInfo.environment["HOME"].map { _ in String(cString: getenv("HOME")) } ?? "-")
        let chaos = Chaos(seed: seed)
        try chaos.profile(
            SystemPoints.clock.entry(.constant(.offset(seconds: try ClockOffset.parse("-30y").seconds(from: Date())))),
            ProfileEntry(
                point: "system.getenv",
                .catalogue("set", ProfileParameters(["name": .string("HOME"), "value": .string("/nowhere")])))
        ).apply()
        show("Date() under system.clock offset -30y", Date().formatted(day))
        show("getenv(\"HOME\") under system.getenv", String(cString: getenv("HOME")))
        chaos.revertAll()
        show("after revert: Date()", Date().formatted(day))
        show("after revert: getenv(\"HOME\")", String(cString: getenv("HOME")))
        #endif
    }
}

/// The demo app's translations.
struct DemoStrings: LocalizedStrings {
    func string(forKey key: String, value: String?, table: String?) -> String {
        ["greeting": "Welcome back, %@!", "farewell": "See you in %d days"][key] ?? value ?? key
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
        let offline = ProfileEntry(
            DemoApp.fetchScore, .sequential([.throwing(.offline), .throwing(.offline), .original]))
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
        show(
            "inside the scope",
            inside.unicodeScalars.map { $0.value < 128 ? String($0) : "\\u{\(String($0.value, radix: 16))}" }.joined())
        show("outside the scope", DemoApp.greeting("Ada"))

        heading("Mistakes are typed errors, and nothing is half applied.")
        let good = ProfileEntry(DemoApp.today, .constant(.distantFuture))
        // A value that reads as one in the error (a "?" there looked like a value not shown).
        let bad = ProfileEntry(DemoApp.greeting, .constant("never greeted").probability(1.5))
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
        try await builtInPoints(day: day)
        try systemPoints(day: day)
        print("\nDone: every point is back to its original.")
    }
}
