import AdapterKit
import Foundation
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization

/// A strict local Baidu Cloud Push REST API 3.0: `POST /rest/3.0/push/single_device` and
/// `POST /rest/3.0/push/batch_device`, over TLS with HTTP/2 (ALPN) and HTTP/1.1.
///
/// Rules and answers follow Baidu's "SDK开发指南" (http://push.baidu.com/doc/restapi/sdk_developer: the request URL,
/// the common parameters, the `Content-Type` and `User-Agent` headers, the signature algorithm and the error answer)
/// and "Http Rest API 开发文档 V3.0" (http://push.baidu.com/doc/restapi/restapi: each method's parameters). Checked,
/// each refusal answered `{"request_id", "error_code", "error_msg"}`:
/// - the method: POST only (405, `30601` Method Not Allowed); an unknown REST method is 404 `30601`;
/// - `Content-Type: application/x-www-form-urlencoded` (the guide asks for `;charset=utf-8`), and a `User-Agent` of
///   the guide's form, starting `BCCS_SDK/3.0 (` (400, `30602`);
/// - `apikey` of the configured app and `sign`, the MD5 of the URL-encoded method, URL, sorted `key=value`
///   parameters and secret key (401, `30603` Authentication Failed);
/// - `timestamp` a Unix time within ten minutes of now (the guide: a signature is valid for ten minutes after it),
///   and `expires`, when given, not past (403, `30606` Request Time Expires Timeout);
/// - `device_type`, when given, the app's (3 Android, 4 iOS) (400, `30602`);
/// - `push/single_device`: `channel_id` digits; `msg_type` 0 or 1; `msg` JSON of at most 4,096 bytes;
///   `msg_expires` 0 to 604,800; `deploy_status` 1 or 2 (iOS apps only) (400, `30602`);
/// - `push/batch_device`: an Android app; `channel_ids` a JSON array of 1 to 10,000 channel ids; `topic_id` 1 to 128
///   letters, digits and `_` (required); `msg_type`, `msg` as above; `msg_expires` 1 to 86,400 (400, `30602`);
/// - the channel: one marked unbound is `30608` Bind Relation Not Found (404), one marked expired `30607` Channel
///   Token Timeout (404); with ``Configuration/acceptsUnknownChannels`` off, one never registered through the admin
///   API is `30608` too. A batch names no channel: its unbound channels are skipped, as Baidu's batch answer lists none;
/// - answers: 200 `{"request_id", "response_params": {"msg_id", "send_time"}}`; the throttle fault is 429 `30699`
///   with `Retry-After`, the unavailable fault 503 `30600` (with `Retry-After`), the server-error fault 500 `30600`.
///
/// Where the guide is thin (the HTTP status of each code, the answer to a malformed `User-Agent`, the message size,
/// batch_device's per-channel behaviour), the emulator answers as `docs/adapters/Baidu.md` says.
public final class BaiduEmulator: PlatformEmulator, Sendable {
    /// The emulator's settings.
    public struct Configuration: Sendable {
        /// Address to bind.
        public var host: String
        /// Port of the REST API (0 picks a free port).
        public var port: Int
        /// Port of the admin API (0 picks a free port).
        public var adminPort: Int
        /// The app's api key.
        public var apiKey: String
        /// The app's secret key.
        public var secretKey: String
        /// The app's platform: 3 Android, 4 iOS.
        public var deviceType: Int
        /// Whether a well-formed channel id never registered through the admin API is delivered to.
        public var acceptsUnknownChannels: Bool

        /// Creates settings.
        public init(
            host: String = "127.0.0.1", port: Int = 0, adminPort: Int = 0, apiKey: String, secretKey: String,
            deviceType: Int = 3, acceptsUnknownChannels: Bool = true
        ) {
            self.host = host
            self.port = port
            self.adminPort = adminPort
            self.apiKey = apiKey
            self.secretKey = secretKey
            self.deviceType = deviceType
            self.acceptsUnknownChannels = acceptsUnknownChannels
        }
    }

    /// One message the emulator accepted for one channel.
    public struct Received: Sendable, Hashable {
        /// The channel id.
        public var channelID: String
        /// `msg_type`.
        public var messageType: Int
        /// `msg`.
        public var message: String
        /// `msg_expires`, if given.
        public var messageExpires: Int?
        /// `deploy_status`, if given.
        public var deployStatus: Int?
        /// Whether it came in a `push/batch_device` request.
        public var batch: Bool
        /// The batch's `topic_id`.
        public var topicID: String?
    }

    public let name = "baidu"
    /// The settings.
    public let configuration: Configuration
    /// Accepted messages, violations and injected faults.
    public let recorder = EmulatorRecorder<Received>()
    let tls: EmulatorTLS
    let logger: Logger
    let state = Mutex(BaiduEmulatorState())
    private let listeners: EmulatorListeners

    /// Creates an emulator (not started).
    public init(configuration: Configuration, tls: EmulatorTLS, logger: Logger) {
        self.configuration = configuration
        self.tls = tls
        self.logger = logger
        self.listeners = EmulatorListeners(
            label: "Baidu emulator", host: configuration.host, servicePort: configuration.port,
            adminPort: configuration.adminPort, logger: logger)
    }

    /// Serves until graceful shutdown.
    public func run() async throws {
        try await listeners.run(tls: tls, service: { await self.serve($0) }, admin: { await self.serveAdmin($0) })
    }

    /// The bound ports, once both servers listen.
    public func ports() async -> EmulatorPorts { await listeners.ports() }

    /// The REST API's base URL for a bound port.
    public func endpoint(port: Int) -> String { "https://\(configuration.host):\(port)" }

    // MARK: Swift admin API

    /// Registers channels: with ``Configuration/acceptsUnknownChannels`` off, only these are delivered to.
    public func register(_ channelIDs: [String]) {
        state.withLock { $0.known.formUnion(channelIDs) }
    }

    /// Makes these channels unbound (`30608` Bind Relation Not Found: the app was uninstalled or unbound).
    public func markUnbound(_ channelIDs: [String]) {
        state.withLock { $0.unbound.formUnion(channelIDs) }
    }

    /// Makes these channels expired (`30607` Channel Token Timeout).
    public func markExpired(_ channelIDs: [String]) {
        state.withLock { $0.expired.formUnion(channelIDs) }
    }

    /// Requests that reached the channel check (accepted or refused for their channel).
    public var sendRequestCount: Int { state.withLock { $0.sendRequests } }
    /// `push/batch_device` requests accepted.
    public var batchRequestCount: Int { state.withLock { $0.batchRequests } }

    /// Sets the injected faults.
    public func setFaults(_ faults: FaultInjection) { recorder.faults = faults }

    /// Clears records, faults and channel marks.
    public func reset() {
        recorder.reset()
        recorder.faults = .none
        state.withLock { $0 = BaiduEmulatorState() }
    }
}

/// Channel marks and counters of a ``BaiduEmulator``.
struct BaiduEmulatorState {
    var known = Set<String>()
    var unbound = Set<String>()
    var expired = Set<String>()
    var sendRequests = 0
    var batchRequests = 0
    var nextRequestID: Int64 = 1_000_000_000
}
