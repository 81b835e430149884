import HubServer
import Testing
import Yams

@Suite struct OpenAPIDocumentTests {
    @Test func documentListsExactlyTheRoutes() throws {
        let document = try #require(try Yams.load(yaml: OpenAPIDocument.yaml) as? [String: Any])
        #expect(document["openapi"] as? String == "3.1.0")
        let paths = try #require(document["paths"] as? [String: [String: Any]])
        var documented: Set<String> = []
        for (path, item) in paths {
            for method in ["get", "put", "post", "patch", "delete"] where item[method] != nil {
                documented.insert("\(method.uppercased()) \(path)")
            }
        }
        #expect(documented == Set(HubAPI.routes))
    }
}

@Suite struct OpenAPIBearerTests {
    /// The routes a device user's bearer JWT opens, as the router answers them: exactly these declare bearer auth.
    static let deviceRoutes: Set<String> = [
        "PUT /{hub}/installations/{installationId}", "PATCH /{hub}/installations/{installationId}",
        "GET /{hub}/installations/{installationId}", "DELETE /{hub}/installations/{installationId}",
        "POST /{hub}/registrationIDs", "POST /{hub}/registrationids", "POST /{hub}/registrations",
        "GET /{hub}/registrations", "PUT /{hub}/registrations/{registrationId}",
        "GET /{hub}/registrations/{registrationId}", "DELETE /{hub}/registrations/{registrationId}",
        "GET /{hub}/securenotifications/{secureId}", "POST /{hub}/receipts",
        "GET /{hub}/installations/{installationId}/liveactivities",
        "PUT /{hub}/installations/{installationId}/liveactivities/pushtostart",
        "DELETE /{hub}/installations/{installationId}/liveactivities/pushtostart",
        "PUT /{hub}/installations/{installationId}/liveactivities/{activityId}",
        "DELETE /{hub}/installations/{installationId}/liveactivities/{activityId}",
        "GET /{hub}/liveactivities/channels/{tag}",
    ]

    @Test func routesThatAcceptADeviceUsersTokenDeclareBearerAuth() throws {
        let document = try #require(try Yams.load(yaml: OpenAPIDocument.yaml) as? [String: Any])
        let paths = try #require(document["paths"] as? [String: [String: Any]])
        var bearer: Set<String> = []
        for (path, item) in paths {
            for method in ["get", "put", "post", "patch", "delete"] {
                guard let operation = item[method] as? [String: Any] else { continue }
                let schemes = (operation["security"] as? [[String: Any]] ?? []).flatMap(\.keys)
                if schemes.contains("bearer") { bearer.insert("\(method.uppercased()) \(path)") }
            }
        }
        #expect(bearer == Self.deviceRoutes)
        #expect(Self.deviceRoutes.isSubset(of: Set(HubAPI.routes)))
    }
}
