import ArgumentParser
@_spi(InsecureTLS) import HearthClient

#if canImport(Glibc)
import Glibc
#endif

/// `--token`, `--ca-file` and `--insecure-skip-verify`: who the command is to the server, and
/// whom it trusts to be the server (part of `ConnectionOptions`).
struct SecurityOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "Authenticate with this token (a JWT or an admin secret) before the command (default: $HEARTH_TOKEN).",
            discussion: "Prefer $HEARTH_TOKEN: other users of the machine can see command lines."))
    var token: String?

    @Option(
        name: .customLong("ca-file"),
        help: "For hearths:// URLs, trust the CA certificates in this PEM file instead of the system's roots.")
    var caFile: String?

    @Flag(
        name: .customLong("insecure-skip-verify"),
        help: "For hearths:// URLs, do not verify the server's certificate at all (tests only; insecure).")
    var insecureSkipVerify = false

    func validate() throws {
        if insecureSkipVerify && caFile != nil {
            throw ValidationError("--ca-file and --insecure-skip-verify cannot be combined")
        }
    }

    /// `--token`, else a non-empty `$HEARTH_TOKEN`, else nil.
    var resolvedToken: String? {
        if let token { return token }
        guard let value = getenv("HEARTH_TOKEN").map({ String(cString: $0) }), !value.isEmpty else { return nil }
        return value
    }

    /// Sets the trust roots for `hearths://`; says loudly on stderr what `--insecure-skip-verify`
    /// gives up, every time it is used.
    func apply(to configuration: inout Database.Configuration) {
        if insecureSkipVerify {
            writeError(
                """
                hearth: WARNING: --insecure-skip-verify: the server's TLS certificate is NOT verified. Anyone \
                between you and the server can impersonate it and read or change everything sent, tokens \
                included. Use it only for tests.
                """)
            configuration.tlsTrustRoots = .insecureNoVerification
        } else if let caFile {
            configuration.tlsTrustRoots = .pemFiles([caFile])
        }
    }

    /// Authenticates `database` with the token, if one was given. A refused token fails the
    /// command (status 1) with the server's reason; the token itself is never printed.
    func authenticate(_ database: Database, within connection: ConnectionOptions) async throws {
        guard let token = resolvedToken else { return }
        do {
            _ = try await connection.bounded("authenticating") { try await database.auth(token: token) }
        } catch let error as HearthError {
            throw CLIFailure.failed("authentication failed: \(error.description)")
        }
    }
}
