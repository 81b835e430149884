import Foundation
import HTTPTypes
import HubServer
import HubTestSupport
import Hummingbird
import HummingbirdTesting
import NotificationHub
import Testing

/// Device receipts: `delivered`, `opened`, `dismissed` reported with the Listen key or the device user's token,
/// counted per platform beside the outcomes, idempotent, rate-limited; unknown and foreign notifications refused
/// with one answer; a secure push fetch counts as delivered.
@Suite struct ReceiptEndpointTests {
    static func receipt(_ notification: String, _ installation: String, _ kind: String) -> String {
        #"{"notificationId":"\#(notification)","installationId":"\#(installation)","kind":"\#(kind)"}"#
    }

    static func sendTo(_ api: APITestHarness, tags: String) async throws -> String {
        let sent = try await api.request(
            .post, "/demo/messages", key: "send",
            headers: SendEndpointTests.headers(["ServiceBusNotification-Tags": tags]), body: "{}")
        let id = try #require(sent.headers[HTTPField.Name("TrackingId")!])
        _ = try await api.waitForFinal(id)
        return id
    }

    @Test func receiptsAreCountedPerPlatformOncePerDeviceAndKind() async throws {
        try await APITestHarness.run { api in
            for (id, tags) in [("a", ["sports"]), ("b", ["sports"]), ("c", ["news"])] {
                try await api.request(.put, "/demo/installations/\(id)", key: "listen", body: APITestHarness.installationJSON(id, tags: tags))
            }
            let id = try await Self.sendTo(api, tags: "sports")
            let first = try await api.request(.post, "/demo/receipts", key: "listen", body: Self.receipt(id, "a", "delivered"))
            #expect(first.status == .created)
            #expect(first.json?["recorded"] as? Bool == true)
            let again = try await api.request(.post, "/demo/receipts", key: "listen", body: Self.receipt(id, "a", "delivered"))
            #expect(again.status == .ok)
            #expect(again.json?["recorded"] as? Bool == false)
            for (installation, kind) in [("a", "opened"), ("b", "delivered"), ("b", "dismissed")] {
                #expect(try await api.request(.post, "/demo/receipts", key: "listen", body: Self.receipt(id, installation, kind)).status == .created)
            }
            let details = try await api.request(.get, "/demo/messages/\(id)", key: "send")
            let receipts = details.json?["receiptCounts"] as? [String: [String: Int]]
            #expect(receipts == ["test": ["delivered": 2, "opened": 1, "dismissed": 1]])
            let outcomes = details.json?["outcomeCounts"] as? [String: Any]
            #expect(outcomes?["test"] != nil)
            // Azure's XML is unchanged: receipts are JSON only.
            let xml = try await api.request(.get, "/demo/messages/\(id)", key: "send", acceptJSON: false)
            #expect(!xml.text.contains("delivered") && !xml.text.contains("Receipt"))
        }
    }

    @Test func unknownAndForeignNotificationsGetTheSameAnswer() async throws {
        try await APITestHarness.run { api in
            for (id, tags) in [("a", ["sports"]), ("c", ["news"])] {
                try await api.request(.put, "/demo/installations/\(id)", key: "listen", body: APITestHarness.installationJSON(id, tags: tags))
            }
            let id = try await Self.sendTo(api, tags: "sports")
            let unknown = try await api.request(
                .post, "/demo/receipts", key: "listen", body: Self.receipt(String(repeating: "0", count: 32), "a", "opened"))
            let foreign = try await api.request(.post, "/demo/receipts", key: "listen", body: Self.receipt(id, "c", "opened"))
            let noDevice = try await api.request(.post, "/demo/receipts", key: "listen", body: Self.receipt(id, "zz", "opened"))
            let malformed = try await api.request(.post, "/demo/receipts", key: "listen", body: Self.receipt("../x", "a", "opened"))
            for answer in [unknown, foreign, noDevice, malformed] {
                #expect(answer.status == .notFound)
                #expect(answer.errorCode == "ReceiptRefused")
                #expect(answer.text == unknown.text)
            }
            // Nothing was recorded for the refused ones.
            let details = try await api.request(.get, "/demo/messages/\(id)", key: "send")
            #expect((details.json?["receiptCounts"] as? [String: Any])?.isEmpty == true)
        }
    }

    @Test func badReceiptsAndWrongKeysArePrecise() async throws {
        try await APITestHarness.run { api in
            try await api.request(.put, "/demo/installations/a", key: "listen", body: APITestHarness.installationJSON("a"))
            let id = try await Self.sendTo(api, tags: "$InstallationId:{a}")
            let kind = try await api.request(.post, "/demo/receipts", key: "listen", body: Self.receipt(id, "a", "read"))
            #expect(kind.status == .badRequest && kind.errorCode == "InvalidReceipt")
            #expect(kind.text.contains("delivered, opened, dismissed"))
            let missing = try await api.request(.post, "/demo/receipts", key: "listen", body: #"{"kind":"opened"}"#)
            #expect(missing.status == .badRequest && missing.errorCode == "InvalidReceipt")
            let garbage = try await api.request(.post, "/demo/receipts", key: "listen", body: "not json")
            #expect(garbage.status == .badRequest)
            let huge = try await api.request(
                .post, "/demo/receipts", key: "listen", body: #"{"kind":"opened","x":"\#(String(repeating: "x", count: 10_000))"}"#)
            #expect(huge.status == .contentTooLarge, "\(huge.status)")
            // An installation id outside the identifier policy is refused as such, before the rate limiter keeps a
            // bucket for it.
            let longID = String(repeating: "i", count: 3000)
            let long = try await api.request(.post, "/demo/receipts", key: "listen", body: Self.receipt(id, longID, "opened"))
            #expect(long.status == .badRequest && long.errorCode == "InvalidIdentifier", "\(long.status) \(long.text)")
            let slashed = try await api.request(.post, "/demo/receipts", key: "listen", body: Self.receipt(id, "a/b", "opened"))
            #expect(slashed.status == .badRequest && slashed.errorCode == "InvalidIdentifier", "\(slashed.status) \(slashed.text)")
            #expect(try await api.request(.post, "/demo/receipts", key: "send", body: Self.receipt(id, "a", "opened")).status == .forbidden)
            #expect(try await api.request(.post, "/demo/receipts", key: nil, body: Self.receipt(id, "a", "opened")).status == .unauthorized)
        }
    }

    @Test func oneInstallationIsRateLimited() async throws {
        try await APITestHarness.run { api in
            try await api.request(.put, "/demo/installations/a", key: "listen", body: APITestHarness.installationJSON("a"))
            let id = try await Self.sendTo(api, tags: "$InstallationId:{a}")
            var statuses: [HTTPResponse.Status] = []
            var retryAfter: String?
            for index in 0..<20 {
                let answer = try await api.request(
                    .post, "/demo/receipts", key: "listen", body: Self.receipt(id, "a", ["delivered", "opened", "dismissed"][index % 3]))
                statuses.append(answer.status)
                if answer.status == .tooManyRequests {
                    retryAfter = answer.headers[.retryAfter]
                    #expect(answer.errorCode == "TooManyReceipts")
                }
            }
            // A burst of 10, then refused with Retry-After (30 a minute refill one every 2 s, so ten more requests
            // meet a refusal however slow the machine); repeats of a kind count against the limit too.
            #expect(statuses.prefix(10).allSatisfy { $0 != .tooManyRequests })
            #expect(statuses.suffix(10).contains(.tooManyRequests))
            #expect(retryAfter.flatMap(Int.init).map { $0 >= 1 } == true)
        }
    }

    @Test func aUserReportsOnlyForItsOwnInstallationsAndASecureFetchCountsAsDelivered() async throws {
        try await APITestHarness.run(
            adapters: SecurePushTests.adapters, deviceAuthentication: SecurePushTests.authentication,
            securePush: SecurePushTests.settings()
        ) { api in
            try await SecurePushTests.register(api)
            let created = try await api.request(
                .post, "/demo/securenotifications", key: "send", body: #"{"payload":{"x":1},"tags":"username:alice"}"#)
            let json = try #require(created.json)
            let secureID = try #require(json["id"] as? String)
            let notificationIDs = try #require(json["notificationIds"] as? [String])
            for notificationID in notificationIDs { _ = try await api.waitForFinal(notificationID) }
            let alice = try await SecurePushTests.token(user: "alice")
            let bob = try await SecurePushTests.token(user: "bob")

            let fetched = try await api.request(
                .get, "/demo/securenotifications/\(secureID)?installationId=alice-phone", key: nil,
                headers: [.authorization: "Bearer \(alice)"])
            #expect(fetched.status == .ok)
            var delivered: [String: [String: Int]] = [:]
            for notificationID in notificationIDs {
                let details = try await api.request(.get, "/demo/messages/\(notificationID)", key: "send")
                for (platform, kinds) in details.json?["receiptCounts"] as? [String: [String: Int]] ?? [:] {
                    delivered[platform] = kinds
                }
            }
            #expect(delivered == ["apns": ["delivered": 1]])

            // Bob cannot report for Alice's device, and gets the answer an unknown notification gets.
            for notificationID in notificationIDs {
                let foreign = try await api.request(
                    .post, "/demo/receipts", key: nil, headers: [.authorization: "Bearer \(bob)"],
                    body: Self.receipt(notificationID, "alice-phone", "opened"))
                #expect(foreign.status == .notFound && foreign.errorCode == "ReceiptRefused")
            }
            var opened = 0
            for notificationID in notificationIDs {
                let own = try await api.request(
                    .post, "/demo/receipts", key: nil, headers: [.authorization: "Bearer \(alice)"],
                    body: Self.receipt(notificationID, "alice-pc", "opened"))
                if own.status == .created { opened += 1 } else { #expect(own.errorCode == "ReceiptRefused") }
            }
            #expect(opened == 1)  // only the windows announcement went to alice-pc
        }
    }
}
