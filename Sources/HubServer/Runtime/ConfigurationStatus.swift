import Foundation
import Metrics
import Synchronization

/// What configuration a running process serves and how its last reload went: `/healthz`, the console and the
/// metrics `hub_config_reloads_total{result}`, `hub_config_loaded_timestamp_seconds` and `hub_config_info{sha256}`
/// report it. Holds no secret.
public final class ConfigurationStatus: Sendable {
    /// The outcome of one reload.
    public struct Reload: Sendable, Codable, Equatable {
        /// `applied`, `rejected` (nothing changed) or `unchanged`.
        public var result: String
        /// When it finished.
        public var at: Date
        /// How many problems were found (each is logged with file:line:column).
        public var problems: Int
        /// The parts that changed and were applied.
        public var applied: [String]
        /// The parts that changed but take effect only after a restart; the running value stays until then.
        public var restartRequired: [String]
        /// How long reading, validating and applying took.
        public var seconds: Double
    }

    /// The running configuration.
    public struct Snapshot: Sendable, Codable, Equatable {
        /// The SHA-256 of the file the running configuration was read from (empty when made in code).
        public var sha256: String
        /// When it was loaded (at start or by the last applied reload).
        public var loadedAt: Date
        /// The last reload, if any.
        public var lastReload: Reload?
        /// Parts changed in the file that wait for a restart (from the last applied reload on).
        public var restartRequired: [String]
    }

    private let state: Mutex<Snapshot>
    private let info: Mutex<Gauge?> = Mutex(nil)
    private let fingerprints = Mutex<[String: String]>([:])

    /// The digest of every part of the running configuration (``HubsConfiguration/fingerprints``).
    public var parts: [String: String] {
        get { fingerprints.withLock { $0 } }
        set { fingerprints.withLock { $0 = newValue } }
    }

    /// Starts with a configuration loaded at `loadedAt`.
    public init(sha256: String = "", loadedAt: Date = Date()) {
        state = Mutex(Snapshot(sha256: sha256, loadedAt: loadedAt, lastReload: nil, restartRequired: []))
        publish(sha256: sha256, loadedAt: loadedAt)
    }

    /// The status now.
    public var snapshot: Snapshot { state.withLock { $0 } }

    /// Records a reload; an applied one (or one whose file says nothing new) makes `sha256` the running file's.
    public func record(_ reload: Reload, sha256: String? = nil, restartRequired: [String]? = nil) {
        Counter(label: "hub_config_reloads_total", dimensions: [("result", reload.result)]).increment()
        let changed = state.withLock { state -> Bool in
            state.lastReload = reload
            if let restartRequired { state.restartRequired = restartRequired }
            guard let sha256, reload.result != "rejected" else { return false }
            state.sha256 = sha256
            state.loadedAt = reload.at
            return true
        }
        if changed, let sha256 { publish(sha256: sha256, loadedAt: reload.at) }
    }

    private func publish(sha256: String, loadedAt: Date) {
        Gauge(label: "hub_config_loaded_timestamp_seconds").record(loadedAt.timeIntervalSince1970)
        let gauge = Gauge(label: "hub_config_info", dimensions: [("sha256", sha256.isEmpty ? "none" : sha256)])
        gauge.record(1)
        let old = info.withLock { info in
            defer { info = gauge }
            return info
        }
        old?.record(0)
    }
}
