import HTTPTypes
import Hummingbird
import NIOCore

/// An answer an emulator sends exactly as given, whatever the request: any status, any headers, any bytes as the
/// body, optionally cut short. It feeds an adapter what no well-behaved platform sends (absurd `Retry-After`
/// values, non-UTF-8 or truncated bodies), to prove that no answer can crash the hub.
///
/// A status below 200 cannot end an exchange: the emulator sends it as an interim answer where its server can (the
/// Hummingbird-based FCM and Web Push emulators), then breaks the exchange off (closes the connection, or resets the
/// stream), as a server that sent only an interim answer would leave its client. A 204 or 304 answer carries no body. Header names and values the transport cannot carry (a name that
/// is not a token, a value with a line break) are left out. `Content-Length` is the emulator's to set.
public struct RawAnswer: Sendable, Hashable {
    /// One header field.
    public struct Field: Sendable, Hashable {
        /// The name (sent lowercased over HTTP/2).
        public var name: String
        /// The value.
        public var value: String

        /// Creates a field.
        public init(_ name: String, _ value: String) {
            self.name = name
            self.value = value
        }
    }

    /// The status, from 100 to 599.
    public var status: Int
    /// The header fields, in order.
    public var headers: [Field]
    /// The body's bytes (any bytes, UTF-8 or not).
    public var body: [UInt8]
    /// Whether to send only the first half of the body, announcing all of it, then break off (close the
    /// connection, or reset the stream over HTTP/2).
    public var truncated: Bool

    /// Creates an answer.
    public init(status: Int, headers: [Field] = [], body: [UInt8] = [], truncated: Bool = false) {
        self.status = status
        self.headers = headers
        self.body = body
        self.truncated = truncated
    }

    /// Whether `name` is an HTTP token (RFC 9110 §5.6.2) and not a field the emulator sets itself.
    public static func isSendable(name: String) -> Bool {
        let lowered = name.lowercased()
        guard !name.isEmpty, lowered != "content-length", lowered != "transfer-encoding", lowered != "connection" else {
            return false
        }
        return name.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || Array("!#$%&'*+-.^_`|~".utf8).contains(byte)
        }
    }

    /// Whether `value` can be carried in a field: visible ASCII, spaces and tabs inside, no control characters.
    public static func isSendable(value: String) -> Bool {
        value.utf8.allSatisfy { $0 == 0x09 || ($0 >= 0x20 && $0 < 0x7F) }
            && value.utf8.first != 0x20 && value.utf8.last != 0x20
    }

    /// The body as sent: none for 204 and 304, which cannot carry one.
    public var sendableBody: [UInt8] {
        status == 204 || status == 304 ? [] : body
    }

    /// The headers the transport can carry (see ``isSendable(name:)`` and ``isSendable(value:)``).
    public var sendableHeaders: [Field] {
        headers.filter { Self.isSendable(name: $0.name) && Self.isSendable(value: $0.value) }
    }
}

extension RawAnswer {
    /// Thrown by a truncated body's writer, so the server breaks the connection off mid-body.
    struct BrokenOff: Error {}

    /// The answer as a response of the Hummingbird-based emulators. A status below 200 goes out as an interim head,
    /// then the exchange breaks off (Hummingbird writes the head before the body, so a dropped answer needs one).
    var response: Response {
        let bytes = sendableBody
        guard status >= 200 else {
            return Response(status: HTTPResponse.Status(code: status), body: ResponseBody { _ in throw BrokenOff() })
        }
        var fields = HTTPFields()
        for field in sendableHeaders {
            if let name = HTTPField.Name(field.name) { fields.append(HTTPField(name: name, value: field.value)) }
        }
        let body: ResponseBody
        if truncated {
            body = ResponseBody(contentLength: bytes.count) { writer in
                try await writer.write(ByteBuffer(bytes: bytes.prefix(bytes.count / 2)))
                throw BrokenOff()
            }
        } else {
            body = ResponseBody(byteBuffer: ByteBuffer(bytes: bytes))
        }
        return Response(status: HTTPResponse.Status(code: status), headers: fields, body: body)
    }
}
