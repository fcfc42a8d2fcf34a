internal import HearthJSON

extension HearthError {
    /// The server's error object for the request `request`: a `permission_denied` also names the
    /// path the request was for.
    init(wire: JSONValue, request: [JSONMember]) {
        self.init(wire: wire)
        if code == .permissionDenied, case .string(let path)? = request.last(where: { $0.key == "path" })?.value {
            self.path = path
        }
    }
}
