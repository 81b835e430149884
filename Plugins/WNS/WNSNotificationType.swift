import AdapterKit
import NIOCore

/// A WNS notification type, as sent in `X-WNS-Type`: `wns/toast`, `wns/tile`, `wns/badge` or `wns/raw`.
public struct WNSNotificationType: Hashable, Sendable, CustomStringConvertible {
    /// The header value, e.g. `wns/toast`.
    public let rawValue: String

    private init(_ rawValue: String) { self.rawValue = rawValue }

    /// A toast (`<toast>` XML).
    public static let toast = WNSNotificationType("wns/toast")
    /// A live tile update (`<tile>` XML).
    public static let tile = WNSNotificationType("wns/tile")
    /// A badge update (`<badge>` XML).
    public static let badge = WNSNotificationType("wns/badge")
    /// Raw bytes handed to the app.
    public static let raw = WNSNotificationType("wns/raw")

    /// Every type WNS accepts.
    public static let all: [WNSNotificationType] = [.toast, .tile, .badge, .raw]

    /// Parses a header value (case-insensitive); `nil` when it is not a WNS type.
    public init?(headerValue: String) {
        guard let match = Self.all.first(where: { $0.rawValue.caseInsensitiveEquals(headerValue) }) else { return nil }
        self = match
    }

    /// The XML root element a payload of this type must have, or `nil` for `wns/raw`.
    public var rootElement: String? {
        switch self {
        case .toast: "toast"
        case .tile: "tile"
        case .badge: "badge"
        default: nil
        }
    }

    /// The `Content-Type` WNS requires for this type.
    public var contentType: String {
        self == .raw ? "application/octet-stream" : "text/xml"
    }

    public var description: String { rawValue }

    /// The type a payload without `X-WNS-Type` is sent as: the type named by its XML root element when that is
    /// `toast`, `tile` or `badge`, otherwise `wns/raw`.
    public static func inferred(from payload: ByteBuffer) -> WNSNotificationType {
        switch XMLRootElement.name(in: payload.readableBytesView) {
        case "toast": .toast
        case "tile": .tile
        case "badge": .badge
        default: .raw
        }
    }
}

/// Finds the name of a document's first element without parsing the whole document.
enum XMLRootElement {
    /// The first element's name, skipping a byte-order mark, white space, the XML declaration, processing
    /// instructions, comments and a DOCTYPE; `nil` when the bytes do not start like XML.
    static func name(in bytes: some Collection<UInt8>) -> String? {
        let bytes = Array(bytes.prefix(4096))
        var index = 0
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { index = 3 }
        func skipWhitespace() {
            while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
        }
        func skip(past terminator: [UInt8]) -> Bool {
            while index + terminator.count <= bytes.count {
                if bytes[index..<index + terminator.count].elementsEqual(terminator) {
                    index += terminator.count
                    return true
                }
                index += 1
            }
            return false
        }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "<") else { return nil }
            let rest = bytes[index...]
            if rest.starts(with: Array("<?".utf8)) {
                guard skip(past: Array("?>".utf8)) else { return nil }
            } else if rest.starts(with: Array("<!--".utf8)) {
                guard skip(past: Array("-->".utf8)) else { return nil }
            } else if rest.starts(with: Array("<!".utf8)) {
                guard skip(past: Array(">".utf8)) else { return nil }
            } else {
                index += 1
                let start = index
                while index < bytes.count, ![0x20, 0x09, 0x0A, 0x0D, UInt8(ascii: ">"), UInt8(ascii: "/")].contains(bytes[index]) {
                    index += 1
                }
                guard index > start else { return nil }
                return String(decoding: bytes[start..<index], as: UTF8.self)
            }
        }
    }
}
