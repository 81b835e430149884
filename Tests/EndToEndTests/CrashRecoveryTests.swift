import Foundation
import HubTestSupport
import Logging
import NotificationHub
import PushEmulator
import Testing

/// A hub process killed with SIGKILL in the middle of a fan-out is restarted and finishes it: every device gets the
/// notification, and only pages that were in flight are sent twice: with one page in flight, at most one page.
@Suite(.serialized, .oneProcessSuiteAtATime, .timeLimit(.minutes(15))) struct CrashRecoveryTests {
    static let devices = 20_000
    static let pageSize = 500

    static func configuration(directory: String, apns: EmulatedAPNs, database: String, pagesInFlight: Int) -> String {
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
              leaseSeconds: 5
            adapters:
        \(apns.adapterYAML)
        """
    }

    /// `graceful`: stopped with SIGTERM instead of SIGKILL; it must exit promptly and hand its lease back.
    @Test(arguments: [(1, false), (3, false), (3, true)])
    func aKilledHubResumesTheFanOutAfterItsLastCheckpoint(pagesInFlight: Int, graceful: Bool) async throws {
        let directory = NSTemporaryDirectory() + "hub-crash-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let apns = try await EmulatedAPNs.start(directory: directory)

        let database = directory + "/hub.sqlite"
        let configurationPath = directory + "/hub.yaml"
        try Self.configuration(directory: directory, apns: apns, database: database, pagesInFlight: pagesInFlight)
            .write(toFile: configurationPath, atomically: true, encoding: .utf8)

        // The installations and the accepted notification are in the database before the hub starts.
        let logger = Logger.forTest("crash-test")
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
        defer { first.killIfRunning() }
        let reachedThird = try await waitUntil(timeout: .seconds(180)) { apns.emulator.acceptedCount >= Self.devices / 3 }
        let stopping = ContinuousClock.now
        if graceful {
            #expect(await first.terminate(grace: .seconds(30)), "SIGTERM stops the fan-out promptly: \(first.logTail())")
        } else {
            await first.kill9()
        }
        let stopSeconds = ContinuousClock.now - stopping
        let atKill = apns.emulator.acceptedCount
        #expect(reachedThird)
        #expect(atKill < Self.devices, "the fan-out must still be running when the hub is killed")

        // Second run: resumes once the dead worker's lease expires.
        let restart = ContinuousClock.now
        let second = try HubProcess(configuration: configurationPath, logPath: directory + "/hub.log")
        defer { second.killIfRunning() }
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

        #expect(resumed, "the new process resumes the fan-out: \(second.logTail())")
        if graceful {
            let log = (try? String(contentsOfFile: directory + "/hub.log", encoding: .utf8)) ?? ""
            #expect(log.contains("fan-out stopped for shutdown"), "the stopped worker handed its lease back")
        }
        #expect(record?.state == .completed, "\(second.logTail())")
        #expect(record?.summary.count(of: .success) == Self.devices)
        let received = apns.emulator.received.map(\.deviceToken)
        let distinct = Set(received)
        #expect(distinct.count == Self.devices, "every device receives the notification")
        let missing = Set((0..<Self.devices).map(EmulatedAPNs.deviceToken)).subtracting(distinct)
        #expect(missing.isEmpty, "\(missing.count) devices missed, e.g. \(missing.prefix(3))")
        let duplicates = received.count - distinct.count
        // Only the pages in flight at the crash repeat, plus what the logs explain: a lease lost on the loaded
        // machine repeats another window, a retried delivery may repeat once.
        let window = pagesInFlight * Self.pageSize
        let sources = RepeatSources(logs: [directory + "/hub.log"])
        let bound = window * ((graceful ? 0 : 1) + sources.stops) + sources.retries
        #expect(duplicates <= bound, "only pages in flight at the crash repeat (\(sources))")
        print(
            "crash-recovery(pagesInFlight: \(pagesInFlight), graceful: \(graceful)): stop=\(stopSeconds) devices=\(Self.devices) deliveredBeforeKill=\(atKill) duplicates=\(duplicates) "
                + "bound=\(bound) \(sources) resumeAfterRestart=\(resumeSeconds) total=\(total)")
        #expect(await second.terminate(), "the hub shuts down gracefully: \(second.logTail())")
        await apns.emulator.stop()
    }
}
