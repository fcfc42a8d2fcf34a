import HearthJSON
import Histogram

/// Prints the scenario's one machine-readable JSON line.
func report(scenario: String, target: Target? = nil, _ fields: [(String, JSONValue)]) {
    var members = [JSONMember("scenario", .string(scenario))]
    if let target { members.append(JSONMember("target", .string(target.rawValue))) }
    members += fields.map { JSONMember($0.0, $0.1) }
    print(JSONValue.object(members).jsonString)
}

func report(scenario: String, target: Target? = nil, _ fields: KeyValuePairs<String, JSONValue>) {
    report(scenario: scenario, target: target, fields.map { ($0.key, $0.value) })
}

/// p50/p90/p99/p99.9/max of a histogram of nanoseconds, in milliseconds.
func latencyFields(_ histogram: Histogram<UInt64>) -> [(String, JSONValue)] {
    guard histogram.totalCount > 0 else { return [] }
    func ms(_ nanoseconds: UInt64) -> JSONValue { .double((Double(nanoseconds) / 1e3).rounded() / 1e3) }
    return [
        ("p50Ms", ms(histogram.valueAtPercentile(50))), ("p90Ms", ms(histogram.valueAtPercentile(90))),
        ("p99Ms", ms(histogram.valueAtPercentile(99))), ("p999Ms", ms(histogram.valueAtPercentile(99.9))),
        ("maxMs", ms(histogram.max)),
    ]
}

/// A histogram for latencies from 1 ns to 60 s with three significant digits.
func latencyHistogram() -> Histogram<UInt64> {
    Histogram(highestTrackableValue: 60_000_000_000, numberOfSignificantValueDigits: .three)
}
