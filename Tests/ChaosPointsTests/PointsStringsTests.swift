import Foundation
import TestHelpers
import Testing

@testable import ChaosKit
@testable import ChaosPoints

/// `strings.localized`, its catalogue, and the pure transformations behind it.
@Suite struct PointsStringsTests {
    static let table = [
        "inbox.summary": "Hello %@, you have %d new messages",
        "cart.total": "Total: %.2f (%lld items, 100%% safe)",
        "share.title": "%2$@ shared “%1$@” with you",
        "settings.title": "Settings",
    ]
    let strings: any LocalizedStrings = ChaosLocalizedStrings(base: StubStrings(table: Self.table))

    init() { Chaos.registerBuiltInPoints() }

    /// Each format with arguments that fit it and the renderings of those arguments.
    static var formats: [(format: String, arguments: [any CVarArg], renderings: [String])] {
        [
            ("Hello %@, you have %d new messages", ["Ana", 3], ["Ana", "3"]),
            ("Total: %.2f (%lld items, 100%% safe)", [3.14159, Int64(12)], ["3.14", "12"]),
            ("%2$@ shared “%1$@” with you", ["photo.jpg", "Bea"], ["Bea", "photo.jpg"]),
            ("%-6d|%05.1f|%x|%ld", [42, 2.5, 255, 7], ["42", "002.5", "ff", "7"]),
            ("Settings", [], []),
        ]
    }

    // MARK: Format specifiers

    @Test func formatSpecifierScanner() {
        #expect(
            StringChaos.formatSpecifiers(in: "%1$@ %2$d %.2f %% %lld %-5s %5.1f %x %ld %@ %hhu %*d %.*f %zu %'d")
                == [
                    "%1$@", "%2$d", "%.2f", "%%", "%lld", "%-5s", "%5.1f", "%x", "%ld", "%@", "%hhu", "%*d", "%.*f",
                    "%zu", "%'d",
                ])
        // "% o" is a real specifier (space flag, octal).
        #expect(StringChaos.formatSpecifiers(in: "50% off at 50%").isEmpty == false)
        #expect(StringChaos.formatSpecifiers(in: "100%").isEmpty)
        #expect(StringChaos.formatSpecifiers(in: "%z").isEmpty)
        #expect(StringChaos.formatSpecifiers(in: "Plain text").isEmpty)
        #expect(StringChaos.tokens("a%@b") == [.text("a"), .specifier("%@"), .text("b")])
    }

    @Test(arguments: StringTransformation.allDefaults)
    func transformationsKeepFormatSpecifiersUsable(_ transformation: StringTransformation) {
        for (format, arguments, renderings) in Self.formats {
            let transformed = transformation.apply(to: format, key: "some.key")
            let before = StringChaos.formatSpecifiers(in: format)
            let after = StringChaos.formatSpecifiers(in: transformed)
            if transformation.keepsFormatSpecifiers {
                #expect(after == before, "\(transformation.name) changed the specifiers of '\(format)': \(after)")
                let formatted = String(format: transformed, arguments: arguments)
                for rendering in renderings {
                    #expect(
                        formatted.contains(rendering), "\(transformation.name): '\(formatted)' lacks '\(rendering)'")
                }
                #expect(!formatted.contains("%@") && !formatted.contains("%d"))
            } else if transformation == .empty || transformation == .keyInsteadOfValue {
                #expect(after.isEmpty)
                _ = String(format: transformed, arguments: arguments)  // safe: no specifiers left
            } else if transformation == .dropFormatSpecifiers {
                #expect(after == before.filter { $0 == "%%" })
            } else {
                #expect(transformation == .corruptFormatSpecifiers)
                if !before.isEmpty { #expect(after != before, "'\(format)' was not corrupted: \(transformed)") }
            }
        }
    }

    // MARK: Pure transformations

    @Test func pureTransformations() {
        #expect(StringChaos.doubleLength("Hello %@!") == "Hello Hello %@!!")
        #expect(StringChaos.doubleLength("Settings").count == 16)
        #expect(StringChaos.accented("Hello, World") == "Ĥéļļö, Ŵöŕļď")
        let alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
        let accented = StringChaos.accented(alphabet)
        #expect(accented.count == 52)
        #expect(accented.unicodeScalars.allSatisfy { !$0.isASCII })
        #expect(StringChaos.accented("%1$@ %d") == "%1$@ %d")

        #expect(StringChaos.rightToLeft("Hi %@") == "\u{202E}Hi %@\u{202C}")
        #expect(StringChaos.rightToLeft("Hi", mode: .embed) == "\u{202B}Hi\u{202C}")
        #expect(StringChaos.rightToLeft("Hi", mode: .isolate) == "\u{2067}Hi\u{2069}")
        #expect(StringChaos.bounded("Settings") == "[# Settings #]")

        let long = StringChaos.veryLong("Hello %@")
        #expect(long.count == 10_000)
        #expect(long.hasPrefix("Hello %@"))
        #expect(StringChaos.veryLong("abc", length: 2) == "abc")

        let marked = StringChaos.combiningMarks("ab %@", count: 3)
        #expect(marked.unicodeScalars.count == "ab %@".unicodeScalars.count + 6)
        #expect(marked.count == 5)  // marks join their letters: still five characters
        #expect(marked.hasSuffix(" %@"))

        let emoji = StringChaos.emojiZWJ("Hello world")
        #expect(emoji.unicodeScalars.filter { $0 == "\u{200D}" }.count >= 2)
        #expect(emoji.hasPrefix("Hello"))
        #expect(StringChaos.emojiZWJ("%@").unicodeScalars.contains("\u{200D}"))

        let mixed = StringChaos.mixedScripts("Hello world %@")
        #expect(mixed.contains("مرحبا") && mixed.contains("שלום"))
        #expect(mixed.hasSuffix("%@"))

        #expect(StringChaos.corruptFormatSpecifiers("%@ and %d, %1$@, 100%%") == "%d and %@, %1$d, 100%")
        #expect(StringChaos.dropFormatSpecifiers("Hello %@, %d new (100%%)") == "Hello ,  new (100%%)")
        #expect(StringTransformation.keyInsteadOfValue.apply(to: "Settings", key: "settings.title") == "settings.title")
        #expect(StringTransformation.empty.apply(to: "Settings", key: "settings.title") == "")
    }

    // MARK: The point

    @Test func withoutChaosTheRealTextComesThrough() {
        #expect(strings.string(forKey: "inbox.summary") == Self.table["inbox.summary"])
        #expect(strings.string(forKey: "missing", value: "Fallback", table: nil) == "Fallback")
        let live = LiveLocalizedStrings(bundle: .module)
        #expect(live.string(forKey: "no.such.key", value: "Default", table: nil) == "Default")
        #expect(
            ChaosLocalizedStrings(base: live).string(forKey: "no.such.key", value: "Default", table: "Other")
                == "Default")
    }

    @Test(arguments: StringTransformation.allDefaults)
    func everyItemThroughTheTypedFactoryAndTheCatalogue(_ transformation: StringTransformation) throws {
        let typed = ProfileEntry(ChaosStrings.localized, ChaosStrings.transformed(transformation))
        let named = ProfileEntry(point: "strings.localized", .catalogue(transformation.name, settings()))
        for entry in [typed, named] {
            try Chaos.with(entry) {
                for (key, value) in Self.table {
                    #expect(strings.string(forKey: key) == transformation.apply(to: value, key: key))
                }
            }
        }
    }

    @Test func catalogueParameters() throws {
        let cases: [(String, [String: ProfileValue], StringTransformation)] = [
            ("very-long", ["length": .number(50)], .veryLong(length: 50)),
            ("very-long", ["length": .number(60)], .veryLong(length: 60)),
            ("right-to-left", ["mode": .string("isolate")], .rightToLeft(.isolate)),
            ("right-to-left", [:], .rightToLeft(.override)),
            ("combining-marks", ["count": .number(1)], .combiningMarks(count: 1)),
        ]
        for (name, values, expected) in cases {
            #expect(try StringTransformation(name: name, parameters: settings(values)) == expected)
            try Chaos.with(ProfileEntry(point: "strings.localized", .catalogue(name, settings(values)))) {
                #expect(
                    strings.string(forKey: "settings.title") == expected.apply(to: "Settings", key: "settings.title"))
            }
        }
        let badMode = scopeError(
            ProfileEntry(
                point: "strings.localized", .catalogue("right-to-left", settings(["mode": .string("sideways")]))))
        #expect(badMode?.kind == .invalidProvider)
        #expect(badMode?.message.contains("override, embed, isolate") == true)
        #expect(
            scopeError(
                ProfileEntry(point: "strings.localized", .catalogue("very-long", settings(["length": .number(-1)]))))
                != nil)
        #expect(
            scopeError(
                ProfileEntry(point: "strings.localized", .catalogue("combining-marks", settings(["count": .number(0)])))
            ) != nil)
        let unknown = scopeError(ProfileEntry(point: "strings.localized", .catalogue("klingon", settings())))
        #expect(unknown?.message.contains("double-length") == true)
    }

    @Test func chaosForSomeKeysOnly() throws {
        let typed = ProfileEntry(
            ChaosStrings.localized,
            .composite([
                .when({ $0.key == "settings.title" }, ChaosStrings.transformed(.bounded))
            ]))
        let named = ProfileEntry(
            point: "strings.localized",
            .matching(settings(["keyPrefix": .string("settings.")]), .catalogue("bounded", settings())))
        for entry in [typed, named] {
            try Chaos.with(entry) {
                #expect(strings.string(forKey: "settings.title") == "[# Settings #]")
                #expect(strings.string(forKey: "inbox.summary") == Self.table["inbox.summary"])
            }
        }
        #expect(
            scopeError(
                ProfileEntry(
                    point: "strings.localized",
                    .matching(settings(["locale": .string("fr")]), .catalogue("empty", settings())))) != nil)
    }
}
