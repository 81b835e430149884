import DequeModule
import Synchronization

/// Group commit: concurrent single-item writes are combined into one transaction.
///
/// A database write costs a few round trips to the database thread or server no matter how many rows it carries,
/// and writers are serialised (SQLite has one writer). Under concurrent load, the first caller becomes the leader:
/// it writes every item queued behind it (up to `maximumBatch`) with one call of `write`, hands each caller its
/// result, then passes the lead to the next queued caller. A lone caller writes its item alone with no added delay.
///
/// When a combined write fails, each of its items is written again on its own, so one bad item fails only its own
/// caller.
public final class WriteCombiner<Item: Sendable, Output: Sendable>: Sendable {
    /// Writes items in one transaction, returning one output per item in order.
    public typealias Write = @Sendable ([Item]) async throws -> [Output]

    private enum Turn {
        case finished(Output)
        case lead
    }

    private struct Waiter {
        var item: Item
        var continuation: CheckedContinuation<Turn, any Error>
    }

    private struct State {
        var queue: Deque<Waiter> = []
        var leading = false
    }

    private let state = Mutex(State())
    private let maximumBatch: Int
    private let write: Write

    /// Combines up to `maximumBatch` items per call of `write`.
    public init(maximumBatch: Int = 256, write: @escaping Write) {
        self.maximumBatch = max(1, maximumBatch)
        self.write = write
    }

    /// Writes `item`, possibly together with other callers' items; returns its output or throws its error.
    public func submit(_ item: Item) async throws -> Output {
        let turn = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Turn, any Error>) in
            let leadNow = state.withLock { state -> Bool in
                state.queue.append(Waiter(item: item, continuation: continuation))
                if state.leading { return false }
                state.leading = true
                return true
            }
            if leadNow { continuation.resume(returning: .lead) }
        }
        switch turn {
        case .finished(let output):
            return output
        case .lead:
            return try await lead().get()
        }
    }

    /// Writes the batch at the head of the queue, whose first item is the leader's own, and passes the lead on.
    private func lead() async -> Result<Output, any Error> {
        let batch = state.withLock { state in
            let count = min(maximumBatch, state.queue.count)
            defer { state.queue.removeFirst(count) }
            return Array(state.queue.prefix(count))
        }
        let outputs = await outcomes(of: batch.map(\.item))
        for (waiter, outcome) in zip(batch.dropFirst(), outputs.dropFirst()) {
            switch outcome {
            case .success(let output): waiter.continuation.resume(returning: .finished(output))
            case .failure(let error): waiter.continuation.resume(throwing: error)
            }
        }
        let next = state.withLock { state -> Waiter? in
            guard let next = state.queue.first else {
                state.leading = false
                return nil
            }
            return next
        }
        next?.continuation.resume(returning: .lead)
        return outputs[0]
    }

    /// Runs `write` in a task of its own: the leader's cancellation must not fail the other callers' writes, nor stop
    /// its own once begun (on a database whose reads share the writer's connection, a transaction stopped half-way
    /// would have shown readers what it then rolls back).
    private func isolated(_ items: [Item]) async throws -> [Output] {
        let write = self.write
        return try await Task { try await write(items) }.value
    }

    /// One outcome per item: the combined write's, or each item's own when the combined write failed.
    private func outcomes(of items: [Item]) async -> [Result<Output, any Error>] {
        do {
            let outputs = try await isolated(items)
            guard outputs.count == items.count else {
                throw HubError(.storageFailure, "a combined write returned \(outputs.count) results for \(items.count) items")
            }
            return outputs.map { .success($0) }
        } catch {
            guard items.count > 1 else { return [.failure(error)] }
            var outcomes: [Result<Output, any Error>] = []
            for item in items {
                do {
                    let output = try await isolated([item])
                    guard let first = output.first else {
                        throw HubError(.storageFailure, "a write returned no result")
                    }
                    outcomes.append(.success(first))
                } catch {
                    outcomes.append(.failure(error))
                }
            }
            return outcomes
        }
    }
}
