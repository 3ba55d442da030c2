import ChaosKit
public import ChaosPoints
import Foundation

/// A one-line banner for a terminal: a localized, formatted greeting fitted to a width.
/// The robustness tests throw long, empty, right-to-left and broken strings at it.
public struct WelcomeBanner: Sendable {
    let strings: any LocalizedStrings
    /// The widest the banner may be, in characters.
    public let width: Int

    /// A banner reading `strings` (the chaos-aware ones by default).
    public init(strings: any LocalizedStrings = ChaosLocalizedStrings(base: ExampleStrings()), width: Int = 40) {
        self.strings = strings
        self.width = width
    }

    /// The greeting for `name`, never wider than `width`, never empty, never a raw format.
    public func line(for name: String) -> String {
        let format = strings.string(forKey: "welcome", value: "Welcome, %@!", table: nil)
        // A translation that lost or mangled its %@ must not crash String(format:) or show
        // the placeholder: fall back to the English format.
        let usable = StringChaos.formatSpecifiers(in: format) == ["%@"] ? format : "Welcome, %@!"
        var text = String(format: usable, name).trimmingCharacters(in: .whitespacesAndNewlines)
        if text.isEmpty { text = "Welcome, \(name)!" }
        if text.count > width { text = String(text.prefix(width - 1)) + "…" }
        return text
    }
}

/// The example apps' English strings.
public struct ExampleStrings: LocalizedStrings {
    /// The English strings.
    public init() {}

    /// The English text for `key`.
    public func string(forKey key: String, value: String?, table: String?) -> String {
        ["welcome": "Welcome, %@!"][key] ?? value ?? key
    }
}
