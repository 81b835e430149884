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

/// A monotonic clock for deadlines and waits (lease renewals and their time limits), so that they can be tested on a
/// clock that moves only when told to instead of in real time.
public protocol MonotonicClock: Sendable {
    /// The current instant.
    func instant() -> ContinuousClock.Instant
    /// Waits until `deadline`; throws `CancellationError` when the waiting task is cancelled.
    func sleep(until deadline: ContinuousClock.Instant) async throws
}

/// The system's continuous clock.
public struct SystemMonotonicClock: MonotonicClock {
    /// Creates the system clock.
    public init() {}
    public func instant() -> ContinuousClock.Instant { .now }
    public func sleep(until deadline: ContinuousClock.Instant) async throws {
        try await Task.sleep(until: deadline, clock: .continuous)
    }
}

/// A clock that moves only when told to; for tests. Its wall time and its monotonic instant move together, and
/// ``advance(by:)`` ends the waits whose deadline it passes.
public final class ManualWallClock: WallClock, MonotonicClock, @unchecked Sendable {
    private struct Waiter {
        var deadline: ContinuousClock.Instant
        var continuation: CheckedContinuation<Void, any Error>
    }

    // `lock` guards `current`, `offset`, `waiters` and `lastWaiter`.
    private let lock = NSLock()
    private var current: Date
    private let start = ContinuousClock.now
    private var offset: Duration = .zero
    private var waiters: [UInt64: Waiter] = [:]
    private var lastWaiter: UInt64 = 0

    /// Creates a clock showing `start`.
    public init(_ start: Date = Date(timeIntervalSince1970: 1_800_000_000)) {
        self.current = start
    }

    public func now() -> Date {
        lock.withLock { current }
    }

    public func instant() -> ContinuousClock.Instant {
        lock.withLock { start + offset }
    }

    public func sleep(until deadline: ContinuousClock.Instant) async throws {
        let id = lock.withLock { () -> UInt64 in
            lastWaiter &+= 1
            return lastWaiter
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let due = lock.withLock { () -> Bool in
                    if Task.isCancelled || start + offset >= deadline { return true }
                    waiters[id] = Waiter(deadline: deadline, continuation: continuation)
                    return false
                }
                if due { continuation.resume() }
            }
        } onCancel: {
            let waiter = lock.withLock { waiters.removeValue(forKey: id) }
            waiter?.continuation.resume(throwing: CancellationError())
        }
        try Task.checkCancellation()
    }

    /// Moves the clock forward, ending the waits that are then due.
    public func advance(by seconds: TimeInterval) {
        let due = lock.withLock { () -> [Waiter] in
            current += seconds
            offset += .seconds(seconds)
            let now = start + offset
            let due = waiters.filter { $0.value.deadline <= now }
            for id in due.keys { waiters[id] = nil }
            return Array(due.values)
        }
        for waiter in due { waiter.continuation.resume() }
    }
}
