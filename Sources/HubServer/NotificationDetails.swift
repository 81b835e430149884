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
    }

    /// Azure's XML; each platform's counts are in `<{name}OutcomeCounts>`, the name coming from its adapter (e.g.
    /// `ApnsOutcomeCounts`).
    func xml(adapters: AdapterSet) -> String {
        func time(_ name: String, _ date: Date?) -> String {
            date.map { "<\(name)>\(HubDateFormat.string(from: $0))</\(name)>" } ?? ""
        }
        var xml = #"<?xml version="1.0" encoding="utf-8"?>"#
        xml += #"<NotificationDetails xmlns="http://schemas.microsoft.com/netservices/2010/10/servicebus/connect" xmlns:i="http://www.w3.org/2001/XMLSchema-instance">"#
        xml += "<NotificationId>\(XMLText.escape(notificationId))</NotificationId>"
        xml += "<Location>\(XMLText.escape(location))</Location>"
        xml += "<State>\(state)</State>"
        xml += time("EnqueueTime", enqueueTime) + time("ScheduledTime", scheduledTime)
        xml += time("StartTime", startTime) + time("EndTime", endTime)
        xml += "<TargetPlatforms>\(XMLText.escape(targetPlatforms.joined(separator: ",")))</TargetPlatforms>"
        for platform in outcomeCounts.keys.sorted() {
            let element = adapters.telemetryName(for: Platform(platform)) + "OutcomeCounts"
            xml += "<\(element)>"
            for outcome in outcomeCounts[platform] ?? [] {
                xml += "<Outcome><Name>\(XMLText.escape(outcome.name))</Name><Count>\(outcome.count)</Count></Outcome>"
            }
            xml += "</\(element)>"
        }
        xml += "</NotificationDetails>"
        return xml
    }
}
