import Foundation

/// Base64url without padding (RFC 4648 §5), as JWTs, VAPID keys and Web Push subscriptions use it.
///
/// ```swift
/// Base64URL.encode([0xfb, 0xff])   // "-_8"
/// Base64URL.decode("-_8")          // [0xfb, 0xff]
/// ```
public enum Base64URL {
    /// Encodes bytes without padding.
    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// Decodes base64url text, with or without padding; `nil` when it holds other characters or has an impossible
    /// length. Standard base64's `+` and `/` are refused, so one value has one spelling.
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        var unpadded = Substring(text)
        while unpadded.hasSuffix("=") { unpadded.removeLast() }
        guard unpadded.count % 4 != 1,
            unpadded.utf8.allSatisfy({ byte in
                (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39)
                    || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
            })
        else { return nil }
        var base64 = unpadded.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64.append("=") }
        return Data(base64Encoded: base64).map(Array.init)
    }
}
