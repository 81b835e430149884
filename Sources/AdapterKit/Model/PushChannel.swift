/// A device handle. Most platforms use a string; some (web push) use an object.
public enum PushChannel: Hashable, Sendable {
    /// A token or URI.
    case handle(String)
    /// A structured channel, e.g. `{"endpoint": …, "p256dh": …, "auth": …}`.
    case object([String: JSONValue])

    /// The handle string, if the channel is a string.
    public var handle: String? {
        if case .handle(let value) = self { return value }
        return nil
    }

    /// A stable string form used for storage and comparisons.
    public var storageKey: String {
        switch self {
        case .handle(let value): value
        case .object(let object): JSONValue.object(object).jsonString()
        }
    }
}

extension PushChannel: Codable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let value = try? container.decode(String.self) {
            self = .handle(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .handle(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }
}
