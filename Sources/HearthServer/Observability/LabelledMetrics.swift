/// The Prometheus text of several databases as one exposition: each metric family once, with the
/// default database's samples as they are (unlabelled by database, as a daemon with one database
/// has always shown them) and every other open database's samples after them, labelled
/// `db="<name>"`.
enum LabelledMetrics {
    /// One family: its `# HELP` and `# TYPE` lines and its sample lines.
    struct Family {
        var header: [Substring] = []
        var samples: [Substring] = []
    }

    static func merge(default base: [UInt8], others: [(name: String, text: [UInt8])]) -> [UInt8] {
        guard !others.isEmpty else { return base }
        var (order, families) = parse(String(decoding: base, as: UTF8.self))
        for (name, bytes) in others {
            let (otherOrder, otherFamilies) = parse(String(decoding: bytes, as: UTF8.self))
            for key in otherOrder {
                guard let family = otherFamilies[key] else { continue }
                if families[key] == nil {
                    order.append(key)
                    families[key] = Family(header: family.header)
                }
                families[key]?.samples += family.samples.map { Substring(labelled($0, db: name)) }
            }
        }
        var text = ""
        for key in order {
            guard let family = families[key] else { continue }
            for line in family.header + family.samples {
                text += line
                text += "\n"
            }
        }
        return Array(text.utf8)
    }

    /// The families of `text` in the order they appear, by metric name.
    static func parse(_ text: String) -> (order: [String], families: [String: Family]) {
        var order: [String] = []
        var families: [String: Family] = [:]
        var current = ""
        for line in text.split(separator: "\n") {
            if line.hasPrefix("# ") {
                let parts = line.split(separator: " ", maxSplits: 3)
                guard parts.count >= 3 else { continue }
                let name = String(parts[2])
                if families[name] == nil {
                    order.append(name)
                    families[name] = Family()
                }
                families[name]?.header.append(line)
                current = name
            } else if !current.isEmpty {
                families[current]?.samples.append(line)
            }
        }
        return (order, families)
    }

    /// A sample line with `db="<name>"` as its first label.
    static func labelled(_ line: Substring, db: String) -> String {
        let label = "db=\"\(db)\""
        if let brace = line.firstIndex(of: "{") {
            let rest = line[line.index(after: brace)...]
            return String(line[..<brace]) + "{" + label + (rest.hasPrefix("}") ? "" : ",") + rest
        }
        guard let space = line.firstIndex(of: " ") else { return String(line) }
        return String(line[..<space]) + "{" + label + "}" + line[space...]
    }
}
