import Foundation

/// A device's report about a notification it received.
public struct ReceiptReport: Sendable, Hashable {
    /// The notification.
    public var notificationID: String
    /// The reporting installation.
    public var installationID: String
    /// What happened.
    public var kind: ReceiptKind

    /// Creates a report.
    public init(notificationID: String, installationID: String, kind: ReceiptKind) {
        self.notificationID = notificationID
        self.installationID = installationID
        self.kind = kind
    }
}

extension Hub {
    /// The hub's receipts; `nil` for a hub made on stores without a database.
    public var receipts: NotificationReceipts? { core.database.map(NotificationReceipts.init(database:)) }

    /// The one refusal for a receipt of a notification that does not exist, was not sent to the installation, or an
    /// installation the caller does not reach: nothing tells these apart.
    public static let receiptRefused = HubError(
        .notFound, "no notification with this id was sent to this installation")

    /// Records a device's receipt after checking that `registrant` reaches the installation and that the
    /// notification (started or finished, not waiting) was addressed to it: its format reaches the installation's
    /// platform and its audience includes the installation. Returns whether the receipt is new.
    ///
    /// - Throws: ``receiptRefused`` for an unknown or foreign notification or installation, alike.
    public func recordReceipt(_ report: ReceiptReport, as registrant: Registrant) async throws -> Bool {
        guard let receipts,
            Identifier.isValid(report.notificationID, as: .notificationID),
            Identifier.isValid(report.installationID, as: .installationID),
            let installation = try await installations.installation(id: report.installationID, as: registrant),
            let record = try await sends.record(id: report.notificationID),
            [.processing, .completed].contains(record.state),
            configuration.adapters.platforms(for: record.notification.format).contains(installation.platform),
            Self.audience(of: record.notification, includes: installation)
        else { throw Self.receiptRefused }
        return try await receipts.record(
            notificationID: report.notificationID, installationID: report.installationID,
            platform: installation.platform, kind: report.kind, time: core.clock.now())
    }

    /// Whether a notification was addressed to an installation: every installation, one whose tags match its
    /// expression (template tags for a template send), or one whose channel it named directly. (The caller checks
    /// that the notification's format reaches the installation's platform.)
    static func audience(of notification: Notification, includes installation: Installation) -> Bool {
        switch notification.audience {
        case .all:
            return true
        case .tags(let expression):
            return expression.matches(notification.format == .template ? installation.allTags : installation.routingTags)
        case .handles(let platform, let channels):
            return platform == installation.platform && channels.contains(installation.pushChannel)
        case .unreadable:
            return false
        }
    }
}
