import Foundation
import HubTestSupport
import NotificationHub
import Synchronization
import Testing

@Suite(.timeLimit(.minutes(2))) struct WriteCombinerTests {
    /// Records the batches it is asked to write; items above 1000 make a batch fail.
    final class Recorder: Sendable {
        let batches = Mutex<[[Int]]>([])

        func write(_ items: [Int]) async throws -> [Int] {
            batches.withLock { $0.append(items) }
            try await Task.sleep(for: .milliseconds(5))
            if items.contains(where: { $0 > 1000 }) { throw HubError(.invalidInstallation, "item over 1000") }
            return items.map { $0 * 2 }
        }
    }

    @Test func concurrentCallersShareBatchesAndEachGetsItsOwnResult() async throws {
        let recorder = Recorder()
        let combiner = WriteCombiner<Int, Int>(maximumBatch: 50) { try await recorder.write($0) }
        let results = try await withThrowingTaskGroup(of: (Int, Int).self) { group in
            for item in 0..<300 { group.addTask { (item, try await combiner.submit(item)) } }
            return try await group.reduce(into: [:]) { $0[$1.0] = $1.1 }
        }
        #expect(results.count == 300)
        #expect(results.allSatisfy { $0.value == $0.key * 2 })
        let batches = recorder.batches.withLock { $0 }
        #expect(batches.flatMap { $0 }.sorted() == Array(0..<300), "every item is written exactly once")
        #expect(batches.count < 300, "concurrent writes are combined")
        #expect(batches.allSatisfy { $0.count <= 50 })
        // The lead is released: a later lone write goes through on its own.
        #expect(try await combiner.submit(7) == 14)
        #expect(recorder.batches.withLock { $0.last } == [7])
    }

    /// A write once begun runs to its end even when its lone caller is cancelled: stopped half-way, a transaction on
    /// a database whose reads share the writer's connection (`:memory:`) would have shown what it then rolls back.
    @Test func aLoneCallersCancellationDoesNotStopItsWrite() async throws {
        let started = Mutex(false)
        let seenCancelled = Mutex<Bool?>(nil)
        let combiner = WriteCombiner<Int, Int>(maximumBatch: 10) { items in
            started.withLock { $0 = true }
            // Holds the write until its caller has been cancelled, then notes whether the cancellation reached it.
            while !Task.isCancelled, seenCancelled.withLock({ $0 == nil }) { try? await Task.sleep(for: .milliseconds(5)) }
            seenCancelled.withLock { $0 = $0 ?? Task.isCancelled }
            return items
        }
        let caller = Task { try await combiner.submit(1) }
        try await ClaimAtAcceptTests.waitUntil { started.withLock { $0 } }
        caller.cancel()
        try await Task.sleep(for: .milliseconds(200))
        // Released by the test when the cancellation did not reach the write.
        seenCancelled.withLock { $0 = $0 ?? false }
        _ = await caller.result
        #expect(seenCancelled.withLock { $0 } == false)
    }

    @Test func aFailingItemFailsOnlyItsOwnCaller() async throws {
        let recorder = Recorder()
        let combiner = WriteCombiner<Int, Int>(maximumBatch: 100) { try await recorder.write($0) }
        let outcomes = await withTaskGroup(of: (Int, Bool).self) { group in
            for item in [1, 2, 3, 5000, 4, 5, 6] {
                group.addTask { (item, (try? await combiner.submit(item)) != nil) }
            }
            return await group.reduce(into: [:]) { $0[$1.0] = $1.1 }
        }
        #expect(outcomes == [1: true, 2: true, 3: true, 5000: false, 4: true, 5: true, 6: true])
        await #expect(throws: HubError.self) { try await combiner.submit(2000) }
        #expect(try await combiner.submit(8) == 16)
    }

    /// The caller that leads a batch may be cancelled (its request went away); the others' writes still happen.
    @Test func aCancelledLeaderDoesNotFailTheOthers() async throws {
        let gate = WorkSignal()
        let calls = Mutex(0)
        let combiner = WriteCombiner<Int, Int> { items in
            let call = calls.withLock { count -> Int in
                count += 1
                return count
            }
            if call == 1 { await gate.wait(upTo: .seconds(30)) }  // holds the lead while the others queue up
            try Task.checkCancellation()
            return items
        }
        let first = Task { try await combiner.submit(0) }
        while calls.withLock({ $0 }) == 0 { try await Task.sleep(for: .milliseconds(5)) }
        let queued = (1..<10).map { item in Task { try await combiner.submit(item) } }
        try await Task.sleep(for: .milliseconds(200))  // lets them queue behind the busy leader
        for task in queued { task.cancel() }  // whichever of them leads next is cancelled
        gate.signal()
        #expect(try await first.value == 0)
        for (index, task) in queued.enumerated() {
            #expect(try await task.value == index + 1)
        }
    }

}

/// Group commit through the stores, on every backend. No time limit: on a loaded machine PostgreSQL connections can
/// take long to open, as for the other store suites.
@Suite struct GroupCommitStoreTests {
    @Test(arguments: TestBackend.all)
    func concurrentEnqueuesWithOneIdempotencyKeyStoreOneNotification(backend: TestBackend) async throws {
        try await backend.run {
            let database = try await TestBackend.openDatabase()
            let store = SQLNotificationStore(database: database)
            let ids = try await withThrowingTaskGroup(of: String.self) { group in
                for index in 0..<40 {
                    group.addTask {
                        let notification = Notification(format: .apple, body: "n\(index)", audience: .all)
                        return try await store.enqueue(
                            notification, scheduledTime: nil, idempotencyKey: index % 2 == 0 ? "same-key" : nil)
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(ids.count == 40)
            #expect(Set(ids).count == 21, "twenty distinct sends and one shared by every repeat of the key")
            for id in Set(ids) { #expect(try await store.record(id: id) != nil) }
            try await database.close()
        }
    }

    @Test(arguments: TestBackend.all)
    func concurrentUpsertsAreAllStored(backend: TestBackend) async throws {
        try await backend.run {
            let store = try await InstallationStoreTests.makeStore()
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<100 {
                    group.addTask {
                        _ = try await store.upsert(
                            Installation(
                                installationID: "i\(index % 50)", platform: .apns, pushChannel: .handle("dev-\(index)"),
                                tags: ["round:\(index / 50)"]))
                    }
                }
                try await group.waitForAll()
            }
            for index in 0..<50 {
                let stored = try #require(try await store.installation(id: "i\(index)"))
                // The later of two writes of one id wins, as if they had run one after the other.
                #expect(stored.pushChannel == .handle("dev-\(index)") || stored.pushChannel == .handle("dev-\(index + 50)"))
                #expect(stored.tags == ["round:\(stored.pushChannel == .handle("dev-\(index)") ? 0 : 1)"])
            }
            try await store.database.close()
        }
    }
}
