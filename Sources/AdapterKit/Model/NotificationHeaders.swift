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

    /// `ServiceBusNotification-Expiry`: when a notification stops being worth delivering (ISO 8601), set by a send,
    /// a template's expiry or a secure notification's lifetime. Adapters carry it in their platform's own terms.
    public static let expiry = "ServiceBusNotification-Expiry"

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
