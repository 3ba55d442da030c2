import Foundation
import Testing

/// The argument parser wraps help text to the terminal's width. A line break written into
/// an overview or discussion is kept, and then the parser wraps the lines again, which left
/// ragged paragraphs ("(Chaos.bootstrap," alone, the next line starting a word that would
/// have fit on it). Paragraphs are written as one line each; this holds them to it. (The
/// parser fills lines to 79 columns when the output is not a terminal.)
@Suite struct HelpTextTests {
    static let commands: [[String]] = [
        ["run"], ["validate"], ["list"], ["schema"], ["demo"], ["ctl"], ["ctl", "list"], ["ctl", "status"],
        ["ctl", "console"], ["ctl", "apply"], ["ctl", "export"], ["ctl", "revert"], ["ctl", "enable"],
        ["ctl", "disable"], ["ctl", "select"], ["ctl", "events"], ["ctl", "requests"], ["ctl", "journal"],
        ["ctl", "go"], ["ctl", "advance"],
    ]

    @Test(arguments: commands)
    func helpParagraphsAreWrappedOnlyByTheParser(command: [String]) throws {
        let help = try ChaosToolTests.chaos(command + ["--help"])
        #expect(help.status == 0, "\(help)")
        // The overview and discussion: everything before USAGE.
        let lines = help.output.components(separatedBy: "\nUSAGE:")[0].split(
            separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.count > 1, "\(command) printed no overview")
        for (line, next) in zip(lines, lines.dropFirst()) where !line.isEmpty && !next.isEmpty {
            let word = next.split(separator: " ").first ?? ""
            #expect(
                line.count + 1 + word.count > 79,
                "chaos \(command.joined(separator: " ")) --help: \"\(word)\" would have fit after \"\(line)\"")
        }
    }
}
