import Foundation
import HTTPTypes
@testable import HubServer
import HubTestSupport
import Hummingbird
import HummingbirdTesting
import NotificationHub
import Testing

/// The hub description, the recent notifications and the delivery rates: Manage-only reads for operators.
@Suite struct HubOverviewEndpointTests {
    static func sendHeaders(tags: String? = nil) -> HTTPFields {
        var fields: HTTPFields = [HTTPField.Name("ServiceBusNotification-Format")!: "testformat"]
        if let tags { fields[HTTPField.Name("ServiceBusNotification-Tags")!] = tags }
        return fields
    }

    @Test(arguments: ["/demo/description", "/demo/messages", "/demo/rates"])
    func onlyManageKeysMayRead(path: String) async throws {
        try await APITestHarness.run { api async throws in
            #expect(try await api.request(.get, path, key: nil).status == .unauthorized)
            #expect(try await api.request(.get, path, key: "listen").status == .forbidden)
            #expect(try await api.request(.get, path, key: "send").status == .forbidden)
            #expect(try await api.request(.get, path, key: "manage").status == .ok)
            // Another hub's name is answered as a token not valid for the request.
            #expect(try await api.request(.get, "/other" + path.dropFirst(5), key: "manage").status == .unauthorized)
        }
    }

    @Test func theDescriptionNamesKeysAndAdaptersButNoSecret() async throws {
        let clock = ManualWallClock(Date())
        try await APITestHarness.run(clock: clock) { api in
            let response = try await api.request(.get, "/demo/description")
            #expect(response.status == .ok)
            for key in APITestHarness.keys {
                #expect(!response.text.contains(key.primaryKey))
                if let secondary = key.secondaryKey { #expect(!response.text.contains(secondary)) }
            }
            let json = try #require(response.json)
            #expect(json["name"] as? String == "demo")
            #expect(json["platforms"] as? [String] == ["test"])
            #expect(json["formats"] as? [String] == ["template", "testformat"])
            let keys = try #require(json["keys"] as? [[String: Any]])
            #expect(keys.map { $0["name"] as? String } == ["listen", "send", "manage"])
            #expect(keys.map { $0["rights"] as? [String] } == [["Listen"], ["Send"], ["Manage"]])
            #expect(keys.map { $0["hasSecondaryKey"] as? Bool } == [false, true, false])
            let configuration = try #require(json["configuration"] as? [String: Any])
            #expect(configuration["loadedAt"] as? String == HubDateFormat.string(from: clock.now()))
            let adapter = try #require((json["adapters"] as? [[String: Any]])?.first)
            #expect(adapter["type"] as? String == "RecordingAdapter")
            #expect(adapter["platforms"] as? [String] == ["test"])
            #expect(adapter["state"] as? String == "idle")
            #expect(adapter["maximumPayloadBytes"] as? Int == 2000)
            #expect((json["storage"] as? [String: Any])?["kind"] as? String == "memory")
            #expect((json["limits"] as? [String: Any])?["tagsPerInstallation"] as? Int == 60)

            // After deliveries the adapter is delivering, with its recent outcomes.
            for id in ["a", "b", "c"] {
                try await api.request(.put, "/demo/installations/\(id)", key: "listen", body: APITestHarness.installationJSON(id, tags: ["t"]))
            }
            api.adapter.script("dev-c", [DeliveryResult(.badChannel, reason: "BadDeviceToken")])
            let sent = try await api.request(.post, "/demo/messages", key: "send", headers: Self.sendHeaders(tags: "t"), body: "{}")
            _ = try await api.waitForFinal(try #require(sent.headers[HTTPField.Name("TrackingId")!]))
            // Deliveries are counted once their commit returns, just after the final state is visible.
            try await api.waitForCounted(3, at: clock.now())
            let after = try #require(try await api.request(.get, "/demo/description").json)
            let busy = try #require((after["adapters"] as? [[String: Any]])?.first)
            #expect(busy["state"] as? String == "delivering")
            #expect(busy["recentOutcomes"] as? [String: Int] == ["Success": 2, "BadChannel": 1])
            #expect(busy["lastDeliveryTime"] as? String == HubDateFormat.string(from: clock.now()))
        }
    }

    @Test func adapterStateFollowsPlatformSideFailures() {
        #expect(DescriptionController.adapterState(outcomes: [:]) == "idle")
        #expect(DescriptionController.adapterState(outcomes: [.success: 5, .badChannel: 9]) == "delivering")
        #expect(DescriptionController.adapterState(outcomes: [.success: 5, .pnsUnavailable: 5]) == "delivering")
        #expect(DescriptionController.adapterState(outcomes: [.success: 4, .invalidCredentials: 3, .abandoned: 2]) == "failing")
    }

    @Test func recentNotificationsAreNewestFirstWithCountsAndPages() async throws {
        try await APITestHarness.run { api in
            try await api.request(.put, "/demo/installations/a", key: "listen", body: APITestHarness.installationJSON("a", tags: ["t"]))
            var ids: [String] = []
            for tags in ["t", "nobody", "t || x"] {
                let sent = try await api.request(.post, "/demo/messages", key: "send", headers: Self.sendHeaders(tags: tags), body: "{}")
                let id = try #require(sent.headers[HTTPField.Name("TrackingId")!])
                _ = try await api.waitForFinal(id)
                ids.append(id)
            }
            var directHeaders = Self.sendHeaders()
            directHeaders[HTTPField.Name("ServiceBusNotification-DeviceHandle")!] = "dev-9"
            let direct = try await api.request(.post, "/demo/messages?direct", key: "send", headers: directHeaders, body: "{}")
            ids.append(try #require(direct.headers[HTTPField.Name("TrackingId")!]))
            _ = try await api.waitForFinal(ids[3])

            let first = try await api.request(.get, "/demo/messages?top=3")
            #expect(first.status == .ok)
            let page = try #require(first.json)
            let entries = try #require(page["notifications"] as? [[String: Any]])
            #expect(entries.map { $0["notificationId"] as? String } == [ids[3], ids[2], ids[1]])
            #expect(entries.map { $0["state"] as? String } == ["Completed", "Completed", "NoTargetFound"])
            #expect(entries[0]["audience"] as? String == "direct")
            #expect(entries[0]["platform"] as? String == "test" && entries[0]["handles"] as? Int == 1)
            #expect(entries[1]["audience"] as? String == "tags" && entries[1]["tags"] as? String == "t || x")
            let counts = entries[1]["outcomeCounts"] as? [String: [[String: Any]]]
            #expect(counts?["test"]?.first?["name"] as? String == "Success" && counts?["test"]?.first?["count"] as? Int == 1)
            let token = try #require(page["continuationToken"] as? String)
            #expect(first.headers[HTTPField.Name("x-ms-continuationtoken")!] == token)

            let second = try #require(try await api.request(.get, "/demo/messages?top=3&continuationToken=\(token)").json)
            #expect((second["notifications"] as? [[String: Any]])?.map { $0["notificationId"] as? String } == [ids[0]])
            #expect(second["continuationToken"] == nil)

            #expect(try await api.request(.get, "/demo/messages?top=0").status == .badRequest)
            #expect(try await api.request(.get, "/demo/messages?continuationToken=nonsense").errorCode == "InvalidContinuationToken")
        }
    }

    /// A test send delivers as a fan-out does, so its deliveries show in the rates and the adapter's recent outcomes
    /// (the console's Rates and Hub pages), by platform and outcome only.
    @Test func testSendsAreCountedInRatesAndTheDescription() async throws {
        let clock = ManualWallClock(Date())
        try await APITestHarness.run(clock: clock) { api in
            for index in 0..<3 {
                try await api.request(
                    .put, "/demo/installations/q\(index)", key: "listen", body: APITestHarness.installationJSON("q\(index)", tags: ["t"]))
            }
            api.adapter.script("dev-q2", [DeliveryResult(.badChannel, reason: "BadDeviceToken")])
            let sent = try await api.request(.post, "/demo/messages?test", key: "send", headers: Self.sendHeaders(tags: "t"), body: "{}")
            #expect(sent.status == .created && sent.json?["success"] as? Int == 2)
            clock.advance(by: 1)
            let series = try #require(try await api.request(.get, "/demo/rates?seconds=60").json?["series"] as? [[String: Any]])
            let totals = series.map { "\($0["platform"] ?? "") \($0["outcome"] ?? "") \(($0["counts"] as? [Int])?.reduce(0, +) ?? -1)" }
            #expect(totals == ["test BadChannel 1", "test Success 2"])
            let adapter = try #require((try await api.request(.get, "/demo/description").json?["adapters"] as? [[String: Any]])?.first)
            #expect(adapter["recentOutcomes"] as? [String: Int] == ["Success": 2, "BadChannel": 1])
            #expect(adapter["state"] as? String == "delivering")
            #expect(adapter["lastDeliveryTime"] as? String != nil)
        }
    }

    @Test func ratesReportCommittedDeliveriesPerSecondByPlatformAndOutcome() async throws {
        let clock = ManualWallClock(Date())
        try await APITestHarness.run(clock: clock) { api in
            let empty = try #require(try await api.request(.get, "/demo/rates").json)
            #expect(empty["seconds"] as? Int == 3600 && empty["step"] as? Int == 1)
            #expect((empty["series"] as? [Any])?.isEmpty == true)

            for index in 0..<5 {
                try await api.request(
                    .put, "/demo/installations/i\(index)", key: "listen", body: APITestHarness.installationJSON("i\(index)", tags: ["t"]))
            }
            api.adapter.script("dev-i4", [DeliveryResult(.expiredChannel, reason: "Unregistered")])
            let sent = try await api.request(.post, "/demo/messages", key: "send", headers: Self.sendHeaders(tags: "t"), body: "{}")
            _ = try await api.waitForFinal(try #require(sent.headers[HTTPField.Name("TrackingId")!]))
            try await api.waitForCounted(5, at: clock.now())
            // The deliveries were counted in the clock's current second, which is reported once it is complete.
            clock.advance(by: 1)
            let response = try await api.request(.get, "/demo/rates?seconds=60")
            let json = try #require(response.json)
            #expect(json["seconds"] as? Int == 60)
            #expect(json["end"] as? String == HubDateFormat.string(from: Date(timeIntervalSince1970: clock.now().timeIntervalSince1970.rounded(.down))))
            let series = try #require(json["series"] as? [[String: Any]])
            #expect(series.map { "\($0["platform"] ?? "") \($0["outcome"] ?? "")" } == ["test ExpiredChannel", "test Success"])
            let success = try #require(series.last?["counts"] as? [Int])
            #expect(success.count == 60 && success.last == 4 && success.reduce(0, +) == 4)
            #expect((series.first?["counts"] as? [Int])?.reduce(0, +) == 1)

            let stepped = try #require(try await api.request(.get, "/demo/rates?seconds=60&step=30").json)
            #expect(((stepped["series"] as? [[String: Any]])?.last?["counts"] as? [Int]) == [0, 4])

            #expect(try await api.request(.get, "/demo/rates?seconds=0").status == .badRequest)
            #expect(try await api.request(.get, "/demo/rates?seconds=7200").status == .badRequest)
            #expect(try await api.request(.get, "/demo/rates?seconds=60&step=61").status == .badRequest)
        }
    }
}
