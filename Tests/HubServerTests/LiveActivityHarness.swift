import APNs
import Crypto
import Foundation
import HTTPTypes
import HubServer
import HubTestSupport
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import NotificationHub
import PushEmulator
import Testing

/// A hub `demo` whose APNs adapter (built by its factory's settings, as `hub serve` builds it) sends to a real APNs
/// emulator over TLS, behind the real router, with device users' tokens verified as ``SecurePushTests`` signs them.
struct LiveActivityHarness {
    static let teamID = "TEAM123456"
    static let keyID = "KEY1234567"
    static let topic = "com.example.app"
    static let tls = try! EmulatorTLS.generate()
    static let signingKey = P256.Signing.PrivateKey()

    let api: APITestHarness
    let emulator: APNsEmulator

    var hub: Hub { api.hub }

    /// A hex token, distinct per index and kind (`d` device, `s` push-to-start, `a` activity).
    static func token(_ kind: Character, _ index: Int) -> String {
        let prefix: String =
            switch kind {
            case "s": "5a"
            case "a": "aa"
            default: "dd"
            }
        return prefix + String(format: "%06x", index) + String(repeating: "0f", count: 28)
    }

    static func run(
        expiredChannelPolicy: DeliveryConfiguration.ExpiredChannelPolicy = .markExpired,
        _ body: @Sendable (LiveActivityHarness) async throws -> Void
    ) async throws {
        var logger = Logger.forTest("liveactivity-test")
        logger.logLevel = .warning
        let emulator = APNsEmulator(
            configuration: APNsEmulatorConfiguration(
                port: 0, teamID: teamID, keyID: keyID, publicKey: signingKey.publicKey, topics: [topic],
                tokenMinimumRefreshInterval: 0),
            tls: tls, logger: logger)
        let port = try await emulator.start()
        do {
            let settings = APNsSettings(
                host: "127.0.0.1", port: port, caCertificatePEM: tls.caCertificatePEM, teamID: teamID, keyID: keyID,
                privateKeyPEM: signingKey.pemRepresentation, topic: topic, connections: 1, requestTimeout: .seconds(20))
            let hub = HubSettings(
                name: "demo", keys: APITestHarness.keys, storage: .memory,
                delivery: DeliveryConfiguration(initialBackoffSeconds: 0.01, expiredChannelPolicy: expiredChannelPolicy),
                adapters: [
                    AdapterSettings(factory: APNsAdapterFactory.self, settings: settings),
                    AdapterSettings(adapter: RecordingAdapter()),
                ],
                deviceAuthentication: SecurePushTests.authentication)
            try await APITestHarness.run(configuration: HubsConfiguration(hubs: [hub]), logger: logger) { api in
                try await body(LiveActivityHarness(api: api, emulator: emulator))
            }
        } catch {
            await emulator.stop()
            throw error
        }
        await emulator.stop()
    }

    /// A request with `key`'s SharedAccessSignature, or a user's bearer token.
    @discardableResult
    func request(
        _ method: HTTPRequest.Method, _ path: String, key: String? = "listen", bearer: String? = nil, body: String? = nil,
        headers: HTTPFields = [:]
    ) async throws -> TestResponse {
        var headers = headers
        headers[.contentType] = headers[.contentType] ?? "application/json"
        if let bearer { headers[.authorization] = "Bearer \(bearer)" }
        return try await api.request(method, path, key: bearer == nil ? key : nil, headers: headers, body: body)
    }

    /// Registers an apns installation.
    func registerInstallation(_ id: String, token: String, bearer: String? = nil) async throws {
        let response = try await request(
            .put, "/demo/installations/\(id)", bearer: bearer,
            body: #"{"installationId":"\#(id)","platform":"apns","pushChannel":"\#(token)"}"#)
        #expect(response.status == .ok, "\(response.text)")
    }

    /// Registers the push-to-start token of an installation.
    @discardableResult
    func registerPushToStart(_ installation: String, token: String, bearer: String? = nil) async throws -> TestResponse {
        try await request(
            .put, "/demo/installations/\(installation)/liveactivities/pushtostart", bearer: bearer,
            body: #"{"pushToken":"\#(token)"}"#)
    }

    /// Registers one activity's update token.
    @discardableResult
    func registerActivity(
        _ installation: String, _ activity: String, token: String, tags: [String] = [], bearer: String? = nil
    ) async throws -> TestResponse {
        let tagList = tags.map { "\"\($0)\"" }.joined(separator: ",")
        return try await request(
            .put, "/demo/installations/\(installation)/liveactivities/\(activity)", bearer: bearer,
            body: #"{"pushToken":"\#(token)","attributesType":"MatchAttributes","tags":[\#(tagList)]}"#)
    }

    /// `POST /demo/liveactivities/messages` with the Send key.
    func send(_ body: String, headers: HTTPFields = [:]) async throws -> TestResponse {
        try await request(.post, "/demo/liveactivities/messages", key: "send", body: body, headers: headers)
    }

    /// The notification id of a 201's `TrackingId`.
    static func trackingID(_ response: TestResponse) throws -> String {
        try #require(response.headers[HTTPField.Name("TrackingId")!])
    }

    /// Waits until the notification is final and returns its record.
    func final(_ response: TestResponse) async throws -> NotificationRecord {
        #expect(response.status == .created, "\(response.text)")
        return try await api.waitForFinal(try Self.trackingID(response))
    }

    /// Waits (bounded) until a condition holds: for state the worker writes after a notification's final state is
    /// visible (expired-channel marks), never for timing.
    func eventually(_ condition: () async throws -> Bool) async throws {
        for _ in 0..<3000 {
            if try await condition() { return }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    /// What the emulator received for a token.
    func received(by token: String) -> [APNsReceivedNotification] {
        emulator.received.filter { $0.deviceToken.lowercased() == token.lowercased() }
    }

    /// The `aps` dictionary of a received payload.
    static func aps(_ notification: APNsReceivedNotification) throws -> [String: JSONValue] {
        let payload = try JSONValue(parsing: Array(notification.payload.utf8))
        return try #require(payload.objectValue?["aps"]?.objectValue)
    }

    /// How many notifications the hub holds (accepted sends).
    func notificationCount() async throws -> Int {
        try await hub.sends.recentNotifications(after: nil, limit: 100).notifications.count
    }

    /// The error code of a JSON error answer.
    static func code(_ response: TestResponse) -> String? {
        (try? JSONValue(parsing: Array(response.body.readableBytesView)))?.objectValue?["error"]?.objectValue?["code"]?.stringValue
    }
}
