import Foundation
import HTTPTypes
import HubServer
import HubTestSupport
import Hummingbird
import HummingbirdTesting
import NotificationHub
import Testing

/// `GET /{hub}/installationcounts`: totals per platform from the store's counters and the audience of tag
/// expressions, for Manage only, with precise errors.
@Suite struct InstallationCountsEndpointTests {
    @Test func countsAreTotalPerPlatformAndPerExpression() async throws {
        try await APITestHarness.run { api in
            for (id, tags) in [("a", ["sports"]), ("b", ["sports", "muted"]), ("c", ["news"]), ("d", [])] {
                let put = try await api.request(
                    .put, "/demo/installations/\(id)", key: "listen", body: APITestHarness.installationJSON(id, tags: tags))
                #expect(put.status == .ok)
            }
            #expect(try await api.hub.installations.deleteInstallation(id: "d", as: .unrestricted))
            let answer = try await api.request(
                .get, "/demo/installationcounts?tags=sports%20%26%26%20!muted&tags=sports%20||%20news&tags=nobody")
            #expect(answer.status == .ok)
            let json = try #require(answer.json)
            #expect(json["installations"] as? Int == 3)
            #expect(json["expired"] as? Int == 0)
            let platforms = json["platforms"] as? [[String: Any]] ?? []
            #expect(platforms.count == 1 && platforms.first?["platform"] as? String == "test")
            #expect(platforms.first?["installations"] as? Int == 3)
            let tags = (json["tags"] as? [[String: Any]] ?? []).map { "\($0["expression"] ?? "")=\($0["audience"] ?? "")" }
            #expect(tags == ["sports && !muted=1", "sports || news=3", "nobody=0"])
            #expect(answer.headers[.cacheControl] == "no-store")
        }
    }

    @Test func refusalsArePrecise() async throws {
        try await APITestHarness.run { api in
            #expect(try await api.request(.get, "/demo/installationcounts", key: "send").status == .forbidden)
            #expect(try await api.request(.get, "/demo/installationcounts", key: "listen").status == .forbidden)
            let bad = try await api.request(.get, "/demo/installationcounts?tags=a%20%26%26")
            #expect(bad.status == .badRequest)
            #expect(bad.errorCode == "InvalidTagExpression")
            let many = (0..<11).map { "tags=t\($0)" }.joined(separator: "&")
            let tooMany = try await api.request(.get, "/demo/installationcounts?\(many)")
            #expect(tooMany.status == .badRequest)
            #expect(tooMany.errorCode == "TooManyExpressions")
        }
    }
}
