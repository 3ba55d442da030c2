public import ChaosKit
public import Foundation

// MARK: - Localized strings

/// Where the program gets its user-facing text. Depend on this instead of calling
/// `NSLocalizedString`/`Bundle.localizedString`, and give it a ``ChaosLocalizedStrings`` so
/// that chaos can turn translations into pseudolanguages and worse.
public protocol LocalizedStrings: Sendable {
    /// The text for `key` in `table` (nil: `Localizable`); `value` when there is none
    /// (nil: the key, as Foundation does).
    func string(forKey key: String, value: String?, table: String?) -> String
}

extension LocalizedStrings {
    /// The text for `key` in the default table.
    public func string(forKey key: String) -> String {
        string(forKey: key, value: nil, table: nil)
    }
}

/// Text from a bundle's `.strings` tables, through `Bundle.localizedString(forKey:value:table:)`.
// @unchecked Sendable: the only stored property is an immutable reference to a Bundle, whose
// look-ups Foundation documents as thread-safe; current SDKs mark Bundle Sendable already,
// this keeps older Apple SDKs (where it is not) compiling.
public struct LiveLocalizedStrings: LocalizedStrings, @unchecked Sendable {
    /// The bundle whose tables are read.
    public let bundle: Bundle

    /// Text from `bundle` (by default the main bundle).
    public init(bundle: Bundle = .main) { self.bundle = bundle }

    /// `bundle.localizedString(forKey: key, value: value, table: table)`.
    public func string(forKey key: String, value: String?, table: String?) -> String {
        bundle.localizedString(forKey: key, value: value, table: table)
    }
}

/// One look-up as the `strings.localized` point sees it.
public struct LocalizationRequest: Sendable {
    /// The key asked for.
    public let key: String
    /// The default value given, if any.
    public let value: String?
    /// The table asked for (nil: `Localizable`).
    public let table: String?
    /// Where the real text comes from.
    public let source: any LocalizedStrings

    /// A look-up of `key` in `source`.
    public init(key: String, value: String? = nil, table: String? = nil, source: any LocalizedStrings) {
        self.key = key
        self.value = value
        self.table = table
        self.source = source
    }
}

/// Localized strings that read through the `strings.localized` point: `base`'s text unless
/// chaos says otherwise.
public struct ChaosLocalizedStrings: LocalizedStrings {
    /// Where the real text comes from.
    public let base: any LocalizedStrings

    /// Chaos-aware strings over `base` (by default the main bundle's).
    public init(base: any LocalizedStrings = LiveLocalizedStrings()) { self.base = base }

    /// The text through `strings.localized`.
    public func string(forKey key: String, value: String?, table: String?) -> String {
        ChaosStrings.localized(LocalizationRequest(key: key, value: value, table: table, source: base))
    }
}

// MARK: - Transformations

/// A way to mangle user-facing text (Xcode's pseudolanguages and beyond); each is also a
/// catalogue item of `strings.localized`, named by ``name``.
///
/// All but ``corruptFormatSpecifiers`` and ``dropFormatSpecifiers`` keep every format
/// specifier (`%@`, `%d`, `%1$@`, `%.2f`, `%%`, `%lld` …) as it was, so the text still
/// works with `String(format:)`; ``empty`` and ``keyInsteadOfValue`` drop them, which
/// `String(format:)` tolerates.
public enum StringTransformation: Sendable, Hashable {
    /// `"double-length"`: every run of text between format specifiers twice.
    case doubleLength
    /// `"accented"`: Latin letters with accents (`Héļļö`).
    case accented
    /// `"right-to-left"`: the text wrapped in bidi controls (param `mode`).
    case rightToLeft(BidiMode)
    /// `"bounded"`: `[# text #]`, to spot truncation.
    case bounded
    /// `"very-long"`: padded to `length` characters (param `length`, default 10,000).
    case veryLong(length: Int)
    /// `"empty"`: the empty string.
    case empty
    /// `"key-instead-of-value"`: the key, as when a translation is missing.
    case keyInsteadOfValue
    /// `"combining-marks"`: `count` combining diacritics on every letter (param `count`, default 3).
    case combiningMarks(count: Int)
    /// `"emoji-zwj"`: zero-width-joiner emoji sequences after every word.
    case emojiZWJ
    /// `"mixed-scripts"`: words in Arabic, Hebrew, CJK, Cyrillic, Devanagari, Thai … after every word.
    case mixedScripts
    /// `"corrupt-format-specifiers"`: every specifier's type changed (`%@`→`%d` …), `%%` made a lone `%`.
    /// Formatting the result is undefined behaviour — the point is to find code that trusts translations.
    case corruptFormatSpecifiers
    /// `"drop-format-specifiers"`: every specifier removed (`%%` stays), as a careless translation does.
    case dropFormatSpecifiers

    /// How ``rightToLeft(_:)`` wraps text.
    public enum BidiMode: String, Sendable, CaseIterable {
        /// RLO … PDF: left-to-right letters are shown reversed (the most visible).
        case override
        /// RLE … PDF: an embedded right-to-left run.
        case embed
        /// RLI … PDI: an isolated right-to-left run.
        case isolate
    }

    /// Every transformation with its default parameters.
    public static let allDefaults: [StringTransformation] = [
        .doubleLength, .accented, .rightToLeft(.override), .bounded, .veryLong(length: 10_000), .empty,
        .keyInsteadOfValue, .combiningMarks(count: 3), .emojiZWJ, .mixedScripts, .corruptFormatSpecifiers,
        .dropFormatSpecifiers,
    ]

    /// The catalogue item name.
    public var name: String {
        switch self {
        case .doubleLength: "double-length"
        case .accented: "accented"
        case .rightToLeft: "right-to-left"
        case .bounded: "bounded"
        case .veryLong: "very-long"
        case .empty: "empty"
        case .keyInsteadOfValue: "key-instead-of-value"
        case .combiningMarks: "combining-marks"
        case .emojiZWJ: "emoji-zwj"
        case .mixedScripts: "mixed-scripts"
        case .corruptFormatSpecifiers: "corrupt-format-specifiers"
        case .dropFormatSpecifiers: "drop-format-specifiers"
        }
    }

    /// The parameters the catalogue item takes.
    public var parameters: [CatalogueParameter] {
        switch self {
        case .rightToLeft:
            [
                .choice(
                    "mode", "how the text is wrapped in bidi controls", BidiMode.allCases.map(\.rawValue),
                    default: BidiMode.override.rawValue)
            ]
        case .veryLong:
            [
                .integer(
                    "length", "how long the text becomes", unit: "characters", default: 10_000, range: 0...10_000_000)
            ]
        case .combiningMarks:
            [.integer("count", "how many combining marks on every letter", default: 3, range: 1...64)]
        default:
            []
        }
    }

    /// What the transformation does, in a few words.
    public var summary: String {
        switch self {
        case .doubleLength: "every run of text twice"
        case .accented: "Latin letters with accents"
        case .rightToLeft: "the text wrapped in bidi controls"
        case .bounded: "[# text #], to spot truncation"
        case .veryLong: "the text padded to a length"
        case .empty: "the empty string"
        case .keyInsteadOfValue: "the key, as when a translation is missing"
        case .combiningMarks: "combining diacritics on every letter"
        case .emojiZWJ: "zero-width-joiner emoji after every word"
        case .mixedScripts: "words in many scripts after every word"
        case .corruptFormatSpecifiers: "every format specifier's type changed"
        case .dropFormatSpecifiers: "every format specifier removed"
        }
    }

    /// Whether the transformation keeps every format specifier as it was.
    public var keepsFormatSpecifiers: Bool {
        switch self {
        case .empty, .keyInsteadOfValue, .corruptFormatSpecifiers, .dropFormatSpecifiers: false
        default: true
        }
    }

    /// `value` (the text for `key`) transformed.
    public func apply(to value: String, key: String) -> String {
        switch self {
        case .doubleLength: StringChaos.doubleLength(value)
        case .accented: StringChaos.accented(value)
        case .rightToLeft(let mode): StringChaos.rightToLeft(value, mode: mode)
        case .bounded: StringChaos.bounded(value)
        case .veryLong(let length): StringChaos.veryLong(value, length: length)
        case .empty: ""
        case .keyInsteadOfValue: key
        case .combiningMarks(let count): StringChaos.combiningMarks(value, count: count)
        case .emojiZWJ: StringChaos.emojiZWJ(value)
        case .mixedScripts: StringChaos.mixedScripts(value)
        case .corruptFormatSpecifiers: StringChaos.corruptFormatSpecifiers(value)
        case .dropFormatSpecifiers: StringChaos.dropFormatSpecifiers(value)
        }
    }

    /// The transformation a profile names, with its parameters (checked against
    /// ``parameters`` first, as the catalogue does).
    public init(name: String, parameters: ProfileParameters = ProfileParameters()) throws(ChaosError) {
        guard let named = Self.allDefaults.first(where: { $0.name == name }) else {
            let names = Self.allDefaults.map(\.name)
            throw parameters.invalid(
                "no string transformation named '\(name.prefix(80))'; choose one of: \(names.joined(separator: ", "))")
        }
        let checked = try parameters.checked(against: named.parameters, owner: "'\(name)'")
        switch named {
        case .rightToLeft: self = .rightToLeft(BidiMode(rawValue: try checked.string("mode"))!)
        case .veryLong: self = .veryLong(length: try checked.int("length"))
        case .combiningMarks: self = .combiningMarks(count: try checked.int("count"))
        default: self = named
        }
    }
}

/// The pure text transformations behind ``StringTransformation``, and a format-specifier scanner.
public enum StringChaos {
    /// A piece of a format string.
    public enum FormatToken: Sendable, Hashable {
        /// Plain text.
        case text(String)
        /// A format specifier such as `%@`, `%1$@`, `%.2f`, `%lld` or `%%`.
        case specifier(String)
    }

    /// `format` split into text and format specifiers (printf and Foundation syntax:
    /// `%[n$][flags][width][.precision][length]conversion`, and `%%`). A `%` that starts no
    /// valid specifier is text.
    public static func tokens(_ format: String) -> [FormatToken] {
        let scalars = Array(format.unicodeScalars)
        var tokens: [FormatToken] = []
        var text = String.UnicodeScalarView()
        var i = 0
        func flushText() {
            if !text.isEmpty {
                tokens.append(.text(String(text)))
                text = String.UnicodeScalarView()
            }
        }
        while i < scalars.count {
            if scalars[i] == "%", let end = specifierEnd(scalars, from: i) {
                flushText()
                var spec = String.UnicodeScalarView()
                spec.append(contentsOf: scalars[i..<end])
                tokens.append(.specifier(String(spec)))
                i = end
            } else {
                text.append(scalars[i])
                i += 1
            }
        }
        flushText()
        return tokens
    }

    /// The format specifiers in `format`, in order (`%%` included).
    public static func formatSpecifiers(in format: String) -> [String] {
        tokens(format).compactMap { if case .specifier(let s) = $0 { s } else { nil } }
    }

    /// The index just past the specifier starting at `start` (a `%`), or nil when there is none.
    private static func specifierEnd(_ s: [Unicode.Scalar], from start: Int) -> Int? {
        var i = start + 1
        func at(_ j: Int) -> Unicode.Scalar? { j < s.count ? s[j] : nil }
        func isDigit(_ c: Unicode.Scalar?) -> Bool { c.map { ("0"..."9").contains($0) } ?? false }
        if at(i) == "%" { return i + 1 }
        // Positional argument: digits followed by `$`.
        var j = i
        while isDigit(at(j)) { j += 1 }
        if j > i, at(j) == "$" { i = j + 1 }
        while let c = at(i), "-+ #0'".unicodeScalars.contains(c) { i += 1 }
        if at(i) == "*" {
            i += 1
            var k = i
            while isDigit(at(k)) { k += 1 }
            if k > i, at(k) == "$" { i = k + 1 }
        } else {
            while isDigit(at(i)) { i += 1 }
        }
        if at(i) == "." {
            i += 1
            if at(i) == "*" {
                i += 1
                var k = i
                while isDigit(at(k)) { k += 1 }
                if k > i, at(k) == "$" { i = k + 1 }
            } else {
                while isDigit(at(i)) { i += 1 }
            }
        }
        if at(i) == "h" || at(i) == "l" {
            let first = at(i)
            i += 1
            if at(i) == first { i += 1 }
        } else if let c = at(i), "qLztj".unicodeScalars.contains(c) {
            i += 1
        }
        guard let conversion = at(i), "@dDiuUxXoOfFeEgGaAcCsSpn".unicodeScalars.contains(conversion) else { return nil }
        return i + 1
    }

    /// `format` with `transform` applied to its text and its specifiers left alone.
    public static func mapText(_ format: String, _ transform: (String) -> String) -> String {
        tokens(format).map { token in
            switch token {
            case .text(let text): transform(text)
            case .specifier(let spec): spec
            }
        }.joined()
    }

    /// Every run of text twice (`"Hello %@!"` → `"Hello Hello %@!!"`); whitespace-only runs once.
    public static func doubleLength(_ format: String) -> String {
        mapText(format) { $0.allSatisfy(\.isWhitespace) ? $0 : $0 + $0 }
    }

    private static let plainLetters = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
    private static let accentedLetters = Array("áƀçďéƒĝĥíĵķļɱñöþʠŕšţüṽŵẋýžÅƁÇĎÉƑĜĤÎĴĶĻṀÑÖÞǪŔŠŢÜṼŴẊÝŽ")

    /// Latin letters replaced by accented look-alikes (`"Hello"` → `"Ĥéļļö"`).
    public static func accented(_ format: String) -> String {
        mapText(format) { text in
            String(text.map { c in plainLetters.firstIndex(of: c).map { accentedLetters[$0] } ?? c })
        }
    }

    /// The text wrapped in bidi controls: RLO…PDF, RLE…PDF or RLI…PDI.
    public static func rightToLeft(_ format: String, mode: StringTransformation.BidiMode = .override) -> String {
        switch mode {
        case .override: "\u{202E}" + format + "\u{202C}"
        case .embed: "\u{202B}" + format + "\u{202C}"
        case .isolate: "\u{2067}" + format + "\u{2069}"
        }
    }

    /// `[# text #]`, so that truncated text shows.
    public static func bounded(_ format: String) -> String { "[# " + format + " #]" }

    /// The text padded with filler words to `length` characters (unchanged when already as long).
    public static func veryLong(_ format: String, length: Int = 10_000) -> String {
        let missing = length - format.count
        guard missing > 0 else { return format }
        let filler = Array(" Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor.")
        var padding = ""
        padding.reserveCapacity(missing)
        for i in 0..<missing { padding.append(filler[i % filler.count]) }
        return format + padding
    }

    private static let marks: [Unicode.Scalar] = [
        "\u{0301}", "\u{0308}", "\u{0323}", "\u{0330}", "\u{0311}", "\u{0332}", "\u{0360}", "\u{0489}",
    ]

    /// `count` combining diacritics stacked on every letter (`"Zalgo"`-like text).
    public static func combiningMarks(_ format: String, count: Int = 3) -> String {
        mapText(format) { text in
            var result = String.UnicodeScalarView()
            var n = 0
            for c in text {
                result.append(contentsOf: c.unicodeScalars)
                guard c.isLetter else { continue }
                for _ in 0..<count {
                    result.append(marks[n % marks.count])
                    n += 1
                }
            }
            return String(result)
        }
    }

    private static let zwjSequences = ["👩‍👩‍👧‍👦", "🏳️‍🌈", "🧑🏽‍💻", "👁️‍🗨️", "🐻‍❄️", "❤️‍🔥"]

    /// A zero-width-joiner emoji sequence after every word.
    public static func emojiZWJ(_ format: String) -> String {
        var n = 0
        return afterEachWord(format) {
            defer { n += 1 }
            return zwjSequences[n % zwjSequences.count]
        }
    }

    private static let scriptSamples = ["مرحبا", "שלום", "世界", "Привет", "नमस्ते", "สวัสดี", "안녕", "Γειά", "ሰላም"]

    /// A word in another script (Arabic, Hebrew, CJK, Cyrillic, Devanagari, Thai, Hangul,
    /// Greek, Ethiopic) after every word.
    public static func mixedScripts(_ format: String) -> String {
        var n = 0
        return afterEachWord(format) {
            defer { n += 1 }
            return " " + scriptSamples[n % scriptSamples.count]
        }
    }

    /// Inserts `insertion()` after every word of the text runs; after the whole text when it has no words.
    private static func afterEachWord(_ format: String, _ insertion: () -> String) -> String {
        var inserted = false
        var result = mapText(format) { text in
            var out = ""
            var inWord = false
            for c in text {
                if inWord, !c.isLetter, !c.isNumber {
                    out += insertion()
                    inserted = true
                }
                inWord = c.isLetter || c.isNumber
                out.append(c)
            }
            if inWord {
                out += insertion()
                inserted = true
            }
            return out
        }
        if !inserted { result += insertion() }
        return result
    }

    /// Every specifier's type changed (`%@`↔`%d`, `%.2f`→`%.2d` …) and `%%` made a lone `%`.
    public static func corruptFormatSpecifiers(_ format: String) -> String {
        tokens(format).map { token in
            switch token {
            case .text(let text): return text
            case .specifier("%%"): return "%"
            case .specifier(let spec):
                var scalars = Array(spec.unicodeScalars)
                let conversion = scalars.removeLast()
                let swapped: Unicode.Scalar = "dDiuUxXoOcCp".unicodeScalars.contains(conversion) ? "@" : "d"
                var result = String.UnicodeScalarView(scalars)
                result.append(swapped)
                return String(result)
            }
        }.joined()
    }

    /// Every specifier removed; `%%` (a literal percent) stays.
    public static func dropFormatSpecifiers(_ format: String) -> String {
        tokens(format).map { token in
            switch token {
            case .text(let text): text
            case .specifier(let spec): spec == "%%" ? spec : ""
            }
        }.joined()
    }
}

// MARK: - Point and catalogue

/// The built-in localized-strings point and its catalogue.
///
/// `strings.localized` offers every ``StringTransformation`` by name: `double-length`,
/// `accented`, `right-to-left` (mode = override | embed | isolate), `bounded`,
/// `very-long` (length = 10000), `empty`, `key-instead-of-value`, `combining-marks`
/// (count = 3), `emoji-zwj`, `mixed-scripts`, `corrupt-format-specifiers`, `drop-format-specifiers`.
/// Profiles can narrow an entry to some keys with `"match": {"key": …}`, `{"keyPrefix": …}`
/// or `{"table": …}`.
public enum ChaosStrings {
    /// Providers of `strings.localized`.
    public typealias Provider = ChaosProvider<LocalizationRequest, String, Never>

    /// `strings.localized`: a localized string; the original asks the request's source.
    public static let localized = InjectionPoint<LocalizationRequest, String, Never>(
        "strings.localized",
        catalogue: PointCatalogue(
            StringTransformation.allDefaults.map { transformation in
                CatalogueItem(transformation.name, transformation.summary, parameters: transformation.parameters) {
                    parameters in
                    transformed(try StringTransformation(name: transformation.name, parameters: parameters))
                }
            },
            matcher: ArgumentMatcher(conditions: [
                .string("key", "the key, exactly", optional: true),
                .string("keyPrefix", "the start of the key", optional: true),
                .string("table", "the strings table (Localizable when none is given)", optional: true),
            ]) { conditions in
                let key = conditions.has("key") ? try conditions.string("key") : nil
                let prefix = conditions.has("keyPrefix") ? try conditions.string("keyPrefix") : nil
                let table = conditions.has("table") ? try conditions.string("table") : nil
                return { request in
                    (key.map { request.key == $0 } ?? true)
                        && (prefix.map { request.key.hasPrefix($0) } ?? true)
                        && (table.map { (request.table ?? "Localizable") == $0 } ?? true)
                }
            }
        )
    ) { request in
        request.source.string(forKey: request.key, value: request.value, table: request.table)
    }

    /// The real text, transformed.
    public static func transformed(_ transformation: StringTransformation) -> Provider {
        .block { env in transformation.apply(to: env.callOriginal(), key: env.arguments.key) }
    }
}
