import Foundation
import HubServer
import Hummingbird
import HummingbirdTesting
import Logging
import NotificationHub

/// A plugin's hub, built from its factory's settings by the same composition root as `hub serve` (``HubRuntime``),
/// behind the real router in process, its worker running: for the plugin test suites' REST tests.
public enum HubAPITest {
    /// The keys of hub `demo`: `listen` (Listen) and `send` (Send).
    public static let keys = [
        AccessKey(name: "listen", rights: [.listen], primaryKey: "listen-key-0123456789"),
        AccessKey(name: "send", rights: [.send], primaryKey: "send-key-0123456789"),
    ]

    /// A SharedAccessSignature for hub `demo` signed with the key `name` (one of ``keys``).
    public static func authorization(_ name: String) -> String {
        let key = keys.first { $0.name == name }?.primaryKey ?? ""
        return SharedAccessSignature.make(resource: "http://localhost/demo", keyName: name, key: key, expiry: Date() + 3600)
    }

    /// Runs `body` against hub `demo` with ``keys`` and `adapters`, on an in-memory store.
    public static func run(
        adapters: [AdapterSettings], logger: Logger, _ body: @Sendable (any TestClientProtocol) async throws -> Void
    ) async throws {
        let settings = HubSettings(
            name: "demo", keys: keys, storage: .memory, delivery: DeliveryConfiguration(initialBackoffSeconds: 0.01),
            adapters: adapters)
        let runtime = try await HubRuntime(configuration: HubsConfiguration(hubs: [settings]), options: .init(logger: logger))
        let app = Application(router: runtime.api.makeRouter(), logger: logger)
        try await RunningServices.with(runtime.services, logger: logger) {
            try await app.test(.router) { client in try await body(client) }
        }
    }
}
