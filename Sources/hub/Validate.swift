import ArgumentParser
import AsyncHTTPClient
import Foundation
import HubServer
import NIOCore
import NIOHTTP1
import NotificationHub

/// `hub validate [path]`: checks a configuration and prints every problem with file, line, column and key path, and
/// every warning (deprecated keys, risky settings) the same way. Writes nothing and opens no connection (but the one
/// to a running hub with `--running`).
///
/// With `--running URL` it compares the file with what that hub runs (`GET /{hub}/configuration`, Manage: digests
/// only), with `--against old.yaml` with another file, and says which changes a reload applies live and which need a
/// restart.
struct Validate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check a configuration file, report every problem, and say what a reload would apply live.")

    @Argument(help: "The configuration file.")
    var path: String = "hub.yaml"

    @Option(help: "Compare with this configuration file (the one running) instead of a running hub.")
    var against: String?

    @Option(help: "Compare with the configuration a running hub serves, at this URL (e.g. http://127.0.0.1:8080).")
    var running: String?

    @Option(help: "With --running: the hub whose Manage key signs the request (default: the file's first hub).")
    var hub: String?

    @Option(help: "With --running: the key's name (default: the hub's first key with Manage in the file).")
    var keyName: String?

    @Option(help: "With --running: the key (default: that key's primaryKey in the file).")
    var key: String?

    @Option(help: "With --running: a connection string (Endpoint=...;SharedAccessKeyName=...;SharedAccessKey=...) instead of --key-name and --key.")
    var connectionString: String?

    func validate() throws {
        if against != nil, running != nil { throw ValidationError("give --against or --running, not both") }
    }

    func run() async throws {
        let configuration = try ConfigurationFile.load(path)
        for hub in configuration.hubs {
            print(
                "hub '\(hub.name)': \(hub.keys.count) key(s), adapters \(hub.adapters.map(\.type).joined(separator: ", "))")
        }
        for warning in configuration.warnings {
            print("warning: \(warning)")
        }
        print("\(path) is valid")
        if let against {
            let old = try ConfigurationFile.load(against)
            report(ConfigurationChanges(from: old.fingerprints, to: configuration.fingerprints), than: against)
        } else if let running {
            let (hubName, parts) = try await runningParts(url: running, configuration: configuration)
            // The running hub shows the server's parts and this hub's own: the file is compared on those.
            let local = ConfigurationChanges.parts(configuration.fingerprints, visibleTo: hubName)
            report(ConfigurationChanges(from: parts, to: local), than: "\(running) (hub '\(hubName)')")
        }
    }

    func report(_ changes: ConfigurationChanges, than other: String) {
        if changes.isEmpty {
            print("no change from \(other)")
            return
        }
        for part in changes.live { print("applies live: \(part)") }
        for part in changes.restartRequired { print("needs a restart: \(part)") }
    }

    /// The hub asked and the running hub's part digests (the server's and that hub's).
    func runningParts(url: String, configuration: HubsConfiguration) async throws -> (hub: String, parts: [String: String]) {
        var base = url
        while base.hasSuffix("/") { base.removeLast() }
        var keyName = keyName
        var key = key
        if let connectionString {
            for field in connectionString.split(separator: ";") {
                let pair = field.split(separator: "=", maxSplits: 1).map(String.init)
                guard pair.count == 2 else { continue }
                if pair[0] == "SharedAccessKeyName" { keyName = pair[1] }
                if pair[0] == "SharedAccessKey" { key = pair[1] }
            }
        }
        let hubSettings = hub.map { configuration.hub(named: $0) } ?? configuration.hubs.first
        guard let hubName = hub ?? hubSettings?.name else { throw ValidationError("give --hub") }
        if key == nil {
            let manage = hubSettings?.keys.first { key in
                key.rights.contains(.manage) && (keyName == nil || key.name == keyName)
            }
            keyName = keyName ?? manage?.name
            key = manage?.primaryKey
        }
        guard let keyName, let key else {
            throw ValidationError("give --key-name and --key (or --connection-string) of a Manage key of hub '\(hubName)'")
        }
        let token = SharedAccessSignature.make(
            resource: "\(base)/\(hubName)", keyName: keyName, key: key, expiry: Date() + 300)
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        do {
            var request = HTTPClientRequest(url: "\(base)/\(hubName)/configuration")
            request.headers.add(name: "Authorization", value: token)
            let response = try await client.execute(request, timeout: .seconds(30))
            let body = try await response.body.collect(upTo: 4 << 20)
            try await client.shutdown()
            guard response.status == .ok else {
                throw ValidationError("\(base) answered \(response.status.code): \(String(buffer: body))")
            }
            guard let object = try JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any],
                let parts = object["parts"] as? [String: String]
            else {
                throw ValidationError("\(base) did not answer a configuration")
            }
            if let sha = object["sha256"] as? String, !sha.isEmpty, sha == configuration.sha256 {
                print("the running hub was loaded from this file (sha256 \(sha))")
            }
            return (hubName, parts)
        } catch {
            try? await client.shutdown()
            throw error
        }
    }
}
