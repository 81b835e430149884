/// What WNS said of a notification in its `X-WNS-Status` answer header. A status WNS adds later arrives as
/// ``unknown(_:)``.
public enum WNSReason: Hashable, Sendable, CustomStringConvertible {
    /// The notification was accepted.
    case received
    /// The notification was dropped (the device is offline for a non-cached type, or the app's queue is full).
    case dropped
    /// The channel is throttled: the app sends too much to this device.
    case channelThrottled
    /// A status this adapter does not know, as WNS spelled it.
    case unknown(String)

    /// The status WNS names `rawValue` (case-insensitive), or ``unknown(_:)``.
    public init(rawValue: String) {
        switch rawValue.lowercased() {
        case "received": self = .received
        case "dropped": self = .dropped
        case "channelthrottled": self = .channelThrottled
        default: self = .unknown(rawValue)
        }
    }

    /// The status as WNS spells it.
    public var rawValue: String {
        switch self {
        case .received: "received"
        case .dropped: "dropped"
        case .channelThrottled: "channelthrottled"
        case .unknown(let text): text
        }
    }

    public var description: String { rawValue }
}
