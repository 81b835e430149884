import Foundation
import Logging
import NIOCore
import HubTestSupport
import NotificationHub
import ServiceLifecycle
import Synchronization
import Testing

@Suite struct DispatcherTests {
    static let fast = DeliveryConfiguration(
        pageSize: 7, batchSize: 5, concurrency: 3, abandonAfterSeconds: 30, maximumAttempts: 3,
        initialBackoffSeconds: 0.01, maximumBackoffSeconds: 0.05)

    func withHub<T: Sendable>(
        configuration: DeliveryConfiguration = fast,
        _ body: (SQLInstallationStore, RecordingAdapter, Dispatcher) async throws -> T
    ) async throws -> T {
        try await InstallationStoreTests.withStore { store in
            let adapter = RecordingAdapter()
            let dispatcher = Dispatcher(
                store: store, adapters: try AdapterSet([adapter]), configuration: configuration,
                logger: Logger.forTest("test"))
            return try await body(store, adapter, dispatcher)
        }
    }

    /// Delivers through the delivery worker (claim, dispatch, checkpoint and finish committed by the store), which
    /// is where platform feedback such as expired channels is applied.
    func deliverThroughWorker(
        _ notification: NotificationHub.Notification, store: SQLInstallationStore, adapter: RecordingAdapter,
        configuration: DeliveryConfiguration = fast
    ) async throws -> NotificationRecord {
        let notifications = SQLNotificationStore(database: store.database)
        let hub = Hub(
            configuration: HubConfiguration(name: "demo", delivery: configuration, adapters: try AdapterSet([adapter])),
            installations: store, notifications: notifications,
            secureNotifications: SQLSecureNotificationStore(database: store.database), logger: Logger.forTest("test"))
        let services = ServiceGroup(services: [hub], logger: Logger.forTest("test"))
        return try await withThrowingTaskGroup(of: NotificationRecord?.self) { group in
            group.addTask {
                try await services.run()
                return nil
            }
            let id = try await hub.sends.enqueue(notification)
            var record: NotificationRecord?
            for _ in 0..<3000 {
                record = try await notifications.record(id: id)
                if record?.state.isFinal == true { break }
                try await Task.sleep(for: .milliseconds(10))
            }
            // A graceful stop takes this hub's node out of the hub's nodes, as `hub serve` does on SIGTERM; a
            // cancelled one would stay a live node until its heartbeat aged, and the test's next hub would leave
            // its share of a send to it.
            await services.triggerGracefulShutdown()
            try await group.waitForAll()
            return try #require(record)
        }
    }

    static let format = NotificationFormat("testformat")
    static let platform = Platform("test")

    @Test(arguments: TestBackend.all)
    func nativeSendReachesExactlyTheMatchingInstallations(backend: TestBackend) async throws {
        try await backend.run {
            try await withHub { store, adapter, dispatcher in
                for index in 0..<40 {
                    _ = try await store.upsert(
                        InstallationStoreTests.installation("i\(index)", tags: index % 4 == 0 ? ["sports"] : ["news", "muted"]))
                }
                let notification = Notification(
                    format: Self.format, body: #"{"hello":1}"#, headers: ["x-h": "v"],
                    audience: .tags(try TagExpression(parsing: "sports || (news && !muted)")))
                let summary = try await dispatcher.dispatch(notification)
                #expect(summary.counts == [Self.platform: [.success: 10]])
                let received = adapter.received
                #expect(Set(received.compactMap(\.installationID)) == Set((0..<40).filter { $0 % 4 == 0 }.map { "i\($0)" }))
                #expect(received.allSatisfy { $0.payload == #"{"hello":1}"# && $0.headers["x-h"] == "v" && $0.attempt == 1 })
                #expect(received.count == 10)
            }
        }
    }

    @Test(arguments: TestBackend.all)
    func broadcastAndDirectSends(backend: TestBackend) async throws {
        try await backend.run {
            try await withHub { store, adapter, dispatcher in
                for index in 0..<12 { _ = try await store.upsert(InstallationStoreTests.installation("i\(index)")) }
                let all = try await dispatcher.dispatch(Notification(format: Self.format, body: "x", audience: .all))
                #expect(all.count(of: .success) == 12)
                let direct = try await dispatcher.dispatch(
                    Notification(format: Self.format, body: "y", audience: .handles(Self.platform, [.handle("dev-zz")])))
                #expect(direct.count(of: .success) == 1)
                #expect(adapter.received.last?.installationID == nil)
                #expect(adapter.received.last?.handle == "dev-zz")
            }
        }
    }

    @Test(arguments: TestBackend.all)
    func templateSendsRenderPerInstallationAndTemplate(backend: TestBackend) async throws {
        try await backend.run {
            try await withHub { store, adapter, dispatcher in
                var alice = InstallationStoreTests.installation("alice", tags: ["username:alice"])
                alice.templates = [
                    "greeting": InstallationTemplate(body: #"{"msg":"Hi $(name)"}"#, headers: ["kind": "$(kind)"]),
                    "scores": InstallationTemplate(body: ##"{"score":"#(score)"}"##, tags: ["sports"]),
                ]
                var bob = InstallationStoreTests.installation("bob", tags: ["username:bob"])
                bob.templates = ["greeting": InstallationTemplate(body: #"{"msg":"Yo $(name)"}"#)]
                let plain = InstallationStoreTests.installation("plain", tags: ["username:carol"])
                for installation in [alice, bob, plain] { _ = try await store.upsert(installation) }

                let everyone = try await dispatcher.dispatch(
                    Notification(format: .template, body: #"{"name":"\"Q\"","score":7,"kind":"k1"}"#, audience: .all))
                #expect(everyone.count(of: .success) == 3)
                let payloads = Set(adapter.received.map(\.payload))
                #expect(payloads == [#"{"msg":"Hi \"Q\""}"#, #"{"score":7}"#, #"{"msg":"Yo \"Q\""}"#])
                #expect(adapter.received.first { $0.payload.hasPrefix(#"{"msg":"Hi"#) }?.headers["kind"] == "k1")
                #expect(adapter.received.allSatisfy { $0.format == Self.format })

                let sportsOnly = try await dispatcher.dispatch(
                    Notification(format: .template, body: #"{"score":1}"#, audience: .tags(.tag("sports"))))
                #expect(sportsOnly.count(of: .success) == 1)
                #expect(adapter.received.last?.payload == #"{"score":1}"#)
            }
        }
    }

    @Test(arguments: TestBackend.all)
    func expiredChannelsAreMarkedAndSkippedNextTime(backend: TestBackend) async throws {
        try await backend.run {
            try await withHub { store, adapter, dispatcher in
                _ = try await store.upsert(InstallationStoreTests.installation("gone"))
                _ = try await store.upsert(InstallationStoreTests.installation("ok"))
                adapter.script("dev-gone", [DeliveryResult(.expiredChannel, reason: "Unregistered", channelExpiredAt: Date() + 60)])
                // The Dispatcher only reports the expiry; the worker commits it with the counts.
                var marks: [ExpiredChannel] = []
                let reported = Mutex<[ExpiredChannel]>([])
                _ = try await dispatcher.dispatch(Notification(format: Self.format, body: "0", audience: .all)) { checkpoint in
                    reported.withLock { $0 += checkpoint.expiredChannels }
                }
                marks = reported.withLock { $0 }
                #expect(marks.map(\.installationID) == ["gone"] && marks.first?.policy == .markExpired)
                #expect(try await store.installation(id: "gone")?.expiredPushChannel == false, "the Dispatcher writes no store")

                adapter.script("dev-gone", [DeliveryResult(.expiredChannel, reason: "Unregistered", channelExpiredAt: Date() + 60)])
                let first = try await deliverThroughWorker(
                    Notification(format: Self.format, body: "1", audience: .all), store: store, adapter: adapter)
                #expect(first.summary.count(of: .expiredChannel) == 1)
                #expect(first.summary.count(of: .success) == 1)
                #expect(try await store.installation(id: "gone")?.expiredPushChannel == true)
                let second = try await deliverThroughWorker(
                    Notification(format: Self.format, body: "2", audience: .all), store: store, adapter: adapter)
                #expect(second.summary.counts == [Self.platform: [.success: 1]])
            }
        }
    }

    @Test(arguments: TestBackend.all)
    func deletePolicyRemovesExpiredInstallations(backend: TestBackend) async throws {
        try await backend.run {
            var configuration = Self.fast
            configuration.expiredChannelPolicy = .delete
            try await withHub(configuration: configuration) { store, adapter, dispatcher in
                _ = try await store.upsert(InstallationStoreTests.installation("gone"))
                adapter.script("dev-gone", [DeliveryResult(.expiredChannel)])
                _ = try await deliverThroughWorker(
                    Notification(format: Self.format, body: "1", audience: .all), store: store, adapter: adapter,
                    configuration: configuration)
                #expect(try await store.installation(id: "gone") == nil)
            }
        }
    }

    @Test(arguments: TestBackend.all)
    func retryableOutcomesAreRetriedThenSucceedOrGiveUp(backend: TestBackend) async throws {
        try await backend.run {
            try await withHub { store, adapter, dispatcher in
                _ = try await store.upsert(InstallationStoreTests.installation("flaky"))
                _ = try await store.upsert(InstallationStoreTests.installation("down"))
                adapter.script("dev-flaky", [DeliveryResult(.throttled, retryAfter: .milliseconds(20))])
                adapter.script("dev-down", Array(repeating: DeliveryResult(.pnsUnavailable), count: 5))
                let notification = Notification(format: Self.format, body: "1", audience: .all)
                let summary = try await dispatcher.dispatch(notification)
                #expect(summary.count(of: .success) == 1)
                #expect(summary.count(of: .pnsUnavailable) == 1)
                #expect(adapter.received.filter { $0.handle == "dev-flaky" }.map(\.attempt) == [1, 2])
                #expect(adapter.received.filter { $0.handle == "dev-down" }.map(\.attempt) == [1, 2, 3])
                // Every call's context names the notification; a first attempt has at least the adapter's own
                // request time, a retry only what is left of the 30 s abandon window.
                #expect(adapter.received.allSatisfy { $0.loggedNotificationID == notification.id })
                let first = adapter.received.filter { $0.attempt == 1 }.map(\.remaining)
                let retries = adapter.received.filter { $0.attempt > 1 }.map(\.remaining)
                #expect(first.allSatisfy { $0 > .seconds(300) }, "\(first)")
                #expect(retries.allSatisfy { $0 > .zero && $0 <= .seconds(30) }, "\(retries)")
            }
        }
    }

    @Test(arguments: TestBackend.all)
    func retriesPastTheAbandonWindowAreAbandoned(backend: TestBackend) async throws {
        try await backend.run {
            var configuration = Self.fast
            configuration.abandonAfterSeconds = 1
            try await withHub(configuration: configuration) { store, adapter, dispatcher in
                _ = try await store.upsert(InstallationStoreTests.installation("slow"))
                adapter.script("dev-slow", [DeliveryResult(.throttled, retryAfter: .seconds(120))])
                let summary = try await dispatcher.dispatch(Notification(format: Self.format, body: "1", audience: .all))
                #expect(summary.counts == [Self.platform: [.abandoned: 1]])
            }
        }
    }

    @Test(arguments: TestBackend.all)
    func invalidTemplatesCountAsFormatErrors(backend: TestBackend) async throws {
        try await backend.run {
            try await withHub { store, _, dispatcher in
                var broken = InstallationStoreTests.installation("broken")
                broken.templates = ["t": InstallationTemplate(body: #"{"a":"$(oops"}"#)]
                _ = try await store.upsert(broken)
                let summary = try await dispatcher.dispatch(Notification(format: .template, body: "{}", audience: .all))
                #expect(summary.counts == [Self.platform: [.invalidNotificationFormat: 1]])
            }
        }
    }

    @Test func adapterSetValidatesFormatsAndChannels() throws {
        let adapters = try AdapterSet([RecordingAdapter(limit: 10)])
        #expect(adapters.formats == [.template, Self.format])
        #expect { try adapters.checkFormat(.apple) } throws: {
            ($0 as? HubError)?.code == .unknownFormat && ($0 as? HubError)?.message.contains("template, testformat") == true
        }
        #expect { try adapters.validate(pushChannel: .handle("x"), platform: Self.platform) } throws: {
            ($0 as? HubError)?.code == .invalidPushChannel
        }
        #expect { try adapters.validate(pushChannel: .handle("dev-1"), platform: .apns) } throws: {
            ($0 as? HubError)?.code == .unknownPlatform
        }
        #expect {
            try adapters.validate(notification: Notification(format: Self.format, body: String(repeating: "x", count: 11), audience: .all))
        } throws: { ($0 as? HubError)?.code == .payloadTooLarge }
        #expect {
            try adapters.validate(notification: Notification(format: .template, body: "[1]", audience: .all))
        } throws: { ($0 as? HubError)?.code == .invalidNotification }
        #expect(throws: HubError.self) { try AdapterSet([RecordingAdapter(), RecordingAdapter()]) }
    }
}
