import Foundation

/// A line for the terminal in which every interpolated value is shown with its control
/// characters escaped: what `chaos ctl` prints comes from other programs (names, labels,
/// messages), and a program must not be able to move the cursor, recolour or retitle the
/// user's terminal, or fake a line of output, by naming itself.
///
/// Literal text is kept as written, so `"\(pid)  \(program)\n"` keeps its own newline
/// while a newline inside `program` is shown as `\u{0A}`.
struct TerminalText: ExpressibleByStringInterpolation, CustomStringConvertible {
    struct StringInterpolation: StringInterpolationProtocol {
        var text = ""

        init(literalCapacity: Int, interpolationCount: Int) {
            text.reserveCapacity(literalCapacity + 16 * interpolationCount)
        }

        mutating func appendLiteral(_ literal: String) { text += literal }

        mutating func appendInterpolation(_ value: some Any) { text += TerminalText.escaped("\(value)") }

        /// Text made safe already (``TerminalText/json(_:)``'s), kept as it is.
        mutating func appendInterpolation(safe text: String) { self.text += text }
    }

    let description: String

    init(stringLiteral value: String) { description = value }

    init(stringInterpolation: StringInterpolation) { description = stringInterpolation.text }

    /// Text of any origin, escaped line by line: its line breaks stay line breaks (an error
    /// message may have several lines), everything else that steers a terminal is shown.
    init(lines: String) {
        description = lines.split(separator: "\n", omittingEmptySubsequences: false).map { Self.escaped(String($0)) }
            .joined(separator: "\n")
    }

    /// Whether the terminal would act on `scalar` instead of showing it: C0 (tab and line
    /// breaks included), DEL and C1 controls (ESC starts every escape sequence, and U+009B
    /// is a one-character CSI), and the bidirectional overrides and isolates, which reorder
    /// what is shown around them.
    static func steers(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F, 0x200E, 0x200F, 0x2028, 0x2029, 0x202A...0x202E, 0x2066...0x2069: true
        default: false
        }
    }

    /// `text` with each character the terminal would act on written as `\u{1B}`.
    static func escaped(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: steers) else { return text }
        var out = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            if steers(scalar) {
                out.append(contentsOf: "\\u{\(String(scalar.value, radix: 16, uppercase: true))}".unicodeScalars)
            } else {
                out.append(scalar)
            }
        }
        return String(out)
    }

    /// JSON text for the terminal: JSON escapes C0 controls already; DEL, C1 and the
    /// bidirectional controls may stand raw inside its strings, and are escaped here as
    /// `\u00XX` (the same string to a JSON reader). Outside strings JSON has none of them.
    static func json(_ data: Data) -> String {
        let text = String(decoding: data, as: UTF8.self)
        guard text.unicodeScalars.contains(where: { $0.value >= 0x7F && steers($0) }) else { return text }
        var out = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            // C0 controls are JSON's own escapes or its whitespace between values.
            if scalar.value >= 0x7F, steers(scalar) {
                let hex = String(scalar.value, radix: 16)
                out.append(contentsOf: ("\\u" + String(repeating: "0", count: 4 - hex.count) + hex).unicodeScalars)
            } else {
                out.append(scalar)
            }
        }
        return String(out)
    }
}

/// Prints a line of `chaos ctl` output.
func say(_ line: TerminalText) {
    print(line.description)
}

/// Writes a line to standard error at once (followers such as tests see it as it comes).
func warn(_ line: TerminalText) {
    FileHandle.standardError.write(Data((line.description + "\n").utf8))
}
