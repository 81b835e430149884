import Logging
import PostgresNIO
import Synchronization

/// Where a node reads sends' audiences (``HubDatabase/audienceRead(_:_:)`` and
/// ``HubDatabase/addressPage(tag:after:platforms:limit:)``): a streaming replica (`storage.postgres.readURL`) when
/// there is one, the primary otherwise. Everything else — writes, claims, and reads that must see the node's own
/// writes — stays on the primary.
///
/// A replica that gives no connection within ``leaseLimit`` (down, restarting, unreachable) or answers a read with
/// an error is set aside for ``setAside``: that read, and every audience read until then, runs on the primary; then
/// one read tries the replica again while the others keep to the primary. The node logs one warning per outage (and
/// one notice when the replica serves again). A fan-out never waits for a
/// replica that is gone, and never fails because of one.
final class PostgresAudienceReads: Sendable {
    let primary: PostgresClient
    let replica: PostgresClient?
    /// How long a read waits for a connection of the replica before it reads the primary instead.
    let leaseLimit: Duration
    /// How long a replica that failed is left out before a read tries it again.
    let setAside: Duration
    private let logger: Logger
    private let state = Mutex(State())

    private struct State {
        /// Until when reads go to the primary; `nil` while the replica serves.
        var setAsideUntil: ContinuousClock.Instant?
        /// Whether the replica failed since it last served (one warning per outage).
        var failing = false
    }

    init(
        primary: PostgresClient, replica: PostgresClient?, logger: Logger, leaseLimit: Duration = .seconds(2),
        setAside: Duration = .seconds(5)
    ) {
        self.primary = primary
        self.replica = replica
        self.logger = logger
        self.leaseLimit = leaseLimit
        self.setAside = setAside
    }

    /// Runs `body` on a connection of the replica, or of the primary where there is no replica or it is set aside or
    /// fails now. `body` may run twice (on the replica, then on the primary): it only reads.
    func withConnection<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        guard let replica, replicaInService() else { return try await primary.withConnection(body) }
        do {
            let result = try await onReplica(replica, body)
            replicaServed()
            return result
        } catch {
            if Task.isCancelled { throw error }
            replicaFailed(error)
            return try await primary.withConnection(body)
        }
    }

    /// Whether this read may try the replica now: while it serves, every read; once a set-aside has run out, one
    /// read tries it while the others keep to the primary (a replica still down delays one read, not all).
    private func replicaInService() -> Bool {
        state.withLock { state in
            guard let until = state.setAsideUntil else { return true }
            let now = ContinuousClock.now
            if now < until { return false }
            state.setAsideUntil = now + setAside
            return true
        }
    }

    private func replicaServed() {
        let recovered = state.withLock { state in
            defer {
                state.failing = false
                state.setAsideUntil = nil
            }
            return state.failing
        }
        if recovered { logger.notice("audience reads are served by the replica (storage.postgres.readURL) again") }
    }

    private func replicaFailed(_ error: any Error) {
        let first = state.withLock { state in
            state.setAsideUntil = ContinuousClock.now + setAside
            defer { state.failing = true }
            return !state.failing
        }
        // The error's description names no password (postgres-nio describes its errors generically).
        if first {
            logger.warning(
                "audience reads fall back to the primary: the replica (storage.postgres.readURL) did not answer; trying it again every \(setAside.components.seconds) s",
                metadata: ["error": "\(String(describing: error))"])
        }
    }

    /// Runs `body` on a connection of `replica`, failing when none is given within ``leaseLimit`` (the pool would
    /// otherwise keep the read waiting while it retries a server that is gone). Once `body` runs it is not limited.
    private func onReplica<T: Sendable>(
        _ replica: PostgresClient, _ body: @escaping @Sendable (PostgresConnection) async throws -> T
    ) async throws -> T {
        let leased = LeaseFlag()
        let limit = leaseLimit
        return try await withThrowingTaskGroup(of: Outcome<T>.self) { group in
            group.addTask {
                .read(try await replica.withConnection { connection in
                    leased.value.withLock { $0 = true }
                    return try await body(connection)
                })
            }
            group.addTask {
                try await Task.sleep(for: limit)
                guard leased.value.withLock({ $0 }) else {
                    throw HubError(.storageFailure, "the replica gave no connection within \(limit)")
                }
                return .leased
            }
            while let outcome = try await group.next() {
                if case .read(let value) = outcome {
                    group.cancelAll()
                    return value
                }
            }
            throw HubError(.storageFailure, "a replica read ended without an answer")
        }
    }

    /// Whether the replica's pool gave the read its connection.
    private final class LeaseFlag: Sendable {
        let value = Mutex(false)
    }

    private enum Outcome<Value: Sendable>: Sendable {
        case read(Value)
        case leased
    }
}
