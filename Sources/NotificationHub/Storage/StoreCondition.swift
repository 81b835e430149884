import Foundation
import PostgresNIO
import SQLiteNIO
import Synchronization

extension HubError.Code {
    /// The store refused a write because its disk (or the database's space) is full. Nothing of the write was
    /// stored; it may be retried once space is freed.
    public static let storeFull = HubError.Code("StoreFull")
}

/// Whether a hub's store takes writes: degraded from a write refused for want of disk space until a write succeeds
/// with no refusal in the ``holdSeconds`` before it. `/healthz` reports it.
///
/// Some writes still succeed on a full disk (an update that fits in its page, a heartbeat): the hold keeps the store
/// degraded while refusals keep coming, and lets it recover once writes have gone through for that long.
public final class StoreCondition: Sendable {
    /// A store that refused a write for want of space.
    public struct Degraded: Sendable, Equatable {
        /// The first refusal since the store was last healthy.
        public var since: Date
        /// The latest refusal.
        public var lastRefusal: Date
        /// The cause, as the refused caller was told.
        public var reason: String
    }

    private struct State {
        var degraded: Degraded?
        var holdSeconds: Double
    }

    private let state: Mutex<State>

    /// Creates a healthy condition; a success clears a degradation only `holdSeconds` after the last refusal.
    public init(holdSeconds: Double = 10) {
        state = Mutex(State(degraded: nil, holdSeconds: holdSeconds))
    }

    /// The degradation, or `nil` while the store takes writes.
    public var degraded: Degraded? { state.withLock { $0.degraded } }

    /// Seconds after the last refusal before a successful write clears the degradation.
    var holdSeconds: Double {
        get { state.withLock { $0.holdSeconds } }
        set { state.withLock { $0.holdSeconds = newValue } }
    }

    /// Runs a write: a refusal for want of space is thrown as ``HubError/Code/storeFull`` and degrades the store; a
    /// success may clear the degradation.
    func write<T>(_ body: () async throws -> T) async throws -> T {
        let result: T
        do {
            result = try await body()
        } catch {
            guard let full = Self.storeFull(error) else { throw error }
            let now = Date()
            state.withLock { state in
                state.degraded = Degraded(since: state.degraded?.since ?? now, lastRefusal: now, reason: full.message)
            }
            throw full
        }
        state.withLock { state in
            if let degraded = state.degraded, Date().timeIntervalSince(degraded.lastRefusal) >= state.holdSeconds {
                state.degraded = nil
            }
        }
        return result
    }

    /// `error` as ``HubError/Code/storeFull`` when it is a refusal for want of space: SQLite's `SQLITE_FULL`,
    /// PostgreSQL's `53100 disk_full`, or a store-full error already; otherwise `nil`.
    public static func storeFull(_ error: any Error) -> HubError? {
        switch error {
        case let error as HubError where error.code == .storeFull:
            return error
        case let error as SQLiteError where error.reason == .full:
            return HubError(
                .storeFull,
                "the store refused the write: the disk of its SQLite database is full (SQLITE_FULL); nothing was stored. "
                    + "Free space on the volume or grow it, then retry")
        case let error as PSQLError where error.serverInfo?[.sqlState] == PostgresError.Code.diskFull.raw:
            return HubError(
                .storeFull,
                "the store refused the write: the PostgreSQL server's disk is full (53100 disk_full); nothing was stored. "
                    + "Free space on the server's volume or grow it, then retry")
        default:
            return nil
        }
    }
}
