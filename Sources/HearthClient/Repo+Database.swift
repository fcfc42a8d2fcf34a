internal import HearthJSON
import NIOCore

extension Repo {
    // MARK: Choosing the database of each connection (on the loop)

    /// Sends `{"op":"use","db":name}` as the connection's first request, before `auth` and
    /// everything else (docs/PROTOCOL.md): user requests wait in the offline queue and session
    /// state is rebuilt once the server accepts it. A refusal closes the connection with the
    /// server's error as the attempt's reason.
    func chooseDatabase(_ name: String, on channel: any Channel) {
        choice = DatabaseChoice(awaitingAnswer: true)
        security.channelFailure = nil
        security.phase = .connecting
        let out = Outgoing(
            kind: .session, body: [JSONMember("op", .string("use")), JSONMember("db", .string(name))]
        ) { result in
            guard self.channel === channel else { return }
            self.choice.awaitingAnswer = false
            switch result {
            case .success:
                self.logger.debug("database chosen", metadata: ["db": "\(name)"])
                self.security.phase = .ready
                self.authenticate(on: channel)
                if let hello = self.choice.hello {
                    self.choice.hello = nil
                    self.helloArrived(hello)
                }
            case .failure(let error):
                self.useRefused(error, name: name, on: channel)
            }
        }
        write(out)
        channel.flush()
    }

    /// The server refused `use`: the connection closes with the server's error as the reason of
    /// the attempt (a server without several databases is named as such).
    private func useRefused(_ error: HearthError, name: String, on channel: any Channel) {
        var reason = error
        if error.code == .unknownOp {
            reason = HearthError(
                error.code,
                "\(endpoint.description) does not serve several databases, so it cannot use \"\(name)\" "
                    + "(it answered use with \(error.code.rawValue): \(error.message))")
        }
        if DatabaseChoice.definiteCodes.contains(error.code) { choice.refusal = reason }
        security.channelFailure = reason
        channel.close(promise: nil)
    }
}
