import NIOHTTP1

/// What the long-polling transport writes (docs/firebase-sdk.md, "Long polling"): the browser SDK
/// loads each answer as a script in a hidden frame, so every answer is JavaScript that calls the
/// frame's two callbacks, `pLPCommand` (commands: `start`, `close`) and `pRTLPCB` (numbered packets
/// of protocol messages, which the SDK puts back in order).
enum LongPollScript {
    static let contentType = "application/javascript; charset=utf-8"

    /// The answer to `start=t`: defines the frame's callbacks as forwarders to the page's, numbered
    /// `callback`, starts the session and carries the first packet (the hello).
    static func start(callback: String, id: String, password: String, packets: [UInt8]) -> [UInt8] {
        var script = Array("function pLPCommand(c,a,b,d,e){var f=parent.pLPCommand".utf8)
        script += Array(callback.utf8)
        script += Array(";if(f)f(c,a,b,d,e);}\nfunction pRTLPCB(n,m){var f=parent.pRTLPCB".utf8)
        script += Array(callback.utf8)
        script += Array(";if(f)f(n,m);}\npLPCommand('start','".utf8)
        script += Array(id.utf8)
        script += Array("','".utf8)
        script += Array(password.utf8)
        script += Array("');\n".utf8)
        script += packets
        return script
    }

    /// One packet: `pRTLPCB(number,[message,…]);` (each message is JSON, so a JavaScript value).
    static func packet(_ number: Int, _ messages: [[UInt8]]) -> [UInt8] {
        var script = Array("pRTLPCB(".utf8)
        script += Array(String(number).utf8)
        script += Array(",[".utf8)
        for (index, message) in messages.enumerated() {
            if index > 0 { script.append(UInt8(ascii: ",")) }
            script += message
        }
        script += Array("]);\n".utf8)
        return script
    }

    /// The transport-upgrade control message of `type` (`a` switch acknowledgement, `n` end of
    /// transmission).
    static func control(_ type: String) -> [UInt8] {
        Array(#"{"t":"c","d":{"t":"\#(type)","d":{}}}"#.utf8)
    }

    /// `close`: no more polls; the SDK closes once it has every packet up to `lastPacket`.
    static func close(lastPacket: Int) -> [UInt8] {
        Array("pLPCommand('close',\(lastPacket));\n".utf8)
    }

    /// The page the SDK loads (`dframe=t`) to say it leaves: when the frame goes away (the page
    /// unloads, or the SDK drops the transport), it asks for the same address with `disconn=t`.
    static let disconnectFrame = Array(
        """
        <!DOCTYPE html><html><head><script>
        window.addEventListener('pagehide',function(){var u=location.href.replace('dframe=t','disconn=t');
        try{if(navigator.sendBeacon&&navigator.sendBeacon(u))return;}catch(e){}
        try{var x=new XMLHttpRequest();x.open('GET',u,false);x.send();}catch(e){}});
        </script></head><body></body></html>
        """.utf8)

    /// Whether `text` may go into a script as it is: letters and digits only (the SDK's callback
    /// number; the server's ids).
    static func isPlain(_ text: Substring, maxLength: Int) -> Bool {
        !text.isEmpty && text.utf8.count <= maxLength
            && text.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7A) }
    }

    /// Decodes base64 in the SDK's web-safe alphabet (`-`, `_`, `.` padding) or the standard one.
    static func decodeBase64(_ text: [UInt8]) -> [UInt8]? {
        var output: [UInt8] = []
        output.reserveCapacity(text.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        var ended = false
        for byte in text {
            let value: UInt32
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): value = UInt32(byte - UInt8(ascii: "A"))
            case UInt8(ascii: "a")...UInt8(ascii: "z"): value = UInt32(byte - UInt8(ascii: "a")) + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = UInt32(byte - UInt8(ascii: "0")) + 52
            case UInt8(ascii: "+"), UInt8(ascii: "-"): value = 62
            case UInt8(ascii: "/"), UInt8(ascii: "_"): value = 63
            case UInt8(ascii: "="), UInt8(ascii: "."):
                ended = true
                continue
            default: return nil
            }
            if ended { return nil }
            accumulator = (accumulator << 6) | value
            bits += 6
            if bits >= 8 {
                bits -= 8
                output.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
                accumulator &= (1 << UInt32(bits)) - 1
            }
        }
        return output
    }
}

/// The answer to one `/.lp` request.
struct LongPollReply: Sendable {
    var status: HTTPResponseStatus = .ok
    var contentType = LongPollScript.contentType
    var body: [UInt8]

    init(status: HTTPResponseStatus = .ok, contentType: String = LongPollScript.contentType, body: [UInt8]) {
        self.status = status
        self.contentType = contentType
        self.body = body
    }

    /// An empty script: the SDK sends its next poll.
    static let empty = LongPollReply(body: [])
    /// The session is over (or was never there): the SDK drops this transport and reconnects.
    static let closed = LongPollReply(body: LongPollScript.close(lastPacket: 0))
}

/// Hands a `/.lp` request its answer; callable from any thread (it hops to the request's loop).
typealias LongPollResponder = @Sendable (LongPollReply) -> Void

/// One segment of a client message: `seg<i>` (its number in the client's sequence), `ts<i>` (how
/// many segments the message has), `d<i>` (base64 of its piece).
struct LongPollSegment: Sendable {
    let number: Int
    let total: Int
    let data: [UInt8]
}
