import ArgumentParser

/// `hearth-bench`: Hearth's measuring instrument. Every scenario is bounded in count and time,
/// prints progress on stderr and ends with one machine-readable JSON line on stdout.
@main
struct HearthBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hearth-bench",
        abstract: "Benchmarks for Hearth.",
        subcommands: [WriteWidthScenario.self])
}
