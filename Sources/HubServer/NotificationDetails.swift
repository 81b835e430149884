import Foundation
import NotificationHub

/// A notification's telemetry as the API reports it (JSON by default, Azure's `NotificationDetails` XML on request).
struct NotificationDetails: Encodable {
    struct OutcomeCount: Encodable {
        var name: String
        var count: Int
    }

    var notificationId: String
    var location: String
    var state: String
    var enqueueTime: Date
    var scheduledTime: Date?
    var startTime: Date?
    var endTime: Date?
    var format: String
    var targetPlatforms: [String]
    var outcomeCounts: [String: [OutcomeCount]]
    /// Why the notification ended without delivery, when it did (JSON only; Azure's XML has no such element).
    var reason: String?
    /// The tag expression a tag send went to.
    var tags: String?
    /// Receipts devices reported, per platform and kind (`delivered`, `opened`, `dismissed`), beside the platforms'
    /// outcomes (JSON only).
    var receiptCounts: [String: [String: Int]]?
    /// The W3C trace id of the send's trace, when the hub traced it (JSON only).
    var traceId: String?

    init(record: NotificationRecord, location: String, targetPlatforms: [Platform]) {
        notificationId = record.notification.id
        self.location = location
        state = record.state.name
        enqueueTime = record.enqueueTime
        scheduledTime = record.scheduledTime
        startTime = record.startTime
        endTime = record.endTime
        format = record.notification.format.name
        self.targetPlatforms = targetPlatforms.map(\.name)
        var counts: [String: [OutcomeCount]] = [:]
        for (platform, outcomes) in record.summary.counts {
            counts[platform.name] = outcomes.sorted { $0.key < $1.key }.map { OutcomeCount(name: $0.key.name, count: $0.value) }
        }
        outcomeCounts = counts
        reason = record.reason
        if case .tags(let expression) = record.notification.audience { tags = expression.description }
        traceId = DeliveryTracing.traceID(of: record.notification)
    }

    /// Azure's XML; each platform's counts are in `<{name}OutcomeCounts>`, the name coming from its adapter (e.g.
    /// `ApnsOutcomeCounts`).
    ///
    /// The .NET SDK reads this with a `DataContractSerializer`, which takes members only in its contract's order
    /// (an element met after a later one is dropped): `NotificationId`, `Location`, `State`, `EnqueueTime`,
    /// `StartTime`, `EndTime`, `Tags`, `TargetPlatforms`, then the counts in ``outcomeCountOrder``. Elements it does
    /// not know (counts of platforms it has no member for, then `ScheduledTime`) come after every known one, where
    /// they cannot displace one; it keeps them in its extension data. `State` is one of the SDK's states: a notification waiting for its
    /// time is `Enqueued` here (`Scheduled` in JSON).
    func xml(adapters: AdapterSet) -> String {
        func time(_ name: String, _ date: Date?) -> String {
            date.map { "<\(name)>\(HubDateFormat.string(from: $0))</\(name)>" } ?? ""
        }
        var xml = #"<?xml version="1.0" encoding="utf-8"?>"#
        xml += #"<NotificationDetails xmlns="http://schemas.microsoft.com/netservices/2010/10/servicebus/connect" xmlns:i="http://www.w3.org/2001/XMLSchema-instance">"#
        xml += "<NotificationId>\(XMLText.escape(notificationId))</NotificationId>"
        xml += "<Location>\(XMLText.escape(location))</Location>"
        xml += "<State>\(state == NotificationState.scheduled.name ? NotificationState.enqueued.name : state)</State>"
        xml += time("EnqueueTime", enqueueTime) + time("StartTime", startTime) + time("EndTime", endTime)
        if let tags { xml += "<Tags>\(XMLText.escape(tags))</Tags>" }
        xml += "<TargetPlatforms>\(XMLText.escape(targetPlatforms.joined(separator: ",")))</TargetPlatforms>"
        let elements = outcomeCounts.keys.map { (platform: $0, element: adapters.telemetryName(for: Platform($0)) + "OutcomeCounts") }
        let ordered = elements.sorted { lhs, rhs in
            let left = Self.outcomeCountOrder.firstIndex(of: lhs.element) ?? Self.outcomeCountOrder.count
            let right = Self.outcomeCountOrder.firstIndex(of: rhs.element) ?? Self.outcomeCountOrder.count
            return left != right ? left < right : lhs.element < rhs.element
        }
        for (platform, element) in ordered {
            xml += "<\(element)>"
            for outcome in outcomeCounts[platform] ?? [] {
                xml += "<Outcome><Name>\(XMLText.escape(outcome.name))</Name><Count>\(outcome.count)</Count></Outcome>"
            }
            xml += "</\(element)>"
        }
        xml += time("ScheduledTime", scheduledTime)
        xml += "</NotificationDetails>"
        return xml
    }

    /// The order of the outcome-count members in the .NET SDK's `NotificationDetails` contract (its `Order`
    /// values 1010–1017); counts under other names follow them, by name.
    static let outcomeCountOrder = [
        "ApnsOutcomeCounts", "MpnsOutcomeCounts", "WnsOutcomeCounts", "GcmOutcomeCounts", "AdmOutcomeCounts",
        "FcmOutcomeCounts", "FcmV1OutcomeCounts",
    ]
}
