import AdapterKit
import Foundation

/// How the Web Push emulator judges a decrypted message that declares itself a Declarative Web Push message
/// (`"web_push": 8030`), as a browser supporting it (Safari 18.4+) would parse it. Other payloads are not judged.
enum WebPushDeclarativeRules {
    /// Whether `payload` is a JSON object with `"web_push": 8030`.
    static func isDeclarative(_ payload: [UInt8]) -> Bool {
        declaration(payload) != nil
    }

    /// The first rule a declarative payload breaks, naming the member; `nil` when it is well-formed or not declarative.
    static func violation(in payload: [UInt8]) -> String? {
        guard let root = declaration(payload) else { return nil }
        guard case .object(let notification)? = root["notification"] else { return "notification must be an object" }
        guard case .string? = notification["title"] else { return "notification.title must be a string" }
        guard isHTTPS(notification["navigate"]) else { return "notification.navigate must be an https URL" }
        for key in ["body", "lang", "tag"] where notification[key] != nil && notification[key]?.stringValue == nil {
            return "notification.\(key) must be a string"
        }
        if let dir = notification["dir"], !["auto", "ltr", "rtl"].contains(dir.stringValue ?? "") {
            return "notification.dir must be auto, ltr or rtl"
        }
        for key in ["icon", "image", "badge"] where notification[key] != nil {
            guard let text = notification[key]?.stringValue, URLComponents(string: text) != nil else {
                return "notification.\(key) must be a URL"
            }
        }
        for key in ["silent", "renotify", "requireInteraction"] where notification[key] != nil {
            guard case .bool? = notification[key] else { return "notification.\(key) must be a boolean" }
        }
        if let timestamp = notification["timestamp"] {
            guard case .number(let value) = timestamp, value >= 0, value.rounded() == value else {
                return "notification.timestamp must be a non-negative integer"
            }
        }
        if let vibrate = notification["vibrate"] {
            guard case .array(let items) = vibrate,
                items.allSatisfy({ if case .number(let value) = $0 { value >= 0 && value.rounded() == value } else { false } })
            else { return "notification.vibrate must be an array of non-negative integers" }
        }
        if let actions = notification["actions"] {
            guard case .array(let items) = actions else { return "notification.actions must be an array" }
            for (index, item) in items.enumerated() {
                guard case .object(let action) = item, action["action"]?.stringValue != nil,
                    action["title"]?.stringValue != nil, isHTTPS(action["navigate"])
                else { return "notification.actions[\(index)] needs action, title and an https navigate" }
            }
        }
        if let badge = root["app_badge"] {
            switch badge {
            case .number(let value) where value >= 0 && value.rounded() == value && value <= Double(UInt64.max): break
            case .string(let text) where UInt64(text) != nil && text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }): break
            default: return "app_badge must be a 64-bit unsigned integer"
            }
        }
        if let mutable = root["mutable"] {
            guard case .bool = mutable else { return "mutable must be a boolean" }
        }
        return nil
    }

    private static func declaration(_ payload: [UInt8]) -> [String: JSONValue]? {
        guard case .object(let root)? = try? JSONValue(parsing: payload), case .number(8030)? = root["web_push"] else {
            return nil
        }
        return root
    }

    private static func isHTTPS(_ value: JSONValue?) -> Bool {
        guard let text = value?.stringValue, let url = URLComponents(string: text) else { return false }
        return url.scheme?.lowercased() == "https" && !(url.host ?? "").isEmpty
    }
}
