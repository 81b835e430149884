import Crypto
import Foundation

/// How an event webhook delivery is signed: HMAC-SHA256 with the subscription's secret over the timestamp, a dot and
/// the body, sent as lower-case hex after `v1=`.
///
/// ```
/// Hub-Webhook-Id: 42
/// Hub-Webhook-Event: notification.completed
/// Hub-Webhook-Timestamp: 1795836765
/// Hub-Webhook-Signature: v1=5d4e…
/// ```
///
/// A receiver recomputes the HMAC over `"\(timestamp).\(body)"`, compares it in constant time, and refuses a timestamp
/// far from its own clock (five minutes is usual) so a captured request cannot be replayed later.
public enum WebhookSignature {
    /// The event's id (the same in every attempt and replay: receivers deduplicate by it).
    public static let idHeader = "Hub-Webhook-Id"
    /// The event's kind, e.g. `notification.failed`.
    public static let eventHeader = "Hub-Webhook-Event"
    /// Seconds since 1970 (UTC) when this attempt was signed.
    public static let timestampHeader = "Hub-Webhook-Timestamp"
    /// `v1=` and the signature in lower-case hex.
    public static let signatureHeader = "Hub-Webhook-Signature"

    /// The signature header's value for `body` signed at `timestamp`.
    public static func sign(body: some DataProtocol, timestamp: Int64, secret: String) -> String {
        var mac = HMAC<SHA256>(key: SymmetricKey(data: Data(secret.utf8)))
        mac.update(data: Data("\(timestamp).".utf8))
        mac.update(data: body)
        return "v1=" + Data(mac.finalize()).map { String(format: "%02x", $0) }.joined()
    }

    /// Whether `signature` (a header value) is the signature of `body` at `timestamp`, compared in constant time.
    public static func verify(signature: String, body: some DataProtocol, timestamp: Int64, secret: String) -> Bool {
        guard signature.hasPrefix("v1="), let given = hexBytes(signature.dropFirst(3)) else { return false }
        var mac = HMAC<SHA256>(key: SymmetricKey(data: Data(secret.utf8)))
        mac.update(data: Data("\(timestamp).".utf8))
        mac.update(data: body)
        return Data(mac.finalize()).elementsEqualInConstantTime(given)
    }

    static func hexBytes(_ text: Substring) -> Data? {
        guard text.count == 64 else { return nil }
        var bytes = Data()
        var index = text.startIndex
        while index < text.endIndex {
            let next = text.index(index, offsetBy: 2)
            guard let byte = UInt8(text[index..<next], radix: 16) else { return nil }
            bytes.append(byte)
            index = next
        }
        return bytes
    }
}

extension Data {
    /// Compares two byte strings without stopping at the first difference.
    func elementsEqualInConstantTime(_ other: Data) -> Bool {
        guard count == other.count else { return false }
        var difference: UInt8 = 0
        for (a, b) in zip(self, other) { difference |= a ^ b }
        return difference == 0
    }
}
