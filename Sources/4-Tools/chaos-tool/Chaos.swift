import ArgumentParser
import Foundation

@main
struct ChaosCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: ToolName.typed,
        abstract: "Runtime behaviour injection: wrong dates, odd strings, failing calls — on purpose, reversibly.",
        subcommands: [Demo.self, Validate.self, List.self, Schema.self, Run.self, Explore.self, Ctl.self, Export.self],
        defaultSubcommand: Demo.self
    )

    /// `chaos run --wait-tree[=DURATION]`: an option whose value is optional, which the
    /// argument parser has no form for, reaches it as a flag and a hidden option.
    static func main() async {
        ToolName.settle()
        var arguments = Array(CommandLine.arguments.dropFirst())
        if arguments.first == "run" {
            let end = arguments.firstIndex(of: "--") ?? arguments.endIndex
            for index in arguments[..<end].indices.reversed() where arguments[index].hasPrefix("--wait-tree=") {
                let bound = String(arguments[index].dropFirst("--wait-tree=".count))
                arguments.replaceSubrange(index...index, with: ["--wait-tree", "--wait-tree-bound", bound])
            }
        }
        await main(arguments)
    }
}

/// The name the tool was started by: `chaoskit` when installed (the launcher says so in
/// CHAOS_TOOL_NAME), else `chaos`. Help and the commands the tool suggests (a replay) use it.
enum ToolName {
    /// Read once, before the variable is taken out of the environment programs inherit.
    nonisolated(unsafe) private static var name: String?  // written once by settle(), at start, before any thread

    static var typed: String { name ?? "chaos" }

    /// Takes CHAOS_TOOL_NAME, and removes it so that a program run under chaos does not see it.
    static func settle() {
        if let given = ProcessInfo.processInfo.environment["CHAOS_TOOL_NAME"], given == "chaoskit" {
            name = given
        }
        unsetenv("CHAOS_TOOL_NAME")
    }
}
