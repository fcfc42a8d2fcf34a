import HearthClient
import HearthJSON

extension DataSnapshot {
    /// The data as JSON, with priorities when `export`; with `ordered`, an object's members
    /// follow the query's order (a plain snapshot's JSON is in key order).
    func outputJSON(export: Bool, ordered: Bool) -> JSONValue {
        guard ordered, hasChildren() else { return export ? exportJSON : json }
        return .object(children.map { JSONMember($0.key, export ? $0.exportJSON : $0.json) })
    }
}
