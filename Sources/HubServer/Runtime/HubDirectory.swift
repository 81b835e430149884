import Foundation
import NotificationHub
import Synchronization

/// The hubs a process serves now, by name, as the API finds them: a reload adds, replaces and removes entries, and a
/// request keeps the entry it found. A removed hub's keys are kept so that a request signed for it is answered 404,
/// while any other request for an unknown hub is answered like a wrong token.
public final class HubDirectory: Sendable {
    /// One served hub and what the API keeps beside it.
    public final class Entry: Sendable {
        /// The hub.
        public let hub: Hub
        let verifier: DeviceTokenVerifier?
        let writeLimiter: InstallationWriteLimiter
        private let requests = Mutex(0)

        init(hub: Hub, verifier: DeviceTokenVerifier?, writeLimiter: InstallationWriteLimiter) {
            self.hub = hub
            self.verifier = verifier
            self.writeLimiter = writeLimiter
        }

        /// Makes the entry of a hub from its configuration.
        convenience init(hub: Hub) throws {
            let configuration = hub.configuration
            try self.init(
                hub: hub, verifier: configuration.deviceAuthentication.map(DeviceTokenVerifier.init),
                writeLimiter: InstallationWriteLimiter(limits: configuration.limits.installationWrites))
        }

        /// Requests being answered for this hub.
        public var requestsInFlight: Int { requests.withLock { $0 } }

        func enter() { requests.withLock { $0 += 1 } }
        func leave() { requests.withLock { $0 -= 1 } }
    }

    private let state: Mutex<(entries: [String: Entry], removed: [String: [AccessKey]])>
    /// The hubs' jobs and the files they read and write (a service of ``HubRuntime``).
    public let operations = HubOperations()

    /// A directory of hubs.
    public init(hubs: [Hub]) throws {
        var entries: [String: Entry] = [:]
        for hub in hubs where entries[hub.name] == nil { entries[hub.name] = try Entry(hub: hub) }
        state = Mutex((entries, [:]))
    }

    /// The entry of a hub served now.
    public func entry(_ name: String) -> Entry? {
        state.withLock { $0.entries[name] }
    }

    /// The hubs served now, sorted by name.
    public var hubs: [Hub] {
        state.withLock { $0.entries.values.map(\.hub) }.sorted { $0.name < $1.name }
    }

    /// The keys of a hub that was removed while the process ran.
    func removedKeys(_ name: String) -> [AccessKey]? {
        state.withLock { $0.removed[name] }
    }

    /// Serves an entry (a hub added, or one whose API settings changed).
    func set(_ entry: Entry) {
        state.withLock { state in
            state.entries[entry.hub.name] = entry
            state.removed[entry.hub.name] = nil
        }
    }

    /// Stops serving a hub; requests signed with its keys are answered 404 from now on.
    @discardableResult
    func remove(_ name: String) -> Entry? {
        state.withLock { state in
            guard let entry = state.entries.removeValue(forKey: name) else { return nil }
            state.removed[name] = entry.hub.configuration.keys
            return entry
        }
    }
}
