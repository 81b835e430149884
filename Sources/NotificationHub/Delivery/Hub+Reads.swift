import Foundation

/// What the REST layer reads and cancels through the hub, so that it never reaches into a store.
extension Hub {
    /// A notification's telemetry, or `nil` when the hub has no such notification.
    public func record(id: String) async throws -> NotificationRecord? {
        try await notifications.record(id: id)
    }

    /// A page of a notification's per-device failures after `cursor`.
    public func failures(of id: String, after cursor: Int64?, limit: Int) async throws -> FeedbackPage {
        try await notifications.failures(id: id, after: cursor, limit: limit)
    }

    /// Cancels a notification that has not started; `false` when it is unknown or already started.
    public func cancel(id: String, now: Date) async throws -> Bool {
        try await notifications.cancel(id: id, now: now)
    }

    /// The most recent notifications, newest first.
    public func recentNotifications(after cursor: RecentNotificationCursor?, limit: Int) async throws -> RecentNotificationPage {
        try await notifications.recent(after: cursor, limit: limit)
    }

    /// A page of installations matching `expression` (all when `nil`).
    public func installations(
        matching expression: TagExpression?, after cursor: InstallationCursor?, limit: Int
    ) async throws -> InstallationPage {
        try await installations.query(InstallationQuery(expression: expression, kinds: .installations), after: cursor, limit: limit)
    }

    /// A page of the registrations `registrant` reaches: stored registrations and installations' projections.
    public func registrations(
        _ query: RegistrationQuery, after cursor: RegistrationCursor?, limit: Int, reachableBy registrant: Registrant
    ) async throws -> RegistrationPage {
        try await installations.registrations(query, after: cursor, limit: limit, reachableBy: registrant)
    }
}
