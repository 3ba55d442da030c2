import ArgumentParser

@main
struct ChaosCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "chaos",
        abstract: "Runtime behaviour injection: wrong dates, odd strings, failing calls — on purpose, reversibly.",
        subcommands: [Demo.self, Validate.self, List.self, Schema.self, Run.self, Ctl.self],
        defaultSubcommand: Demo.self
    )
}
