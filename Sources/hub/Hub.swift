import ArgumentParser

/// The `hub` command line: serve, validate, send, token, emulate.
@main
struct Hub: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hub",
        abstract: "A self-hosted, multi-platform push notification hub.",
        subcommands: []
    )
}
