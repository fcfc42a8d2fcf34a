import ArgumentParser
import HearthAuth
import HearthCore
import HearthJSON

#if canImport(Glibc)
import Glibc
#endif

/// `hearth token --uid alice`: mints an HS256 token for development and scripts, signed with the
/// server's `jwtSecret`, and prints only the token.
struct TokenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token", abstract: "Mint an HS256 token (JWT) for a user; prints only the token.",
        discussion: """
            The secret is $HEARTH_JWT_SECRET, else the jwtSecret of the hearthd configuration file \
            given with --config (or $HEARTH_CONFIG), in the order hearthd itself uses. The token \
            holds sub (the uid), iat, exp and the --claims.
            """)

    @Option(help: "The user id (the token's sub; auth.uid in rules).") var uid: String
    @Option(help: #"Extra claims, a JSON object (e.g. '{"role":"editor"}'; auth.token in rules)."#)
    var claims: JSONArgument?
    @Option(help: "How long the token is valid: a number of seconds, or with a unit: 90s, 30m, 1h, 7d.")
    var ttl: String = "1h"
    @Option(help: "A hearthd configuration file to take jwtSecret from (default: $HEARTH_CONFIG).")
    var config: String?

    func validate() throws {
        guard !uid.isEmpty else { throw ValidationError("--uid must not be empty") }
        guard Self.seconds(ttl) != nil else {
            throw ValidationError("--ttl must be a positive number of seconds, or end in s, m, h or d (e.g. 1h)")
        }
        if let claims, claims.value.objectMembers == nil {
            throw ValidationError(#"--claims must be a JSON object, e.g. '{"role":"editor"}'"#)
        }
    }

    func run() async throws {
        try await reportingFailures {
            let secret = try jwtSecret()
            let minter: TokenMinter
            do throws(DatabaseError) {
                minter = try await TokenMinter(secret: secret)
            } catch {
                throw CLIFailure.failed("cannot sign with this jwtSecret: \(error.message)")
            }
            let token: String
            do throws(DatabaseError) {
                token = try minter.mint(
                    uid: uid, claims: claims?.value ?? .object([]), now: Int64(time(nil)),
                    ttlSeconds: Self.seconds(ttl) ?? 3600)
            } catch {
                throw CLIFailure.failed(error.message)
            }
            let out = Output()
            out.append(token + "\n")
            try out.flush()
        }
    }

    /// The secret: `$HEARTH_JWT_SECRET`, else the configuration file's `jwtSecret`.
    private func jwtSecret() throws -> String {
        if let secret = getenv("HEARTH_JWT_SECRET").map({ String(cString: $0) }), !secret.isEmpty { return secret }
        let environmentConfig = getenv("HEARTH_CONFIG").map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 }
        guard let path = config ?? environmentConfig else {
            throw CLIFailure.usage(
                "no secret to sign with: set HEARTH_JWT_SECRET, or give the server's configuration file with --config")
        }
        let document: JSONValue
        do {
            document = try JSONParser.parse(try readAll(path: path))
        } catch let failure as CLIFailure {
            throw failure
        } catch {
            throw CLIFailure.failed("\(path) is not valid JSON: \(error)")
        }
        switch document["jwtSecret"] {
        case .string(let secret)? where !secret.isEmpty:
            return secret
        case nil, .null?:
            throw CLIFailure.failed("\(path) has no jwtSecret (and HEARTH_JWT_SECRET is not set)")
        default:
            throw CLIFailure.failed("\(path): jwtSecret must be a non-empty string")
        }
    }

    /// `90`, `90s`, `30m`, `1h`, `7d` in seconds; nil when malformed or not positive.
    static func seconds(_ text: String) -> Int64? {
        let units: [Character: Int64] = ["s": 1, "m": 60, "h": 3600, "d": 86400]
        var digits = Substring(text)
        var unit: Int64 = 1
        if let last = text.last, let factor = units[last] {
            unit = factor
            digits = digits.dropLast()
        }
        guard let count = Int64(digits), count > 0 else { return nil }
        let (product, overflow) = count.multipliedReportingOverflow(by: unit)
        return overflow ? nil : product
    }
}
