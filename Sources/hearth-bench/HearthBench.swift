import ArgumentParser

/// `hearth-bench`: Hearth's measuring instrument. The network scenarios drive Hearth or Redis
/// (`--target`) with the same load generator. Every scenario is bounded in count and time, prints
/// progress on stderr and ends with one machine-readable JSON line on stdout.
@main
struct HearthBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hearth-bench",
        abstract: "Benchmarks for Hearth, side by side with Redis.",
        subcommands: [
            WritesScenario.self, PipelinedScenario.self, FanoutScenario.self, LatencyScenario.self,
            IdleScenario.self, MemoryScenario.self, ViewsScenario.self, QueryIndexScenario.self,
            WriteWidthScenario.self, RestartScenario.self, HandshakesScenario.self, SubscribesScenario.self,
            RulesScenario.self, ResumeScenario.self, LeanScenario.self, NIOFloorScenario.self, DatabasesScenario.self,
            IdleDatabasesScenario.self, ListenersFanoutScenario.self, ListenersIdleScenario.self, TriggersScenario.self,
        ])
}
