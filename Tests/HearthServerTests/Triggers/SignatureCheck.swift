import HearthFunctions

/// Whether `header` signs `body` with `secret` within `tolerance` seconds of `now`, as a receiver
/// checks it with `HearthFunctions` (the one verifier of the signature scheme).
func signatureVerifies(header: String, body: [UInt8], secret: [UInt8], now: Int64, tolerance: Int64) -> Bool {
    (try? SignatureVerifier(secretBytes: [secret], tolerance: tolerance).verify(header: header, body: body, now: now))
        != nil
}
