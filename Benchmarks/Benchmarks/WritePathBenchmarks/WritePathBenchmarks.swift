import Benchmark
import HearthCore
import HearthProtocol
import HearthStorage

/// The stages of one unpipelined `set` in process, as `scripts/callgrind.sh` counts them in the
/// server: decoding the request line, applying it in place (as the engine does when no view,
/// index or rule needs the old tree; applying it with views is `EngineBenchmarks`), encoding its
/// log record, and encoding its answer. Each iteration handles one write like the load
/// generator's.
let benchmarks: @Sendable () -> Void = {
    let configuration = Benchmark.Configuration(
        metrics: [.wallClock, .throughput, .mallocCountTotal], scalingFactor: .kilo,
        maxDuration: .seconds(3))
    let line = Array(#"{"id":7,"op":"set","path":"/bench/lean/c12","value":"xxx"}"#.utf8)
    let decoder = RequestDecoder(limits: .default)

    Benchmark("decode a set request", configuration: configuration) { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(line.withUnsafeBytes { decoder.decode($0) })
        }
    }

    Benchmark("apply a set in place, with its undo point", configuration: configuration) { benchmark in
        var database = Database()
        let path = Path([Key("bench"), Key("lean"), Key("c12")])
        let value = PreparedValue(node: .leaf(.string("xxx")))
        _ = database.applyInPlace(settingNonEmpty: value, at: path, now: 0)
        for _ in benchmark.scaledIterations {
            blackHole(database.applyInPlace(settingNonEmpty: value, at: path, now: 0))
        }
    }

    Benchmark("encode a set's log record", configuration: configuration) { benchmark in
        let path = Path([Key("bench"), Key("lean"), Key("c12")])
        for i in benchmark.scaledIterations {
            let write = CommittedWrite(rev: UInt64(i + 1), overwrites: [(path, .leaf(.string("xxx")))])
            blackHole(EncodedRecord(.write(write)))
        }
    }

    Benchmark("encode a set's answer", configuration: configuration) { benchmark in
        var bytes: [UInt8] = []
        for i in benchmark.scaledIterations {
            bytes.removeAll(keepingCapacity: true)
            ResponseEncoder.encode(id: .int(7), .committed(rev: UInt64(i + 1)), into: &bytes)
            blackHole(bytes)
        }
    }
}
