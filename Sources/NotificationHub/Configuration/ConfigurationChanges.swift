import Crypto
import Foundation

/// What differs between two configurations, part by part, and whether each part can change while the hub runs.
///
/// Parts are named by key path (`server.address`, `hubs.demo:keys`, `hubs.demo:adapters.apns`; a hub's name and
/// its part are separated by `:`, as hub names may hold dots). The listening
/// address, TLS, the other `server` settings, the emulators and a hub's storage need a restart; everything else
/// (keys, limits, delivery settings, adapters, device authentication, secure push, the feedback webhook, hubs added
/// or removed) applies live.
public struct ConfigurationChanges: Sendable, Equatable, Codable {
    /// Parts that a running hub applies at once.
    public var live: [String]
    /// Parts that take effect only when the process restarts; until then the running value stays.
    public var restartRequired: [String]

    /// No change.
    public init() {
        live = []
        restartRequired = []
    }

    /// The changes from one set of part fingerprints (``HubsConfiguration/fingerprints``) to another.
    public init(from old: [String: String], to new: [String: String]) {
        var live: [String] = []
        var restart: [String] = []
        let oldHubs = Set(old.keys.compactMap(Self.hubName))
        let newHubs = Set(new.keys.compactMap(Self.hubName))
        for path in Set(old.keys).union(new.keys).sorted() where old[path] != new[path] {
            if let hub = Self.hubName(path) {
                // A hub added or removed is one change, not one per part.
                if !oldHubs.contains(hub) || !newHubs.contains(hub) { continue }
            }
            if Self.needsRestart(path) { restart.append(path) } else { live.append(path) }
        }
        for hub in newHubs.subtracting(oldHubs).sorted() { live.append("hubs.\(hub) (added)") }
        for hub in oldHubs.subtracting(newHubs).sorted() { live.append("hubs.\(hub) (removed)") }
        self.live = live
        self.restartRequired = restart
    }

    /// Whether nothing changed.
    public var isEmpty: Bool { live.isEmpty && restartRequired.isEmpty }

    /// Whether a part can change only with a restart.
    public static func needsRestart(_ path: String) -> Bool {
        path.hasPrefix("server.") || path == "emulators" || path == "observability.tracing"
            || (hubName(path) != nil && path.hasSuffix(":storage"))
    }

    /// The parts one hub's Manage key may compare: the server's, the emulators' and that hub's own. Other hubs'
    /// digests are not shown to it (a digest of a weak key could be guessed offline).
    public static func parts(_ all: [String: String], visibleTo hub: String) -> [String: String] {
        all.filter { part in hubName(part.key).map { $0 == hub } ?? true }
    }

    static func hubName(_ path: String) -> String? {
        guard path.hasPrefix("hubs.") else { return nil }
        let rest = path.dropFirst(5)
        // Hub names hold no ':' and every part path ends in ':' + part.
        guard let separator = rest.firstIndex(of: ":") else { return nil }
        return String(rest[..<separator])
    }
}

extension HubsConfiguration {
    /// A digest of each part of the configuration, by key path (`server.address`, `hubs.demo:keys`,
    /// `hubs.demo:adapters.apns`): equal digests, equal parts. Secrets enter only through SHA-256, so the map can be
    /// shown and sent (`GET /{hub}/configuration`, `hub validate --running`).
    public var fingerprints: [String: String] {
        var parts: [String: String] = [:]
        func add(_ path: String, _ text: String) {
            parts[path] = SHA256.hash(data: Data(text.utf8)).prefix(16).map { String(format: "%02x", $0) }.joined()
        }
        add("server.address", "\(server.host):\(server.port)")
        add("server.tls", server.tls.map { "\($0.certificateChain)|\($0.privateKey)" } ?? "none")
        add(
            "server.limits",
            "\(server.maximumRequestBytes)|\(server.maximumBatchRequestBytes)|\(server.maximumConnections)|\(server.requestHeaderTimeoutSeconds)|\(server.requestBodyTimeoutSeconds)|\(server.idleTimeoutSeconds)"
        )
        add("server.console", "\(server.console)")
        add("server.nodeName", server.nodeName ?? "")
        if let emulators { add("emulators", String(reflecting: emulators)) }
        if let tracing {
            add(
                "observability.tracing",
                "\(tracing.endpoint.absoluteString)|\(tracing.serviceName)|\(tracing.batchSampleRatio)|"
                    + tracing.headers.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: "&"))
        }
        for hub in hubs {
            let prefix = "hubs.\(hub.name):"
            add(
                prefix + "keys",
                hub.keys.map { "\($0.name)|\($0.rights.map(\.rawValue).sorted())|\($0.primaryKey)|\($0.secondaryKey ?? "")" }
                    .joined(separator: "\n"))
            add(prefix + "storage", String(reflecting: hub.storage))
            add(prefix + "limits", String(reflecting: hub.limits))
            var delivery = hub.delivery
            let platformConcurrency = delivery.platformConcurrency.sorted { $0.key < $1.key }
            delivery.platformConcurrency = [:]
            add(prefix + "delivery", String(reflecting: delivery) + String(reflecting: platformConcurrency))
            for adapter in hub.adapters { add(prefix + "adapters.\(adapter.type)", adapter.fingerprintText) }
            add(prefix + "deviceAuthentication", String(reflecting: hub.deviceAuthentication))
            add(prefix + "userBoundTags", String(reflecting: hub.userBoundTags))
            add(prefix + "listenKey", String(reflecting: hub.listenKey))
            add(
                prefix + "securePush",
                hub.securePush.map {
                    "\($0.encryptionKey.withUnsafeBytes { Array($0) })|\($0.defaultTimeToLiveSeconds)|\($0.maximumTimeToLiveSeconds)|\($0.announcementStyle)|\($0.alertText)|\($0.purgeIntervalSeconds)"
                } ?? "none")
            add(
                prefix + "feedback",
                hub.feedbackWebhook.map { webhook in
                    var copy = webhook
                    let headers = copy.headers.sorted { $0.key < $1.key }
                    copy.headers = [:]
                    return String(reflecting: copy) + String(reflecting: headers)
                } ?? "none")
            add(prefix + "webhooks", hub.eventWebhooks?.fingerprintText ?? "none")
        }
        return parts
    }
}
