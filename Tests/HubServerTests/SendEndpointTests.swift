import Foundation
import HTTPTypes
import HubServer
import HubTestSupport
import Hummingbird
import HummingbirdTesting
import NotificationHub
import Testing

@Suite struct SendEndpointTests {
    static let format: HTTPFields = [HTTPField.Name("ServiceBusNotification-Format")!: "testformat"]

    static func headers(_ extra: [String: String] = [:], format: String = "testformat") -> HTTPFields {
        var fields: HTTPFields = [HTTPField.Name("ServiceBusNotification-Format")!: format]
        for (name, value) in extra { fields[HTTPField.Name(name)!] = value }
        return fields
    }

    @Test func sendByTagIsAcceptedDeliveredAndReported() async throws {
        try await APITestHarness.run { api in
            for (id, tags) in [("a", ["username:alice"]), ("b", ["username:bob"]), ("c", ["username:alice", "muted"])] {
                try await api.request(.put, "/demo/installations/\(id)", key: "listen", body: APITestHarness.installationJSON(id, tags: tags))
            }
            let response = try await api.request(
                .post, "/demo/messages/?api-version=2015-01", key: "send",
                headers: Self.headers(["ServiceBusNotification-Tags": "username:alice && !muted", "apns-priority": "5", "X-Custom": "y"]),
                body: #"{"hello":"world"}"#)
            #expect(response.status == .created)
            let location = try #require(response.headers[.location])
            let id = try #require(response.headers[HTTPField.Name("TrackingId")!])
            #expect(location.hasSuffix("/demo/messages/\(id)"))

            let record = try await api.waitForFinal(id)
            #expect(record.state == .completed)
            #expect(record.summary.counts == [Platform("test"): [.success: 1]])
            #expect(api.adapter.received.map(\.installationID) == ["a"])
            let headers = try #require(api.adapter.received.first?.headers)
            #expect(headers["apns-priority"] == "5")
            #expect(headers["X-Custom"] == "y")
            #expect(headers["Authorization"] == nil && headers["authorization"] == nil)

            let details = try await api.request(.get, "/demo/messages/\(id)", key: "send")
            #expect(details.status == .ok)
            let json = try #require(details.json)
            #expect(json["state"] as? String == "Completed")
            #expect(json["targetPlatforms"] as? [String] == ["test"])
            let counts = json["outcomeCounts"] as? [String: [[String: Any]]]
            #expect(counts?["test"]?.first?["name"] as? String == "Success")
            #expect(counts?["test"]?.first?["count"] as? Int == 1)
            #expect(json["startTime"] is String && json["endTime"] is String)

            let xml = try await api.request(.get, "/demo/messages/\(id)", key: "send", headers: [.accept: "application/xml"])
            #expect(xml.headers[.contentType]?.hasPrefix("application/xml") == true)
            #expect(xml.text.contains("<State>Completed</State>"))
            #expect(xml.text.contains("<TestOutcomeCounts><Outcome><Name>Success</Name><Count>1</Count></Outcome></TestOutcomeCounts>"))
            try XMLWellFormedness.check(xml.text, what: "NotificationDetails")
        }
    }

    @Test func broadcastWithoutTagsAndNoTargetFound() async throws {
        try await APITestHarness.run { api in
            let none = try await api.request(.post, "/demo/messages", key: "send", headers: Self.headers(), body: "{}")
            let id = try #require(none.headers[HTTPField.Name("TrackingId")!])
            #expect(try await api.waitForFinal(id).state == .noTargetFound)
            try await api.request(.put, "/demo/installations/a", key: "listen", body: APITestHarness.installationJSON("a"))
            let all = try await api.request(.post, "/demo/messages", key: "send", headers: Self.headers(), body: "{}")
            let second = try #require(all.headers[HTTPField.Name("TrackingId")!])
            #expect(try await api.waitForFinal(second).summary.count(of: .success) == 1)
        }
    }

    @Test func directSendGoesToTheHandle() async throws {
        try await APITestHarness.run { api in
            let response = try await api.request(
                .post, "/demo/messages?direct", key: "send",
                headers: Self.headers(["ServiceBusNotification-DeviceHandle": "dev-direct"]), body: "{}")
            #expect(response.status == .created)
            _ = try await api.waitForFinal(try #require(response.headers[HTTPField.Name("TrackingId")!]))
            #expect(api.adapter.received.map(\.handle) == ["dev-direct"])
            let bad = try await api.request(
                .post, "/demo/messages?direct", key: "send", headers: Self.headers(["ServiceBusNotification-DeviceHandle": "nope"]),
                body: "{}")
            #expect(bad.errorCode == "InvalidPushChannel")
            let missing = try await api.request(.post, "/demo/messages?direct", key: "send", headers: Self.headers(), body: "{}")
            #expect(missing.errorCode == "MissingDeviceHandle")
        }
    }

    @Test func theDirectFlagMeansWhatItSays() async throws {
        try await APITestHarness.run { api in
            try await api.request(.put, "/demo/installations/a", key: "listen", body: APITestHarness.installationJSON("a"))
            let handle = ["ServiceBusNotification-DeviceHandle": "dev-direct"]
            let explicit = try await api.request(
                .post, "/demo/messages?direct=true", key: "send", headers: Self.headers(handle), body: "{}")
            _ = try await api.waitForFinal(try #require(explicit.headers[HTTPField.Name("TrackingId")!]))
            #expect(api.adapter.received.map(\.handle) == ["dev-direct"])
            // direct=false is a send to the audience, not to the handle.
            let notDirect = try await api.request(
                .post, "/demo/messages?direct=false", key: "send", headers: Self.headers(), body: "{}")
            #expect(notDirect.status == .created)
            _ = try await api.waitForFinal(try #require(notDirect.headers[HTTPField.Name("TrackingId")!]))
            #expect(api.adapter.received.map(\.handle).sorted() == ["dev-a", "dev-direct"])
            for query in ["direct=yes", "direct=1", "direct&direct"] {
                let refused = try await api.request(
                    .post, "/demo/messages?\(query)", key: "send", headers: Self.headers(handle), body: "{}")
                #expect(refused.status == .badRequest, "\(query)")
                #expect(refused.errorCode == "InvalidParameter", "\(query)")
            }
            #expect(api.adapter.received.count == 2)
        }
    }

    @Test func templateSendRendersPerInstallation() async throws {
        try await APITestHarness.run { api in
            try await api.request(
                .put, "/demo/installations/t", key: "listen",
                body: APITestHarness.installationJSON("t", extra: #","templates":{"main":{"body":"{\"m\":\"$(msg)\"}"}}"#))
            let response = try await api.request(.post, "/demo/messages", key: "send", headers: Self.headers(format: "template"), body: #"{"msg":"hi"}"#)
            _ = try await api.waitForFinal(try #require(response.headers[HTTPField.Name("TrackingId")!]))
            #expect(api.adapter.received.map(\.payload) == [#"{"m":"hi"}"#])
            let bad = try await api.request(.post, "/demo/messages", key: "send", headers: Self.headers(format: "template"), body: "[1]")
            #expect(bad.errorCode == "InvalidNotification")
        }
    }

    @Test(arguments: [
        ([String: String](), "nope", "UnknownFormat", "use one of: template, testformat"),
        (["ServiceBusNotification-Tags": "a &&"], "testformat", "InvalidTagExpression", "at 4"),
        (["ServiceBusNotification-Tags": "((((((((((((((((((((((((((((((((((a))))))))))))))))))))))))))))))))))"], "testformat", "TagExpressionTooComplex", "deeper"),
    ])
    func badSendsGetPreciseErrors(headers: [String: String], format: String, code: String, message: String) async throws {
        try await APITestHarness.run { api in
            let response = try await api.request(.post, "/demo/messages", key: "send", headers: Self.headers(headers, format: format), body: "{}")
            #expect(response.status == .badRequest)
            #expect(response.errorCode == code)
            #expect(response.errorMessage?.contains(message) == true, "\(response.errorMessage ?? "")")
        }
    }

    @Test func missingFormatAndOversizedPayloads() async throws {
        try await APITestHarness.run { api in
            let missing = try await api.request(.post, "/demo/messages", key: "send", body: "{}")
            #expect(missing.errorCode == "MissingFormat")
            let platformLimit = try await api.request(
                .post, "/demo/messages", key: "send", headers: Self.headers(), body: String(repeating: "x", count: 2001))
            #expect(platformLimit.status == .contentTooLarge)
            #expect(platformLimit.errorMessage?.contains("at most 2000 bytes") == true)
            let requestLimit = try await api.request(
                .post, "/demo/messages", key: "send", headers: Self.headers(), body: String(repeating: "x", count: 70_000))
            #expect(requestLimit.status == .contentTooLarge)
            #expect(requestLimit.errorCode == "RequestTooLarge")
        }
    }

    @Test func idempotencyKeysReturnTheFirstNotification() async throws {
        try await APITestHarness.run { api in
            try await api.request(.put, "/demo/installations/a", key: "listen", body: APITestHarness.installationJSON("a"))
            let first = try await api.request(.post, "/demo/messages", key: "send", headers: Self.headers(["Idempotency-Key": "k1"]), body: "{}")
            let second = try await api.request(.post, "/demo/messages", key: "send", headers: Self.headers(["Idempotency-Key": "k1"]), body: "{}")
            let id = first.headers[HTTPField.Name("TrackingId")!]
            #expect(id != nil)
            #expect(second.headers[HTTPField.Name("TrackingId")!] == id)
            _ = try await api.waitForFinal(try #require(id))
            try await Task.sleep(for: .milliseconds(50))
            #expect(api.adapter.received.count == 1)
        }
    }

    @Test func scheduledSendsWaitAndCanBeCancelled() async throws {
        try await APITestHarness.run { api in
            try await api.request(.put, "/demo/installations/a", key: "listen", body: APITestHarness.installationJSON("a"))
            let later = HubDateFormat.string(from: Date() + 3600)
            let scheduled = try await api.request(
                .post, "/demo/schedulednotifications", key: "send",
                headers: Self.headers(["ServiceBusNotification-ScheduleTime": later]), body: "{}")
            #expect(scheduled.status == .created)
            let id = try #require(scheduled.headers[HTTPField.Name("TrackingId")!])
            #expect(try await api.hub.sends.record(id: id)?.state == .scheduled)
            #expect(try await api.request(.delete, "/demo/schedulednotifications/\(id)", key: "send").status == .ok)
            #expect(try await api.hub.sends.record(id: id)?.state == .cancelled)
            #expect(try await api.request(.delete, "/demo/schedulednotifications/\(id)", key: "send").status == .notFound)

            let soon = HubDateFormat.string(from: Date() + 0.2)
            let due = try await api.request(
                .post, "/demo/schedulednotifications", key: "send",
                headers: Self.headers(["ServiceBusNotification-ScheduleTime": soon]), body: "{}")
            let record = try await api.waitForFinal(try #require(due.headers[HTTPField.Name("TrackingId")!]))
            #expect(record.summary.count(of: .success) == 1)
            #expect((record.startTime ?? .distantPast) >= (record.scheduledTime ?? .distantFuture))

            let bad = try await api.request(
                .post, "/demo/schedulednotifications", key: "send",
                headers: Self.headers(["ServiceBusNotification-ScheduleTime": "tomorrow"]), body: "{}")
            #expect(bad.errorCode == "InvalidScheduleTime")
        }
    }

    @Test func unknownNotificationsAndHubs() async throws {
        try await APITestHarness.run { api in
            let notification = try await api.request(.get, "/demo/messages/nope", key: "send")
            #expect(notification.errorCode == "NotificationNotFound")
            // An unknown hub answers like a token that is not valid for it (names cannot be enumerated).
            let hub = try await api.request(.get, "/other/messages/nope", key: "send")
            #expect(hub.status == .unauthorized && hub.errorCode == "Unauthorized")
            #expect(try await api.request(.get, "/demo/nothing/here/at/all", key: "send").status == .notFound)
        }
    }
}
