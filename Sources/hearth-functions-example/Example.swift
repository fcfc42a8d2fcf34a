import Foundation
import HearthClient
import HearthFunctions
import Logging

// A receiver of Hearth trigger deliveries (docs/functions.md): for every message created under
// /messages/{id} it adds one to /stats/messageCount and records the message's id as
// /stats/lastMessage, writing back through HearthClient as an admin.
//
// Everything secret comes from the environment, never from flags:
//   HEARTH_ADMIN_SECRET            an admin secret of the Hearth server (required)
//   HEARTH_FUNCTIONS_SECRET        the trigger's signing secret, or
//   HEARTH_FUNCTIONS_SECRET_FILE   a file holding it (trailing whitespace and newlines are dropped)
//   HEARTH_FUNCTIONS_OLD_SECRET    optional: a second secret accepted while the secret is rotated
// and the rest from the environment too:
//   HEARTH_URL                     the server (default hearth://127.0.0.1:9000)
//   FUNCTIONS_HOST, FUNCTIONS_PORT where to listen (default 127.0.0.1 and 8080); the path is /hook

@main
enum FunctionsExample {
    static let logger = Logger(label: "hearth.functions.example")

    static func secret(_ name: String) -> String? {
        guard let value = ProcessInfo.processInfo.environment[name], !value.isEmpty else { return nil }
        return value
    }

    static func signingSecrets() -> [String] {
        var secrets: [String] = []
        if let value = secret("HEARTH_FUNCTIONS_SECRET") {
            secrets.append(value)
        } else if let file = secret("HEARTH_FUNCTIONS_SECRET_FILE") {
            do {
                let text = try String(contentsOfFile: file, encoding: .utf8)
                secrets.append(text.trimmingCharacters(in: .whitespacesAndNewlines))
            } catch {
                logger.critical("cannot read HEARTH_FUNCTIONS_SECRET_FILE", metadata: ["error": "\(error)"])
            }
        }
        if let old = secret("HEARTH_FUNCTIONS_OLD_SECRET") { secrets.append(old) }
        return secrets.filter { !$0.isEmpty }
    }

    static func main() async {
        guard let adminSecret = secret("HEARTH_ADMIN_SECRET") else {
            logger.critical("HEARTH_ADMIN_SECRET is not set")
            exit(2)
        }
        let secrets = signingSecrets()
        guard !secrets.isEmpty else {
            logger.critical("set HEARTH_FUNCTIONS_SECRET or HEARTH_FUNCTIONS_SECRET_FILE")
            exit(2)
        }
        let url = ProcessInfo.processInfo.environment["HEARTH_URL"] ?? "hearth://127.0.0.1:9000"
        let port = ProcessInfo.processInfo.environment["FUNCTIONS_PORT"].flatMap { Int($0) } ?? 8080
        let host = ProcessInfo.processInfo.environment["FUNCTIONS_HOST"] ?? "127.0.0.1"

        let database: Database
        do {
            database = try Database(validatingURL: url)
        } catch {
            logger.critical("HEARTH_URL is not a Hearth URL", metadata: ["url": "\(url)", "error": "\(error)"])
            exit(2)
        }
        do {
            try await database.auth(token: adminSecret)
        } catch {
            logger.critical("the admin secret was refused", metadata: ["error": "\(error)"])
            exit(1)
        }

        // Redeliveries of an event this process already handled are skipped while its id is among the
        // last 10,000; a redelivery after a restart still counts twice: the increment is not idempotent
        // (docs/functions.md shows how to make it so).
        let functions = Functions(seenWindow: 10_000)
        functions.onCreate("/messages/{id}") { event in
            let id = event.params["id"] ?? ""
            try await database.reference().updateChildValues([
                "stats/messageCount": ServerValue.increment(1),
                "stats/lastMessage": id,
            ])
            logger.info("counted a message", metadata: ["message": "\(id)", "event": "\(event.id)"])
        }

        let server = FunctionsServer(
            functions: functions, verifier: SignatureVerifier(secrets: secrets),
            configuration: .init(host: host, port: port, path: "/hook"))
        do {
            try await server.run()
        } catch {
            logger.critical("the receiver stopped", metadata: ["error": "\(error)"])
            exit(1)
        }
    }
}
