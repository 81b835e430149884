import Foundation
import HTTPTypes
@testable import HubServer
import Hummingbird
import HummingbirdTesting
import NIOCore
import NotificationHub
import Testing

@Suite struct AuthorizationTests {
    func status(_ api: APITestHarness, _ method: HTTPRequest.Method = .get, _ uri: String = "/demo/installations/x", authorization: String?) async throws -> TestResponse {
        var headers: HTTPFields = [:]
        if let authorization { headers[.authorization] = authorization }
        return try await api.client.execute(uri: uri, method: method, headers: headers, body: nil)
    }

    @Test func validTokensForHubOrFullURL() async throws {
        try await APITestHarness.run { api in
            for resource in [
                "https://example.servicebus.windows.net/demo", "sb://localhost/demo/installations/x",
                "http://localhost/DEMO/installations", "http://localhost/demo/", "/demo/installations/x",
            ] {
                let token = SharedAccessSignature.make(resource: resource, keyName: "listen", key: "listen-key-0123456789", expiry: Date() + 60)
                let response = try await status(api, authorization: token)
                #expect(response.status == .notFound, "\(resource)")
            }
        }
    }

    /// The signed resource covers the request only at path-segment boundaries.
    @Test func scopeIsCheckedAtSegmentBoundaries() async throws {
        try await APITestHarness.run { api in
            func token(_ resource: String) -> String {
                SharedAccessSignature.make(resource: resource, keyName: "listen", key: "listen-key-0123456789", expiry: Date() + 60)
            }
            let body = APITestHarness.installationJSON("a")
            let scoped = token("http://localhost/demo/installations/a")
            #expect(try await api.client.execute(uri: "/demo/installations/a", method: .put, headers: [.authorization: scoped], body: ByteBuffer(string: body)).status == .ok)
            for (path, resource) in [
                ("/demo/installations/ab", "http://localhost/demo/installations/a"),
                ("/demo/installations/a", ""),
                ("/demo/installations/a", "http://x/de"),
                ("/demo/installations/a", "http://elsewhere/"),
                ("/demo/installations/a", "/"),
                ("/demo/installations/a", "http://localhost/demo/installations/./a"),
                ("/demo/installations/a", "http://localhost/demo/installations/../installations/a"),
                ("/demo/installations/a", "http://localhost/other"),
            ] {
                let id = String(path.split(separator: "/").last!)
                let response = try await api.client.execute(
                    uri: path, method: .put, headers: [.authorization: token(resource)],
                    body: ByteBuffer(string: APITestHarness.installationJSON(id)))
                #expect(response.status == .unauthorized, "\(resource) → \(path)")
            }
        }
    }

    /// Azure's .NET SDK signs the lower-cased request URL, with `http`, no port, no query and a trailing slash
    /// (`TokenProvider.NormalizeAppliesTo`); Azure compares case-insensitively, and so does the hub: ids with
    /// capitals are reachable, and a token still covers nothing past a segment boundary.
    @Test func lowerCasedSignatureCoversCapitalisedPath() async throws {
        try await APITestHarness.run { api in
            func token(_ resource: String) -> String {
                SharedAccessSignature.make(resource: resource, keyName: "listen", key: "listen-key-0123456789", expiry: Date() + 60)
            }
            let sdkToken = token("http://localhost/demo/installations/myphone-ÄÖ/")
            let put = try await api.client.execute(
                uri: "/demo/installations/MyPhone-%C3%84%C3%96?api-version=2020-06", method: .put,
                headers: [.authorization: sdkToken], body: ByteBuffer(string: APITestHarness.installationJSON("MyPhone-ÄÖ")))
            #expect(put.status == .ok)
            let scoped = token("http://localhost/demo/installations/a")
            for path in ["/demo/installations/A", "/demo/installations/a"] {
                let id = String(path.split(separator: "/").last!)
                let response = try await api.client.execute(
                    uri: path, method: .put, headers: [.authorization: scoped],
                    body: ByteBuffer(string: APITestHarness.installationJSON(id)))
                #expect(response.status == .ok, "\(path)")
            }
            for path in ["/demo/installations/AB", "/demo/installations/Ab"] {
                let id = String(path.split(separator: "/").last!)
                let response = try await api.client.execute(
                    uri: path, method: .put, headers: [.authorization: scoped],
                    body: ByteBuffer(string: APITestHarness.installationJSON(id)))
                #expect(response.status == .unauthorized, "\(path)")
            }
        }
        #expect(SharedAccessSignature.sameSegment("myphone", "MyPhone"))
        #expect(SharedAccessSignature.sameSegment("ä", "Ä"))
        #expect(!SharedAccessSignature.sameSegment("a", "ab"))
        #expect(!SharedAccessSignature.sameSegment("a-", "a_"))
    }

    /// Signed resources and request paths are compared after percent-decoding, whether or not they hold escapes; a
    /// malformed escape in the signed resource covers nothing.
    @Test func escapedAndPlainSegmentsCompareDecoded() async throws {
        try await APITestHarness.run { api in
            func put(_ path: String, signedFor resource: String) async throws -> HTTPResponse.Status {
                let token = SharedAccessSignature.make(
                    resource: resource, keyName: "listen", key: "listen-key-0123456789", expiry: Date() + 60)
                return try await api.client.execute(
                    uri: path, method: .put, headers: [.authorization: token],
                    body: ByteBuffer(string: APITestHarness.installationJSON("a:b"))).status
            }
            // `make` percent-encodes the resource it signs: the token's `sr` holds "a%3Ab".
            let statuses = [
                try await put("/demo/installations/a%3Ab", signedFor: "http://localhost/demo/installations/a:b"),
                try await put("/demo/installations/a:b", signedFor: "http://localhost/demo/installations/a:b"),
                try await put("/demo/installations/a%3Ab", signedFor: "http://localhost/demo/installations/a"),
                try await put("/demo/installations/a%3Ab", signedFor: "http://localhost/demo/installations/a:c"),
            ]
            #expect(statuses == [.ok, .ok, .unauthorized, .unauthorized])
        }
        #expect(SharedAccessSignature.covers(signedResource: "http%3A%2F%2Fh%2Fdemo%2Fx", hubName: "demo", requestPath: "/demo/x"))
        #expect(SharedAccessSignature.covers(signedResource: "http://h/demo/x", hubName: "demo", requestPath: "/demo/%78"))
        #expect(!SharedAccessSignature.covers(signedResource: "http://h/demo/x%zz", hubName: "demo", requestPath: "/demo/x%zz"))
        #expect(!SharedAccessSignature.covers(signedResource: "http://h/demo/x%", hubName: "demo", requestPath: "/demo/x"))
    }

    /// Some Azure clients sign the namespace URL: it covers the hub when its host is the request's host.
    @Test func namespaceTokensForThisHost() async throws {
        try await APITestHarness.run { api in
            func token(_ resource: String) -> String {
                SharedAccessSignature.make(resource: resource, keyName: "listen", key: "listen-key-0123456789", expiry: Date() + 60)
            }
            for (resource, expected) in [
                ("https://localhost/", HTTPResponse.Status.notFound), ("sb://LOCALHOST", .notFound),
                ("https://other.example/", .unauthorized), ("", .unauthorized),
            ] {
                let response = try await api.client.execute(
                    uri: "/demo/installations/x", method: .get, headers: [.authorization: token(resource), HTTPField.Name("Host")!: "localhost"],
                    body: nil)
                #expect(response.status == expected, "\(resource)")
            }
        }
    }

    /// Unknown hub, unknown key and bad signature get the same answer, so names cannot be enumerated.
    @Test func failuresAreIndistinguishable() async throws {
        try await APITestHarness.run { api in
            let unknownHub = SharedAccessSignature.make(resource: "http://localhost/nohub", keyName: "listen", key: "listen-key-0123456789", expiry: Date() + 60)
            let unknownKey = SharedAccessSignature.make(resource: "http://localhost/demo", keyName: "nobody", key: "listen-key-0123456789", expiry: Date() + 60)
            let badSignature = SharedAccessSignature.make(resource: "http://localhost/demo", keyName: "listen", key: "wrong-key-0123456789", expiry: Date() + 60)
            let answers = try await [
                status(api, .get, "/nohub/installations/x", authorization: unknownHub),
                status(api, .get, "/demo/installations/x", authorization: unknownKey),
                status(api, .get, "/demo/installations/x", authorization: badSignature),
            ]
            for answer in answers {
                #expect(answer.status == .unauthorized)
                #expect(answer.text == answers[0].text)
            }
            // Without credentials, an unknown hub and a known one answer alike too.
            let known = try await status(api, .get, "/demo/installations/x", authorization: nil)
            let unknown = try await status(api, .get, "/nohub/installations/x", authorization: nil)
            #expect(known.status == .unauthorized && known.text == unknown.text)
        }
    }

    /// Authentication happens before the body is read: a refused request with a huge body answers 401, not 413.
    @Test func authenticationPrecedesTheBody() async throws {
        try await APITestHarness.run { api in
            let body = String(repeating: "x", count: 200_000)
            let response = try await api.client.execute(
                uri: "/demo/messages", method: .post, headers: [HTTPField.Name("ServiceBusNotification-Format")!: "test"],
                body: ByteBuffer(string: body))
            #expect(response.status == .unauthorized)
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
                ("Basic abc", "must be a SharedAccessSignature"),
                ("SharedAccessSignature sr=x&sig=y", "must have sr, sig, se and skn"),
                ("SharedAccessSignature sr=x&sig=y&se=soon&skn=listen", "se must be a Unix time"),
                (expired, "expired"),
                (wrongKey, "not valid for this request"),
                (unknownName, "not valid for this request"),
                (otherHub, "not valid for this request"),
                (tampered, "not valid for this request"),
            ]
            for (header, message) in cases {
                let response = try await status(api, authorization: header)
                #expect(response.status == .unauthorized)
                #expect(response.errorCode == "Unauthorized")
                #expect(response.errorMessage?.contains(message) == true, "\(header ?? "nil"): \(response.errorMessage ?? "")")
                #expect(response.errorMessage?.contains("listen-key") == false)
            }
            // A bearer token where the hub verifies none is refused as an invalid token.
            let bearer = try await status(api, authorization: "Bearer abc")
            #expect(bearer.status == .unauthorized && bearer.errorCode == "InvalidToken")
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
