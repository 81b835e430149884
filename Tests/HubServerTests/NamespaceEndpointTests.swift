import Foundation
import HTTPTypes
import HubServer
import HubTestSupport
import Hummingbird
import HummingbirdTesting
import NIOCore
import NotificationHub
import Testing

/// What Azure's `NamespaceManager` reads: a hub's description and the namespace's hubs; creating and deleting hubs
/// is refused, since hub.yaml defines them.
@Suite struct NamespaceEndpointTests {
    @Test func aHubIsDescribedAsAnAtomEntry() async throws {
        try await APITestHarness.run { api in
            let answer = try await api.request(.get, "/demo?api-version=2017-04")
            #expect(answer.status == .ok)
            #expect(answer.headers[.contentType] == "application/atom+xml;type=entry;charset=utf-8")
            let entry = try XMLReader().parse(Array(answer.body.readableBytesView))
            #expect(entry.name == "entry" && entry.namespace == RegistrationXML.atomNamespace)
            #expect(entry.children.first { $0.name == "title" }?.text == "demo")
            let description = try #require(entry.children.first { $0.name == "content" }?.children.first)
            #expect(description.name == "NotificationHubDescription")
            #expect(description.namespace == RegistrationXML.descriptionNamespace)
            #expect(description.children.first { $0.name == "RegistrationTtl" }?.text == "P10675199DT2H48M5.4775807S")
            // No key material in the answer.
            #expect(!answer.text.contains("manage-key") && !answer.text.contains("PrimaryKey"))

            for key in ["listen", "send"] {
                #expect(try await api.request(.get, "/demo", key: key).status == .forbidden)
            }
        }
    }

    @Test func hubsAreNotCreatedOrDeletedThroughTheAPI() async throws {
        try await APITestHarness.run { api in
            let put = try await api.request(.put, "/demo?api-version=2017-04", body: "<entry/>")
            #expect(put.status == .conflict)
            #expect(put.errorCode == "HubDefinedInConfiguration")
            #expect(put.errorMessage?.contains("hub.yaml") == true)
            let delete = try await api.request(.delete, "/demo?api-version=2017-04")
            #expect(delete.status == .methodNotAllowed)
            #expect(delete.errorCode == "HubDefinedInConfiguration")
            #expect(delete.headers[.allow] == "GET")
            #expect(try await api.request(.delete, "/demo", key: "send").status == .forbidden)
            // The hub is still there.
            #expect(try await api.request(.get, "/demo").status == .ok)
        }
    }

    @Test func theNamespaceListsTheHubsAManageKeyOpens() async throws {
        try await APITestHarness.run { api in
            func list(_ key: String, resource: String = "http://localhost/") async throws -> TestResponse {
                try await api.request(
                    .get, "/", key: nil, headers: [.authorization: APITestHarness.token(key, resource: resource)])
            }
            let answer = try await list("manage")
            #expect(answer.status == .ok, "\(answer.text)")
            let feed = try XMLReader().parse(Array(answer.body.readableBytesView))
            #expect(feed.name == "feed")
            let titles = feed.children.filter { $0.name == "entry" }.compactMap { $0.children.first { $0.name == "title" }?.text }
            #expect(titles == ["demo"])

            #expect(try await list("send").status == .forbidden)
            #expect(try await list("manage", resource: "http://elsewhere/").status == .unauthorized)
            #expect(try await api.request(.get, "/", key: nil).status == .unauthorized)
            let expired = try await api.request(
                .get, "/", key: nil,
                headers: [.authorization: APITestHarness.token("manage", resource: "http://localhost/", expiry: Date() - 10)])
            #expect(expired.status == .unauthorized)
        }
    }
}
