import Foundation
import HTTPTypes
@testable import HubServer
import HubTestSupport
import Hummingbird
import HummingbirdTesting
import NIOCore
import NotificationHub
import Testing

/// `GET /{hub}/feedbackcontainer` and the feedback container it points at: daily PNS feedback blobs, read with the
/// container's token only.
@Suite struct FeedbackContainerTests {
    /// The path and query of an absolute URL the hub answered.
    static func pathAndQuery(_ url: String) throws -> String {
        let components = try #require(URLComponents(string: url))
        return components.percentEncodedPath + (components.percentEncodedQuery.map { "?\($0)" } ?? "")
    }

    /// The URL with its `sig` value changed.
    static func tampered(_ url: String) -> String {
        guard let range = url.range(of: "sig=") else { return url }
        let next = url.index(range.upperBound, offsetBy: 2)
        let replacement: Character = url[next] == "A" ? "B" : "A"
        var text = url
        text.replaceSubrange(next...next, with: String(replacement))
        return text
    }

    /// The element children named `name` of an element.
    static func children(_ element: XMLElement, _ name: String) -> [XMLElement] {
        element.children.filter { $0.name == name }
    }

    @Test func expiredAndInvalidChannelsAreListedInTodaysBlob() async throws {
        try await APITestHarness.run { api in
            for id in ["a", "b", "c"] {
                try await api.request(.put, "/demo/installations/\(id)", key: "listen", body: APITestHarness.installationJSON(id))
            }
            api.adapter.script("dev-b", [DeliveryResult(.expiredChannel, reason: "Unregistered")])
            api.adapter.script("dev-c", [DeliveryResult(.badChannel, reason: "BadDeviceToken")])
            let sent = try await api.request(.post, "/demo/messages", key: "send", headers: SendEndpointTests.headers(), body: "{}")
            let notificationID = try #require(sent.headers[HTTPField.Name("TrackingId")!])
            _ = try await api.waitForFinal(notificationID)

            let answer = try await api.request(.get, "/demo/feedbackcontainer?api-version=2015-01")
            #expect(answer.status == .ok)
            let url = answer.text
            #expect(url.hasPrefix("http://localhost/blobs/demo.feedback?"))
            #expect(url.contains("sr=c") && url.contains("sp=rl") && url.contains("sig=") && url.contains("se="))
            let query = try #require(URLComponents(string: url)?.percentEncodedQuery)

            let listing = try await api.request(.get, "/blobs/demo.feedback?restype=container&comp=list&\(query)", key: nil)
            #expect(listing.status == .ok, "\(listing.text)")
            let results = try XMLReader().parse(Array(listing.body.readableBytesView))
            #expect(results.name == "EnumerationResults")
            #expect(results.attribute("ContainerName") == "demo.feedback")
            let blobs = Self.children(try #require(Self.children(results, "Blobs").first), "Blob")
            let today = PNSFeedbackFiles.blobName(for: Date())
            #expect(blobs.compactMap { Self.children($0, "Name").first?.text } == [today])

            let blob = try await api.request(.get, "/blobs/demo.feedback/\(today)?\(query)", key: nil)
            #expect(blob.status == .ok)
            #expect(blob.headers[HTTPField.Name("x-ms-blob-type")!] == "BlockBlob")
            let lines = blob.text.split(separator: "\n").map(String.init)
            #expect(lines.count == 2)
            let entries = try lines.map { try XMLReader().parse($0) }
            #expect(entries.allSatisfy { $0.name == "PnsFeedback" && $0.namespace == RegistrationXML.descriptionNamespace })
            func field(_ entry: XMLElement, _ name: String) -> String? { Self.children(entry, name).first?.text }
            let byHandle = Dictionary(uniqueKeysWithValues: entries.map { (field($0, "PnsHandle") ?? "", $0) })
            #expect(field(try #require(byHandle["dev-b"]), "NotificationSystemError") == "ExpiredChannel")
            #expect(field(try #require(byHandle["dev-c"]), "NotificationSystemError") == "BadChannel")
            #expect(field(try #require(byHandle["dev-b"]), "InstallationId") == "b")
            #expect(field(try #require(byHandle["dev-b"]), "Platform") == "test")
            #expect(field(try #require(byHandle["dev-b"]), "NotificationId") == notificationID)
            #expect(entries.allSatisfy { field($0, "FeedbackTime")?.hasSuffix("Z") == true })
            // The members in the order the SDK's serializer reads them.
            #expect(entries[0].children.map(\.name).prefix(4) == ["FeedbackTime", "NotificationSystemError", "Platform", "PnsHandle"])

            let missing = try await api.request(.get, "/blobs/demo.feedback/01011999?\(query)", key: nil)
            #expect(missing.status == .notFound)
            #expect(missing.errorCode == "BlobNotFound")
        }
    }

    @Test func theContainerIsOpenedByItsOwnTokenOnly() async throws {
        try await APITestHarness.run { api in
            let url = try await api.request(.get, "/demo/feedbackcontainer").text
            let query = try #require(URLComponents(string: url)?.percentEncodedQuery)
            let list = "restype=container&comp=list"

            #expect(try await api.request(.get, "/blobs/demo.feedback?\(list)&\(query)", key: nil).status == .ok)
            // No token, a tampered one, one for another container or an unknown hub: 403, the same code.
            let tamperedQuery = try #require(URLComponents(string: Self.tampered(url))?.percentEncodedQuery)
            for path in [
                "/blobs/demo.feedback?\(list)", "/blobs/demo.feedback?\(list)&\(tamperedQuery)",
                "/blobs/demo.imports?\(list)&\(query)", "/blobs/other.feedback?\(list)&\(query)",
                "/blobs/demo.feedback?\(list)&\(query.replacingOccurrences(of: "sp=rl", with: "sp=rwl"))",
            ] {
                let refused = try await api.request(.get, path, key: nil)
                #expect(refused.status == .forbidden, "\(path)")
                #expect(refused.errorCode == "AuthenticationFailed")
                #expect(refused.errorMessage?.contains("sig=") == false)
            }
            // The feedback container is read-only.
            let write = try await api.request(.put, "/blobs/demo.feedback/x.txt?\(query)", key: nil, body: "x")
            #expect(write.status == .forbidden)
            // Listing needs Azure's listing parameters.
            let bare = try await api.request(.get, "/blobs/demo.feedback?\(query)", key: nil)
            #expect(bare.status == .badRequest)
            #expect(bare.errorCode == "InvalidQueryParameterValue")
        }
    }

    @Test func aTokenForOneHubsContainerDoesNotOpenAnothers() async throws {
        // Two hubs whose keys have the same names but other secrets.
        var other = APITestHarness.settings(adapters: [RecordingAdapter()])
        other.name = "other"
        other.keys = APITestHarness.keys.map { AccessKey(name: $0.name, rights: $0.rights, primaryKey: "other-\($0.primaryKey)") }
        let configuration = HubsConfiguration(
            server: ServerConfiguration(), hubs: [APITestHarness.settings(adapters: [RecordingAdapter()]), other])
        try await APITestHarness.run(configuration: configuration) { api in
            let demoURL = try await api.request(.get, "/demo/feedbackcontainer").text
            let otherToken = SharedAccessSignature.make(
                resource: "http://localhost/other", keyName: "manage", key: "other-manage-key-0123456789", expiry: Date() + 60)
            let otherURL = try await api.request(.get, "/other/feedbackcontainer", key: nil, headers: [.authorization: otherToken]).text
            #expect(otherURL.hasPrefix("http://localhost/blobs/other.feedback?"))
            let demoQuery = try #require(URLComponents(string: demoURL)?.percentEncodedQuery)
            let otherQuery = try #require(URLComponents(string: otherURL)?.percentEncodedQuery)
            let list = "restype=container&comp=list"
            #expect(try await api.request(.get, "/blobs/demo.feedback?\(list)&\(demoQuery)", key: nil).status == .ok)
            #expect(try await api.request(.get, "/blobs/other.feedback?\(list)&\(otherQuery)", key: nil).status == .ok)
            #expect(try await api.request(.get, "/blobs/other.feedback?\(list)&\(demoQuery)", key: nil).status == .forbidden)
            #expect(try await api.request(.get, "/blobs/demo.feedback?\(list)&\(otherQuery)", key: nil).status == .forbidden)
        }
    }

    @Test func theContainerURLNeedsTheManageRight() async throws {
        try await APITestHarness.run { api in
            for key in ["listen", "send"] {
                let refused = try await api.request(.get, "/demo/feedbackcontainer", key: key)
                #expect(refused.status == .forbidden)
                #expect(refused.errorCode == "Forbidden")
            }
            let anonymous = try await api.request(.get, "/demo/feedbackcontainer", key: nil)
            #expect(anonymous.status == .unauthorized)
            let badToken = try await api.request(
                .get, "/demo/feedbackcontainer", key: nil,
                headers: [.authorization: Self.tampered(APITestHarness.token("manage"))])
            #expect(badToken.status == .unauthorized)
        }
    }

    @Test func tokensAreBoundToHubContainerPermissionsAndTime() throws {
        let keys = APITestHarness.keys
        let now = Date()
        let token = ContainerSignature(hub: "demo", container: "imports", permissions: [.read, .list], expiry: now + 60)
        let query = try #require(token.query(keys: keys))
        let valid = try ContainerSignature.verify(
            query: query, hub: "demo", container: "imports", needed: .read, keys: keys, now: now)
        #expect(valid.permissions == [.read, .list])
        #expect(throws: ContainerSignature.Failure.self) {
            try ContainerSignature.verify(query: query, hub: "other", container: "imports", needed: .read, keys: keys, now: now)
        }
        #expect(throws: ContainerSignature.Failure.self) {
            try ContainerSignature.verify(query: query, hub: "demo", container: "exports", needed: .read, keys: keys, now: now)
        }
        #expect(throws: ContainerSignature.Failure.self) {
            try ContainerSignature.verify(query: query, hub: "demo", container: "imports", needed: .write, keys: keys, now: now)
        }
        #expect(throws: ContainerSignature.Failure.self) {
            try ContainerSignature.verify(query: query, hub: "demo", container: "imports", needed: .read, keys: keys, now: now + 61)
        }
        // Another hub's keys (same names, other secrets) do not verify it.
        let otherKeys = keys.map { AccessKey(name: $0.name, rights: $0.rights, primaryKey: $0.primaryKey + "-other") }
        #expect(throws: ContainerSignature.Failure.self) {
            try ContainerSignature.verify(query: query, hub: "demo", container: "imports", needed: .read, keys: otherKeys, now: now)
        }
        // A hub without a Manage key signs nothing.
        #expect(token.query(keys: keys.filter { !$0.rights.contains(.manage) }) == nil)
    }
}
