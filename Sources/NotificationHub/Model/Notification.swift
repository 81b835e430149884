import Foundation
import NIOCore

/// A notification as accepted by the hub: a body in one format, passthrough headers, and its audience.
public struct Notification: Sendable {
    /// The hub-assigned identifier.
    public var id: String
    /// The body's format.
    public var format: NotificationFormat
    /// The body: a native payload, or for ``NotificationFormat/template`` a JSON property bag.
    public var body: ByteBuffer
    /// Passthrough headers such as `apns-priority` or `X-WNS-Type`.
    public var headers: NotificationHeaders
    /// Who receives it.
    public var audience: Audience
    /// When the hub accepted it.
    public var createdAt: Date

    /// Creates a notification.
    public init(
        id: String = Notification.makeID(),
        format: NotificationFormat,
        body: ByteBuffer,
        headers: NotificationHeaders = [:],
        audience: Audience,
        createdAt: Date = Date()
    ) {
        self.id = id
        self.format = format
        self.body = body
        self.headers = headers
        self.audience = audience
        self.createdAt = createdAt
    }

    /// Creates a notification with a string body.
    public init(
        id: String = Notification.makeID(),
        format: NotificationFormat,
        body: String,
        headers: NotificationHeaders = [:],
        audience: Audience,
        createdAt: Date = Date()
    ) {
        self.init(
            id: id, format: format, body: ByteBuffer(string: body), headers: headers, audience: audience,
            createdAt: createdAt)
    }

    /// A new random notification identifier (32 lower-case hex digits).
    public static func makeID() -> String {
        UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
    }
}

/// Who a notification goes to.
public enum Audience: Hashable, Sendable {
    /// Every installation of the hub.
    case all
    /// Installations whose tags satisfy the expression.
    case tags(TagExpression)
    /// Device handles given directly, without installations, on one platform.
    case handles(Platform, [PushChannel])
    /// A stored audience that could not be read back (its text as stored). Only telemetry shows it: a notification
    /// with it is never delivered, it ends with a reason.
    case unreadable(String)
}

/// Notification headers: an ordered list of name–value pairs with case-insensitive lookup.
public struct NotificationHeaders: Hashable, Sendable, Sequence, ExpressibleByDictionaryLiteral {
    /// The pairs, in the order they were given.
    public private(set) var pairs: [(name: String, value: String)]

    /// Creates headers from pairs.
    public init(_ pairs: [(name: String, value: String)] = []) {
        self.pairs = pairs
    }

    public init(dictionaryLiteral elements: (String, String)...) {
        self.pairs = elements.map { (name: $0.0, value: $0.1) }
    }

    /// The first value of a header (case-insensitive), or `nil`.
    public subscript(name: String) -> String? {
        get { pairs.first { $0.name.caseInsensitiveEquals(name) }?.value }
        set {
            pairs.removeAll { $0.name.caseInsensitiveEquals(name) }
            if let newValue { pairs.append((name: name, value: newValue)) }
        }
    }

    public func makeIterator() -> IndexingIterator<[(name: String, value: String)]> {
        pairs.makeIterator()
    }

    /// Whether there are no headers.
    public var isEmpty: Bool { pairs.isEmpty }

    public static func == (lhs: NotificationHeaders, rhs: NotificationHeaders) -> Bool {
        lhs.pairs.count == rhs.pairs.count && zip(lhs.pairs, rhs.pairs).allSatisfy { $0.name == $1.name && $0.value == $1.value }
    }

    public func hash(into hasher: inout Hasher) {
        for pair in pairs {
            hasher.combine(pair.name)
            hasher.combine(pair.value)
        }
    }
}

extension NotificationHeaders: Codable {
    public init(from decoder: any Decoder) throws {
        let list = try decoder.singleValueContainer().decode([[String]].self)
        self.pairs = list.compactMap { $0.count == 2 ? (name: $0[0], value: $0[1]) : nil }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(pairs.map { [$0.name, $0.value] })
    }
}

extension String {
    /// ASCII case-insensitive comparison, as HTTP header names need.
    @inlinable
    public func caseInsensitiveEquals(_ other: String) -> Bool {
        let lhs = utf8
        let rhs = other.utf8
        guard lhs.count == rhs.count else { return false }
        for (a, b) in zip(lhs, rhs) where a != b {
            guard a | 0x20 == b | 0x20, (a | 0x20) >= UInt8(ascii: "a"), (a | 0x20) <= UInt8(ascii: "z") else {
                return false
            }
        }
        return true
    }
}

extension NotificationHeaders {
    /// Checks a header name: an HTTP token (RFC 9110 §5.6.2) of at most 256 characters.
    public static func validate(name: String) throws(HubError) {
        let ok = !name.isEmpty && name.utf8.count <= 256 && name.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"):
                true
            default:
                "!#$%&'*+-.^_`|~".utf8.contains(byte)
            }
        }
        if !ok {
            throw HubError(
                .invalidNotification,
                "header name '\(String(name.unicodeScalars.prefix(40).map { $0.isASCII && $0.value >= 0x20 ? Character($0) : "?" }))' is not an HTTP token; use letters, digits and ! # $ % & ' * + - . ^ _ ` | ~")
        }
    }

    /// Checks a header value: no control character but horizontal tab (RFC 9110 §5.5), at most 8 KiB, so that every
    /// platform's HTTP stack can send it as given.
    public static func validate(value: String, name: String) throws(HubError) {
        if value.utf8.count > 8192 {
            throw HubError(.invalidNotification, "header '\(name)' is longer than 8192 bytes")
        }
        if let bad = value.unicodeScalars.first(where: { ($0.value < 0x20 && $0 != "\t") || $0.value == 0x7F }) {
            throw HubError(
                .invalidNotification,
                "header '\(name)' holds the control character U+\(String(format: "%04X", bad.value)); header values may not contain control characters such as CR, LF or NUL")
        }
    }

    /// Checks every name and value.
    public func validate() throws(HubError) {
        for pair in pairs {
            try Self.validate(name: pair.name)
            try Self.validate(value: pair.value, name: pair.name)
        }
    }
}
