import AdapterKit
import Foundation
import NIOCore

/// A notification in the `adm` format, checked against Amazon Device Messaging's message rules, sent as it came.
///
/// The body is the JSON object ADM's send API takes (https://developer.amazon.com/docs/adm/send-message.html,
/// "Request format"): `data`, a map of string keys to **string** values, at most 6 KB as ADM counts it (the map
/// written without white space); `consolidationKey`, a string of at most 64 characters; `expiresAfter`, whole
/// seconds from 60 (a minute) to 2,678,400 (31 days); `md5`, the base64 MD5 checksum of the data. Nothing else.
public struct ADMMessage: Sendable {
    /// The largest `data` ADM accepts, in bytes (`MessageTooLarge` above it).
    public static let maximumDataBytes = 6 * 1024
    /// The largest whole body the hub accepts: the data's limit plus room for the other members.
    public static let maximumBytes = 8 * 1024
    /// The longest `consolidationKey`, in characters.
    public static let maximumConsolidationKeyLength = 64
    /// The `expiresAfter` ADM accepts, in seconds.
    public static let expiresAfterRange = 60...2_678_400
    /// The members a message may hold.
    public static let members: Set<String> = ["data", "consolidationKey", "expiresAfter", "md5"]

    /// A payload ADM would refuse: the reason ADM would give, and the error the hub answers with.
    public struct Refusal: Error, Sendable {
        /// What ADM would answer.
        public var reason: ADMReason
        /// The hub's error, saying what to fix.
        public var error: HubError
    }

    /// The data map.
    public let data: [String: String]
    /// The body, as sent.
    public let body: ByteBuffer

    /// Checks a payload.
    /// - Throws: ``HubError`` with `payloadTooLarge` or `invalidNotification`, saying what to fix.
    public init(payload: ByteBuffer) throws(HubError) {
        switch Self.check(payload) {
        case .success(let message): self = message
        case .failure(let refusal): throw refusal.error
        }
    }

    private init(data: [String: String], body: ByteBuffer) {
        self.data = data
        self.body = body
    }

    /// Checks a payload, naming the reason ADM would refuse it with.
    public static func check(_ payload: ByteBuffer) -> Result<ADMMessage, Refusal> {
        func refuse(_ reason: ADMReason, _ message: String) -> Result<ADMMessage, Refusal> {
            let code: HubError.Code = reason == .messageTooLarge ? .payloadTooLarge : .invalidNotification
            return .failure(Refusal(reason: reason, error: HubError(code, message)))
        }
        if payload.readableBytes > maximumBytes {
            return refuse(.messageTooLarge, "an adm message is at most \(maximumBytes) bytes; this one is \(payload.readableBytes)")
        }
        guard case .object(let root)? = try? JSONValue(parsing: Array(payload.readableBytesView)) else {
            return refuse(.invalidData, #"an adm payload is a JSON object: {"data": {"key": "value"}}"#)
        }
        for key in root.keys.sorted() where !members.contains(key) {
            return refuse(.invalidData, "an adm message holds data, consolidationKey, expiresAfter and md5, not \"\(key.prefix(40))\"")
        }
        guard case .object(let dataMembers)? = root["data"] else {
            return refuse(.invalidData, #"an adm message needs "data", an object of strings ({} for none): {"data": {"key": "value"}}"#)
        }
        var data: [String: String] = [:]
        for (key, value) in dataMembers {
            guard let text = value.stringValue else {
                return refuse(.invalidData, "data.\(key.prefix(40)) is a \(value.typeName); ADM data values must be strings")
            }
            data[key] = text
        }
        let dataBytes = JSONValue.object(dataMembers).jsonString().utf8.count
        if dataBytes > maximumDataBytes {
            return refuse(.messageTooLarge, "adm data is at most \(maximumDataBytes) bytes written without white space; this is \(dataBytes)")
        }
        if let key = root["consolidationKey"] {
            guard let text = key.stringValue, !text.isEmpty, text.count <= maximumConsolidationKeyLength else {
                return refuse(.invalidConsolidationKey, "consolidationKey must be a string of 1 to \(maximumConsolidationKeyLength) characters")
            }
        }
        if let expires = root["expiresAfter"] {
            guard case .number(let seconds) = expires, let whole = PlatformNumber.int64(seconds), Double(whole) == seconds,
                expiresAfterRange.contains(Int(whole))
            else {
                return refuse(.invalidExpiration, "expiresAfter must be whole seconds from 60 to 2678400 (31 days)")
            }
        }
        if let md5 = root["md5"] {
            guard let text = md5.stringValue, let digest = Data(base64Encoded: text), digest.count == 16 else {
                return refuse(.invalidChecksum, "md5 must be the base64 MD5 checksum of the data (16 bytes, 24 characters)")
            }
        }
        return .success(ADMMessage(data: data, body: payload))
    }
}
