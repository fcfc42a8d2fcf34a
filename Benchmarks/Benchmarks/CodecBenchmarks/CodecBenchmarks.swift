import Benchmark
import HearthJSON

/// JSON codec throughput on a realistic document of about 1 MiB: users and chat messages with
/// strings (ASCII, escapes, non-ASCII), integers, doubles, booleans, nulls and arrays. Each
/// iteration reports its own MB/s (10^6 bytes per second) as a custom metric.
let benchmarks: @Sendable () -> Void = {
    let document = realisticDocument(minimumBytes: 1 << 20)
    var bytes: [UInt8] = []
    document.serialize(into: &bytes)
    let size = Double(bytes.count)
    let mbPerSecond = BenchmarkMetric.custom("MB/s", polarity: .prefersLarger, useScalingFactor: false)
    let configuration = Benchmark.Configuration(
        metrics: [.wallClock, .throughput, .mallocCountTotal, mbPerSecond], maxDuration: .seconds(3),
        maxIterations: 1000)

    Benchmark("JSON parse \(bytes.count / 1024) KiB", configuration: configuration) { benchmark in
        let start = ContinuousClock.now
        do {
            blackHole(try JSONParser.parse(bytes))
        } catch {
            benchmark.error("\(error)")
        }
        benchmark.measurement(mbPerSecond, Int(size / seconds(since: start) / 1e6))
    }

    Benchmark("JSON serialize \(bytes.count / 1024) KiB", configuration: configuration) { benchmark in
        let start = ContinuousClock.now
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        document.serialize(into: &output)
        blackHole(output)
        benchmark.measurement(mbPerSecond, Int(size / seconds(since: start) / 1e6))
    }
}

func seconds(since start: ContinuousClock.Instant) -> Double {
    let elapsed = ContinuousClock.now - start
    return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
}

/// A chat application's tree, grown until its compact JSON is at least `minimumBytes` long.
func realisticDocument(minimumBytes: Int) -> JSONValue {
    let words = [
        "hearth", "fire", "stream", "été", "naïve", "数据库", "🔥", "query", "index", "tab\there", "quote\"d",
        "line\nbreak",
    ]
    var users: [JSONMember] = []
    var messages: [JSONMember] = []
    var approximateBytes = 0
    var i = 0
    while approximateBytes < minimumBytes {
        let text = (0..<12).map { words[(i * 7 + $0 * 3) % words.count] }.joined(separator: " ")
        let user = JSONValue.object([
            JSONMember("name", .string("User \(i) \(words[i % words.count])")),
            JSONMember("email", .string("user\(i)@example.com")),
            JSONMember("age", .int(Int64(18 + i % 60))),
            JSONMember("score", .double(Double(i) * 1.618 + 0.25)),
            JSONMember("active", .bool(i % 3 != 0)),
            JSONMember("manager", i % 5 == 0 ? .null : .string("u\(i / 5)")),
            JSONMember("tags", .array([.string("t\(i % 7)"), .string("t\(i % 11)"), .int(Int64(i % 13))])),
        ])
        let message = JSONValue.object([
            JSONMember("author", .string("u\(i)")),
            JSONMember("text", .string(text)),
            JSONMember("sentAt", .int(1_795_327_892_945 + Int64(i) * 1000)),
            JSONMember(
                "reactions", .object([JSONMember("👍", .int(Int64(i % 4))), JSONMember("fire", .int(Int64(i % 9)))])),
        ])
        users.append(JSONMember("u\(i)", user))
        messages.append(JSONMember("m\(i)", message))
        var probe: [UInt8] = []
        user.serialize(into: &probe)
        message.serialize(into: &probe)
        approximateBytes += probe.count + 2 * ("u\(i)".utf8.count + 4)
        i += 1
    }
    return .object([JSONMember("users", .object(users)), JSONMember("messages", .object(messages))])
}
