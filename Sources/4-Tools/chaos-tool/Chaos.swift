import ArgumentParser

@main
struct ChaosCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "chaos",
        abstract: "Runtime behaviour injection: wrong dates, odd strings, failing calls — on purpose, reversibly.",
        subcommands: [Demo.self, Validate.self, List.self, Schema.self, Run.self, Explore.self, Ctl.self, Export.self],
        defaultSubcommand: Demo.self
    )

    /// `chaos run --wait-tree[=DURATION]`: an option whose value is optional, which the
    /// argument parser has no form for, reaches it as a flag and a hidden option.
    static func main() async {
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
