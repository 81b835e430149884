import Foundation
import NotificationHub

/// A hub's PNS feedback as Azure publishes it: one blob per UTC day, named `MMddyyyy` (Azure's example names its
/// daily blob `07272016`), listing the channels the platforms reported expired or invalid that day, one
/// `<PnsFeedback>` element per line (the members of the SDK's `PnsFeedback`: `FeedbackTime`,
/// `NotificationSystemError`, `Platform`, `PnsHandle`, `InstallationId`, `NotificationId`).
///
/// Nothing is written for it: the blobs are derived on each read from the hub's failure log (the one the feedback
/// webhook reads), keeping the failures whose outcome is in ``outcomes``.
struct PNSFeedbackFiles: Sendable {
    /// The container's name in the hub's container URLs.
    static let container = "feedback"
    /// Outcomes that say a channel can no longer be used.
    static let outcomes: Set<Outcome> = [.expiredChannel, .badChannel, .wrongChannel]
    /// Failures read per page of the failure log.
    static let pageSize = 1000

    /// One day's blob.
    struct Day: Sendable {
        var name: String
        var body: String
        var lastModified: Date
    }

    let hub: Hub

    /// The blob name of the day of `date` (UTC).
    static func blobName(for date: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let parts = calendar.dateComponents([.year, .month, .day], from: date)
        return String(format: "%02ld%02ld%04ld", parts.month ?? 0, parts.day ?? 0, parts.year ?? 0)
    }

    /// One failure as a `<PnsFeedback>` element.
    static func element(_ failure: DeliveryFailure) -> String {
        var xml = "<PnsFeedback xmlns=\"\(RegistrationXML.descriptionNamespace)\" xmlns:i=\"\(RegistrationXML.instanceNamespace)\">"
        func add(_ name: String, _ value: String) { xml += "<\(name)>\(XMLText.escape(value))</\(name)>" }
        add("FeedbackTime", HubJobXML.date(failure.time))
        add("NotificationSystemError", failure.outcome.name)
        add("Platform", failure.platform.name)
        add("PnsHandle", failure.handle)
        if let installation = failure.installationID { add("InstallationId", installation) }
        if let notification = failure.notificationID { add("NotificationId", notification) }
        return xml + "</PnsFeedback>"
    }

    /// Every day's blob, oldest first.
    func days() async throws -> [Day] {
        var days: [String: Day] = [:]
        var order: [String] = []
        var cursor: Int64?
        repeat {
            let page = try await hub.sends.allFailures(after: cursor, limit: Self.pageSize)
            for failure in page.failures where Self.outcomes.contains(failure.outcome) {
                let name = Self.blobName(for: failure.time)
                if days[name] == nil {
                    days[name] = Day(name: name, body: "", lastModified: failure.time)
                    order.append(name)
                }
                days[name]!.body += Self.element(failure) + "\n"
                days[name]!.lastModified = max(days[name]!.lastModified, failure.time)
            }
            cursor = page.failures.isEmpty ? nil : page.last
            if page.failures.count < Self.pageSize { cursor = nil }
        } while cursor != nil
        return order.compactMap { days[$0] }
    }
}
