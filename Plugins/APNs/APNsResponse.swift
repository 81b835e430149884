import AdapterKit
import NIOCore
import NIOFoundationCompat
import NIOHPACK

/// One request to APNs, ready for the wire.
typealias APNsRequest = HTTP2Request

/// APNs' answer to one request, or why there was none: the status, the headers APNs sets and its error body's
/// fields.
struct APNsResponse: Sendable, Hashable {
    /// The HTTP status, or 0 when no answer came (``failure`` says why).
    var status: Int
    /// The `reason` of an error body.
    var reason: String?
    /// The `timestamp` (ms) of a 410 body.
    var timestamp: Int64?
    /// The `retry-after` header.
    var retryAfter: String?
    /// The `apns-id` header.
    var apnsID: String?
    /// Why no answer came: `ConnectionClosed`, `GoAway`, `StreamReset`, `Timeout`, `ConnectFailed`.
    var failure: String?

    init(
        status: Int, reason: String? = nil, timestamp: Int64? = nil, retryAfter: String? = nil, apnsID: String? = nil,
        failure: String? = nil
    ) {
        self.status = status
        self.reason = reason
        self.timestamp = timestamp
        self.retryAfter = retryAfter
        self.apnsID = apnsID
        self.failure = failure
    }

    /// An HTTP/2 answer read as APNs': its `apns-id` and `retry-after`, and an error body's reason and timestamp.
    init(_ response: HTTP2Response) {
        self.init(
            status: response.status, retryAfter: response.headers.first(name: "retry-after"),
            apnsID: response.headers.first(name: "apns-id"), failure: response.failure)
        if status != 200, let body = response.body {
            (reason, timestamp) = APNsResponseBody.parse(body)
        }
    }

    static func failed(_ why: String) -> APNsResponse { APNsResponse(status: 0, failure: why) }

    /// The request never left the hub (the connection went away first).
    static let notSent = HTTP2Response.notSent

    /// Whether APNs certainly did not process the request (never sent, or above GOAWAY's last stream id), so it
    /// can be sent again at once on another connection.
    var isUnprocessed: Bool { status == 0 && (failure == Self.notSent || failure == "GoAway" || failure == "Refused") }
}

/// Parses APNs error bodies: `{"reason": "...", "timestamp": 1700000000000}`.
enum APNsResponseBody {
    static func parse(_ body: ByteBuffer) -> (reason: String?, timestamp: Int64?) {
        guard let object = (try? JSONValue(parsing: body.readableBytesView))?.objectValue else { return (nil, nil) }
        var timestamp: Int64?
        if case .number(let value)? = object["timestamp"] { timestamp = PlatformNumber.int64(value) }
        return (object["reason"]?.stringValue, timestamp)
    }
}
