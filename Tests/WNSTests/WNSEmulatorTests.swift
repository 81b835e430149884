import AsyncHTTPClient
import Foundation
import HubTestSupport
import Logging
import NIOCore
import NIOHTTP1
import NIOSSL
import NotificationHub
import PushEmulator
import Testing

/// The emulator's own rules, checked with a plain HTTP client (not the adapter).
@Suite struct WNSEmulatorTests {
    struct Answer {
        var status: Int
        var headers: [String: String]
        var body: String
    }

    static func withEmulator(_ body: (WNSEmulator, HTTPClient) async throws -> Void) async throws {
        let emulator = WNSEmulator(
            settings: .init(packageSID: WNSHarness.packageSID, clientSecret: WNSHarness.clientSecret),
            tls: WNSHarness.tls, logger: Logger.forTest("e"))
        try await emulator.start()
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates([try WNSHarness.tls.caCertificate()])
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(tlsConfiguration: tls))
        do {
            try await body(emulator, client)
        } catch {
            try? await client.shutdown()
            await emulator.stop()
            throw error
        }
        try await client.shutdown()
        await emulator.stop()
    }

    static func request(
        _ client: HTTPClient, _ url: String, method: HTTPMethod = .POST, headers: [String: String] = [:], body: String = ""
    ) async throws -> Answer {
        var request = HTTPClientRequest(url: url)
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if method == .POST { request.body = .bytes(ByteBuffer(string: body)) }
        let response = try await client.execute(request, timeout: .seconds(10))
        let bytes = try await response.body.collect(upTo: 1 << 20)
        var answerHeaders: [String: String] = [:]
        for (name, value) in response.headers { answerHeaders[name] = value }
        return Answer(status: Int(response.status.code), headers: answerHeaders, body: String(buffer: bytes))
    }

    static func token(_ client: HTTPClient, _ emulator: WNSEmulator, secret: String = WNSHarness.clientSecret) async throws -> Answer {
        let form = "grant_type=client_credentials&client_id=\(WNSHarness.packageSID.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)&client_secret=\(secret)&scope=notify.windows.com"
        return try await request(
            client, emulator.tokenEndpoint, headers: ["Content-Type": "application/x-www-form-urlencoded"], body: form)
    }

    static func accessToken(_ client: HTTPClient, _ emulator: WNSEmulator) async throws -> String {
        let answer = try await token(client, emulator)
        let json = try JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any]
        return try #require(json?["access_token"] as? String)
    }

    @Test func tokenEndpointChecksTheClientCredentialsGrant() async throws {
        try await Self.withEmulator { emulator, client in
            let good = try await Self.token(client, emulator)
            #expect(good.status == 200)
            #expect(good.body.contains(#""token_type":"bearer""#))
            #expect(good.body.contains(#""expires_in":86400"#))
            let bad = try await Self.token(client, emulator, secret: "nope")
            #expect(bad.status == 400)
            #expect(bad.body.contains("invalid_client"))
            let noForm = try await Self.request(client, emulator.tokenEndpoint, headers: ["Content-Type": "application/json"], body: "{}")
            #expect(noForm.status == 400)
            #expect(emulator.tokenRequestCount == 1)
            #expect(emulator.recorder.violations.count == 2)
        }
    }

    @Test func channelEndpointIsStrict() async throws {
        try await Self.withEmulator { emulator, client in
            let token = try await Self.accessToken(client, emulator)
            let uri = emulator.createChannel(id: "c1")
            func send(_ headers: [String: String], _ body: String) async throws -> Answer {
                try await Self.request(client, uri, headers: headers, body: body)
            }
            let auth = "Bearer \(token)"
            let toastHeaders = ["Authorization": auth, "X-WNS-Type": "wns/toast", "Content-Type": "text/xml"]

            let ok = try await send(toastHeaders, Payloads.toast)
            #expect(ok.status == 200)
            #expect(ok.headers["X-WNS-Status"] == "received")
            #expect(ok.headers["X-WNS-Msg-ID"]?.isEmpty == false)
            #expect(ok.headers["X-WNS-Debug-Trace"]?.isEmpty == false)

            #expect(try await send(["X-WNS-Type": "wns/toast", "Content-Type": "text/xml"], Payloads.toast).status == 401)
            #expect(try await send(toastHeaders.merging(["Authorization": "Bearer forged"]) { $1 }, Payloads.toast).status == 401)
            #expect(try await send(["Authorization": auth, "Content-Type": "text/xml"], Payloads.toast).status == 400)
            #expect(try await send(toastHeaders.merging(["X-WNS-Type": "wns/photo"]) { $1 }, Payloads.toast).status == 400)
            #expect(try await send(toastHeaders.merging(["Content-Type": "application/octet-stream"]) { $1 }, Payloads.toast).status == 400)
            #expect(try await send(toastHeaders, "<toast><visual>").status == 400)
            #expect(try await send(toastHeaders, Payloads.tile).status == 400)
            let huge = try await send(toastHeaders, "<toast>" + String(repeating: "x", count: 5000) + "</toast>")
            #expect(huge.status == 413)
            #expect(try await send(toastHeaders.merging(["X-WNS-TTL": "soon"]) { $1 }, Payloads.toast).status == 400)
            let raw = try await send(
                ["Authorization": auth, "X-WNS-Type": "wns/raw", "Content-Type": "application/octet-stream"], "<not-xml")
            #expect(raw.status == 200)
            #expect(emulator.recorder.acceptedCount == 2)
            #expect(emulator.recorder.violations.count == 9)

            let unknown = try await Self.request(client, emulator.channelURI(id: "never-created"), headers: toastHeaders, body: Payloads.toast)
            #expect(unknown.status == 404)
            emulator.setChannel("c1", .otherApp)
            #expect(try await send(toastHeaders, Payloads.toast).status == 403)
            emulator.setChannel("c1", .expired)
            #expect(try await send(toastHeaders, Payloads.toast).status == 410)

            emulator.expireAllTokens()
            let expired = try await Self.request(client, emulator.createChannel(), headers: toastHeaders, body: Payloads.toast)
            #expect(expired.status == 401)
            #expect(expired.headers["X-WNS-Error-Description"] == "Token expired")
            #expect(expired.headers["WWW-Authenticate"]?.contains("Token expired") == true)
        }
    }

    @Test func adminAPI() async throws {
        try await Self.withEmulator { emulator, client in
            let admin = "http://127.0.0.1:\(emulator.adminPort)/_emulator"
            let created = try await Self.request(client, admin + "/channels", body: #"{"id":"x1"}"#)
            #expect(created.status == 200)
            #expect(created.body.contains("/w/?token=x1"))
            let many = try await Self.request(client, admin + "/channels", body: #"{"count":3,"prefix":"m"}"#)
            #expect(many.body.contains("token=m2"))

            let token = try await Self.accessToken(client, emulator)
            let headers = ["Authorization": "Bearer \(token)", "X-WNS-Type": "wns/raw", "Content-Type": "application/octet-stream"]
            #expect(try await Self.request(client, emulator.channelURI(id: "x1"), headers: headers, body: "hello").status == 200)
            let received = try await Self.request(client, admin + "/received", method: .GET)
            #expect(received.body.contains(#""payload":"hello""#))
            #expect(received.body.contains(#""channel":"x1""#))

            #expect(try await Self.request(client, admin + "/channels/x1", body: #"{"state":"expired"}"#).status == 204)
            #expect(try await Self.request(client, emulator.channelURI(id: "x1"), headers: headers, body: "hello").status == 410)
            #expect(try await Self.request(client, admin + "/channels/x1", body: #"{"state":"bogus"}"#).status == 400)

            #expect(try await Self.request(client, admin + "/faults", body: #"{"throttleRate":1,"retryAfterSeconds":9}"#).status == 204)
            let throttled = try await Self.request(client, emulator.channelURI(id: "m0"), headers: headers, body: "hello")
            #expect(throttled.status == 406)
            #expect(throttled.headers["Retry-After"] == "9")

            #expect(try await Self.request(client, admin + "/reset").status == 204)
            #expect(try await Self.request(client, emulator.channelURI(id: "m0"), headers: headers, body: "hello").status == 200)
            // Values out of range are clamped: no negative latency, no rate above one.
            let hostile = #"{"latencyMilliseconds":-5,"throttleRate":-3,"serverErrorRate":"x"}"#
            #expect(try await Self.request(client, admin + "/faults", body: hostile).status == 204)
            #expect(try await Self.request(client, emulator.channelURI(id: "m0"), headers: headers, body: "hello").status == 200)
            #expect(try await Self.request(client, admin + "/tokens/expire").status == 204)
            #expect(try await Self.request(client, emulator.channelURI(id: "m0"), headers: headers, body: "hello").status == 401)
            let violations = try await Self.request(client, admin + "/violations", method: .GET)
            #expect(violations.status == 200)
            #expect(violations.body == "[]")
        }
    }
}
