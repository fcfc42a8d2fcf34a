import Foundation
import XCTest

/// hearthd under jemalloc, the allocator the Docker image preloads (README "Allocator"): it
/// serves as under glibc's malloc, and once writes pause it gives the memory they freed back to
/// the system (jemalloc alone would keep it until later allocations let it decay).
final class AllocatorTests: XCTestCase {
    func testUnderJemallocFreedMemoryGoesBackOnceWritesPause() throws {
        let library = try XCTUnwrap(
            Self.jemalloc, "libjemalloc.so.2 is not installed (Debian: libjemalloc2, which .ci/run installs)")
        let binary = try HearthdProcess.binaryURL()
        let dataDir = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-alloc-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dataDir) }
        let server = try HearthdProcess.start(
            binary: binary, dataDir: dataDir.path, extra: ["--http-port", "off"],
            environment: ["LD_PRELOAD": library])
        defer { server.kill9() }
        // procfs files read in page-sized pieces: read to the end, not by the size they report (0).
        let maps = try XCTUnwrap(FileHandle(forReadingAtPath: "/proc/\(server.pid)/maps")).readDataToEndOfFile()
        XCTAssertTrue(String(decoding: maps, as: UTF8.self).contains("libjemalloc"), "the preload did not take")

        let client = try TestClient(port: server.port)
        let base = try XCTUnwrap(Self.residentMiB(server.pid))
        // 150 writes of 2,000 leaves each, every one replacing the last: each leaves garbage
        // (its request, the values it replaced once the change log lets them go).
        let filler = String(repeating: "x", count: 100)
        for round in 0..<150 {
            let values = (0..<2000).map { #""\#($0)":"\#(filler)\#(round)""# }.joined(separator: ",")
            let answer = try client.request(#"{"op":"update","path":"/burst","values":{\#(values)}}"#)
            XCTAssertEqual(answer["ok"], .bool(true))
        }
        let peak = try XCTUnwrap(Self.residentMiB(server.pid))
        XCTAssertGreaterThan(peak - base, 4, "the burst should have grown the heap")
        // The trimmer looks every half second and acts once a tick saw no write.
        var settled = peak
        let deadline = Date().addingTimeInterval(3)
        while Date() < deadline, settled > peak - 2 {
            Thread.sleep(forTimeInterval: 0.25)
            settled = try XCTUnwrap(Self.residentMiB(server.pid))
        }
        XCTAssertLessThanOrEqual(
            settled, peak - 2, "resident \(base) → \(peak) MiB after the burst, still \(settled) MiB 3 s after it")
        // Still the same server: the data is there.
        let leaf = try client.request(#"{"op":"get","path":"/burst/1999"}"#)
        XCTAssertEqual(leaf["value"], .string(filler + "149"))
        client.close()
    }

    /// The installed jemalloc, where Debian and Ubuntu put it.
    static var jemalloc: String? {
        let directories = [
            "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/local/lib",
        ]
        return directories.map { $0 + "/libjemalloc.so.2" }.first { FileManager.default.fileExists(atPath: $0) }
    }

    static func residentMiB(_ pid: Int32) -> Double? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
            let kib = line.split(separator: " ").dropFirst().first.flatMap({ Double($0) })
        else { return nil }
        return kib / 1024
    }
}
