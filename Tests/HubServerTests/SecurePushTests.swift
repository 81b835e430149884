import APNs
import Crypto
import FCM
import Foundation
import HTTPTypes
import HubServer
import HubTestSupport
import Hummingbird
import HummingbirdTesting
import JWTKit
import NIOCore
@testable import NotificationHub
import Testing
import WNS

/// Secure push through the API: id-only pushes on every platform, bearer-token checks, no existence oracle, no
/// payload in logs or in the database.
@Suite struct SecurePushTests {
    static let secret = "an-hs256-secret-of-at-least-32-bytes!!"
    static let payload = #"{"balance":"CHF 12,345.67","iban":"CH93-SECRET-0000"}"#
    static let sensitive = "CH93-SECRET-0000"
    static let ecKey = ES256PrivateKey()

    static func settings(style: SecurePushConfiguration.AnnouncementStyle = .background) -> SecurePushConfiguration {
        SecurePushConfiguration(encryptionKey: SymmetricKey(size: .bits256), announcementStyle: style, alertText: "New secure message")
    }

    /// How the test hubs verify device tokens: HS256 with ``secret`` or ES256 with ``ecKey``.
    static let authentication = DeviceAuthentication(
        issuer: "https://id.example.com", audience: "hub", clockSkewSeconds: 5, hs256Secret: secret,
        publicKeysPEM: [ecKey.publicKey.pemRepresentation])

    struct Claims: JWTPayload {
        var sub: SubjectClaim
        var iss: IssuerClaim
        var aud: AudienceClaim
        var exp: ExpirationClaim
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    static func token(
        user: String, expiry: Date = Date() + 600, issuer: String = "https://id.example.com", audience: String = "hub",
        hmacSecret: String = secret, ecdsa: ES256PrivateKey? = nil
    ) async throws -> String {
        let keys = JWTKeyCollection()
        if let ecdsa {
            await keys.add(ecdsa: ecdsa)
        } else {
            await keys.add(hmac: HMACKey(from: hmacSecret), digestAlgorithm: .sha256)
        }
        return try await keys.sign(
            Claims(sub: .init(value: user), iss: .init(value: issuer), aud: .init(value: [audience]), exp: .init(value: expiry)))
    }

    static func base64URL(_ text: String) -> String {
        Data(text.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    static var adapters: [RecordingAdapter] {
        [
            RecordingAdapter(platform: .apns, format: .apple, announce: APNsAdapter.announcements(for:)),
            RecordingAdapter(platform: .wns, format: .windows, announce: WNSAdapter.announcements(for:)),
        ]
    }

    static func register(_ api: APITestHarness) async throws {
        let devices: [(String, String, String, String)] = [
            ("alice-phone", "apns", "alice", "sports"), ("alice-pc", "wns", "alice", "news"), ("bob-phone", "apns", "bob", "news"),
        ]
        for (id, platform, user, tag) in devices {
            let body = #"{"installationId":"\#(id)","platform":"\#(platform)","pushChannel":"dev-\#(id)","userId":"\#(user)","tags":["username:\#(user)","\#(tag)"]}"#
            let response = try await api.request(.put, "/demo/installations/\(id)", key: "listen", body: body)
            #expect(response.status == .ok)
        }
    }

    func read(_ api: APITestHarness, _ id: String, bearer: String?) async throws -> TestResponse {
        var headers: HTTPFields = [:]
        if let bearer { headers[.authorization] = "Bearer \(bearer)" }
        return try await api.request(.get, "/demo/securenotifications/\(id)", key: nil, headers: headers)
    }

    @Test func onlyTheIdTravelsAndOnlyTheRightUserReads() async throws {
        let logs = CapturedLogs()
        let adapters = [
            RecordingAdapter(platform: .apns, format: .apple, announce: APNsAdapter.announcements(for:)),
            RecordingAdapter(platform: .wns, format: .windows, announce: WNSAdapter.announcements(for:)),
            RecordingAdapter(platform: .fcmv1, format: .fcmv1, announce: FCMAdapter.announcements(for:)),
        ]
        try await APITestHarness.run(adapters: adapters, deviceAuthentication: Self.authentication, securePush: Self.settings(), logger: logs.logger()) { api in
            try await Self.register(api)
            let tablet = #"{"installationId":"alice-tablet","platform":"fcmv1","pushChannel":"dev-alice-tablet","userId":"alice","tags":["username:alice"]}"#
            #expect(try await api.request(.put, "/demo/installations/alice-tablet", key: "listen", body: tablet).status == .ok)
            let created = try await api.request(
                .post, "/demo/securenotifications", key: "send",
                body: #"{"payload":\#(Self.payload),"tags":"username:alice"}"#)
            #expect(created.status == .created)
            let json = try #require(created.json)
            let id = try #require(json["id"] as? String)
            #expect(created.headers[.location]?.hasSuffix("/demo/securenotifications/\(id)") == true)
            let notificationIDs = try #require(json["notificationIds"] as? [String])
            #expect(notificationIDs.count == 3, "one id-only send per platform format")
            for notificationID in notificationIDs {
                #expect(try await api.waitForFinal(notificationID).summary.count(of: .success) == 1)
            }

            // Each of Alice's devices got an id-only push; Bob got nothing.
            let apns = adapters[0].received
            #expect(apns.map(\.installationID) == ["alice-phone"])
            #expect(apns.first?.payload == #"{"aps":{"content-available":1},"secureId":"\#(id)"}"#)
            #expect(apns.first?.headers["apns-push-type"] == "background")
            #expect(apns.first?.headers["apns-priority"] == "5")
            let wns = adapters[1].received
            #expect(wns.map(\.installationID) == ["alice-pc"])
            #expect(wns.first?.payload == id)
            #expect(wns.first?.headers["X-WNS-Type"] == "wns/raw")
            let fcm = adapters[2].received
            #expect(fcm.map(\.installationID) == ["alice-tablet"])
            #expect(fcm.first?.payload == #"{"message":{"data":{"secureId":"\#(id)"}}}"#)
            for received in apns + wns + fcm {
                #expect(!received.payload.contains(Self.sensitive) && !received.payload.contains("balance"))
            }

            // Bob, no token, a bad token: nothing.
            #expect(try await read(api, id, bearer: try await Self.token(user: "bob")).status == .notFound)
            #expect(try await read(api, id, bearer: nil).status == .unauthorized)
            #expect(try await read(api, "no-such-id", bearer: try await Self.token(user: "alice")).status == .notFound)

            // Alice reads it (twice: it is not read-once), with an HS256 and an ES256 token.
            let first = try await read(api, id, bearer: try await Self.token(user: "alice"))
            #expect(first.status == .ok)
            #expect(first.headers[.cacheControl] == "no-store")
            let body = try #require(first.json)
            #expect((body["payload"] as? [String: String])?["iban"] == Self.sensitive)
            #expect(body["createdAt"] is String)
            let again = try await read(api, id, bearer: try await Self.token(user: "alice", ecdsa: Self.ecKey))
            #expect(again.status == .ok)

            // The database holds no plaintext.
            let store = try #require(api.hub.core.secureNotificationStore as? SQLSecureNotificationStore)
            let rows = try await store.database.read("SELECT * FROM secure_notifications", [])
            #expect(rows.count == 1)
            for row in rows {
                for column in ["sealed_payload", "audience", "id"] {
                    let bytes = row.string(column) ?? ""
                    #expect(!bytes.contains(Self.sensitive) && !bytes.contains("balance"))
                }
            }
            // Nor do the logs.
            #expect(!logs.text.isEmpty)
            #expect(!logs.text.contains(Self.sensitive) && !logs.text.contains("balance"))
            #expect(!logs.text.contains(Self.secret))
        }
    }

    @Test func badTokensAreRefusedWith401() async throws {
        try await APITestHarness.run(adapters: Self.adapters, deviceAuthentication: Self.authentication, securePush: Self.settings()) { api in
            try await Self.register(api)
            let created = try await api.request(
                .post, "/demo/securenotifications", key: "send", body: #"{"payload":"secret","userId":"alice"}"#)
            let id = try #require(created.json?["id"] as? String)
            let otherKey = ES256PrivateKey()
            let header = Self.base64URL(#"{"alg":"none","typ":"JWT"}"#)
            let claims = Self.base64URL(
                #"{"sub":"alice","iss":"https://id.example.com","aud":"hub","exp":\#(Int(Date().timeIntervalSince1970) + 600)}"#)
            let rsaHeader = Self.base64URL(#"{"alg":"RS256","typ":"JWT"}"#)
            let cases: [(String, String)] = [
                ("expired", try await Self.token(user: "alice", expiry: Date() - 60)),
                ("wrong secret", try await Self.token(user: "alice", hmacSecret: "another-secret-that-is-32-bytes-long!!")),
                ("other EC key", try await Self.token(user: "alice", ecdsa: otherKey)),
                ("alg none", "\(header).\(claims)."),
                ("unconfigured RS256", "\(rsaHeader).\(claims).c2ln"),
                ("wrong issuer", try await Self.token(user: "alice", issuer: "https://evil.example.com")),
                ("wrong audience", try await Self.token(user: "alice", audience: "other")),
                ("garbage", "not-a-jwt"),
            ]
            for (name, token) in cases {
                let response = try await read(api, id, bearer: token)
                #expect(response.status == .unauthorized, "\(name)")
                #expect(response.errorCode == "InvalidToken", "\(name)")
                #expect(response.headers[.wwwAuthenticate]?.hasPrefix("Bearer") == true, "\(name)")
            }
            // A SAS token is not a device token.
            let sas = try await api.request(.get, "/demo/securenotifications/\(id)", key: "manage")
            #expect(sas.status == .unauthorized)
            // Still readable by Alice: the failures did not consume it.
            #expect(try await read(api, id, bearer: try await Self.token(user: "alice")).status == .ok)
        }
    }

    @Test func readOnceExpiryAndPurge() async throws {
        let clock = ManualWallClock(Date())
        try await APITestHarness.run(adapters: Self.adapters, deviceAuthentication: Self.authentication, securePush: Self.settings(), clock: clock) { api in
            try await Self.register(api)
            let once = try await api.request(
                .post, "/demo/securenotifications", key: "send",
                body: #"{"payload":{"a":1},"tags":"username:alice && sports","readOnce":true}"#)
            let onceID = try #require(once.json?["id"] as? String)
            // Only Alice's phone matches, but the audience is evaluated on Alice's user tags: she reads it once.
            #expect(try await read(api, onceID, bearer: try await Self.token(user: "alice")).status == .ok)
            #expect(try await read(api, onceID, bearer: try await Self.token(user: "alice")).status == .notFound)

            let short = try await api.request(
                .post, "/demo/securenotifications", key: "send",
                body: #"{"payload":{"b":2},"userId":"alice","timeToLiveSeconds":60}"#)
            let shortID = try #require(short.json?["id"] as? String)
            clock.advance(by: 61)
            #expect(try await read(api, shortID, bearer: try await Self.token(user: "alice", expiry: clock.now() + 600)).status == .notFound)
            #expect(try await api.hub.securePush.purgeExpired() == 1)
            #expect(try await api.hub.securePush.purgeExpired() == 0)
        }
    }

    @Test func createRequestsAreValidated() async throws {
        try await APITestHarness.run(adapters: Self.adapters, deviceAuthentication: Self.authentication, securePush: Self.settings(style: .alert)) { api in
            let cases: [(String, String, HTTPResponse.Status)] = [
                (#"{"tags":"a"}"#, "InvalidSecureNotification", .badRequest),
                (#"{"payload":1}"#, "InvalidSecureNotification", .badRequest),
                (#"{"payload":1,"tags":"a","userId":"b"}"#, "InvalidSecureNotification", .badRequest),
                (#"{"payload":1,"tags":"a &&"}"#, "InvalidTagExpression", .badRequest),
                (#"{"payload":1,"tags":"a","timeToLiveSeconds":999999999}"#, "InvalidNotification", .badRequest),
                (#"{"payload":1,"tags":5}"#, "InvalidSecureNotification", .badRequest),
                ("not json", "InvalidSecureNotification", .badRequest),
            ]
            for (body, code, status) in cases {
                let response = try await api.request(.post, "/demo/securenotifications", key: "send", body: body)
                #expect(response.status == status, "\(body)")
                #expect(response.errorCode == code, "\(body)")
            }
            #expect(try await api.request(.post, "/demo/securenotifications", key: "listen", body: #"{"payload":1,"tags":"a"}"#).status == .forbidden)

            // The alert style: visible placeholder with mutable-content, still id-only.
            try await Self.register(api)
            let created = try await api.request(
                .post, "/demo/securenotifications", key: "send", body: #"{"payload":"x","userId":"bob"}"#)
            let ids = try #require(created.json?["notificationIds"] as? [String])
            for id in ids { _ = try await api.waitForFinal(id) }
            let received = try #require(api.adapters[0].received.first)
            #expect(received.payload.contains(#""mutable-content":1"#) && received.payload.contains("New secure message"))
            #expect(received.headers["apns-push-type"] == "alert")
        }
    }

    @Test func hubsWithoutSecurePushSay404() async throws {
        try await APITestHarness.run { api in
            let response = try await api.request(.post, "/demo/securenotifications", key: "send", body: #"{"payload":1,"tags":"a"}"#)
            #expect(response.status == .notFound && response.errorCode == "SecurePushDisabled")
            // Without device-token settings a bearer token is refused like any invalid token.
            let read = try await api.request(.get, "/demo/securenotifications/x", key: nil, headers: [.authorization: "Bearer x"])
            #expect(read.status == .unauthorized && read.errorCode == "InvalidToken")
        }
    }
}
