import ArgumentParser

/// The `hub` command line.
@main
struct HubCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hub",
        abstract: "A self-hosted, multi-platform push notification hub.",
        subcommands: [Serve.self, Validate.self, Token.self, Send.self, Emulate.self],
        defaultSubcommand: Serve.self
    )
}

/// Options shared by commands that read `hub.yaml`.
struct ConfigOptions: ParsableArguments {
    @Option(name: [.customShort("c"), .long], help: "The configuration file.")
    var config: String = "hub.yaml"
}
