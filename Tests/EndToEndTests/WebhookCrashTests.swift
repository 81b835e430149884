import Crypto
import Foundation
import HTTPTypes
import HubTestSupport
import Hummingbird
import Logging
import NIOCore
import NotificationHub
import PushEmulator
import Synchronization
import Testing

/// A hub process killed with SIGKILL while it posts webhook events loses none: the restarted hub posts every event
/// still in its outbox, so the receiver sees each failed device and the completion at least once, each signed.
@Suite(.serialized, .oneProcessSuiteAtATime, .timeLimit(.minutes(10))) struct WebhookCrashTests {
    static let devices = 1_000
    static let unregistered = Set(stride(from: 3, to: 1_000, by: 5))  // 200 devices gone from APNs
    static let secret = "crash-webhook-secret-0123456789"

    /// A slow receiver: each request takes 40 ms, so the posting is under way when the hub is killed.
    final class Receiver: Sendable {
        let state = Mutex((failed: [String](), completed: [String](), ids: [String](), badSignatures: 0))

        func handle(_ request: Request, body: ByteBuffer) async -> HTTPResponse.Status {
            try? await Task.sleep(for: .milliseconds(40))
            let data = Data(body.readableBytesView)
            let timestamp = request.headers[HTTPField.Name("Hub-Webhook-Timestamp")!] ?? ""
            var mac = HMAC<SHA256>(key: SymmetricKey(data: Data(WebhookCrashTests.secret.utf8)))
            mac.update(data: Data("\(timestamp).".utf8))
            mac.update(data: data)
            let expected = "v1=" + Data(mac.finalize()).map { String(format: "%02x", $0) }.joined()
            let json = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:]
            let event = json["data"] as? [String: Any] ?? [:]
            state.withLock { state in
                guard request.headers[HTTPField.Name("Hub-Webhook-Signature")!] == expected else {
                    state.badSignatures += 1
                    return
                }
                state.ids.append(json["id"] as? String ?? "")
                switch json["type"] as? String {
                case "notification.failed": state.failed.append(event["installationId"] as? String ?? "")
                case "notification.completed": state.completed.append(event["notificationId"] as? String ?? "")
                default: break
                }
            }
            return .noContent
        }
    }

    @Test func aKilledHubPostsEveryEventOfItsOutboxAfterRestart() async throws {
        let directory = NSTemporaryDirectory() + "hub-webhook-crash-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let apns = try await EmulatedAPNs.start(directory: directory)
        for index in Self.unregistered {
            apns.emulator.setDevice(EmulatedAPNs.deviceToken(index), .unregistered(Date(timeIntervalSince1970: 1_700_000_000)))
        }

        let receiver = Receiver()
        let router = Router()
        router.post("/hook") { request, _ -> Response in
            let body = try await request.body.collect(upTo: 1 << 20)
            return Response(status: await receiver.handle(request, body: body))
        }
        let bound = Mutex<Int?>(nil)
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in bound.withLock { $0 = channel.localAddress?.port } })
        let server = Task { try await app.runService() }
        defer { server.cancel() }
        _ = try await waitUntil(timeout: .seconds(10)) { bound.withLock { $0 } != nil }
        let port = try #require(bound.withLock { $0 })

        let database = directory + "/hub.sqlite"
        let setup = try await HubDatabases.open(storage: .sqlite(path: database), logger: Logger.forTest("webhook-crash"))
        try await SQLInstallationStore(database: setup).upsert(
            contentsOf: (0..<Self.devices).map {
                Installation(
                    installationID: "i\($0)", platform: .apns, pushChannel: .handle(EmulatedAPNs.deviceToken($0)),
                    tags: ["everyone"])
            })
        let notification = Notification(format: .apple, body: #"{"aps":{"alert":"hook"}}"#, audience: .tags(.tag("everyone")))
        _ = try await SQLNotificationStore(database: setup).enqueue(notification, scheduledTime: nil, idempotencyKey: nil)
        try await setup.close()

        let configurationPath = directory + "/hub.yaml"
        try """
            server: {host: 127.0.0.1, port: 0}
            hubs:
              demo:
                keys: [{name: full, rights: [Manage], primaryKey: webhook-crash-key-0123456789}]
                storage: {sqlite: {path: \(database)}}
                delivery: {pageSize: 250, batchSize: 250, leaseSeconds: 5}
                webhooks:
                  allowedHosts: ["localhost:\(port)"]
                  initialBackoffSeconds: 0.05
                  maximumBackoffSeconds: 0.5
                  pollIntervalSeconds: 0.05
                  batchSize: 8
                  subscriptions:
                    - name: backend
                      url: http://localhost:\(port)/hook
                      secret: \(Self.secret)
                      events: [notification.failed, notification.completed]
                adapters:
            \(apns.adapterYAML)
            """.write(toFile: configurationPath, atomically: true, encoding: .utf8)

        // First run: killed once some events arrived, with most still to post.
        let first = try HubProcess(configuration: configurationPath, logPath: directory + "/hub.log")
        defer { first.killIfRunning() }
        let started = try await waitUntil(timeout: .seconds(120)) { receiver.state.withLock { $0.ids.count } >= 16 }
        await first.kill9()
        let atKill = receiver.state.withLock { $0.ids.count }
        #expect(started, "events arrived before the kill: \(first.logTail())")
        #expect(atKill < Self.unregistered.count, "the posting was under way when the hub was killed (\(atKill) posted)")

        // Second run: every failed device and the completion arrive, whatever the kill interrupted.
        let second = try HubProcess(configuration: configurationPath, logPath: directory + "/hub.log")
        defer { second.killIfRunning() }
        let expected = Set(Self.unregistered.map { "i\($0)" })
        let complete = try await waitUntil(timeout: .seconds(180)) {
            receiver.state.withLock { Set($0.failed).isSuperset(of: expected) && $0.completed.contains(notification.id) }
        }
        let final = receiver.state.withLock { $0 }
        #expect(complete, "failed \(Set(final.failed).count) of \(expected.count), completed \(final.completed): \(second.logTail())")
        #expect(Set(final.failed) == expected)
        #expect(final.badSignatures == 0)
        print(
            "webhook-crash: events=\(final.ids.count) distinct=\(Set(final.ids).count) postedBeforeKill=\(atKill) "
                + "failedDevices=\(Set(final.failed).count) completed=\(final.completed.count)")
        #expect(await second.terminate(), "the hub shuts down gracefully: \(second.logTail())")
        await apns.emulator.stop()
    }
}
