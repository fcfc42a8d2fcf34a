import Foundation

/// A throwaway CA and certificates, made with the `openssl` command at test time (as the
/// server's TLS tests do; test targets cannot share code).
struct TestPKI {
    let directory: String

    init() throws {
        directory =
            FileManager.default.temporaryDirectory.appendingPathComponent("hearth-pki-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    func remove() { try? FileManager.default.removeItem(atPath: directory) }

    /// Makes `<name>.key` and a self-signed `<name>.crt` CA.
    func makeCA(_ name: String) throws {
        try Self.openssl([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", path("\(name).key"), "-out",
            path("\(name).crt"), "-days", "2", "-subj", "/CN=\(name)",
        ])
    }

    /// Makes `<name>.key` and `<name>.crt` signed by `ca`, valid for localhost and 127.0.0.1.
    func makeCertificate(_ name: String, signedBy ca: String) throws {
        try Self.openssl([
            "req", "-newkey", "rsa:2048", "-nodes", "-keyout", path("\(name).key"), "-out", path("\(name).csr"),
            "-subj", "/CN=localhost",
        ])
        let extensions = path("\(name).ext")
        try "subjectAltName=DNS:localhost,IP:127.0.0.1\n".write(toFile: extensions, atomically: true, encoding: .utf8)
        try Self.openssl([
            "x509", "-req", "-in", path("\(name).csr"), "-CA", path("\(ca).crt"), "-CAkey", path("\(ca).key"),
            "-CAcreateserial", "-out", path("\(name).crt"), "-days", "2", "-extfile", extensions,
        ])
    }

    func path(_ file: String) -> String { "\(directory)/\(file)" }

    /// A CA `ca` and a server certificate `server` signed by it.
    static func serverPKI() throws -> TestPKI {
        let pki = try TestPKI()
        try pki.makeCA("ca")
        try pki.makeCertificate("server", signedBy: "ca")
        return pki
    }

    private static func openssl(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw PKIFailure(description: "openssl \(arguments.joined(separator: " ")) failed")
        }
    }
}

struct PKIFailure: Error, CustomStringConvertible {
    let description: String
}
