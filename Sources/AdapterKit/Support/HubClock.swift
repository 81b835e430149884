import Foundation

/// A source of wall-clock time, so that expiry, scheduling and purging can be tested with a fixed or moving clock.
public protocol WallClock: Sendable {
    /// The current time.
    func now() -> Date
}

/// The system's wall clock.
public struct SystemWallClock: WallClock {
    /// Creates the system clock.
    public init() {}
    public func now() -> Date { Date() }
}

/// A wall clock that moves only when told to; for tests.
public final class ManualWallClock: WallClock, @unchecked Sendable {
    // `lock` guards `current`.
    private let lock = NSLock()
    private var current: Date

    /// Creates a clock showing `start`.
    public init(_ start: Date = Date(timeIntervalSince1970: 1_800_000_000)) {
        self.current = start
    }

    public func now() -> Date {
        lock.withLock { current }
    }

    /// Moves the clock forward.
    public func advance(by seconds: TimeInterval) {
        lock.withLock { current += seconds }
    }
}
