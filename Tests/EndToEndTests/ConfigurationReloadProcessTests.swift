import Crypto
import Foundation
import HubTestSupport
import Logging
import NotificationHub
import PushEmulator
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What the clients of the reload load test count.
final class LoadTally: Sendable {
    struct Tally {
        var requests = 0
        var errors: [String] = []
        var sent: [Int] = []
    }

    let tally = Mutex(Tally())
    let running = Mutex(true)
}

/// `hub validate` writes nothing and says what a reload would apply; a running `hub serve` reloads on SIGHUP and when
/// its file changes, and a load of sends and installation writes running through ten reloads, good and bad in turn,
/// sees no error and loses no notification.
@Suite(.serialized, .oneProcessSuiteAtATime, .timeLimit(.minutes(10))) struct ConfigurationReloadProcessTests {
    static let manageKey = "reload-manage-key-0123456789"

    /// Runs `hub` with arguments; returns its exit status and output.
    static func hub(_ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: HubProcess.executable)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    static func listing(_ directory: String) -> [String] {
        (FileManager.default.enumerator(atPath: directory)?.allObjects as? [String] ?? []).sorted()
    }

    static func token(port: Int, key: String = manageKey) -> String {
        let allowed = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "-._~"))
        let resource = "http://127.0.0.1:\(port)/demo".addingPercentEncoding(withAllowedCharacters: allowed)!
        let expiry = Int(Date().timeIntervalSince1970) + 600
        let mac = HMAC<SHA256>.authenticationCode(
            for: Data("\(resource)\n\(expiry)".utf8), using: SymmetricKey(data: Data(key.utf8)))
        let signature = Data(mac).base64EncodedString().addingPercentEncoding(withAllowedCharacters: allowed)!
        return "SharedAccessSignature sr=\(resource)&sig=\(signature)&se=\(expiry)&skn=full"
    }

    @Test func validateWritesNothingAndSaysWhatAppliesLive() throws {
        let directory = NSTemporaryDirectory() + "hub-validate-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // The emulators' material (.emulator/) does not exist yet: validating must not write it.
        let yaml = """
            server: {host: 127.0.0.1, port: 8080}
            emulators:
              directory: .emulator
              apns: {port: 4443}
              fcm: {port: 4444}
            hubs:
              demo:
                keys: [{name: full, rights: [Manage], primaryKey: \(Self.manageKey)}]
                storage: {sqlite: {path: data/demo.sqlite}}
                adapters:
                  - type: apns
                    endpoint: https://127.0.0.1:4443
                    caCertificate: .emulator/emulator-ca.pem
                    teamId: TEAM123456
                    keyId: KEY1234567
                    privateKey: {file: .emulator/apns-auth-key.p8}
                    topic: com.example.app
                  - type: fcm
                    serviceAccount: {file: .emulator/fcm-service-account.json}
                    endpoint: https://127.0.0.1:4444
                    caCertificate: .emulator/emulator-ca.pem
            """
        try yaml.write(toFile: directory + "/hub.yaml", atomically: true, encoding: .utf8)
        let before = Self.listing(directory)
        let valid = try Self.hub(["validate", directory + "/hub.yaml"])
        #expect(valid.status == 0, "\(valid.output)")
        #expect(valid.output.contains("is valid"))
        #expect(Self.listing(directory) == before, "validate wrote files")

        let rotated = "rotated-validate-key-0123456789"
        let changed = yaml.replacingOccurrences(of: "port: 8080", with: "port: 9090")
            .replacingOccurrences(of: Self.manageKey, with: rotated)
            .replacingOccurrences(of: "path: data/demo.sqlite", with: "path: data/other.sqlite")
        try changed.write(toFile: directory + "/new.yaml", atomically: true, encoding: .utf8)
        let compared = try Self.hub(["validate", directory + "/new.yaml", "--against", directory + "/hub.yaml"])
        #expect(compared.status == 0, "\(compared.output)")
        #expect(compared.output.contains("applies live: hubs.demo:keys"))
        #expect(compared.output.contains("needs a restart: server.address"))
        #expect(compared.output.contains("needs a restart: hubs.demo:storage"))
        #expect(!compared.output.contains(rotated) && !compared.output.contains(Self.manageKey))
        #expect(!FileManager.default.fileExists(atPath: directory + "/.emulator"), "validate wrote the emulators' files")
        #expect(!FileManager.default.fileExists(atPath: directory + "/data"), "validate created the store")

        let broken = changed.replacingOccurrences(of: "teamId: TEAM123456", with: "teamId: TEAM-123456")
        try broken.write(toFile: directory + "/broken.yaml", atomically: true, encoding: .utf8)
        let invalid = try Self.hub(["validate", directory + "/broken.yaml"])
        #expect(invalid.status != 0)
        #expect(invalid.output.contains("broken.yaml:"), "\(invalid.output)")
        #expect(!invalid.output.contains(rotated))
    }

    /// The configuration of the load test: `variant` changes what a good reload changes.
    static func yaml(directory: String, apns: EmulatedAPNs, variant: Int, broken: Bool) -> String {
        // Every variant changes the delivery settings, and in turn: a second key, the adapter's connections (which
        // replaces the adapter), the limits, the adapter again.
        let keys =
            variant % 4 == 1
            ? "[{name: full, rights: [Manage], primaryKey: \(manageKey)}, {name: extra, rights: [Send], primaryKey: extra-key-\(variant)-0123456789}]"
            : "[{name: full, rights: [Manage], primaryKey: \(manageKey)}]"
        let adapter = apns.adapterYAML + (variant % 2 == 0 ? "\n        connections: \(1 + variant)" : "")
        return """
            server: {host: 127.0.0.1, port: 0}
            hubs:
              demo:
                keys: \(keys)
                storage: {sqlite: {path: \(directory)/hub.sqlite}}
                limits: {tagsPerInstallation: \(variant % 4 == 3 ? 50 : 60)}
                delivery: {batchSize: \(100 + variant), parallelNotifications: 64\(broken ? ", pageSize: -1" : "")}
                adapters:
            \(adapter)
            """
    }

    struct Health: Decodable {
        struct Config: Decodable {
            struct Reload: Decodable {
                var result: String
                var at: String
                var seconds: Double
                var problems: Int
            }

            var sha256: String
            var lastReload: Reload?
        }

        var config: Config
    }

    static func health(port: Int) async throws -> Health {
        let (data, _) = try await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(port)/healthz")!)
        return try JSONDecoder().decode(Health.self, from: data)
    }

    @Test func tenReloadsUnderLoadFailNoRequestAndLoseNoNotification() async throws {
        let directory = NSTemporaryDirectory() + "hub-reload-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let apns = try await EmulatedAPNs.start(directory: directory)
        let file = directory + "/hub.yaml"
        try Self.yaml(directory: directory, apns: apns, variant: 0, broken: false).write(toFile: file, atomically: true, encoding: .utf8)
        let users = 400
        let setup = try await HubDatabases.open(storage: .sqlite(path: directory + "/hub.sqlite"), logger: Logger.forTest("setup"))
        try await SQLInstallationStore(database: setup).upsert(
            contentsOf: (0..<users).map {
                Installation(
                    installationID: "i\($0)", platform: .apns, pushChannel: .handle(EmulatedAPNs.deviceToken($0)),
                    tags: ["user:\($0)"])
            })
        try await setup.close()
        let log = directory + "/hub.log"
        let process = try HubProcess(configuration: file, logPath: log)
        defer { process.killIfRunning() }
        let port = try await process.port()
        // The reloader starts with the other services; give it a moment to trap SIGHUP.
        try await Task.sleep(for: .seconds(1))
        let token = Self.token(port: port)
        let initialHash = try await Self.health(port: port).config.sha256

        let load = LoadTally()
        var reloads: [(trigger: String, result: String, seconds: Double)] = []

        try await withThrowingTaskGroup(of: Void.self) { group in
            // Installation writers: each client registers its users' devices, again and again.
            for client in 0..<4 {
                group.addTask {
                    var round = 0
                    while load.running.withLock({ $0 }) {
                        for user in stride(from: client, to: users, by: 4) where load.running.withLock({ $0 }) {
                            var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)/demo/installations/i\(user)")!)
                            request.httpMethod = "PUT"
                            request.setValue(token, forHTTPHeaderField: "Authorization")
                            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
                            request.httpBody = Data(
                                #"{"installationId":"i\#(user)","platform":"apns","pushChannel":"\#(EmulatedAPNs.deviceToken(user))","tags":["user:\#(user)","round:\#(round)"]}"#
                                    .utf8)
                            let outcome: String?
                            do {
                                let (_, response) = try await URLSession.shared.data(for: request)
                                let status = (response as? HTTPURLResponse)?.statusCode ?? 0
                                outcome = status == 200 ? nil : "PUT \(status)"
                            } catch {
                                outcome = "PUT \(error)"
                            }
                            load.tally.withLock { tally in
                                tally.requests += 1
                                if let outcome { tally.errors.append(outcome) }
                            }
                        }
                        round += 1
                    }
                }
            }
            // Senders: one notification per user (after its installation exists), in a loop.
            for client in 0..<4 {
                group.addTask {
                    var user = client
                    while load.running.withLock({ $0 }) {
                        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)/demo/messages")!)
                        request.httpMethod = "POST"
                        request.setValue(token, forHTTPHeaderField: "Authorization")
                        request.setValue("apple", forHTTPHeaderField: "ServiceBusNotification-Format")
                        request.setValue("user:\(user % users)", forHTTPHeaderField: "ServiceBusNotification-Tags")
                        request.httpBody = Data(#"{"aps":{"alert":"n \#(user)"}}"#.utf8)
                        let outcome: String?
                        do {
                            let (_, response) = try await URLSession.shared.data(for: request)
                            let status = (response as? HTTPURLResponse)?.statusCode ?? 0
                            outcome = status == 201 ? nil : "POST \(status)"
                        } catch {
                            outcome = "POST \(error)"
                        }
                        load.tally.withLock { tally in
                            tally.requests += 1
                            if let outcome { tally.errors.append(outcome) } else { tally.sent.append(user) }
                        }
                        user += 4
                    }
                }
            }
            // Ten reloads, good and bad in turn, by SIGHUP and by the file changing alone.
            let started = load.tally.withLock { $0.requests }
            for index in 0..<10 {
                try await Task.sleep(for: .seconds(2))
                let broken = index % 2 == 1
                let before = try await Self.health(port: port).config.lastReload?.at
                try Self.yaml(directory: directory, apns: apns, variant: index / 2 + 1, broken: broken)
                    .write(toFile: file, atomically: true, encoding: .utf8)
                let trigger = index % 4 < 2 ? "SIGHUP" : "file change"
                if trigger == "SIGHUP" { kill(process.pid, SIGHUP) }
                var reload: Health.Config.Reload?
                _ = try await waitUntil(timeout: .seconds(30)) {
                    reload = try await Self.health(port: port).config.lastReload
                    return reload != nil && reload?.at != before
                }
                let result = try #require(reload, "reload \(index) did not happen: \(process.logTail())")
                #expect(result.result == (broken ? "rejected" : "applied"), "reload \(index): \(process.logTail())")
                reloads.append((trigger, result.result, result.seconds))

            }
            let during = load.tally.withLock { $0.requests } - started
            load.running.withLock { $0 = false }
            try await group.waitForAll()
            print("requests during the ten reloads: \(during)")
        }
        let final = load.tally.withLock { $0 }
        #expect(final.errors.isEmpty, "errors: \(final.errors.prefix(10))")
        #expect(try await Self.health(port: port).config.sha256 != initialHash)
        let (metrics, _) = try await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(port)/metrics")!)
        let text = String(decoding: metrics, as: UTF8.self)
        #expect(text.contains(#"hub_config_reloads_total{result="applied"} 5"#), "\(text.split(separator: "\n").filter { $0.contains("hub_config") })")
        #expect(text.contains(#"hub_config_reloads_total{result="rejected"} 5"#), "SIGHUP and the watcher read a change once")
        #expect(text.contains("hub_config_loaded_timestamp_seconds"))
        #expect(text.contains(#"hub_config_info{sha256="\#(try await Self.health(port: port).config.sha256)"} 1.0"#))
        // Every accepted send reaches its device.
        let expected = final.sent.count
        let delivered = try await waitUntil(timeout: .seconds(120)) { apns.emulator.acceptedCount >= expected }
        #expect(delivered, "accepted \(expected), delivered \(apns.emulator.acceptedCount): \(process.logTail())")
        #expect(process.isRunning)
        // Two good reloads changed the adapter's settings: each replaced adapter stopped once its deliveries were done.
        let replaced = try await waitUntil(timeout: .seconds(30)) {
            ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").components(separatedBy: "replaced adapter stopped").count - 1 >= 2
        }
        #expect(replaced, "\(process.logTail())")
        for (index, reload) in reloads.enumerated() {
            print("reload \(index + 1): \(reload.trigger) → \(reload.result) in \(String(format: "%.1f", reload.seconds * 1000)) ms")
        }
        print(
            "reload under load: requests=\(final.requests) sends accepted=\(expected) delivered=\(apns.emulator.acceptedCount) errors=\(final.errors.count)"
        )

        // validate --running compares a file with what runs (the last good reload's).
        let last = Self.yaml(directory: directory, apns: apns, variant: 5, broken: false)
        try last.write(toFile: file, atomically: true, encoding: .utf8)
        let current = try Self.hub(["validate", file, "--running", "http://127.0.0.1:\(port)"])
        #expect(current.status == 0, "\(current.output)")
        #expect(current.output.contains("no change from"), "\(current.output)")
        let moved = last.replacingOccurrences(of: "port: 0", with: "port: 9999")
            .replacingOccurrences(of: "batchSize: 105", with: "batchSize: 120")
        try moved.write(toFile: directory + "/next.yaml", atomically: true, encoding: .utf8)
        let next = try Self.hub(["validate", directory + "/next.yaml", "--running", "http://127.0.0.1:\(port)"])
        #expect(next.output.contains("applies live: hubs.demo:delivery"), "\(next.output)")
        #expect(next.output.contains("needs a restart: server.address"), "\(next.output)")

        #expect(await process.terminate(), "\(process.logTail())")
        await apns.emulator.stop()
    }
}
