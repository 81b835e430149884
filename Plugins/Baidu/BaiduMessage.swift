import AdapterKit
import Foundation
import NIOCore

/// A notification in the `baidu` format, checked against Baidu Cloud Push's message rules.
///
/// The body is the REST API's `msg` parameter as Azure's `BaiduNotification` carries it (the .NET SDK sends the
/// message text as the body, e.g. `{"title":"Title","description":"Description"}`), and the header
/// `X-Baidu-Message-Type` carries `msg_type`: `0` a pass-through message handed to the app, `1` a notification shown
/// by the system; without it the message is a pass-through one, Baidu's own default ("Http Rest API 开发文档 V3.0",
/// `push/single_device`: "msg_type … 0:消息;1:通知。默认为0", http://push.baidu.com/doc/restapi/restapi).
///
/// Checked here: `msg` is a JSON object ("消息内容,json格式") of at most 4,096 bytes; an Android notification has a
/// string `description` (the notification's text, required), and `title`, `url`, `pkg_content` as strings,
/// `notification_builder_id`, `notification_basic_style` and `open_type` as integers, `custom_content` as an
/// object when given ("消息/通知数据格式"); an iOS notification has an `aps` object. `ServiceBusNotification-Expiry`,
/// when given, becomes `msg_expires` (the seconds left, within the method's range).
public struct BaiduMessage: Sendable, Hashable {
    /// The largest `msg` accepted, in bytes.
    public static let maximumBytes = 4096
    /// The header carrying `msg_type` (Azure's `BaiduNotification.MessageType`).
    public static let messageTypeHeader = "X-Baidu-Message-Type"

    /// `msg_type`.
    public enum MessageType: Int, Sendable, Hashable {
        /// `0`: a pass-through message, handed to the app.
        case message = 0
        /// `1`: a notification the system shows.
        case notification = 1
    }

    /// A payload Baidu would refuse: the reason Baidu would give, and the error the hub answers with.
    public struct Refusal: Error, Sendable {
        /// What Baidu would answer.
        public var reason: BaiduReason
        /// The hub's error, saying what to fix.
        public var error: HubError
    }

    /// `msg_type`.
    public let type: MessageType
    /// `msg`, as sent.
    public let text: String
    /// When the message expires, from `ServiceBusNotification-Expiry` (ISO 8601 or Unix seconds), if the send says;
    /// sent as `msg_expires`, the seconds left.
    public let expiry: Date?

    /// Checks a payload and its headers for an app of `deviceType`.
    /// - Throws: ``HubError`` with `payloadTooLarge` or `invalidNotification`, saying what to fix.
    public init(payload: ByteBuffer, headers: NotificationHeaders, deviceType: BaiduSettings.DeviceType) throws(HubError) {
        switch Self.check(payload, headers: headers, deviceType: deviceType) {
        case .success(let message): self = message
        case .failure(let refusal): throw refusal.error
        }
    }

    init(type: MessageType, text: String, expiry: Date? = nil) {
        self.type = type
        self.text = text
        self.expiry = expiry
    }

    /// A `ServiceBusNotification-Expiry` value: Unix seconds or an ISO 8601 time.
    static func date(_ text: String) -> Date? {
        if let seconds = PlatformNumber.int64(text) { return Date(timeIntervalSince1970: Double(seconds)) }
        if let date = try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text) { return date }
        return try? Date.ISO8601FormatStyle().parse(text)
    }

    /// `msg_expires` for a message sent at `now`: the whole seconds left until ``expiry``, within `range`.
    public func messageExpires(now: Date, in range: ClosedRange<Int>) -> Int? {
        guard let expiry else { return nil }
        let seconds = expiry.timeIntervalSince(now).rounded(.down)
        guard !seconds.isNaN else { return range.lowerBound }
        return Int(min(Double(range.upperBound), max(Double(range.lowerBound), seconds)))
    }

    /// Checks a payload and its headers, naming the reason Baidu would refuse them with.
    public static func check(
        _ payload: ByteBuffer, headers: NotificationHeaders, deviceType: BaiduSettings.DeviceType
    ) -> Result<BaiduMessage, Refusal> {
        func refuse(_ message: String, tooLarge: Bool = false) -> Result<BaiduMessage, Refusal> {
            .failure(Refusal(reason: .requestParamsNotValid, error: HubError(tooLarge ? .payloadTooLarge : .invalidNotification, message)))
        }
        var type = MessageType.message
        if let value = headers[messageTypeHeader] {
            guard let number = Int(value.trimmingCharacters(in: .whitespaces)), let given = MessageType(rawValue: number) else {
                return refuse("\(messageTypeHeader) must be 0 (a pass-through message) or 1 (a notification); got '\(value.prefix(20))'")
            }
            type = given
        }
        if payload.readableBytes > maximumBytes {
            return refuse("a baidu msg is at most \(maximumBytes) bytes; this one is \(payload.readableBytes)", tooLarge: true)
        }
        var expiry: Date?
        if let value = headers[NotificationHeaders.expiry] {
            guard let date = date(value) else {
                return refuse("\(NotificationHeaders.expiry) must be an ISO 8601 time or Unix seconds; got '\(value.prefix(40))'")
            }
            expiry = date
        }
        let bytes = Array(payload.readableBytesView)
        guard let text = String(validatingUTF8Bytes: bytes), case .object(let root)? = try? JSONValue(parsing: bytes) else {
            return refuse(#"a baidu payload is the msg JSON object, e.g. {"title":"Hello","description":"World"}"#)
        }
        guard type == .notification else { return .success(BaiduMessage(type: type, text: text, expiry: expiry)) }
        switch deviceType {
        case .android:
            guard case .string(let description)? = root["description"], !description.isEmpty else {
                return refuse(
                    #"an Android notification (X-Baidu-Message-Type: 1) needs "description", its text: {"title":"Hello","description":"World"}"#)
            }
            for key in ["title", "url", "pkg_content"] {
                if let value = root[key], value.stringValue == nil {
                    return refuse("\(key) is a \(value.typeName); it must be a string")
                }
            }
            for key in ["notification_builder_id", "notification_basic_style", "open_type"] {
                if let value = root[key] {
                    guard case .number(let number) = value, let whole = PlatformNumber.int64(number), Double(whole) == number else {
                        return refuse("\(key) must be a whole number")
                    }
                }
            }
            if let value = root["custom_content"], value.objectValue == nil {
                return refuse("custom_content is a \(value.typeName); it must be an object of the app's keys and values")
            }
        case .ios:
            guard root["aps"]?.objectValue != nil else {
                return refuse(#"an iOS notification (X-Baidu-Message-Type: 1) needs an "aps" object: {"aps":{"alert":"Hello"}}"#)
            }
        }
        return .success(BaiduMessage(type: type, text: text, expiry: expiry))
    }
}

extension String {
    /// The text of `bytes` when they are valid UTF-8.
    init?(validatingUTF8Bytes bytes: [UInt8]) {
        guard let text = String(bytes: bytes, encoding: .utf8) else { return nil }
        self = text
    }
}
