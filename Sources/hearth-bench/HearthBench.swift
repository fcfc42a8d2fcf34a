import ArgumentParser

/// `hearth-bench`: Hearth's measuring instrument. Every scenario is bounded in count and time,
/// prints progress on stderr and ends with one machine-readable JSON line on stdout.
@main
struct HearthBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hearth-bench",
        abstract: "Benchmarks for Hearth.",
        subcommands: [
            WritesScenario.self, PipelinedScenario.self, FanoutScenario.self, ViewsScenario.self,
            QueryIndexScenario.self, WriteWidthScenario.self, RestartScenario.self,
        ])
}
