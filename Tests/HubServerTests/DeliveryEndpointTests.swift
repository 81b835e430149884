import Foundation
import HTTPTypes
import HubServer
import HubTestSupport
import Hummingbird
import HummingbirdTesting
import NotificationHub
import Testing

/// Feedback lists, test sends and batch direct sends.
@Suite struct DeliveryEndpointTests {
    @Test func feedbackListsEveryFailedDevice() async throws {
        try await APITestHarness.run { api in
            for id in ["a", "b", "c"] {
                try await api.request(.put, "/demo/installations/\(id)", key: "listen", body: APITestHarness.installationJSON(id))
            }
            api.adapter.script("dev-b", [DeliveryResult(.badChannel, reason: "BadDeviceToken")])
            api.adapter.script("dev-c", [DeliveryResult(.expiredChannel, reason: "Unregistered")])
            let sent = try await api.request(.post, "/demo/messages", key: "send", headers: SendEndpointTests.headers(), body: "{}")
            let id = try #require(sent.headers[HTTPField.Name("TrackingId")!])
            let record = try await api.waitForFinal(id)
            #expect(record.summary.count(of: .success) == 1)

            let feedback = try await api.request(.get, "/demo/messages/\(id)/feedback", key: "send")
            #expect(feedback.status == .ok)
            let failures = try #require(feedback.json?["failures"] as? [[String: Any]])
            let byInstallation = Dictionary(uniqueKeysWithValues: failures.map { ($0["installationId"] as? String ?? "", $0) })
            #expect(Set(byInstallation.keys) == ["b", "c"])
            #expect(byInstallation["b"]?["outcome"] as? String == "BadChannel")
            #expect(byInstallation["b"]?["reason"] as? String == "BadDeviceToken")
            #expect(byInstallation["c"]?["outcome"] as? String == "ExpiredChannel")
            #expect(byInstallation["c"]?["pnsHandle"] as? String == "dev-c")
            #expect(byInstallation["c"]?["platform"] as? String == "test")
            #expect(byInstallation["c"]?["time"] is String)

            let paged = try await api.request(.get, "/demo/messages/\(id)/feedback?top=1", key: "send")
            let token = try #require(paged.json?["continuationToken"] as? String)
            let next = try await api.request(.get, "/demo/messages/\(id)/feedback?top=1&continuationToken=\(token)", key: "send")
            #expect((next.json?["failures"] as? [[String: Any]])?.count == 1)
            #expect(next.json?["continuationToken"] == nil)

            #expect(try await api.request(.get, "/demo/messages/nope/feedback", key: "send").status == .notFound)
            let bad = try await api.request(.get, "/demo/messages/\(id)/feedback?top=0", key: "send")
            #expect(bad.status == .badRequest && bad.errorCode == "InvalidParameter")
            #expect(try await api.request(.get, "/demo/messages/\(id)/feedback", key: "listen").status == .forbidden)
        }
    }

    @Test func testSendDeliversSynchronouslyAndReportsOutcomes() async throws {
        try await APITestHarness.run { api in
            for index in 0..<12 {
                try await api.request(
                    .put, "/demo/installations/i\(index)", key: "listen",
                    body: APITestHarness.installationJSON("i\(index)", tags: ["t"]))
            }
            api.adapter.script("dev-i0", [DeliveryResult(.badChannel, reason: "BadDeviceToken")])
            let response = try await api.request(
                .post, "/demo/messages?test", key: "send",
                headers: SendEndpointTests.headers(["ServiceBusNotification-Tags": "t"]), body: "{}")
            #expect(response.status == .created)
            let json = try #require(response.json)
            #expect(json["success"] as? Int == 9)
            #expect(json["failure"] as? Int == 1)
            let results = try #require(json["results"] as? [[String: Any]])
            #expect(results.count == 10)
            #expect(results.first { $0["registrationId"] as? String == "i0" }?["outcome"] as? String == "BadChannel")
            #expect(api.adapter.received.count == 10)

            let xml = try await api.request(
                .post, "/demo/messages?test", key: "send",
                headers: SendEndpointTests.headers(["ServiceBusNotification-Tags": "t", "Accept": "application/xml"]), body: "{}")
            #expect(xml.text.contains("<Success>10</Success><Failure>0</Failure>"))
            try XMLWellFormedness.check(xml.text, what: "NotificationOutcome")
        }
    }

    static func multipart(payload: String, devices: String, boundary: String = "batch-boundary") -> String {
        [
            "--\(boundary)", "Content-Type: application/json", "Content-Disposition: inline; name=notification", "",
            payload, "--\(boundary)", "Content-Type: application/json", "Content-Disposition: inline; name=devices", "",
            devices, "--\(boundary)--", "",
        ].joined(separator: "\r\n")
    }

    @Test func batchDirectSendReachesEveryHandle() async throws {
        try await APITestHarness.run { api in
            let handles = (0..<25).map { "\"dev-h\($0)\"" }.joined(separator: ",")
            let response = try await api.request(
                .post, "/demo/messages/$batch?direct", key: "send",
                headers: SendEndpointTests.headers(["Content-Type": "multipart/mixed; boundary=\"batch-boundary\""]),
                body: Self.multipart(payload: #"{"hello":"batch"}"#, devices: "[\(handles)]"))
            #expect(response.status == .created)
            let id = try #require(response.headers[HTTPField.Name("TrackingId")!])
            let record = try await api.waitForFinal(id)
            #expect(record.summary.count(of: .success) == 25)
            #expect(Set(api.adapter.received.map(\.handle)) == Set((0..<25).map { "dev-h\($0)" }))
            #expect(api.adapter.received.allSatisfy { $0.payload == #"{"hello":"batch"}"# && $0.installationID == nil })
        }
    }

    @Test(arguments: [
        ("multipart/mixed", "devices", "InvalidBatch"),
        ("multipart/mixed; boundary=batch-boundary", "[]", "InvalidBatch"),
        ("multipart/mixed; boundary=batch-boundary", "[1,2]", "InvalidBatch"),
        ("multipart/mixed; boundary=batch-boundary", #"["dev-1","bad"]"#, "InvalidPushChannel"),
        ("application/json", #"["dev-1"]"#, "InvalidBatch"),
    ])
    func batchDirectSendRejectsBadBodies(contentType: String, devices: String, code: String) async throws {
        try await APITestHarness.run { api in
            let response = try await api.request(
                .post, "/demo/messages/$batch?direct", key: "send",
                headers: SendEndpointTests.headers(["Content-Type": contentType]),
                body: Self.multipart(payload: "{}", devices: devices))
            #expect(response.status == .badRequest)
            #expect(response.errorCode == code)
            #expect(api.adapter.received.isEmpty)
        }
    }

    @Test func batchSendNeedsDirectAndAllParts() async throws {
        try await APITestHarness.run { api in
            let headers = SendEndpointTests.headers(["Content-Type": "multipart/mixed; boundary=b"])
            let notDirect = try await api.request(
                .post, "/demo/messages/$batch", key: "send", headers: headers, body: Self.multipart(payload: "{}", devices: "[]", boundary: "b"))
            #expect(notDirect.status == .badRequest && notDirect.errorCode == "InvalidParameter")
            let onlyNotification = "--b\r\nContent-Disposition: inline; name=notification\r\n\r\n{}\r\n--b--\r\n"
            let missing = try await api.request(.post, "/demo/messages/$batch?direct", key: "send", headers: headers, body: onlyNotification)
            #expect(missing.status == .badRequest && missing.errorMessage?.contains("name=devices") == true)
        }
    }
}
