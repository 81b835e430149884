import Foundation
import HTTPTypes
import HubServer
import Hummingbird
import HummingbirdTesting
@testable import NotificationHub
import Testing

@Suite struct InstallationEndpointTests {
    @Test func putGetDeleteRoundTrip() async throws {
        try await APITestHarness.run { api in
            let put = try await api.request(
                .put, "/demo/installations/i1?api-version=2020-06", key: "listen",
                body: APITestHarness.installationJSON("i1", tags: ["username:alice"], extra: #","userId":"alice""#))
            #expect(put.status == .ok)
            let get = try await api.request(.get, "/demo/installations/i1", key: "listen")
            #expect(get.status == .ok)
            let json = try #require(get.json)
            #expect(json["installationId"] as? String == "i1")
            #expect(json["platform"] as? String == "test")
            #expect(json["pushChannel"] as? String == "dev-i1")
            #expect(json["userId"] as? String == "alice")
            #expect(json["tags"] as? [String] == ["username:alice"])
            #expect(json["expiredPushChannel"] as? Bool == false)
            #expect(json["lastUpdate"] is String)
            #expect(try await api.request(.delete, "/demo/installations/i1", key: "listen").status == .noContent)
            #expect(try await api.request(.delete, "/demo/installations/i1", key: "listen").status == .noContent)
            let missing = try await api.request(.get, "/demo/installations/i1", key: "listen")
            #expect(missing.status == .notFound)
            #expect(missing.errorCode == "InstallationNotFound")
        }
    }

    @Test(arguments: [
        (#"{"installationId":"i1","platform":"test"}"#, "InvalidInstallation", "missing required field /pushChannel"),
        (#"{"installationId":"i1","platform":"test","pushChannel":"dev-1","tags":"x"}"#, "InvalidInstallation", "/tags has the wrong type"),
        (#"{"installationId":"other","platform":"test","pushChannel":"dev-1"}"#, "InvalidInstallation", "must be the id in the URL"),
        (#"{"installationId":"i1","platform":"test","pushChannel":"bad"}"#, "InvalidPushChannel", "dev-<n>"),
        (#"{"installationId":"i1","platform":"mpns","pushChannel":"dev-1"}"#, "UnknownPlatform", "use one of: test"),
        (#"{"installationId":"i1","platform":"test","pushChannel":"dev-1","tags":["bad tag"]}"#, "InvalidTag", "contains ' '"),
        (#"{"installationId":"i1","platform":"test","pushChannel":"dev-1","templates":{"t":{"body":"{\"a\":\"$(x\"}"}}}"#, "InvalidTemplate", "template 't'"),
        ("not json", "InvalidInstallation", "not valid JSON"),
        ("\u{FF}\u{FE}", "InvalidInstallation", "not valid JSON"),
    ])
    func badInstallationsGetPreciseErrors(body: String, code: String, message: String) async throws {
        try await APITestHarness.run { api in
            let response = try await api.request(.put, "/demo/installations/i1", key: "listen", body: body)
            #expect(response.status == .badRequest)
            #expect(response.errorCode == code)
            #expect(response.errorMessage?.contains(message) == true, "\(response.errorMessage ?? "")")
        }
    }

    @Test func tooManyTagsIsRejected() async throws {
        try await APITestHarness.run(limits: HubLimits(tagsPerInstallation: 2)) { api in
            let response = try await api.request(
                .put, "/demo/installations/i1", key: "listen", body: APITestHarness.installationJSON("i1", tags: ["a", "b", "c"]))
            #expect(response.errorCode == "TooManyTags")
        }
    }

    @Test func patchFollowsAzureSemantics() async throws {
        try await APITestHarness.run { api in
            try await api.request(.put, "/demo/installations/p", key: "listen", body: APITestHarness.installationJSON("p", tags: ["a"]))
            let patch = """
                [
                  {"op": "add", "path": "/tags", "value": "b"},
                  {"op": "add", "path": "/tags", "value": ["c", "d"]},
                  {"op": "remove", "path": "/tags/a"},
                  {"op": "replace", "path": "/userId", "value": "bob"},
                  {"op": "add", "path": "/templates/t1", "value": {"body": "{\\"m\\":\\"$(m)\\"}", "tags": ["x"]}},
                  {"op": "replace", "path": "/templates/t1/body", "value": "{\\"n\\":\\"$(n)\\"}"},
                  {"op": "add", "path": "/templates/t1/headers", "value": {"X-WNS-Type": "wns/raw"}}
                ]
                """
            let response = try await api.request(
                .patch, "/demo/installations/p", key: "listen", headers: [.contentType: "application/json-patch+json"], body: patch)
            #expect(response.status == .ok)
            let stored = try #require(try await api.hub.core.installationStore.installation(id: "p"))
            #expect(stored.tags == ["b", "c", "d"])
            #expect(stored.userID == "bob")
            #expect(stored.templates["t1"]?.body == #"{"n":"$(n)"}"#)
            #expect(stored.templates["t1"]?.headers == ["X-WNS-Type": "wns/raw"])
            #expect(stored.templates["t1"]?.tags == ["x"])

            try await api.request(.patch, "/demo/installations/p", key: "listen", body: #"[{"op":"remove","path":"/tags"},{"op":"remove","path":"/templates/t1"}]"#)
            let cleared = try #require(try await api.hub.core.installationStore.installation(id: "p"))
            #expect(cleared.tags.isEmpty)
            #expect(cleared.templates.isEmpty)
        }
    }

    @Test func addingThePushChannelClearsExpiry() async throws {
        try await APITestHarness.run { api in
            try await api.request(.put, "/demo/installations/e", key: "listen", body: APITestHarness.installationJSON("e"))
            try await api.hub.core.installationStore.markChannelExpired(installationID: "e", pushChannel: .handle("dev-e"), notUpdatedAfter: nil)
            #expect(try await api.hub.core.installationStore.installation(id: "e")?.expiredPushChannel == true)
            try await api.request(.patch, "/demo/installations/e", key: "listen", body: #"[{"op":"add","path":"/pushChannel","value":"dev-e"}]"#)
            #expect(try await api.hub.core.installationStore.installation(id: "e")?.expiredPushChannel == false)
        }
    }

    @Test(arguments: [
        ("{}", "must be an array"),
        (#"[{"op":"move","path":"/tags"}]"#, "operation /0/op must be"),
        (#"[{"op":"add","path":"tags","value":"x"}]"#, "operation /0/path must be a JSON pointer"),
        (#"[{"op":"add","path":"/tags"}]"#, "operation /0/value is required"),
        (#"[{"op":"add","path":"/tags","value":"a"},{"op":"add","path":"/platform","value":"x"}]"#, "operation /1 (add /platform): the path is not patchable"),
        (#"[{"op":"add","path":"/tags","value":[1]}]"#, "tags must be strings"),
        (#"[{"op":"replace","path":"/templates/none/body","value":"x"}]"#, "no template named 'none'"),
    ])
    func badPatchesNameTheOperation(body: String, message: String) async throws {
        try await APITestHarness.run { api in
            try await api.request(.put, "/demo/installations/p", key: "listen", body: APITestHarness.installationJSON("p"))
            let response = try await api.request(.patch, "/demo/installations/p", key: "listen", body: body)
            #expect(response.status == .badRequest)
            #expect(response.errorCode == "InvalidPatch")
            #expect(response.errorMessage?.contains(message) == true, "\(response.errorMessage ?? "")")
        }
    }

    @Test func patchValidatesTheResultAndReportsMissingInstallations() async throws {
        try await APITestHarness.run { api in
            try await api.request(.put, "/demo/installations/p", key: "listen", body: APITestHarness.installationJSON("p"))
            let badTag = try await api.request(.patch, "/demo/installations/p", key: "listen", body: #"[{"op":"add","path":"/tags","value":"no spaces"}]"#)
            #expect(badTag.errorCode == "InvalidTag")
            let missing = try await api.request(.patch, "/demo/installations/nope", key: "listen", body: #"[{"op":"remove","path":"/tags"}]"#)
            #expect(missing.status == .notFound)
        }
    }

    /// A space in `tags` may come percent-encoded or form-encoded as `+` (browsers' URLSearchParams, curl's
    /// --data-urlencode); both mean a space, and a literal plus (`%2B`) is still no tag character.
    @Test(arguments: ["sports+%7C%7C+news", "sports%20%7C%7C%20news", "(sports+||+news)+%26%26+!muted", "sports%7C%7Cnews"])
    func listingReadsAPlusInTagsAsASpace(tags: String) async throws {
        try await APITestHarness.run { api in
            for (index, tag) in ["sports", "news", "weather"].enumerated() {
                try await api.request(
                    .put, "/demo/installations/f\(index)", key: "listen", body: APITestHarness.installationJSON("f\(index)", tags: [tag]))
            }
            let response = try await api.request(.get, "/demo/installations?tags=\(tags)", key: "manage")
            #expect(response.status == .ok, "\(response.text)")
            let ids = (response.json?["installations"] as? [[String: Any]])?.compactMap { $0["installationId"] as? String }
            #expect(ids == ["f0", "f1"])
        }
    }

    /// An escape that is not UTF-8 is a 400, never a `tags` read as absent (which would list every installation).
    @Test(arguments: ["/demo/installations?tags=%FF", "/demo/installations?tags=%E2%82", "/demo/registrations?$filter=%FF"])
    func malformedQueryEscapesAreRefused(uri: String) async throws {
        try await APITestHarness.run { api in
            try await api.request(.put, "/demo/installations/f0", key: "listen", body: APITestHarness.installationJSON("f0"))
            let response = try await api.request(.get, uri, key: "manage")
            #expect(response.status == .badRequest)
            #expect(response.errorCode == "InvalidParameter")
        }
    }

    @Test func listingKeepsAnEncodedPlusLiteral() async throws {
        try await APITestHarness.run { api in
            let response = try await api.request(.get, "/demo/installations?tags=sports%2B%7C%7C%2Bnews", key: "manage")
            #expect(response.errorCode == "InvalidTagExpression")
            #expect(response.text.contains("'+'"), "\(response.text)")
        }
    }

    @Test func listingByTagExpressionPages() async throws {
        try await APITestHarness.run { api in
            for index in 0..<7 {
                try await api.request(
                    .put, "/demo/installations/l\(index)", key: "listen",
                    body: APITestHarness.installationJSON("l\(index)", tags: index < 5 ? ["sports"] : ["news"]))
            }
            let first = try await api.request(.get, "/demo/installations?tags=sports%20%7C%7C%20x&top=3", key: "manage")
            #expect(first.status == .ok)
            let firstPage = try #require(first.json)
            #expect((firstPage["installations"] as? [[String: Any]])?.count == 3)
            let token = try #require(firstPage["continuationToken"] as? String)
            #expect(first.headers[HTTPField.Name("x-ms-continuationtoken")!] == token)
            let second = try await api.request(.get, "/demo/installations?tags=sports&top=3&continuationToken=\(token)", key: "manage")
            let ids = (second.json?["installations"] as? [[String: Any]])?.compactMap { $0["installationId"] as? String }
            #expect(ids == ["l3", "l4"])
            #expect(second.json?["continuationToken"] == nil)

            #expect(try await api.request(.get, "/demo/installations", key: "listen").status == .forbidden)
            #expect(try await api.request(.get, "/demo/installations?tags=(a", key: "manage").errorCode == "InvalidTagExpression")
            #expect(try await api.request(.get, "/demo/installations?top=0", key: "manage").errorCode == "InvalidParameter")
            #expect(try await api.request(.get, "/demo/installations?continuationToken=%21", key: "manage").errorCode == "InvalidContinuationToken")
        }
    }
}
