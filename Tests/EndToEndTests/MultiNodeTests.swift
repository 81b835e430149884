import Foundation
import HubTestSupport
import Logging
import NotificationHub
import PushEmulator
import Testing

/// Two hub processes on one PostgreSQL database share a fan-out: every device receives it exactly once and both
/// nodes deliver a share; when one node is killed, the other finishes its partitions.
@Suite(.serialized, .timeLimit(.minutes(15))) struct MultiNodeTests {
    static let devices = 20_000
    static let pageSize = 500
    static let pagesInFlight = 2

    static func configuration(apns: EmulatedAPNs, url: String, schema: String) -> String {
        """
        server: {host: 127.0.0.1, port: 0}
        hubs:
          demo:
            keys: [{name: full, rights: [Manage], primaryKey: multi-node-key-0123456789}]
            storage: {postgres: {url: "\(url)", schema: \(schema), pool: 8}}
            delivery:
              pageSize: \(pageSize)
              pagesInFlight: \(pagesInFlight)
              batchSize: 250
              partitions: 8
              parallelNotifications: 2
              leaseSeconds: 10
            adapters:
        \(apns.adapterYAML)
        """
    }

    /// Prepares a database with the installations and one accepted notification; returns its id.
    static func prepare(url: String, schema: String) async throws -> String {
        let database = try await HubDatabases.open(
            storage: .postgres(try .init(url: url, schema: schema)), logger: Logger(label: "multi-node"))
        try await SQLInstallationStore(database: database).upsert(
            contentsOf: (0..<devices).map {
                Installation(
                    installationID: "i\($0)", platform: .apns, pushChannel: .handle(EmulatedAPNs.deviceToken($0)),
                    tags: ["everyone"])
            })
        let notification = Notification(format: .apple, body: #"{"aps":{"alert":"both nodes"}}"#, audience: .tags(.tag("everyone")))
        _ = try await SQLNotificationStore(database: database).enqueue(notification, scheduledTime: nil, idempotencyKey: nil)
        try await database.close()
        return notification.id
    }

    static func waitForFinal(url: String, schema: String, id: String) async throws -> NotificationRecord? {
        let database = try await HubDatabases.open(
            storage: .postgres(try .init(url: url, schema: schema)), logger: Logger(label: "multi-node"))
        let store = SQLNotificationStore(database: database)
        var record: NotificationRecord?
        _ = try await waitUntil(timeout: .seconds(240)) {
            record = try await store.record(id: id)
            return record?.state.isFinal == true
        }
        try await database.close()
        return record
    }

    /// How many devices a node's finished partitions reached, from its log.
    static func share(log path: String) -> Int { HubLogs.sum("notification.partitionTargets", in: [path]) }

    @Test(arguments: [false, true])
    func twoNodesShareOneFanOut(killOne: Bool) async throws {
        let directory = NSTemporaryDirectory() + "hub-nodes-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let url = try await TestPostgres.shared.url()
        let schema = "nodes_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(12).lowercased()
        let apns = try await EmulatedAPNs.start(directory: directory)
        let id = try await Self.prepare(url: url, schema: schema)
        let configurationPath = directory + "/hub.yaml"
        try Self.configuration(apns: apns, url: url, schema: schema)
            .write(toFile: configurationPath, atomically: true, encoding: .utf8)

        let started = ContinuousClock.now
        let first = try HubProcess(configuration: configurationPath, logPath: directory + "/node1.log")
        let second = try HubProcess(configuration: configurationPath, logPath: directory + "/node2.log")
        defer {
            first.killIfRunning()
            second.killIfRunning()
        }
        var survivors = [first, second]
        if killOne {
            _ = try await waitUntil(timeout: .seconds(180)) { apns.emulator.acceptedCount >= Self.devices / 3 }
            await second.kill9()
            survivors = [first]
        }
        let record = try await Self.waitForFinal(url: url, schema: schema, id: id)
        let elapsed = ContinuousClock.now - started
        for node in survivors {
            #expect(await node.terminate(), "a node shuts down gracefully: \(node.logTail())")
        }

        #expect(record?.state == .completed, "\(first.logTail())\n\(second.logTail())")
        #expect(record?.summary.count(of: .success) == Self.devices)
        let received = apns.emulator.received
        let tokens = received.map(\.deviceToken)
        #expect(Set(tokens) == Set((0..<Self.devices).map(EmulatedAPNs.deviceToken)), "every device receives it")
        let duplicates = tokens.count - Set(tokens).count
        let shares = [Self.share(log: directory + "/node1.log"), Self.share(log: directory + "/node2.log")]
        // Repeats on the wire come only from what the logs explain (a lost lease, a retried delivery) and, when a
        // node is killed, from the pages it had in flight in each partition it held (two notifications' worth).
        let window = Self.pagesInFlight * Self.pageSize
        let sources = RepeatSources(logs: [directory + "/node1.log", directory + "/node2.log"])
        let bound = window * ((killOne ? 2 : 0) + sources.stops) + sources.retries
        #expect(duplicates <= bound, "\(sources)")
        if !killOne {
            #expect(shares.allSatisfy { $0 > 0 }, "both nodes deliver a share")
            // Each device is counted once: partitions are exclusive and the shares add up (a partition resumed after
            // a lost lease reports only what it delivered after its checkpoint).
            if sources.stops == 0 { #expect(shares.reduce(0, +) == Self.devices) }
        }
        print(
            "multi-node(killOne: \(killOne)): devices=\(Self.devices) duplicates=\(duplicates) bound=\(bound) \(sources) "
                + "shares=\(shares) seconds=\(elapsed)")
        await apns.emulator.stop()
    }
}
