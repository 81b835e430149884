import AdapterKit
import Foundation

/// Checks Declarative Web Push messages (the W3C Push API's *declarative push message*, shown by Safari 18.4+ without
/// a service worker): a `browser` payload that is a JSON object with `"web_push": 8030`.
///
/// ```json
/// {"web_push": 8030, "notification": {"title": "Hi", "navigate": "https://example.com/inbox", "body": "2 new"},
///  "app_badge": 2, "mutable": true}
/// ```
///
/// Required: `notification` (an object) with `title` (a string) and `navigate` (an `https` URL). Optional members are
/// typed as the specification types them (see ``check(_:)``); members it does not know are left alone, as browsers
/// ignore them. A payload that is not JSON, or whose `web_push` is absent or another value, is not declarative: it
/// stays opaque bytes for the site's service worker.
public enum WebPushDeclarativeMessage {
    /// The `web_push` value that marks a declarative message (the number of the Web Push RFC).
    public static let marker: Double = 8030

    /// The largest `app_badge`: a 64-bit unsigned integer.
    static let maximumBadge = Double(UInt64.max)

    /// Whether `payload` declares itself a declarative push message (`"web_push": 8030` at the top level).
    public static func isDeclarative(_ payload: some Collection<UInt8>) -> Bool {
        declaration(payload) != nil
    }

    /// Checks `payload` when it is declarative; does nothing otherwise. Throws ``HubError/Code/invalidNotification``
    /// naming the member and what it must be.
    public static func check(_ payload: some Collection<UInt8>) throws(HubError) {
        guard let root = declaration(payload) else { return }
        try check(root)
    }

    /// The top-level object when the payload is JSON with `"web_push": 8030`.
    static func declaration(_ payload: some Collection<UInt8>) -> [String: JSONValue]? {
        // Cheap pre-check: opaque payloads (most of them binary or other JSON) are not parsed.
        guard payload.first(where: { !Self.isWhitespace($0) }) == UInt8(ascii: "{") else { return nil }
        guard case .object(let root)? = try? JSONValue(parsing: Array(payload)),
            case .number(let marker)? = root["web_push"], marker == Self.marker
        else { return nil }
        return root
    }

    static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }

    /// The rules, member by member.
    static func check(_ root: [String: JSONValue]) throws(HubError) {
        guard let value = root["notification"] else {
            throw refusal("notification", "is required: an object with at least title and navigate")
        }
        guard case .object(let notification) = value else { throw refusal("notification", "must be an object") }
        guard let title = notification["title"] else { throw refusal("notification.title", "is required: a string") }
        guard case .string = title else { throw refusal("notification.title", "must be a string") }
        guard let navigate = notification["navigate"] else {
            throw refusal("notification.navigate", "is required: the https URL the browser opens when the notification is activated")
        }
        try httpsURL(navigate, "notification.navigate")
        for key in ["body", "lang", "tag"] {
            if let member = notification[key], member.stringValue == nil { throw refusal("notification.\(key)", "must be a string") }
        }
        if let dir = notification["dir"], !["auto", "ltr", "rtl"].contains(dir.stringValue ?? "") {
            throw refusal("notification.dir", #"must be "auto", "ltr" or "rtl""#)
        }
        for key in ["icon", "image", "badge"] {
            if let member = notification[key] { try url(member, "notification.\(key)") }
        }
        for key in ["silent", "renotify", "requireInteraction"] {
            guard let member = notification[key] else { continue }
            guard case .bool = member else { throw refusal("notification.\(key)", "must be true or false") }
        }
        if let timestamp = notification["timestamp"] {
            guard case .number(let number) = timestamp, number >= 0, number.rounded() == number, number <= 9_007_199_254_740_991
            else { throw refusal("notification.timestamp", "must be a whole number of milliseconds since 1970, not negative") }
        }
        if let vibrate = notification["vibrate"] {
            guard case .array(let pattern) = vibrate,
                pattern.allSatisfy({ if case .number(let n) = $0 { n >= 0 && n.rounded() == n } else { false } })
            else { throw refusal("notification.vibrate", "must be an array of whole numbers of milliseconds") }
        }
        if let actions = notification["actions"] {
            guard case .array(let list) = actions else { throw refusal("notification.actions", "must be an array") }
            for (index, action) in list.enumerated() {
                let path = "notification.actions[\(index)]"
                guard case .object(let members) = action else { throw refusal(path, "must be an object") }
                for key in ["action", "title"] where members[key]?.stringValue == nil {
                    throw refusal("\(path).\(key)", "is required: a string")
                }
                guard let target = members["navigate"] else {
                    throw refusal("\(path).navigate", "is required: an https URL")
                }
                try httpsURL(target, "\(path).navigate")
                if let icon = members["icon"] { try url(icon, "\(path).icon") }
            }
        }
        if let badge = root["app_badge"] { try appBadge(badge) }
        if let mutable = root["mutable"] {
            guard case .bool = mutable else { throw refusal("mutable", "must be true or false") }
        }
    }

    /// `app_badge`: a 64-bit unsigned integer, as a JSON number or a string of decimal digits.
    static func appBadge(_ value: JSONValue) throws(HubError) {
        switch value {
        case .number(let number) where number >= 0 && number.rounded() == number && number <= maximumBadge: return
        case .string(let text) where !text.isEmpty && text.utf8.count <= 20 && text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 })
            && UInt64(text) != nil:
            return
        default: throw refusal("app_badge", "must be a whole number from 0 to 18446744073709551615 (or those digits as a string)")
        }
    }

    static func httpsURL(_ value: JSONValue, _ path: String) throws(HubError) {
        guard case .string(let text) = value, let components = URLComponents(string: text),
            components.scheme?.lowercased() == "https", let host = components.host, !host.isEmpty
        else { throw refusal(path, "must be an absolute https URL, e.g. https://example.com/inbox") }
    }

    static func url(_ value: JSONValue, _ path: String) throws(HubError) {
        guard case .string(let text) = value, URLComponents(string: text) != nil else {
            throw refusal(path, "must be a URL string")
        }
    }

    static func refusal(_ path: String, _ rule: String) -> HubError {
        HubError(.invalidNotification, "declarative Web Push message (web_push 8030): \(path) \(rule)")
    }
}
