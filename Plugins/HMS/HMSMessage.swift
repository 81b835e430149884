import AdapterKit
import Foundation
import NIOCore
import NIOFoundationCompat

/// A notification in the `hms` format, checked against Push Kit's message rules, ready to be sent to a batch of
/// tokens.
///
/// The body is `{"message": {...}}` (with `validate_only` allowed beside it), as Huawei's `messages:send` takes
/// it but without a target: the hub adds `message.token`. Rules checked: `message` is an object holding `data` (a
/// string, as Push Kit requires), `notification` or `android.notification`; it names no `token`, `topic` or
/// `condition`; the body is at most ``maximumBytes``.
public struct HMSMessage: Sendable {
    /// The largest message body Push Kit accepts, in bytes (`80300008` above it).
    public static let maximumBytes = 4096

    /// The request's members other than `message` (`validate_only`).
    let root: [String: JSONValue]
    /// The message without a target.
    let message: [String: JSONValue]

    /// Checks a payload.
    /// - Throws: ``HubError`` with `payloadTooLarge` or `invalidNotification`, saying what to fix.
    public init(payload: ByteBuffer) throws(HubError) {
        if payload.readableBytes > Self.maximumBytes {
            throw HubError(
                .payloadTooLarge, "an hms message is at most \(Self.maximumBytes) bytes; this one is \(payload.readableBytes)")
        }
        guard case .object(var root)? = try? JSONValue(parsing: payload.readableBytesView) else {
            throw HubError(.invalidNotification, #"an hms payload is a JSON object: {"message": {"data": "…"}}"#)
        }
        for key in root.keys where key != "message" && key != "validate_only" {
            throw HubError(.invalidNotification, "an hms payload holds \"message\" (and \"validate_only\"), not \"\(key.prefix(40))\"")
        }
        guard case .object(let message)? = root.removeValue(forKey: "message") else {
            throw HubError(.invalidNotification, #"an hms payload needs a "message" object: {"message": {"data": "…"}}"#)
        }
        for key in ["token", "topic", "condition"] where message[key] != nil {
            throw HubError(.invalidNotification, "message.\(key) is set by the hub; leave it out")
        }
        if let data = message["data"], data.stringValue == nil {
            throw HubError(.invalidNotification, "message.data must be a string (e.g. serialized JSON), as Push Kit requires")
        }
        let androidNotification = message["android"]?.objectValue?["notification"]
        guard message["data"] != nil || message["notification"] != nil || androidNotification != nil else {
            throw HubError(
                .invalidNotification, "message needs data, notification or android.notification; it has none of them")
        }
        if let validateOnly = root["validate_only"], validateOnly != JSONValue.bool(true), validateOnly != JSONValue.bool(false) {
            throw HubError(.invalidNotification, "validate_only must be true or false")
        }
        self.root = root
        self.message = message
    }

    /// The request body for `tokens` (1 to 1,000).
    public func body(tokens: [String]) -> ByteBuffer {
        var message = message
        message["token"] = .array(tokens.map { .string($0) })
        var root = root
        root["message"] = .object(message)
        return ByteBuffer(string: JSONValue.object(root).jsonString())
    }
}
