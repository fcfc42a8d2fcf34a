import Foundation

/// A throwaway CA and certificates, made with the `openssl` command at test time, for every test
/// target that needs TLS (no private key is kept in the repository).
public struct TestPKI: Sendable {
    public let directory: String

    public init() throws {
        directory =
            FileManager.default.temporaryDirectory.appendingPathComponent("hearth-pki-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    public func remove() { try? FileManager.default.removeItem(atPath: directory) }

    /// Makes `<name>.key` and a self-signed `<name>.crt` CA.
    public func makeCA(_ name: String) throws {
        try openssl([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", path("\(name).key"), "-out",
            path("\(name).crt"), "-days", "2", "-subj", "/CN=\(name)",
        ])
    }

    /// Makes `<name>.key` and `<name>.crt` signed by `ca`, valid for localhost and 127.0.0.1.
    public func makeCertificate(_ name: String, signedBy ca: String) throws {
        try openssl([
            "req", "-newkey", "rsa:2048", "-nodes", "-keyout", path("\(name).key"), "-out", path("\(name).csr"),
            "-subj", "/CN=localhost",
        ])
        let extensions = path("\(name).ext")
        try "subjectAltName=DNS:localhost,IP:127.0.0.1\n".write(toFile: extensions, atomically: true, encoding: .utf8)
        try openssl([
            "x509", "-req", "-in", path("\(name).csr"), "-CA", path("\(ca).crt"), "-CAkey", path("\(ca).key"),
            "-CAcreateserial", "-out", path("\(name).crt"), "-days", "2", "-extfile", extensions,
        ])
    }

    public func path(_ file: String) -> String { "\(directory)/\(file)" }

    /// A CA `ca` and a server certificate `server` signed by it.
    public static func serverPKI() throws -> TestPKI {
        let pki = try TestPKI()
        try pki.makeCA("ca")
        try pki.makeCertificate("server", signedBy: "ca")
        return pki
    }
}

/// Runs the `openssl` command (keys and certificates are made at test time).
public func openssl(_ arguments: [String]) throws { _ = try opensslOutput(arguments) }

/// Runs the `openssl` command and returns what it printed.
public func opensslOutput(_ arguments: [String]) throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
    process.arguments = arguments
    let output = Pipe()
    process.standardOutput = output
    process.standardError = FileHandle.nullDevice
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
        throw PKIFailure(description: "openssl \(arguments.joined(separator: " ")) failed")
    }
    return String(decoding: data, as: UTF8.self)
}

/// The modulus of the RSA key in `file` (a public key when `isPublic`), base64url-encoded as a
/// JWK's `n`, read with `openssl rsa -modulus`.
public func rsaModulusForJWK(keyFile file: String, isPublic: Bool) throws -> String {
    let hex = try opensslOutput(["rsa"] + (isPublic ? ["-pubin"] : []) + ["-in", file, "-modulus", "-noout"])
        .replacingOccurrences(of: "Modulus=", with: "").trimmingCharacters(in: .whitespacesAndNewlines)
    var modulus: [UInt8] = []
    var index = hex.startIndex
    while index < hex.endIndex {
        let next = hex.index(index, offsetBy: 2, limitedBy: hex.endIndex) ?? hex.endIndex
        modulus.append(UInt8(hex[index..<next], radix: 16) ?? 0)
        index = next
    }
    return Data(modulus).base64EncodedString().replacingOccurrences(of: "+", with: "-")
        .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
}

/// An `openssl` command that failed.
public struct PKIFailure: Error, CustomStringConvertible {
    public let description: String
}
