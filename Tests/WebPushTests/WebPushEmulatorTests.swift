import AdapterKit
import AsyncHTTPClient
import Crypto
import Foundation
import NIOCore
import NIOHTTP1
import Testing
import WebPush

@testable import PushEmulator

/// The emulator is as strict as a push service and a browser: requests are built by hand here, one rule broken at a
/// time.
@Suite struct WebPushEmulatorTests {
    /// Sends a raw request to the emulator.
    static func post(
        _ hub: WebPushHarness, to subscription: WebPushEmulatorSubscription, body: [UInt8]? = nil,
        authorization: String?? = nil, headers: [String: String?] = [:]
    ) async throws -> (status: Int, headers: HTTPHeaders) {
        // A connection that could not be made is tried again, as a push client would: on a loaded machine a
        // handshake can miss its deadline, and that says nothing about the rule under test.
        var attempt = 1
        while true {
            let http = HTTPClient(
                eventLoopGroupProvider: .singleton,
                configuration: try LazyHTTPClient.configuration(
                    trustingPEM: WebPushHarness.tls.caCertificatePEM, connectTimeout: .seconds(30)))
            do {
                let answer = try await post(http, hub, to: subscription, body: body, authorization: authorization, headers: headers)
                try await http.shutdown()
                return answer
            } catch let error as HTTPClientError where error == .connectTimeout && attempt < 3 {
                try? await http.shutdown()
                attempt += 1
            } catch {
                try? await http.shutdown()
                throw error
            }
        }
    }

    static func post(
        _ http: HTTPClient, _ hub: WebPushHarness, to subscription: WebPushEmulatorSubscription, body: [UInt8]?,
        authorization: String??, headers: [String: String?]
    ) async throws -> (status: Int, headers: HTTPHeaders) {
        let payload = try body ?? WebPushEncryption.encrypt(Array("hello".utf8), for: Self.subscription(of: subscription))
        var request = HTTPClientRequest(url: subscription.endpoint)
        request.method = .POST
        let defaultAuthorization = try WebPushHarness.keys.authorization(
            audience: hub.emulator.origin, expiresAt: Date() + 3600, subject: "mailto:ops@example.com")
        if let value = authorization ?? defaultAuthorization { request.headers.add(name: "Authorization", value: value) }
        var fields: [String: String?] = ["TTL": "60", "Content-Encoding": "aes128gcm"]
        fields.merge(headers) { $1 }
        for (name, value) in fields { if let value { request.headers.add(name: name, value: value) } }
        request.body = .bytes(ByteBuffer(bytes: payload))
        let response = try await http.execute(request, timeout: .seconds(30))
        _ = try await response.body.collect(upTo: 1 << 16)
        return (Int(response.status.code), response.headers)
    }

    static func subscription(of emulated: WebPushEmulatorSubscription) throws -> WebPushSubscription {
        let port = URLComponents(string: emulated.endpoint)?.port ?? 443
        return try WebPushSubscription(
            endpoint: emulated.endpoint, p256dh: emulated.p256dh, auth: emulated.auth,
            policy: WebPushEndpointPolicy(allowedHosts: ["localhost:\(port)"]))
    }

    /// A JWT with the given claims, signed with the harness's key.
    static func token(_ claims: [String: JSONValue], key: VAPIDKeys = WebPushHarness.keys, alg: String = "ES256") throws -> String {
        let header = Base64URL.encode(Array(#"{"typ":"JWT","alg":"\#(alg)"}"#.utf8))
        let body = Base64URL.encode(Array(JSONValue.object(claims).jsonString().utf8))
        let signature = try key.privateKey.signature(for: Array("\(header).\(body)".utf8))
        return "vapid t=\(header).\(body).\(Base64URL.encode(signature.rawRepresentation)), k=\(key.publicKey)"
    }

    @Test func aValidMessageIsDecryptedAndAnswered201() async throws {
        try await WebPushHarness.with { hub in
            let subscription = hub.emulator.createSubscription(applicationServerKey: WebPushHarness.keys.publicKey)
            let (status, headers) = try await Self.post(hub, to: subscription, headers: ["Urgency": "low", "Topic": "t1"])
            #expect(status == 201)
            #expect(headers.first(name: "Location")?.hasPrefix(hub.emulator.origin + "/message/") == true)
            let message = try #require(hub.emulator.recorder.accepted.first)
            #expect(message.text == "hello" && message.timeToLive == 60 && message.urgency == "low" && message.topic == "t1")
        }
    }

    @Test func adminFaultSettingsAreClampedNotTrapped() throws {
        let hostile = try JSONValue(
            parsing: Array(#"{"latencyMilliseconds":1e300,"retryAfterSeconds":-1e300,"throttleRate":7,"serverErrorRate":"x"}"#.utf8))
        let faults = FaultInjection(adminSettings: try #require(hostile.objectValue))
        #expect(faults.latency == .milliseconds(600_000))
        #expect(faults.retryAfterSeconds == 0)
        #expect(faults.throttleRate == 1)
        #expect(faults.serverErrorRate == 0)
        #expect(FaultInjection(adminSettings: [:]).retryAfterSeconds == 1)
    }

    @Test func vapidIsChecked() async throws {
        try await WebPushHarness.with { hub in
            let subscription = hub.emulator.createSubscription(applicationServerKey: WebPushHarness.keys.publicKey)
            let origin = hub.emulator.origin
            let exp = JSONValue.number(Double(Int(Date().timeIntervalSince1970) + 3600))
            let other = VAPIDKeys.generate()
            let cases: [(String?, Int, String)] = [
                (nil, 401, "no Authorization"),
                ("Bearer abc", 401, "scheme is not vapid"),
                ("vapid t=abc", 401, "t and k are both required"),
                (try Self.token(["aud": "https://elsewhere.example", "exp": exp, "sub": "mailto:a@b.c"]), 401, "aud must be"),
                (try Self.token(["aud": .string(origin), "exp": .number(Date().timeIntervalSince1970 - 600), "sub": "mailto:a@b.c"]), 401, "expired"),
                (try Self.token(["aud": .string(origin), "exp": .number(Date().timeIntervalSince1970 + 2 * 86_400), "sub": "mailto:a@b.c"]), 401, "24 hours"),
                (try Self.token(["aud": .string(origin), "exp": exp, "sub": "ops@example.com"]), 401, "sub must be"),
                (try Self.token(["aud": .string(origin), "exp": exp]), 401, "sub must be"),
                (try Self.token(["aud": .string(origin), "exp": exp, "sub": "mailto:a@b.c"], alg: "HS256"), 401, "alg"),
                (try Self.token(["aud": .string(origin), "exp": exp, "sub": "mailto:a@b.c"]).replacingOccurrences(of: "k=\(WebPushHarness.keys.publicKey)", with: "k=\(other.publicKey)"), 401, "signature"),
                (try Self.token(["aud": .string(origin), "exp": exp, "sub": "mailto:a@b.c"], key: other), 403, "not the one the subscription"),
            ]
            for (authorization, expected, reason) in cases {
                hub.emulator.recorder.reset()
                let (status, _) = try await Self.post(hub, to: subscription, authorization: .some(authorization))
                #expect(status == expected, "\(reason)")
                #expect(hub.emulator.recorder.violations.first?.contains(reason) == true, "\(hub.emulator.recorder.violations)")
            }
            #expect(hub.emulator.recorder.acceptedCount == 0)
        }
    }

    @Test func headersEncodingAndSizeAreChecked() async throws {
        try await WebPushHarness.with { hub in
            let subscription = hub.emulator.createSubscription()
            let good = try WebPushEncryption.encrypt(Array("x".utf8), for: Self.subscription(of: subscription))
            var corrupted = good
            corrupted[corrupted.count - 1] ^= 0xFF
            var wrongKeyID = good
            wrongKeyID[20] = 64
            let otherBrowser = hub.emulator.createSubscription()
            let cases: [([UInt8]?, [String: String?], Int, String)] = [
                (nil, ["TTL": nil], 400, "TTL header is missing"),
                (nil, ["TTL": "-1"], 400, "TTL must be"),
                (nil, ["Urgency": "urgent"], 400, "Urgency"),
                (nil, ["Topic": String(repeating: "t", count: 33)], 400, "Topic"),
                (nil, ["Content-Encoding": "aesgcm"], 400, "aes128gcm"),
                (nil, ["Content-Encoding": nil], 400, "aes128gcm"),
                (corrupted, [:], 400, "does not decrypt"),
                (wrongKeyID, [:], 400, "key id"),
                (Array(good.prefix(40)), [:], 400, "no record"),
                (try WebPushEncryption.encrypt(Array("x".utf8), for: Self.subscription(of: otherBrowser)), [:], 400, "does not decrypt"),
                ([UInt8](repeating: 0, count: 4097), [:], 413, "4097 bytes"),
            ]
            for (body, headers, expected, reason) in cases {
                hub.emulator.recorder.reset()
                let (status, _) = try await Self.post(hub, to: subscription, body: body, headers: headers)
                #expect(status == expected, "\(reason)")
                #expect(hub.emulator.recorder.violations.first?.contains(reason) == true, "\(reason): \(hub.emulator.recorder.violations)")
            }
        }
    }

    @Test func unknownAndExpiredSubscriptionsAre404And410() async throws {
        try await WebPushHarness.with { hub in
            let subscription = hub.emulator.createSubscription()
            hub.emulator.expire(subscription.id)
            let expired = try await Self.post(hub, to: subscription)
            #expect(expired.status == 410)
            hub.emulator.remove(subscription.id)
            let removed = try await Self.post(hub, to: subscription)
            #expect(removed.status == 404)
        }
    }

    @Test func theRFC8291ExampleDecrypts() throws {
        // RFC 8291 Appendix A: the user agent's keys and the message the RFC encrypts for them.
        let privateKey = try P256.KeyAgreement.PrivateKey(
            rawRepresentation: try #require(Base64URL.decode("q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94")))
        let body = try #require(Base64URL.decode(WebPushEncryptionTests.rfcBody))
        let plaintext = try WebPushMessageDecryption.decrypt(
            body, privateKey: privateKey, authSecret: try #require(Base64URL.decode("BTBZMqHH6r4Tts7J_aSIgg")))
        #expect(String(decoding: plaintext, as: UTF8.self) == "When I grow up, I want to be a watermelon")
    }

    @Test func subscriptionsAreMadeThroughTheAdminAPI() async throws {
        try await WebPushHarness.with { hub in
            let http = HTTPClient(eventLoopGroupProvider: .singleton)
            let answer: (HTTPResponseStatus, ByteBuffer)
            do {
                var request = HTTPClientRequest(url: "http://127.0.0.1:\(hub.ports.admin)/_emulator/webpush/subscriptions")
                request.method = .POST
                request.body = .bytes(ByteBuffer(string: #"{"applicationServerKey":"\#(WebPushHarness.keys.publicKey)"}"#))
                let response = try await http.execute(request, timeout: .seconds(30))
                answer = (response.status, try await response.body.collect(upTo: 1 << 16))
                try await http.shutdown()
            } catch {
                try? await http.shutdown()
                throw error
            }
            #expect(answer.0 == .created)
            let json = try JSONValue(parsing: Array(answer.1.readableBytesView)).objectValue ?? [:]
            let endpoint = try #require(json["endpoint"]?.stringValue)
            #expect(endpoint.hasPrefix("https://localhost:\(hub.ports.service)/push/"))
            // The answer is a browser pushChannel the adapter accepts and delivers to.
            let channel = PushChannel.object(json.filter { $0.key != "id" })
            try hub.adapter.validate(pushChannel: channel, platform: .browser)
            #expect(await hub.deliver("via admin", to: channel) == .success)
            #expect(hub.emulator.recorder.accepted.last?.text == "via admin")
        }
    }
}
