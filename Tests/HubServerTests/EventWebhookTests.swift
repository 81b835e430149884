import AsyncHTTPClient
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
import Synchronization
import Testing

/// Event webhooks: every event reaches a real HTTP receiver signed, at least once, after retries; events are
/// replayable by id; addresses outside the allow-list, IP literals and redirects are refused.
@Suite struct EventWebhookTests {
    static let secret = "whsec-0123456789abcdef-test"

    /// One request as the receiver saw it.
    struct Received: Sendable {
        var headers: [String: String]
        var body: Data
        var path: String

        var json: [String: Any] { ((try? JSONSerialization.jsonObject(with: body)) as? [String: Any]) ?? [:] }
        var data: [String: Any] { json["data"] as? [String: Any] ?? [:] }
        var type: String { json["type"] as? String ?? "" }
    }

    /// A real HTTP endpoint: answers `answers` in turn (then 204), records every request.
    final class Receiver: Sendable {
        let state = Mutex((answers: [HTTPResponse.Status](), received: [Received]()))

        init(answers: [HTTPResponse.Status] = []) { state.withLock { $0.answers = answers } }

        var received: [Received] { state.withLock { $0.received } }
        /// Requests answered 2xx.
        var accepted: [Received] { state.withLock { $0.received.filter { $0.headers["x-answer"] == "ok" } } }

        func setAnswers(_ answers: [HTTPResponse.Status]) { state.withLock { $0.answers = answers } }

        func handle(_ request: Request, body: ByteBuffer) -> Response {
            var headers: [String: String] = [:]
            for field in request.headers { headers[field.name.canonicalName] = field.value }
            let status = state.withLock { state -> HTTPResponse.Status in
                let status = state.answers.isEmpty ? .noContent : state.answers.removeFirst()
                headers["x-answer"] = (200..<300).contains(status.code) ? "ok" : "\(status.code)"
                state.received.append(Received(headers: headers, body: Data(body.readableBytesView), path: request.uri.path))
                return status
            }
            var response = Response(status: status)
            if status == .found { response.headers[.location] = "/elsewhere" }
            return response
        }

        func wait(until condition: @Sendable (Receiver) -> Bool) async throws {
            for _ in 0..<1500 where !condition(self) { try await Task.sleep(for: .milliseconds(10)) }
        }
    }

    /// Runs `receiver` on a free loopback port; passes the port.
    static func withReceiver<T: Sendable>(_ receiver: Receiver, _ body: @Sendable (Int) async throws -> T) async throws -> T {
        let router = Router()
        router.post("/**") { request, _ -> Response in
            let buffer = try await request.body.collect(upTo: 1 << 20)
            return receiver.handle(request, body: buffer)
        }
        return try await LoopbackServer.run(router, body)
    }

    static func webhooks(
        port: Int, url: String? = nil, allowedHosts: [String]? = nil, events: [WebhookEventKind] = WebhookEventKind.all,
        maximumAttempts: Int = 5
    ) throws -> EventWebhooksConfiguration {
        EventWebhooksConfiguration(
            subscriptions: [
                .init(
                    name: "backend", url: URL(string: url ?? "http://localhost:\(port)/hook")!, secret: secret,
                    events: events)
            ],
            addressPolicy: try WebhookAddressPolicy(allowedHosts: allowedHosts ?? ["localhost:\(port)"]),
            maximumAttempts: maximumAttempts, initialBackoffSeconds: 0.02, maximumBackoffSeconds: 0.05,
            pollIntervalSeconds: 0.02, timeoutSeconds: 5)
    }

    static func run<T: Sendable>(
        _ webhooks: EventWebhooksConfiguration, _ body: @Sendable (APITestHarness) async throws -> T
    ) async throws -> T {
        let adapters = [RecordingAdapter(limit: 2000)]
        var settings = APITestHarness.settings(adapters: adapters)
        settings.eventWebhooks = webhooks
        return try await APITestHarness.run(
            configuration: HubsConfiguration(server: ServerConfiguration(), hubs: [settings]), adapters: adapters, body)
    }

    /// The signature recomputed here with swift-crypto (not the hub's helper), as a receiver would.
    static func expectSigned(_ request: Received, secret: String = secret) throws {
        let timestamp = try #require(request.headers["hub-webhook-timestamp"].flatMap { Int64($0) })
        #expect(abs(Double(timestamp) - Date().timeIntervalSince1970) < 120)
        var mac = HMAC<SHA256>(key: SymmetricKey(data: Data(secret.utf8)))
        mac.update(data: Data("\(timestamp).".utf8))
        mac.update(data: request.body)
        let expected = "v1=" + Data(mac.finalize()).map { String(format: "%02x", $0) }.joined()
        #expect(request.headers["hub-webhook-signature"] == expected)
        #expect(request.headers["hub-webhook-id"] == request.json["id"] as? String)
        #expect(request.headers["hub-webhook-event"] == request.type)
        #expect(request.headers["content-type"] == "application/json")
        #expect(request.json["hub"] as? String == "demo")
    }

    static func send(_ api: APITestHarness) async throws -> String {
        let sent = try await api.request(.post, "/demo/messages", key: "send", headers: SendEndpointTests.headers(), body: "{}")
        let id = try #require(sent.headers[HTTPField.Name("TrackingId")!])
        _ = try await api.waitForFinal(id)
        return id
    }

    @Test func eventsReachARealReceiverSignedOnceEachAfterRetries() async throws {
        // The first two requests fail: those events are retried with backoff and arrive later.
        let receiver = Receiver(answers: [.serviceUnavailable, .internalServerError])
        try await Self.withReceiver(receiver) { port in
            try await Self.run(try Self.webhooks(port: port)) { api in
                for id in ["a", "b", "c"] {
                    try await api.request(.put, "/demo/installations/\(id)", key: "listen", body: APITestHarness.installationJSON(id))
                }
                api.adapter.script("dev-b", [DeliveryResult(.badChannel, reason: "BadDeviceToken")])
                api.adapter.script("dev-c", [DeliveryResult(.expiredChannel, reason: "Unregistered")])
                let id = try await Self.send(api)
                // completed + two failed + one channel expired.
                try await receiver.wait { $0.accepted.count >= 4 }
                try await Task.sleep(for: .milliseconds(100))
                let accepted = receiver.accepted
                #expect(accepted.count == 4)
                #expect(receiver.received.count == 6)
                for request in receiver.received { try Self.expectSigned(request) }
                #expect(Set(accepted.compactMap { $0.json["id"] as? String }).count == 4)
                let byType = Dictionary(grouping: accepted, by: \.type)
                let completed = try #require(byType["notification.completed"]?.first)
                #expect(completed.data["notificationId"] as? String == id)
                #expect(completed.data["state"] as? String == "Completed")
                let counts = completed.data["counts"] as? [String: [String: Int]]
                #expect(counts?["test"]?["Success"] == 1)
                #expect(counts?["test"]?["BadChannel"] == 1)
                let failed = byType["notification.failed"] ?? []
                #expect(failed.compactMap { $0.data["installationId"] as? String }.sorted() == ["b", "c"])
                #expect(failed.allSatisfy { $0.data["notificationId"] as? String == id })
                let expired = try #require(byType["installation.channelExpired"]?.first)
                #expect(expired.data["installationId"] as? String == "c")
                #expect(expired.data["pnsHandle"] as? String == "dev-c")

                // The outbox shows each delivered (recorded just after the receiver answers), two of them after a
                // second attempt.
                var events: [[String: Any]] = []
                for _ in 0..<500 {
                    let list = try await api.request(.get, "/demo/webhooks/events?state=delivered")
                    #expect(list.status == .ok)
                    events = list.json?["events"] as? [[String: Any]] ?? []
                    if events.count >= 4 { break }
                    try await Task.sleep(for: .milliseconds(10))
                }
                #expect(events.count == 4)
                #expect(events.compactMap { $0["attempts"] as? Int }.reduce(0, +) == 6)
                #expect(events.filter { $0["lastStatus"] as? Int == 204 }.count == 4)
            }
        }
    }

    @Test func aCanonicalIdReplacesTheStoredChannelAndIsReported() async throws {
        let receiver = Receiver()
        try await Self.withReceiver(receiver) { port in
            try await Self.run(try Self.webhooks(port: port, events: [.channelReplaced])) { api in
                for id in ["a", "b"] {
                    try await api.request(.put, "/demo/installations/\(id)", key: "listen", body: APITestHarness.installationJSON(id))
                }
                api.adapter.script("dev-a", [DeliveryResult(.success, canonicalPushChannel: "dev-77")])
                _ = try await Self.send(api)
                try await receiver.wait { $0.accepted.count >= 1 }
                try await Task.sleep(for: .milliseconds(100))
                #expect(receiver.accepted.count == 1)
                let event = try #require(receiver.accepted.first)
                try Self.expectSigned(event)
                #expect(event.type == "installation.channelReplaced")
                #expect(event.data["installationId"] as? String == "a")
                #expect(event.data["oldPnsHandle"] as? String == "dev-a")
                #expect(event.data["pnsHandle"] as? String == "dev-77")
                #expect(event.data["platform"] as? String == "test")
                let stored = try await api.request(.get, "/demo/installations/a")
                #expect(stored.json?["pushChannel"] as? String == "dev-77")
                let other = try await api.request(.get, "/demo/installations/b")
                #expect(other.json?["pushChannel"] as? String == "dev-b")
            }
        }
    }

    /// The code blocks of `docs/webhooks.md` of a language.
    static func recipe(_ language: String) throws -> String {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let text = try String(contentsOf: root.appendingPathComponent("docs/webhooks.md"), encoding: .utf8)
        let start = try #require(text.range(of: "```\(language)\n"))
        let end = try #require(text.range(of: "\n```", range: start.upperBound..<text.endIndex))
        return String(text[start.upperBound..<end.lowerBound])
    }

    /// Runs a program; returns its standard output, trimmed.
    static func run(_ arguments: [String], directory: String, environment: [String: String] = [:]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test func theDocumentedRecipesVerifyARealDelivery() async throws {
        let receiver = Receiver()
        let delivery = try await Self.withReceiver(receiver) { port in
            try await Self.run(try Self.webhooks(port: port, events: [.notificationCompleted])) { api in
                try await api.request(.put, "/demo/installations/a", key: "listen", body: APITestHarness.installationJSON("a"))
                _ = try await Self.send(api)
                try await receiver.wait { $0.accepted.count >= 1 }
                return try #require(receiver.accepted.first)
            }
        }
        let directory = NSTemporaryDirectory() + "webhook-recipe-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try delivery.body.write(to: URL(fileURLWithPath: directory + "/body.json"))
        var tampered = delivery.body
        tampered.append(contentsOf: Array(" ".utf8))
        try tampered.write(to: URL(fileURLWithPath: directory + "/tampered.json"))
        let headers: [String: String] = [
            WebhookSignature.timestampHeader: try #require(delivery.headers["hub-webhook-timestamp"]),
            WebhookSignature.signatureHeader: try #require(delivery.headers["hub-webhook-signature"]),
        ]
        try JSONSerialization.data(withJSONObject: headers).write(to: URL(fileURLWithPath: directory + "/headers.json"))

        // Python, as documented, over the raw body: the delivery verifies, a changed body does not.
        let python = try Self.recipe("python") + """

            import json, sys
            headers = json.load(open("headers.json"))
            print(verify(sys.argv[1].encode(), headers, open("body.json", "rb").read()),
                  verify(sys.argv[1].encode(), headers, open("tampered.json", "rb").read()))
            """
        #expect(try Self.run(["python3", "-c", python, Self.secret], directory: directory) == "True False")

        // The shell recipe prints the signature header's value.
        let shell = try Self.recipe("sh")
        let signed = try Self.run(
            ["sh", "-c", shell], directory: directory,
            environment: ["TIMESTAMP": headers[WebhookSignature.timestampHeader]!, "HUB_WEBHOOK_SECRET": Self.secret])
        #expect(signed == headers[WebhookSignature.signatureHeader])
    }

    @Test func replayPostsTheSameEventAgainAndTheRouteNeedsManage() async throws {
        let receiver = Receiver()
        try await Self.withReceiver(receiver) { port in
            try await Self.run(try Self.webhooks(port: port, events: [.notificationCompleted])) { api in
                try await api.request(.put, "/demo/installations/a", key: "listen", body: APITestHarness.installationJSON("a"))
                _ = try await Self.send(api)
                try await receiver.wait { $0.accepted.count >= 1 }
                let first = try #require(receiver.accepted.first)
                let eventID = try #require(first.json["id"] as? String)

                #expect(try await api.request(.post, "/demo/webhooks/events/\(eventID)/replay", key: "send").status == .forbidden)
                #expect(try await api.request(.get, "/demo/webhooks/events", key: "listen").status == .forbidden)
                let replayed = try await api.request(.post, "/demo/webhooks/events/\(eventID)/replay")
                #expect(replayed.status == .accepted)
                #expect(replayed.json?["state"] as? String == "pending")
                try await receiver.wait { $0.accepted.count >= 2 }
                let second = try #require(receiver.accepted.dropFirst().first)
                #expect(second.json["id"] as? String == eventID)
                #expect(second.data["notificationId"] as? String == first.data["notificationId"] as? String)
                #expect(second.data["counts"] as? [String: [String: Int]] == first.data["counts"] as? [String: [String: Int]])
                try Self.expectSigned(second)
                // The receiver answers before the hub records the delivery.
                var state: String?
                for _ in 0..<500 {
                    state = try await api.request(.get, "/demo/webhooks/events/\(eventID)").json?["state"] as? String
                    if state == "delivered" { break }
                    try await Task.sleep(for: .milliseconds(10))
                }
                #expect(state == "delivered")

                let unknown = try await api.request(.post, "/demo/webhooks/events/99999/replay")
                #expect(unknown.status == .notFound)
                #expect(unknown.errorCode == "EventNotFound")
                let bad = try await api.request(.post, "/demo/webhooks/events/abc/replay")
                #expect(bad.status == .badRequest)
                #expect(bad.errorCode == "InvalidEventId")
                let badState = try await api.request(.get, "/demo/webhooks/events?state=lost")
                #expect(badState.errorCode == "InvalidState")
            }
        }
    }

    @Test func anEventThatKeepsFailingEndsFailedAndAReplayDeliversIt() async throws {
        let receiver = Receiver(answers: Array(repeating: .internalServerError, count: 3))
        try await Self.withReceiver(receiver) { port in
            try await Self.run(try Self.webhooks(port: port, events: [.notificationCompleted], maximumAttempts: 3)) { api in
                try await api.request(.put, "/demo/installations/a", key: "listen", body: APITestHarness.installationJSON("a"))
                _ = try await Self.send(api)
                var events: [[String: Any]] = []
                for _ in 0..<500 {
                    events = try await api.request(.get, "/demo/webhooks/events?state=failed").json?["events"] as? [[String: Any]] ?? []
                    if !events.isEmpty { break }
                    try await Task.sleep(for: .milliseconds(10))
                }
                let failed = try #require(events.first)
                #expect(failed["attempts"] as? Int == 3)
                #expect(failed["lastStatus"] as? Int == 500)
                #expect(receiver.received.count == 3)
                #expect(receiver.accepted.isEmpty)
                let id = try #require(failed["id"] as? String)
                _ = try await api.request(.post, "/demo/webhooks/events/\(id)/replay")
                try await receiver.wait { $0.accepted.count >= 1 }
                #expect(receiver.accepted.first?.json["id"] as? String == id)
            }
        }
    }

    @Test func redirectsAreNotFollowedAndRefusedAddressesAreNeverPosted() async throws {
        let receiver = Receiver(answers: [.found])
        try await Self.withReceiver(receiver) { port in
            try await Self.run(try Self.webhooks(port: port, events: [.notificationCompleted], maximumAttempts: 1)) { api in
                try await api.request(.put, "/demo/installations/a", key: "listen", body: APITestHarness.installationJSON("a"))
                _ = try await Self.send(api)
                try await receiver.wait { $0.received.count >= 1 }
                var events: [[String: Any]] = []
                for _ in 0..<500 {
                    events = try await api.request(.get, "/demo/webhooks/events?state=failed").json?["events"] as? [[String: Any]] ?? []
                    if !events.isEmpty { break }
                    try await Task.sleep(for: .milliseconds(10))
                }
                #expect(receiver.received.map(\.path) == ["/hook"])  // never /elsewhere
                #expect(events.first?["state"] as? String == "failed")
                #expect((events.first?["lastError"] as? String)?.contains("redirects are not followed") == true)
            }
        }
        // An address the allow-list no longer covers (settings made in code, past the file's checks) is refused
        // before any request.
        let refused = Receiver()
        try await Self.withReceiver(refused) { port in
            let webhooks = try Self.webhooks(port: port, allowedHosts: ["hooks.example.com"], events: [.notificationCompleted])
            try await Self.run(webhooks) { api in
                try await api.request(.put, "/demo/installations/a", key: "listen", body: APITestHarness.installationJSON("a"))
                _ = try await Self.send(api)
                var events: [[String: Any]] = []
                for _ in 0..<500 {
                    events = try await api.request(.get, "/demo/webhooks/events?state=failed").json?["events"] as? [[String: Any]] ?? []
                    if !events.isEmpty { break }
                    try await Task.sleep(for: .milliseconds(10))
                }
                #expect((events.first?["lastError"] as? String)?.hasPrefix("refused:") == true)
                #expect(refused.received.isEmpty)
            }
        }
    }

    @Test(arguments: [
        ("http://127.0.0.1:9000/hook", "is an IP address"),
        ("http://2130706433/hook", "is an IP address"),
        ("http://0x7f.1/hook", "is an IP address"),
        ("http://[::1]:9000/hook", "is an IPv6 address"),
        ("https://internal.corp/hook", "is not in webhooks.allowedHosts"),
        ("http://hooks.example.com:8080/hook", "is not in webhooks.allowedHosts"),
        ("https://user@hooks.example.com/hook", "user information"),
        ("ftp://hooks.example.com/hook", "must use https or http"),
    ])
    func refusedAddressesAreConfigurationErrors(url: String, message: String) throws {
        let problems = Self.problems(
            """
            webhooks:
              allowedHosts: [hooks.example.com]
              subscriptions:
                - {name: backend, url: "\(url)", secret: "\(Self.secret)", events: [notification.completed]}
            """)
        #expect(problems.contains { $0.keyPath == "hubs.demo.webhooks.subscriptions[0].url" && $0.message.contains(message) })
    }

    @Test func badWebhookSettingsArePreciseAndNeverShowTheSecret() throws {
        let problems = Self.problems(
            """
            webhooks:
              allowedHosts: ["http://hooks.example.com"]
              maximumAttempts: 0
              subscriptions:
                - {name: backend, url: "https://hooks.example.com/a", secret: "short-secret-1", events: [notification.sent]}
                - {name: backend, url: "https://hooks.example.com/b", secret: "\(Self.secret)", events: [], extra: 1}
            """)
        let text = problems.map(\.description).joined(separator: "\n")
        #expect(problems.contains { $0.keyPath == "hubs.demo.webhooks.allowedHosts" && $0.message.contains("without scheme") })
        #expect(problems.contains { $0.keyPath == "hubs.demo.webhooks.maximumAttempts" })
        #expect(problems.contains { $0.keyPath == "hubs.demo.webhooks.subscriptions[0].secret" && $0.message.contains("at least 16") })
        #expect(problems.contains { $0.keyPath == "hubs.demo.webhooks.subscriptions[0].events" && $0.message.contains("unknown event 'notification.sent'") })
        #expect(problems.contains { $0.keyPath == "hubs.demo.webhooks.subscriptions[1].name" && $0.message.contains("unique") })
        #expect(problems.contains { $0.keyPath == "hubs.demo.webhooks.subscriptions[1].events" })
        #expect(text.contains("unknown key 'extra'"))
        #expect(!text.contains("short-secret-1"))
        #expect(!text.contains(Self.secret))
        #expect(problems.allSatisfy { $0.line > 0 })
    }

    @Test func validSettingsAreReadAndTheirDescriptionHidesTheSecret() throws {
        let yaml = Self.hubYAML(
            """
            webhooks:
              allowedHosts: [hooks.example.com, "*.example.org", "localhost:8081"]
              subscriptions:
                - name: backend
                  url: https://hooks.example.com/events
                  secret: {env: HOOK_SECRET}
                  events: [notification.completed, installation.channelReplaced]
            """)
        let root = ConfigurationNode.parse(yaml: yaml, file: "hub.yaml", environment: ["HOOK_SECRET": Self.secret])
        let configuration = try HubsConfiguration(root: root, registry: AdapterRegistry([RecordingAdapterFactory.self]))
        let webhooks = try #require(configuration.hubs.first?.eventWebhooks)
        #expect(webhooks.subscriptions.first?.secret == Self.secret)
        #expect(webhooks.subscriptions.first?.events == [.notificationCompleted, .channelReplaced])
        #expect(!String(describing: webhooks).contains(Self.secret))
        #expect(!String(reflecting: webhooks).contains(Self.secret))
        #expect(try webhooks.addressPolicy.check("https://a.example.org/x").host == "a.example.org")
        #expect(throws: HubError.self) { try webhooks.addressPolicy.check("https://example.org/x") }
    }

    @Test func theHelperSignatureVerifies() {
        let body = Data(#"{"id":"1"}"#.utf8)
        let signature = WebhookSignature.sign(body: body, timestamp: 1_795_836_765, secret: Self.secret)
        #expect(WebhookSignature.verify(signature: signature, body: body, timestamp: 1_795_836_765, secret: Self.secret))
        #expect(!WebhookSignature.verify(signature: signature, body: body, timestamp: 1_795_836_766, secret: Self.secret))
        #expect(!WebhookSignature.verify(signature: signature, body: Data("x".utf8), timestamp: 1_795_836_765, secret: Self.secret))
        #expect(!WebhookSignature.verify(signature: "v1=zz", body: body, timestamp: 1_795_836_765, secret: Self.secret))
    }

    static func hubYAML(_ webhooks: String) -> String {
        """
        hubs:
          demo:
            keys: [{name: k, rights: [Send], primaryKey: 0123456789abcdef0123}]
            adapters: [{type: recording, apiKey: recording-test-key}]
        \(webhooks.split(separator: "\n", omittingEmptySubsequences: false).map { "    " + $0 }.joined(separator: "\n"))
        """
    }

    static func problems(_ webhooks: String) -> [ConfigurationProblem] {
        let root = ConfigurationNode.parse(yaml: hubYAML(webhooks), file: "hub.yaml", environment: [:])
        _ = try? HubsConfiguration(root: root, registry: AdapterRegistry([RecordingAdapterFactory.self]))
        return root.problems
    }
}
