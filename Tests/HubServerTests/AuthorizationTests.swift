import Foundation
import HTTPTypes
import HubServer
import Hummingbird
import HummingbirdTesting
import NotificationHub
import Testing

@Suite struct AuthorizationTests {
    func status(_ api: APITestHarness, _ method: HTTPRequest.Method = .get, _ uri: String = "/demo/installations/x", authorization: String?) async throws -> TestResponse {
        var headers: HTTPFields = [:]
        if let authorization { headers[.authorization] = authorization }
        return try await api.client.execute(uri: uri, method: method, headers: headers, body: nil)
    }

    @Test func validTokensForNamespaceHubOrFullURL() async throws {
        try await APITestHarness.run { api in
            for resource in ["http://localhost/", "https://example.servicebus.windows.net/demo", "sb://localhost/demo/installations/x", "http://localhost/DEMO/installations"] {
                let token = SharedAccessSignature.make(resource: resource, keyName: "listen", key: "listen-key-0123456789", expiry: Date() + 60)
                let response = try await status(api, authorization: token)
                #expect(response.status == .notFound, "\(resource)")
            }
        }
    }

    @Test func secondaryKeysWorkForRotation() async throws {
        try await APITestHarness.run { api in
            let token = SharedAccessSignature.make(resource: "http://localhost/demo", keyName: "send", key: "send-key-secondary-0123", expiry: Date() + 60)
            let response = try await status(api, .get, "/demo/messages/none", authorization: token)
            #expect(response.errorCode == "NotificationNotFound")
        }
    }

    @Test func parametersInAnyOrderAndURLEncodedSignatures() async throws {
        try await APITestHarness.run { api in
            let token = SharedAccessSignature.make(resource: "http://localhost/demo", keyName: "listen", key: "listen-key-0123456789", expiry: Date() + 60)
            let parameters = token.dropFirst("SharedAccessSignature ".count).split(separator: "&")
            let reordered = "SharedAccessSignature " + parameters.reversed().joined(separator: "&")
            let response = try await status(api, authorization: reordered)
            #expect(response.status == .notFound)
        }
    }

    @Test func rejectedTokens() async throws {
        try await APITestHarness.run { api in
            let expired = SharedAccessSignature.make(resource: "http://localhost/demo", keyName: "listen", key: "listen-key-0123456789", expiry: Date() - 1)
            let wrongKey = SharedAccessSignature.make(resource: "http://localhost/demo", keyName: "listen", key: "not-the-key-0123456789", expiry: Date() + 60)
            let unknownName = SharedAccessSignature.make(resource: "http://localhost/demo", keyName: "nobody", key: "listen-key-0123456789", expiry: Date() + 60)
            let otherHub = SharedAccessSignature.make(resource: "http://localhost/other", keyName: "listen", key: "listen-key-0123456789", expiry: Date() + 60)
            let tampered = SharedAccessSignature.make(resource: "http://localhost/demo", keyName: "listen", key: "listen-key-0123456789", expiry: Date() + 60)
                .replacingOccurrences(of: "se=", with: "se=1")
            let cases: [(String?, String)] = [
                (nil, "send an Authorization"),
                ("Bearer abc", "must be a SharedAccessSignature"),
                ("SharedAccessSignature sr=x&sig=y", "must have sr, sig, se and skn"),
                ("SharedAccessSignature sr=x&sig=y&se=soon&skn=listen", "se must be a Unix time"),
                (expired, "expired"),
                (wrongKey, "signature does not match"),
                (unknownName, "not a key of this hub"),
                (otherHub, "signed for another resource"),
                (tampered, "signature does not match"),
            ]
            for (header, message) in cases {
                let response = try await status(api, authorization: header)
                #expect(response.status == .unauthorized)
                #expect(response.errorCode == "Unauthorized")
                #expect(response.errorMessage?.contains(message) == true, "\(header ?? "nil"): \(response.errorMessage ?? "")")
                #expect(response.errorMessage?.contains("listen-key") == false)
            }
        }
    }

    @Test func rightsAreEnforced() async throws {
        try await APITestHarness.run { api in
            let installation = APITestHarness.installationJSON("r")
            #expect(try await api.request(.put, "/demo/installations/r", key: "send", body: installation).status == .forbidden)
            #expect(try await api.request(.put, "/demo/installations/r", key: "listen", body: installation).status == .ok)
            #expect(try await api.request(.put, "/demo/installations/r", key: "manage", body: installation).status == .ok)
            let send = SendEndpointTests.headers()
            let listenSend = try await api.request(.post, "/demo/messages", key: "listen", headers: send, body: "{}")
            #expect(listenSend.status == .forbidden)
            #expect(listenSend.errorMessage?.contains("Send right") == true)
            #expect(try await api.request(.post, "/demo/messages", key: "send", headers: send, body: "{}").status == .created)
            #expect(try await api.request(.post, "/demo/messages", key: "manage", headers: send, body: "{}").status == .created)
        }
    }

    @Test func publicEndpointsNeedNoToken() async throws {
        try await APITestHarness.run { api in
            let health = try await api.request(.get, "/healthz", key: nil)
            #expect(health.status == .ok)
            #expect(try await api.request(.get, "/metrics", key: nil).status == .ok)
            let openapi = try await api.request(.get, "/openapi.yaml", key: nil)
            #expect(openapi.text.hasPrefix("openapi: 3.1.0"))
        }
    }
}
