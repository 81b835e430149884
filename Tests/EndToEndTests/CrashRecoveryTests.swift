import Foundation
import Logging
import NotificationHub
import PushEmulator
import Testing

/// A hub process killed with SIGKILL in the middle of a fan-out is restarted and finishes it: every device gets the
/// notification, and only pages that were in flight are sent twice.
@Suite struct CrashRecoveryTests {
    static let devices = 20_000
    static let pageSize = 500
    static let pagesInFlight = 3

    static func configuration(directory: String, apns: EmulatedAPNs, database: String) -> String {
        """
        server: {host: 127.0.0.1, port: 0}
        hubs:
          demo:
            keys: [{name: full, rights: [Manage], primaryKey: crash-test-key-0123456789}]
            storage: {sqlite: {path: \(database)}}
            delivery:
              pageSize: \(pageSize)
              pagesInFlight: \(pagesInFlight)
              batchSize: 250
              leaseSeconds: 3
            adapters:
        \(apns.adapterYAML)
        """
    }

    @Test func aKilledHubResumesTheFanOutAfterItsLastCheckpoint() async throws {
        let directory = NSTemporaryDirectory() + "hub-crash-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let apns = try await EmulatedAPNs.start(directory: directory)

        let database = directory + "/hub.sqlite"
        let configurationPath = directory + "/hub.yaml"
        try Self.configuration(directory: directory, apns: apns, database: database)
            .write(toFile: configurationPath, atomically: true, encoding: .utf8)

        // The installations and the accepted notification are in the database before the hub starts.
        let logger = Logger(label: "crash-test")
        let setup = try await HubDatabases.open(storage: .sqlite(path: database), logger: logger)
        let installations = SQLInstallationStore(database: setup)
        try await installations.upsert(
            contentsOf: (0..<Self.devices).map {
                Installation(
                    installationID: "i\($0)", platform: .apns, pushChannel: .handle(EmulatedAPNs.deviceToken($0)),
                    tags: ["everyone"])
            })
        let notifications = SQLNotificationStore(database: setup)
        let notification = Notification(
            format: .apple, body: #"{"aps":{"alert":"crash test"}}"#, audience: .tags(.tag("everyone")))
        _ = try await notifications.enqueue(notification, scheduledTime: nil, idempotencyKey: nil)
        try await setup.close()

        // First run: killed once a third of the devices have it.
        let started = ContinuousClock.now
        let first = try HubProcess(configuration: configurationPath, logPath: directory + "/hub.log")
        let reachedThird = try await waitUntil(timeout: .seconds(180)) { apns.emulator.acceptedCount >= Self.devices / 3 }
        first.kill9()
        let atKill = apns.emulator.acceptedCount
        #expect(reachedThird)
        #expect(atKill < Self.devices, "the fan-out must still be running when the hub is killed")

        // Second run: resumes once the dead worker's lease expires.
        let restart = ContinuousClock.now
        let second = try HubProcess(configuration: configurationPath, logPath: directory + "/hub.log")
        defer { second.terminate() }
        // The new process logs when it takes the fan-out over from its checkpoint.
        let resumed = try await waitUntil(timeout: .seconds(180)) {
            ((try? String(contentsOfFile: directory + "/hub.log", encoding: .utf8)) ?? "").contains("resuming a fan-out")
        }
        let resumeSeconds = ContinuousClock.now - restart
        let reader = try await HubDatabases.open(storage: .sqlite(path: database), logger: logger)
        let store = SQLNotificationStore(database: reader)
        var record: NotificationRecord?
        _ = try await waitUntil(timeout: .seconds(240)) {
            record = try await store.record(id: notification.id)
            return record?.state.isFinal == true
        }
        try await reader.close()
        let total = ContinuousClock.now - started
        try? FileManager.default.removeItem(atPath: "/tmp/crash-hub.log")
        try? FileManager.default.copyItem(atPath: directory + "/hub.log", toPath: "/tmp/crash-hub.log")

        #expect(resumed)
        #expect(record?.state == .completed)
        #expect(record?.summary.count(of: .success) == Self.devices)
        let received = apns.emulator.received.map(\.deviceToken)
        let distinct = Set(received)
        #expect(distinct.count == Self.devices, "every device receives the notification")
        #expect(distinct == Set((0..<Self.devices).map(EmulatedAPNs.deviceToken)))
        let duplicates = received.count - distinct.count
        #expect(duplicates <= Self.pagesInFlight * Self.pageSize, "only pages in flight at the crash repeat")
        print(
            "crash-recovery: devices=\(Self.devices) deliveredBeforeKill=\(atKill) duplicates=\(duplicates) "
                + "bound=\(Self.pagesInFlight * Self.pageSize) resumeAfterRestart=\(resumeSeconds) total=\(total)")
        await apns.emulator.stop()
    }
}
