import Crypto
import Foundation
import HubTestSupport
import Logging
import NotificationHub
import PushEmulator
import Synchronization
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A hub killed with SIGKILL in the middle of a burst of per-user sends loses none of the sends it accepted, and
/// repeats at most the notifications that were in flight.
@Suite(.serialized, .oneProcessSuiteAtATime, .timeLimit(.minutes(10))) struct PerUserCrashTests {
    static let users = 1500
    static let sendKey = "per-user-crash-key-0123456789"
    static let parallelNotifications = 64

    static func token(port: Int) -> String {
        let allowed = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "-._~"))
        let resource = "http://127.0.0.1:\(port)/demo".addingPercentEncoding(withAllowedCharacters: allowed)!
        let expiry = Int(Date().timeIntervalSince1970) + 600
        let mac = HMAC<SHA256>.authenticationCode(
            for: Data("\(resource)\n\(expiry)".utf8), using: SymmetricKey(data: Data(sendKey.utf8)))
        let signature = Data(mac).base64EncodedString().addingPercentEncoding(withAllowedCharacters: allowed)!
        return "SharedAccessSignature sr=\(resource)&sig=\(signature)&se=\(expiry)&skn=full"
    }

    /// Waits for the `hub is listening` line a process writes to its log, and returns its port.
    static func port(of log: String, after lines: Int) async throws -> Int {
        var port = 0
        _ = try await waitUntil(timeout: .seconds(60)) {
            let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            let listening = text.split(separator: "\n").dropFirst(lines).first { $0.contains("hub is listening") }
            guard let line = listening, let range = line.range(of: "server.address=") else { return false }
            port = Int(line[range.upperBound...].split(separator: ":").last?.prefix { $0.isNumber } ?? "") ?? 0
            return port > 0
        }
        return port
    }

    @Test func aKilledHubDeliversEveryAcceptedPerUserSend() async throws {
        let directory = NSTemporaryDirectory() + "hub-peruser-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let apns = try await EmulatedAPNs.start(directory: directory)
        let database = directory + "/hub.sqlite"
        let configuration = """
            server: {host: 127.0.0.1, port: 0}
            hubs:
              demo:
                keys: [{name: full, rights: [Manage], primaryKey: \(Self.sendKey)}]
                storage: {sqlite: {path: \(database)}}
                delivery: {leaseSeconds: 5, parallelNotifications: \(Self.parallelNotifications)}
                adapters:
            \(apns.adapterYAML)
            """
        try configuration.write(toFile: directory + "/hub.yaml", atomically: true, encoding: .utf8)
        let setup = try await HubDatabases.open(storage: .sqlite(path: database), logger: Logger.forTest("setup"))
        try await SQLInstallationStore(database: setup).upsert(
            contentsOf: (0..<Self.users).map {
                Installation(
                    installationID: "i\($0)", platform: .apns, pushChannel: .handle(EmulatedAPNs.deviceToken($0)),
                    tags: ["user:\($0)"])
            })
        try await setup.close()

        let log = directory + "/hub.log"
        let first = try HubProcess(configuration: directory + "/hub.yaml", logPath: log)
        defer { first.killIfRunning() }
        let port = try await Self.port(of: log, after: 0)
        let token = Self.token(port: port)

        // A burst of sends, one per user, from 32 clients; the hub is killed while it delivers them. The emulator
        // answers 300 ms late, so at most 64 / 0.3 s are delivered per second while the clients are accepted faster:
        // the hub has a backlog when it is killed, however fast this machine is.
        apns.emulator.faults = FaultInjection(latency: .milliseconds(300))
        let acceptedSoFar = AcceptedCount()
        let accepted = try await withThrowingTaskGroup(of: [Int].self) { group in
            for client in 0..<32 {
                group.addTask {
                    var users: [Int] = []
                    for user in stride(from: client, to: Self.users, by: 32) {
                        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)/demo/messages")!)
                        request.httpMethod = "POST"
                        request.setValue(token, forHTTPHeaderField: "Authorization")
                        request.setValue("apple", forHTTPHeaderField: "ServiceBusNotification-Format")
                        request.setValue("user:\(user)", forHTTPHeaderField: "ServiceBusNotification-Tags")
                        request.httpBody = Data(#"{"aps":{"alert":"order \#(user)"}}"#.utf8)
                        guard let (_, response) = try? await URLSession.shared.data(for: request) else { break }
                        if (response as? HTTPURLResponse)?.statusCode == 201 {
                            users.append(user)
                            acceptedSoFar.value.withLock { $0 += 1 }
                        }
                    }
                    return users
                }
            }
            group.addTask {
                _ = try await waitUntil(timeout: .seconds(120)) {
                    acceptedSoFar.value.withLock { $0 } >= Self.users / 3 && apns.emulator.acceptedCount > 0
                }
                await first.kill9()
                return []
            }
            return try await group.reduce(into: Set<Int>()) { $0.formUnion($1) }
        }
        let atKill = apns.emulator.acceptedCount
        #expect(atKill < accepted.count, "the hub must be killed while it still has sends to deliver")

        // Restarted, it delivers every send it accepted.
        apns.emulator.faults = .none
        let lines = ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n").count
        let second = try HubProcess(configuration: directory + "/hub.yaml", logPath: log)
        defer { second.killIfRunning() }
        _ = try await Self.port(of: log, after: lines)
        let expected = Set(accepted.map(EmulatedAPNs.deviceToken))
        let delivered = try await waitUntil(timeout: .seconds(180)) {
            expected.isSubset(of: Set(apns.emulator.received.map(\.deviceToken)))
        }
        let received = apns.emulator.received.map(\.deviceToken)
        let duplicates = received.count - Set(received).count
        #expect(delivered, "every accepted send reaches its device: \(second.logTail())")
        // Only notifications in flight at the kill repeat: at most what the worker holds at once.
        #expect(duplicates <= Self.parallelNotifications, "duplicates: \(duplicates)")
        print("per-user crash: accepted=\(accepted.count) deliveredBeforeKill=\(atKill) duplicates=\(duplicates)")
        #expect(await second.terminate(), "\(second.logTail())")
        await apns.emulator.stop()
    }
}

/// How many sends the clients have had accepted so far.
private final class AcceptedCount: Sendable {
    let value = Mutex(0)
}
