import Foundation
import HubTestSupport
import Logging
import NIOCore
import NotificationHub
import Synchronization
import Testing

/// Checkpoints, resume after a crash, feedback records, leases and test sends.
@Suite struct DurableDeliveryTests {
    static let configuration = DeliveryConfiguration(
        pageSize: 7, batchSize: 3, concurrency: 4, abandonAfterSeconds: 30, maximumAttempts: 3,
        initialBackoffSeconds: 0.01, maximumBackoffSeconds: 0.05, pagesInFlight: 3)
    static let format = NotificationFormat("testformat")
    static let platform = Platform("test")

    /// Collects checkpoints; optionally fails after a number of them, as a crash would stop the fan-out.
    final class CheckpointLog: Sendable {
        let entries = Mutex<[DispatchCheckpoint]>([])
        let failAfter: Int?
        init(failAfter: Int? = nil) { self.failAfter = failAfter }

        func record(_ checkpoint: DispatchCheckpoint) throws {
            try entries.withLock { entries in
                if let failAfter, entries.count >= failAfter { throw HubError(.conflict, "simulated crash") }
                entries.append(checkpoint)
            }
        }

        var all: [DispatchCheckpoint] { entries.withLock { $0 } }
    }

    func withDispatcher<T: Sendable>(
        _ body: (SQLInstallationStore, RecordingAdapter, Dispatcher) async throws -> T
    ) async throws -> T {
        try await InstallationStoreTests.withStore { store in
            let adapter = RecordingAdapter()
            let dispatcher = Dispatcher(
                store: store, adapters: try AdapterSet([adapter]), configuration: Self.configuration,
                logger: Logger.forTest("test"))
            return try await body(store, adapter, dispatcher)
        }
    }

    @Test(arguments: TestBackend.all)
    func checkpointsAddUpToTheSummaryAndMoveForward(backend: TestBackend) async throws {
        try await backend.run {
            try await withDispatcher { store, adapter, dispatcher in
                _ = try await store.upsert(contentsOf: (0..<50).map { InstallationStoreTests.installation("i\($0)") })
                adapter.script("dev-i3", [DeliveryResult(.badChannel, reason: "BadDeviceToken")])
                adapter.script("dev-i40", [DeliveryResult(.wrongChannel, reason: "DeviceTokenNotForTopic")])
                let log = CheckpointLog()
                let summary = try await dispatcher.dispatch(Notification(format: Self.format, body: "x", audience: .all)) {
                    try log.record($0)
                }
                var added = DispatchSummary()
                for checkpoint in log.all { added.merge(checkpoint.summary) }
                #expect(added == summary)
                #expect(summary.total == 50 && summary.count(of: .success) == 48)
                let cursors = log.all.compactMap(\.cursor).map(\.position)
                #expect(cursors == cursors.sorted() && Set(cursors).count == cursors.count && !cursors.isEmpty)
                let failures = log.all.flatMap(\.failures)
                #expect(Set(failures.map(\.installationID)) == ["i3", "i40"])
                #expect(failures.first { $0.installationID == "i3" }?.outcome == .badChannel)
                #expect(failures.first { $0.installationID == "i3" }?.reason == "BadDeviceToken")
                #expect(failures.first { $0.installationID == "i40" }?.handle == "dev-i40")
            }
        }
    }

    @Test(arguments: TestBackend.all)
    func aResumedFanOutReachesEveryoneAndRepeatsOnlyInFlightPages(backend: TestBackend) async throws {
        try await backend.run {
            try await withDispatcher { store, adapter, dispatcher in
                let count = 200
                _ = try await store.upsert(contentsOf: (0..<count).map { InstallationStoreTests.installation("i\($0)") })
                let notification = Notification(format: Self.format, body: "x", audience: .all)
                let crashed = CheckpointLog(failAfter: 4)
                var stopped = false
                do {
                    _ = try await dispatcher.dispatch(notification) { try crashed.record($0) }
                } catch is HubError {
                    stopped = true
                }
                #expect(stopped)
                let committed = crashed.all
                #expect(committed.count == 4)
                let cursor = committed.compactMap(\.cursor).last
                var before = DispatchSummary()
                for checkpoint in committed { before.merge(checkpoint.summary) }
                let deliveredBefore = adapter.received.count

                let resumed = try await dispatcher.dispatch(notification, resumingAfter: cursor)
                var total = before
                total.merge(resumed)
                #expect(total.count(of: .success) == count)

                var perDevice: [String: Int] = [:]
                for received in adapter.received { perDevice[received.handle, default: 0] += 1 }
                #expect(perDevice.count == count)
                #expect(perDevice.values.allSatisfy { $0 <= 2 })
                let duplicates = adapter.received.count - count
                #expect(duplicates <= Self.configuration.pagesInFlight * Self.configuration.pageSize)
                #expect(deliveredBefore >= before.total)
            }
        }
    }

    @Test(arguments: TestBackend.all)
    func failuresAreStoredWithTheCheckpointAndPageable(backend: TestBackend) async throws {
        try await backend.run {
            let store = try await InstallationStoreTests.makeStore()
            let notifications = SQLNotificationStore(database: store.database)
            let notification = Notification(format: Self.format, body: "x", audience: .all)
            _ = try await notifications.enqueue(notification, scheduledTime: nil, idempotencyKey: nil)
            let now = Date()
            let claimed = try await notifications.claim(owner: "a", leaseSeconds: 30, now: now, partitions: 1)?.work
            #expect(claimed?.record.notification.id == notification.id && claimed?.partition == 0)
            var summary = DispatchSummary()
            summary.record(.success, platform: Self.platform, count: 5)
            summary.record(.badChannel, platform: Self.platform, count: 3)
            let failures = (0..<3).map {
                DeliveryFailure(
                    time: now, platform: Self.platform, outcome: .badChannel, reason: "Bad", installationID: "i\($0)", handle: "dev-i\($0)")
            }
            let checkpoint = DispatchCheckpoint(summary: summary, failures: failures, cursor: InstallationCursor(position: 8))
            #expect(try await notifications.recordCheckpoint(id: notification.id, partition: 0, owner: "a", checkpoint))
            #expect(try await notifications.recordCheckpoint(id: notification.id, partition: 0, owner: "a", checkpoint))
            // Another owner (a worker whose lease was taken over) cannot record anything.
            #expect(try await notifications.recordCheckpoint(id: notification.id, partition: 0, owner: "b", checkpoint) == false)

            let counts = try await notifications.record(id: notification.id)?.summary
            #expect(counts?.count(of: .success) == 10 && counts?.count(of: .badChannel) == 6)
            let first = try await notifications.failures(id: notification.id, after: nil, limit: 4)
            #expect(first.failures.count == 4 && first.next != nil)
            let rest = try await notifications.failures(id: notification.id, after: first.next, limit: 4)
            #expect(rest.failures.count == 2 && rest.next == nil)
            #expect((first.failures + rest.failures).map(\.installationID) == ["i0", "i1", "i2", "i0", "i1", "i2"])
            #expect(rest.failures.last?.reason == "Bad" && rest.failures.last?.handle == "dev-i2")

            // The lease expires: another worker takes the notification over and sees the progress.
            #expect(try await notifications.claim(owner: "b", leaseSeconds: 30, now: now + 10, partitions: 1)?.work == nil)
            let takeover = try await notifications.claim(owner: "b", leaseSeconds: 30, now: now + 31, partitions: 1)?.work
            #expect(takeover?.record.notification.id == notification.id)
            #expect(takeover?.cursor == InstallationCursor(position: 8))
            #expect(try await notifications.renewLease(id: notification.id, partition: 0, owner: "a", leaseSeconds: 30, now: now + 32) == false)
            #expect(try await notifications.finishPartition(id: notification.id, partition: 0, owner: "a", now: now + 33) == nil)
            #expect(try await notifications.finishPartition(id: notification.id, partition: 0, owner: "b", now: now + 33) == .completed)
            #expect(try await notifications.record(id: notification.id)?.state == .completed)
            try await store.database.close()
        }
    }

    @Test(arguments: TestBackend.all)
    func hubResumesAFanOutFromItsCheckpoint(backend: TestBackend) async throws {
        try await backend.run {
            let store = try await InstallationStoreTests.makeStore()
            let notifications = SQLNotificationStore(database: store.database)
            _ = try await store.upsert(contentsOf: (0..<30).map { InstallationStoreTests.installation("i\($0)") })
            let notification = Notification(format: Self.format, body: "x", audience: .all)
            _ = try await notifications.enqueue(notification, scheduledTime: nil, idempotencyKey: nil)
            // A worker that crashed after delivering the first 10 installations (store order) and recording them.
            let crashedAt = Date() - 120
            _ = try await notifications.claim(owner: "crashed", leaseSeconds: 60, now: crashedAt, partitions: 1)?.work
            let first = try await store.query(InstallationQuery(), after: nil, limit: 10)
            var done = DispatchSummary()
            done.record(.success, platform: Self.platform, count: 10)
            _ = try await notifications.recordCheckpoint(
                id: notification.id, partition: 0, owner: "crashed",
                DispatchCheckpoint(summary: done, failures: [], cursor: first.next))

            let adapter = RecordingAdapter()
            let hub = try Self.hub(on: store, notifications, adapter: adapter)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await hub.run() }
                let record = try await Self.finalRecord(notification.id, in: notifications, within: .seconds(30))
                group.cancelAll()
                #expect(record?.state == .completed)
                #expect(record?.summary.count(of: .success) == 30)
            }
            let handles = Set(adapter.received.map(\.handle))
            #expect(handles == Set((10..<30).map { "dev-i\($0)" }))
            #expect(adapter.received.count == 20)
        }
    }

    @Test(arguments: TestBackend.all)
    func testSendsReachAtMostTenDevicesOnceAndReportEach(backend: TestBackend) async throws {
        try await backend.run {
            try await withDispatcher { store, adapter, dispatcher in
                _ = try await store.upsert(contentsOf: (0..<25).map { InstallationStoreTests.installation("i\($0)", tags: ["t"]) })
                adapter.script("dev-i1", [DeliveryResult(.throttled, reason: "TooManyRequests")])
                let results = try await dispatcher.testSend(Notification(format: Self.format, body: "x", audience: .tags(.tag("t"))))
                #expect(results.count == 10)
                #expect(adapter.received.count == 10)
                #expect(results.first { $0.installationID == "i1" }?.outcome == .throttled)
                #expect(results.filter { $0.outcome == .success }.count == 9)
                let none = try await dispatcher.testSend(Notification(format: Self.format, body: "x", audience: .tags(.tag("nobody"))))
                #expect(none.isEmpty)
            }
        }
    }

    /// An adapter that reports how many of its calls overlapped.
    final class OverlapAdapter: PlatformAdapter, Sendable {
        let descriptor = PlatformDescriptor(
            platforms: [DurableDeliveryTests.platform], formats: [DurableDeliveryTests.format: [DurableDeliveryTests.platform]],
            templateFormats: [:], maximumPayloadBytes: 100)
        let state = Mutex((current: 0, peak: 0))
        func validate(pushChannel: PushChannel, platform: Platform) throws(HubError) {}
        func secureAnnouncements(for request: SecureAnnouncementRequest) -> [SecurePushAnnouncement] { [] }
        func deliver(_ deliveries: [Delivery], context: DeliveryContext) async -> [DeliveryResult] {
            state.withLock { $0.current += 1; $0.peak = max($0.peak, $0.current) }
            try? await Task.sleep(for: .milliseconds(5))
            state.withLock { $0.current -= 1 }
            return deliveries.map { _ in .success }
        }
    }

    @Test(arguments: [1, 3])
    func platformConcurrencyBoundsAdapterCallsAcrossNotifications(limit: Int) async throws {
        try await InstallationStoreTests.withStore { store in
            _ = try await store.upsert(contentsOf: (0..<60).map { InstallationStoreTests.installation("i\($0)") })
            let adapter = OverlapAdapter()
            var configuration = Self.configuration
            configuration.batchSize = 2
            configuration.concurrency = 8
            configuration.platformConcurrency = ["test": limit]
            let dispatcher = Dispatcher(
                store: store, adapters: try AdapterSet([adapter]), configuration: configuration, logger: Logger.forTest("test"))
            try await withThrowingTaskGroup(of: DispatchSummary.self) { group in
                for _ in 0..<3 {
                    group.addTask { try await dispatcher.dispatch(Notification(format: Self.format, body: "x", audience: .all)) }
                }
                for try await summary in group { #expect(summary.count(of: .success) == 60) }
            }
            #expect(adapter.state.withLock { $0.peak } == limit)
        }
    }

    @Test(arguments: TestBackend.all)
    func scheduledSendsWaitForTheirTimeOnTheHubsClock(backend: TestBackend) async throws {
        try await backend.run {
            let clock = ManualWallClock(Date(timeIntervalSince1970: 1_900_000_000))
            let store = try await InstallationStoreTests.makeStore(clock: clock)
            let notifications = SQLNotificationStore(database: store.database)
            _ = try await store.upsert(InstallationStoreTests.installation("a"))
            let adapter = RecordingAdapter()
            let hub = try Self.hub(on: store, notifications, adapter: adapter, clock: clock)
            let due = clock.now() + 3600
            let id = try await hub.sends.enqueue(Notification(format: Self.format, body: "later", audience: .all), scheduledTime: due)
            let cancelled = try await hub.sends.enqueue(Notification(format: Self.format, body: "never", audience: .all), scheduledTime: due)
            #expect(try await notifications.cancel(id: cancelled, now: clock.now()))
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await hub.run() }
                // Several polling rounds pass; the hub's clock has not reached the time.
                try await Task.sleep(for: .milliseconds(600))
                #expect(try await notifications.record(id: id)?.state == .scheduled)
                #expect(adapter.received.isEmpty)
                clock.advance(by: 3600)
                let record = try await Self.finalRecord(id, in: notifications, within: .seconds(30))
                #expect(try await notifications.record(id: cancelled)?.state == .cancelled)
                group.cancelAll()
                #expect(record?.state == .completed)
                #expect(record?.startTime == due)
            }
            #expect(adapter.received.map(\.payload) == ["later"])
        }
    }

    /// The notification's record once its state is final, or its last record when `limit` has passed.
    static func finalRecord(
        _ id: String, in notifications: SQLNotificationStore, within limit: Duration
    ) async throws -> NotificationRecord? {
        var record: NotificationRecord?
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            record = try await notifications.record(id: id)
            if record?.state.isFinal == true { break }
            try await Task.sleep(for: .milliseconds(10))
        }
        return record
    }

    /// A hub on `store`'s database with one adapter and `delivery`, as `hub serve` builds one.
    static func hub(
        on store: SQLInstallationStore, _ notifications: SQLNotificationStore, adapter: any PlatformAdapter,
        delivery: DeliveryConfiguration = configuration, clock: any WallClock = SystemWallClock()
    ) throws -> Hub {
        Hub(
            configuration: HubConfiguration(name: "demo", delivery: delivery, adapters: try AdapterSet([adapter])),
            installations: store, notifications: notifications,
            secureNotifications: SQLSecureNotificationStore(database: store.database), database: store.database,
            clock: clock, logger: Logger.forTest("test"))
    }

    /// Claims a store's next work for `owner`, expecting some.
    static func claimWork(_ store: SQLNotificationStore, owner: String, clock: ManualWallClock) async throws -> DeliveryWork {
        let claims = try await store.claim(owner: owner, leaseSeconds: 5, now: clock.now(), partitions: 1, limit: 1)
        guard case .work(let work)? = claims.first else { throw HubError(.conflict, "no work for \(owner): \(claims)") }
        return work
    }

    @Test(arguments: TestBackend.all)
    func onlyClaimsWithoutProgressCountTowardEndingAFanOut(backend: TestBackend) async throws {
        try await backend.run {
            let clock = ManualWallClock(Date(timeIntervalSince1970: 1_900_000_000))
            let store = try await InstallationStoreTests.makeStore(clock: clock)
            let notifications = SQLNotificationStore(database: store.database)
            _ = try await store.upsert(InstallationStoreTests.installation("a"))
            let notification = Notification(format: Self.format, body: "x", audience: .all)
            _ = try await notifications.enqueue(notification, scheduledTime: nil, idempotencyKey: nil)
            // Workers whose leases run out without a checkpoint: every claim counts.
            for number in 1...3 {
                #expect(try await Self.claimWork(notifications, owner: "w\(number)", clock: clock).claims == number)
                clock.advance(by: 10)
            }
            // A worker that commits a checkpoint made progress: counting starts again at its claim.
            let fourth = try await Self.claimWork(notifications, owner: "w4", clock: clock)
            #expect(fourth.claims == 4)
            let progress = DispatchCheckpoint(
                summary: DispatchSummary(), failures: [], cursor: InstallationCursor(position: 1))
            #expect(try await notifications.recordCheckpoint(id: notification.id, partition: fourth.partition, owner: "w4", progress))
            clock.advance(by: 10)
            #expect(try await Self.claimWork(notifications, owner: "w5", clock: clock).claims == 2)
            try await store.database.close()
        }
    }

    @Test(arguments: TestBackend.all)
    func aPartitionClaimedTooOftenWithoutProgressIsEnded(backend: TestBackend) async throws {
        try await backend.run {
            let clock = ManualWallClock(Date(timeIntervalSince1970: 1_900_000_000))
            let store = try await InstallationStoreTests.makeStore(clock: clock)
            let notifications = SQLNotificationStore(database: store.database)
            _ = try await store.upsert(InstallationStoreTests.installation("a"))
            let adapter = RecordingAdapter()
            var delivery = Self.configuration
            delivery.leaseSeconds = 5
            let hub = try Self.hub(on: store, notifications, adapter: adapter, delivery: delivery, clock: clock)
            let notification = Notification(format: Self.format, body: "poison", audience: .all)
            _ = try await notifications.enqueue(notification, scheduledTime: nil, idempotencyKey: nil)
            // Five workers died holding it without committing anything.
            for number in 1...DeliveryWorker.maximumClaims {
                _ = try await Self.claimWork(notifications, owner: "crashed-\(number)", clock: clock)
                clock.advance(by: 10)
            }
            // The sixth claim, the hub's own, ends it instead of trying again.
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await hub.run() }
                let record = try await Self.finalRecord(notification.id, in: notifications, within: .seconds(60))
                group.cancelAll()
                #expect(record?.state == .abandoned)
                #expect(record?.reason?.contains("claimed 6 times without progress") == true, "\(String(describing: record?.reason))")
            }
            #expect(adapter.received.isEmpty)
        }
    }

    @Test(arguments: TestBackend.all)
    func twoWorkersSharePartitionsAndEachDeviceGetsItOnce(backend: TestBackend) async throws {
        try await backend.run {
            let store = try await InstallationStoreTests.makeStore()
            let notifications = SQLNotificationStore(database: store.database)
            let secure = SQLSecureNotificationStore(database: store.database)
            _ = try await store.upsert(contentsOf: (0..<400).map { InstallationStoreTests.installation("i\($0)") })
            var delivery = Self.configuration
            delivery.partitions = 8
            delivery.parallelNotifications = 2
            let adapters = [RecordingAdapter(), RecordingAdapter()]
            let hubs = try adapters.map { adapter in
                Hub(
                    configuration: HubConfiguration(name: "demo", delivery: delivery, adapters: try AdapterSet([adapter])),
                    installations: store, notifications: notifications, secureNotifications: secure,
                    logger: Logger.forTest("test"))
            }
            let notification = Notification(format: Self.format, body: "x", audience: .all)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for hub in hubs { group.addTask { try await hub.run() } }
                // Sent once both workers have joined, as in a running deployment: a worker that starts late on a
                // loaded machine would otherwise find the fan-out already done.
                let joined = ContinuousClock.now + .seconds(60)
                while try await notifications.nodes(now: Date()).count < 2, ContinuousClock.now < joined {
                    try await Task.sleep(for: .milliseconds(10))
                }
                _ = try await hubs[0].sends.enqueue(notification)
                // Bounded generously: on a loaded machine two workers on one SQLite file take their time.
                let record = try await Self.finalRecord(notification.id, in: notifications, within: .seconds(120))
                group.cancelAll()
                #expect(record?.state == .completed)
                #expect(record?.summary.count(of: .success) == 400)
            }
            let handles = adapters.flatMap { $0.received.map(\.handle) }
            #expect(handles.count == 400 && Set(handles).count == 400)
            #expect(adapters.allSatisfy { !$0.received.isEmpty }, "both workers delivered a share")
            try await store.database.close()
        }
    }
}

@Suite(.timeLimit(.minutes(1))) struct WorkSignalTests {
    @Test func aSignalEndsOneWaitAndLeavesNothingBehind() async throws {
        let signal = WorkSignal()
        signal.signal()
        await signal.wait(upTo: .seconds(10))  // returns at once: the signal was kept
        // The next wait must run to its timeout: no stale signal from the previous wait's timer.
        let started = ContinuousClock.now
        await signal.wait(upTo: .milliseconds(200))
        #expect(ContinuousClock.now - started >= .milliseconds(150))
    }

    /// A worker stopped by cancellation (not graceful shutdown) must not stay parked: cancellation also cancels the
    /// timeout, so the wait has to end on its own.
    @Test(arguments: [false, true])
    func cancellingAWaitEndsIt(cancelFirst: Bool) async throws {
        let signal = WorkSignal()
        let ended = Mutex(false)
        let waiter = Task {
            if cancelFirst { withUnsafeCurrentTask { $0?.cancel() } }
            await signal.wait(upTo: .seconds(3600))
            ended.withLock { $0 = true }
        }
        if !cancelFirst { try await Task.sleep(for: .milliseconds(50)) }
        waiter.cancel()
        for _ in 0..<250 where !ended.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(20)) }
        let endedByItself = ended.withLock { $0 }
        if !endedByItself { signal.signal() }  // releases it, so that a failure does not hang the run
        await waiter.value
        #expect(endedByItself, "a cancelled wait ends without a signal")
        // Cancellation leaves no signal behind for the next wait.
        let started = ContinuousClock.now
        await signal.wait(upTo: .milliseconds(200))
        #expect(ContinuousClock.now - started >= .milliseconds(150))
    }
}
