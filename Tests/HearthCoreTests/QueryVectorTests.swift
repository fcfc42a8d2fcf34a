import HearthCore
import HearthJSON
import XCTest

/// The `queries` and `events` vectors of conformance/vectors.json.
final class QueryVectorTests: XCTestCase {
    func testQueryVectors() throws {
        let vectors = Vectors.list("queries")
        XCTAssertEqual(vectors.count, 67)
        for vector in vectors {
            let name = vector["name"]?.stringValue ?? "?"
            let data = try node(vector["data"] ?? .null)
            let location = data.child(at: try path(vector["path"]?.stringValue ?? "/"))
            let spec = try QuerySpec(json: QueryTestSupport.wireQuery(vector["query"]), limits: .default)
            XCTAssertEqual(try QuerySpec(json: spec.json, limits: .default), spec, "canonical form round trip: \(name)")
            let expectKeys = (vector["expectKeys"]?.arrayValue ?? []).compactMap(\.stringValue)
            let index = ChildIndex(order: spec.order, location: location)
            XCTAssertEqual(index.count, location.childCount, name)

            let withIndex = QueryEvaluator.window(spec, of: location, index: index).map(\.key.string)
            let withoutIndex = QueryEvaluator.window(spec, of: location, index: nil).map(\.key.string)
            XCTAssertEqual(withIndex, expectKeys, "with index: \(name)")
            XCTAssertEqual(withoutIndex, expectKeys, "without index: \(name)")

            let expectPrev = (vector["expectInitialPrevKeys"]?.arrayValue ?? []).map(\.stringValue)
            for view in [
                View(spec: spec, location: location, index: index), View(spec: spec, location: location, index: nil),
            ] {
                let initial = view.initialEvents()
                XCTAssertEqual(initial.last?.type, .value, name)
                let added = initial.dropLast()
                XCTAssertTrue(added.allSatisfy { $0.type == .childAdded }, name)
                XCTAssertEqual(added.map { $0.key?.string }, expectKeys, name)
                XCTAssertEqual(added.map { $0.prevKey?.string }, expectPrev, "prevKeys: \(name)")
                XCTAssertEqual(view.window.map(\.key.string), expectKeys, name)
                XCTAssertEqual(QueryTestSupport.renderedKeys(view), expectKeys, "rendered value: \(name)")
            }
        }
    }

    /// How a test run feeds the view.
    enum Feed: CaseIterable {
        /// An index maintained beside the view, precise changedChildren.
        case sharedIndex
        /// No index (the view keeps its own), precise changedChildren.
        case privateIndex
        /// A shared index, and changedChildren always unknown (nil).
        case unknownChanges
    }

    func testEventVectors() throws {
        let vectors = Vectors.list("events")
        XCTAssertEqual(vectors.count, 28)
        for vector in vectors {
            for feed in Feed.allCases {
                try runEventVector(vector, feed: feed)
            }
        }
    }

    func runEventVector(_ vector: JSONValue, feed: Feed) throws {
        let name = "\(vector["name"]?.stringValue ?? "?") [\(feed)]"
        var database = Database(root: try node(vector["initial"] ?? .null))
        let locationPath = try path(vector["path"]?.stringValue ?? "/")
        let spec = try QuerySpec(json: QueryTestSupport.wireQuery(vector["query"]), limits: .default)
        var location = database.root.child(at: locationPath)
        var index = ChildIndex(order: spec.order, location: location)
        var view = View(spec: spec, location: location, index: feed == .privateIndex ? nil : index)

        var steps: [[ViewEvent]] = [view.initialEvents()]
        var valueKeys: [JSONValue] = [.array(view.window.map { .string($0.key.string) })]
        XCTAssertEqual(QueryTestSupport.renderedKeys(view), view.window.map(\.key.string), name)
        for op in vector["writes"]?.arrayValue ?? [] {
            let write = try ConformanceWriteTests.write(from: op)
            _ = database.apply(write, now: 1_700_000_000_000)
            let newLocation = database.root.child(at: locationPath)
            var changed = QueryTestSupport.changedChildren(at: locationPath, paths: write.paths)
            if feed == .unknownChanges { changed = nil }
            index.update(from: location, to: newLocation, changedChildren: changed)
            location = newLocation
            let events = view.apply(
                location: location, changedChildren: changed, index: feed == .privateIndex ? nil : index)
            steps.append(events)
            valueKeys.append(
                events.contains { $0.type == .value } ? .array(view.window.map { .string($0.key.string) }) : .null)
            XCTAssertEqual(
                QueryEvaluator.window(spec, of: location, index: nil).map(\.key), view.window.map(\.key), name)
        }
        XCTAssertEqual(steps.flatMap(QueryTestSupport.triples), vector["expectEvents"]?.arrayValue ?? [], name)
        XCTAssertEqual(
            steps.map { .array(QueryTestSupport.triples($0)) }, vector["expectEventsByStep"]?.arrayValue ?? [], name)
        XCTAssertEqual(valueKeys, vector["expectValueKeysByStep"]?.arrayValue ?? [], name)
    }
}
