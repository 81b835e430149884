import Synchronization

/// Keeps a partition's lease while the partition is delivered: renews it a quarter of the lease after the last
/// renewal, and reports the first renewal that fails.
///
/// The waits are entries of a ``DeadlineScheduler`` (the hub's, ``DeadlineScheduler/shared`` unless a test gives
/// the hub a clock of its own): a per-user send ends long before its first renewal is due,
/// and then its renewal cost a lock to schedule and one to cancel, instead of a task and a timer.
final class LeaseRenewal: Sendable {
    private struct State {
        var token: DeadlineScheduler.Token?
        var stopped = false
        var failure: (any Error)?
        var onFailure: (@Sendable () -> Void)?
    }

    private let state = Mutex(State())
    private let interval: Duration
    private let scheduler: DeadlineScheduler
    private let renew: @Sendable () async throws -> Void

    /// Renews every `interval` of `scheduler`'s clock with `renew`, which throws when the lease is lost or cannot be
    /// renewed in time.
    init(
        every interval: Duration, scheduler: DeadlineScheduler = .shared,
        renew: @escaping @Sendable () async throws -> Void
    ) {
        self.interval = interval
        self.scheduler = scheduler
        self.renew = renew
    }

    /// Starts renewing; `onFailure` runs once, when a renewal fails.
    func start(onFailure: @escaping @Sendable () -> Void) {
        state.withLock { $0.onFailure = onFailure }
        scheduleNext()
    }

    /// Stops renewing; a renewal under way ends without scheduling another.
    func stop() {
        let token = state.withLock { state -> DeadlineScheduler.Token? in
            state.stopped = true
            defer { state.token = nil }
            return state.token
        }
        if let token { scheduler.cancel(token) }
    }

    /// The error of the renewal that failed, if one did.
    var failure: (any Error)? { state.withLock { $0.failure } }

    private func scheduleNext() {
        let token = scheduler.schedule(after: interval) { Task { await self.renewNow() } }
        let stopped = state.withLock { state -> Bool in
            if !state.stopped { state.token = token }
            return state.stopped
        }
        if stopped { scheduler.cancel(token) }
    }

    private func renewNow() async {
        guard !state.withLock({ $0.stopped }) else { return }
        do {
            try await renew()
            scheduleNext()
        } catch {
            let onFailure = state.withLock { state -> (@Sendable () -> Void)? in
                guard !state.stopped, state.failure == nil else { return nil }
                state.failure = error
                defer { state.onFailure = nil }
                return state.onFailure
            }
            onFailure?()
        }
    }
}
