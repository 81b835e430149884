import NIOCore

extension Duration {
    /// The duration as NIO's `TimeAmount` (nanosecond precision).
    public var timeAmount: TimeAmount {
        let (seconds, attoseconds) = components
        return .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}
