import Foundation

/// Where a notification is in its life, in Azure Notification Hubs' vocabulary.
public struct NotificationState: Hashable, Sendable, CustomStringConvertible {
    /// The state's name, e.g. `Completed`.
    public let name: String
    /// Creates a state from its name.
    public init(_ name: String) { self.name = name }
    public var description: String { name }

    /// Accepted and waiting for a worker.
    public static let enqueued = NotificationState("Enqueued")
    /// Waiting for its scheduled time.
    public static let scheduled = NotificationState("Scheduled")
    /// A worker is fanning it out.
    public static let processing = NotificationState("Processing")
    /// Every target was attempted.
    public static let completed = NotificationState("Completed")
    /// Not handed to the platforms within the abandon window.
    public static let abandoned = NotificationState("Abandoned")
    /// The audience matched no installation.
    public static let noTargetFound = NotificationState("NoTargetFound")
    /// Cancelled before it started.
    public static let cancelled = NotificationState("Cancelled")

    /// Whether the state is final.
    public var isFinal: Bool {
        [.completed, .abandoned, .noTargetFound, .cancelled].contains(self)
    }
}

/// A stored notification and its telemetry.
public struct NotificationRecord: Sendable {
    /// The notification as accepted.
    public var notification: Notification
    /// Its state.
    public var state: NotificationState
    /// When it was accepted.
    public var enqueueTime: Date
    /// When it is due (scheduled sends).
    public var scheduledTime: Date?
    /// When a worker started it.
    public var startTime: Date?
    /// When it finished.
    public var endTime: Date?
    /// Outcome counts so far, per platform.
    public var summary: DispatchSummary
    /// Why the notification ended without being delivered, when it did.
    public var reason: String?

    /// Creates a record.
    public init(
        notification: Notification, state: NotificationState, enqueueTime: Date, scheduledTime: Date? = nil,
        startTime: Date? = nil, endTime: Date? = nil, summary: DispatchSummary = DispatchSummary(), reason: String? = nil
    ) {
        self.reason = reason
        self.notification = notification
        self.state = state
        self.enqueueTime = enqueueTime
        self.scheduledTime = scheduledTime
        self.startTime = startTime
        self.endTime = endTime
        self.summary = summary
    }
}
