import Synchronization

/// Runs `body`, throwing `timeout` when it has not finished within `limit`, and throwing `CancellationError` at once
/// when the caller is cancelled. For calls that must not outlast a deadline whatever the network does: a database
/// call waiting for a connection that cannot be made, or on a connection that no longer answers.
///
/// Unlike a task group, which waits for every child, the caller is answered at the deadline even if `body` ignores
/// cancellation: `body` is cancelled and left to end on its own, its result discarded. The deadline is one entry of
/// ``DeadlineScheduler/shared``, not a timer of its own: most calls answer long before it.
func withTimeLimit<T: Sendable>(
    _ limit: Duration, timeout: @autoclosure @escaping @Sendable () -> HubError, scheduler: DeadlineScheduler = .shared,
    _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    let outcome = FirstOutcome<T>()
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            outcome.start(continuation)
            let work = Task {
                do {
                    outcome.finish(.success(try await body()))
                } catch {
                    outcome.finish(.failure(error))
                }
            }
            let timer = scheduler.schedule(after: limit) { outcome.finish(.failure(timeout())) }
            outcome.onFinish {
                work.cancel()
                scheduler.cancel(timer)
            }
        }
    } onCancel: {
        outcome.finish(.failure(CancellationError()))
    }
}

/// The first of several outcomes resumes a continuation; later ones are dropped.
private final class FirstOutcome<T: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<T, any Error>?
        /// An outcome that came before the continuation was stored (a cancellation before the start).
        var early: Result<T, any Error>?
        var finished = false
        var cleanup: (@Sendable () -> Void)?
    }

    private let state = Mutex(State())

    func start(_ continuation: CheckedContinuation<T, any Error>) {
        let early = state.withLock { state -> Result<T, any Error>? in
            if let early = state.early {
                state.finished = true
                return early
            }
            state.continuation = continuation
            return nil
        }
        if let early { continuation.resume(with: early) }
    }

    /// Runs `cleanup` once the first outcome is in (at once if it already is).
    func onFinish(_ cleanup: @escaping @Sendable () -> Void) {
        let now = state.withLock { state -> Bool in
            if state.finished { return true }
            state.cleanup = cleanup
            return false
        }
        if now { cleanup() }
    }

    func finish(_ result: Result<T, any Error>) {
        let (continuation, cleanup) = state.withLock { state -> (CheckedContinuation<T, any Error>?, (@Sendable () -> Void)?) in
            guard !state.finished else { return (nil, nil) }
            guard let continuation = state.continuation else {
                if state.early == nil { state.early = result }
                return (nil, nil)
            }
            state.finished = true
            state.continuation = nil
            defer { state.cleanup = nil }
            return (continuation, state.cleanup)
        }
        continuation?.resume(with: result)
        cleanup?()
    }
}
