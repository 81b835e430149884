import AdapterKit
import NIOCore

/// WNS's rules for a notification's body and headers, checked when a send is accepted and again for each rendered
/// template delivery.
public enum WNSPayloadRules {
    /// WNS's payload limit in bytes.
    public static let maximumPayloadBytes = 5000

    /// The headers passed through to WNS unchanged (when present on the notification or a template).
    public static let passthroughHeaders = [
        "X-WNS-Cache-Policy", "X-WNS-TTL", "X-WNS-Tag", "X-WNS-Group", "X-WNS-RequestForStatus",
    ]

    /// Checks the body and headers; returns the notification type to send.
    ///
    /// The type is `X-WNS-Type` when given; otherwise it is inferred from the body (see
    /// ``WNSNotificationType/inferred(from:)``). Toast, tile and badge bodies must be well-formed UTF-8 XML whose
    /// root element matches the type (a declaration naming `utf-16` on UTF-8 bytes, as the .NET SDK sends, is
    /// accepted; see ``WNSXMLEncoding``).
    public static func check(payload: ByteBuffer, headers: NotificationHeaders) throws(HubError) -> WNSNotificationType {
        let type = try checkHeaders(headers, payload: payload)
        try checkBody(payload, type: type)
        return type
    }

    /// Checks the headers and returns the type (explicit or inferred).
    static func checkHeaders(_ headers: NotificationHeaders, payload: ByteBuffer) throws(HubError) -> WNSNotificationType {
        if let value = headers["X-WNS-Cache-Policy"], !["cache", "no-cache"].contains(value) {
            throw HubError(.invalidNotification, "X-WNS-Cache-Policy must be 'cache' or 'no-cache'")
        }
        if let value = headers["X-WNS-TTL"], UInt32(value) == nil {
            throw HubError(.invalidNotification, "X-WNS-TTL must be a whole number of seconds")
        }
        if let value = headers["X-WNS-RequestForStatus"], !["true", "false"].contains(value) {
            throw HubError(.invalidNotification, "X-WNS-RequestForStatus must be 'true' or 'false'")
        }
        for name in ["X-WNS-Tag", "X-WNS-Group"] {
            if let value = headers[name], value.isEmpty || value.utf8.count > 16 {
                throw HubError(.invalidNotification, "\(name) must be 1 to 16 characters")
            }
        }
        guard let value = headers["X-WNS-Type"] else { return WNSNotificationType.inferred(from: payload) }
        guard let type = WNSNotificationType(headerValue: value) else {
            throw HubError(
                .invalidNotification,
                "X-WNS-Type '\(value.prefix(40))' is not a WNS type; use wns/toast, wns/tile, wns/badge or wns/raw")
        }
        return type
    }

    /// Checks the body against its type and returns the bytes to send WNS: size, and for XML types the encoding
    /// (see ``WNSXMLEncoding``), well-formedness and the root element.
    @discardableResult
    static func checkBody(_ payload: ByteBuffer, type: WNSNotificationType) throws(HubError) -> ByteBuffer {
        if payload.readableBytes > maximumPayloadBytes {
            throw HubError(
                .payloadTooLarge,
                "the windows payload is \(payload.readableBytes) bytes; WNS accepts at most \(maximumPayloadBytes) bytes")
        }
        guard let root = type.rootElement else { return payload }
        let document = try WNSXMLEncoding.documentToSend(payload, what: "the \(type) payload")
        try XMLWellFormedness.check(
            String(decoding: document.readableBytesView, as: UTF8.self), what: "the \(type) payload", code: .invalidNotification)
        let found = XMLRootElement.name(in: document.readableBytesView)
        guard found == root else {
            throw HubError(
                .invalidNotification,
                "a \(type) payload's root element must be <\(root)>, not <\(found ?? "?")>")
        }
        return document
    }
}
