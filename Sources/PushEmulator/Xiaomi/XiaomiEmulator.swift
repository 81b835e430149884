import AdapterKit
import Foundation
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization

/// A strict local Xiaomi Push (Mi Push): the server API's send endpoint to registration ids
/// (`POST /v3/message/regid`) over TLS with HTTP/2 (ALPN) and HTTP/1.1.
///
/// Rules and answers follow Xiaomi's documentation: "服务器API地址以及参数" / "Server API Address and Parameters"
/// (https://dev.mi.com/xiaomihyperos/documentation/detail?pId=1559 and pId=1696) and "服务端错误码参考", the server
/// error codes (pId=1560). Checked:
/// - `Authorization: key=<AppSecret>` with `key` in lower case, as the page requires ("字符key必须小写"), and the
///   app's secret; otherwise `21301` (authentication failed);
/// - an `application/x-www-form-urlencoded` body (`10017` otherwise);
/// - `restricted_package_name`: required (`10016`), every comma-separated name one of the app's (`22022`);
/// - `registration_id`: required (`10016`), 1 to 1,000 comma-separated ids (`10017`);
/// - `pass_through` 0 (notification, the default) or 1 (pass-through) (`10017`); a notification message needs
///   `title` (shorter than 50 characters) and `description` (shorter than 128), not blank (`10016` when missing,
///   `10017` when too long); a pass-through message needs `payload` (`10016`);
/// - `payload` of at most 4,096 bytes (`65009`, message content too long); `notify_type` -1 or an OR of 1, 2 and 4;
///   `time_to_live` positive milliseconds; `time_to_send` within seven days ("仅支持七天内的定时消息");
///   `notify_id` a non-negative integer (`10017` each); parameters other than these and `extra.*` (`10017`);
/// - answers: `{"result": "ok", "code": 0, "data": {"id"}, "description", "info", "trace_id"}`, with
///   `data.bad_regids` (comma-separated) naming the ids that are not devices of the app (marked through the admin
///   API, or not looking like registration ids); when no id is valid, `{"result": "error", "code": 20301,
///   "reason": "No valid targets!"}`; errors `{"result": "error", "code", "description", "reason", "trace_id"}`.
///
/// Where Xiaomi's pages are thin (the HTTP status of error answers, what throttling looks like on the wire, the
/// payload limit's exact size), the emulator answers as `docs/adapters/Xiaomi.md` says: code answers with HTTP 200;
/// the throttle fault is HTTP 429 with code `10027` (API called too often) and `Retry-After`, the unavailable fault
/// HTTP 503 with `10002` (system busy) and `Retry-After`, the server-error fault HTTP 500 with `10001`.
public final class XiaomiEmulator: PlatformEmulator, Sendable {
    /// The emulator's settings.
    public struct Configuration: Sendable {
        /// Address to bind.
        public var host: String
        /// Port of the send endpoint (0 picks a free port).
        public var port: Int
        /// Port of the admin API (0 picks a free port).
        public var adminPort: Int
        /// The app's AppSecret (`Authorization: key=<AppSecret>`).
        public var appSecret: String
        /// The app's package names (`restricted_package_name`).
        public var packageNames: [String]

        /// Creates settings.
        public init(
            host: String = "127.0.0.1", port: Int = 0, adminPort: Int = 0, appSecret: String, packageNames: [String]
        ) {
            self.host = host
            self.port = port
            self.adminPort = adminPort
            self.appSecret = appSecret
            self.packageNames = packageNames
        }
    }

    /// One message the emulator accepted for one registration id.
    public struct Received: Sendable, Hashable {
        /// The registration id.
        public var registrationID: String
        /// The `restricted_package_name` it was sent with.
        public var packageName: String
        /// The message's form fields but `registration_id` and `restricted_package_name`.
        public var fields: [String: String]
    }

    public let name = "xiaomi"
    /// The settings.
    public let configuration: Configuration
    /// Accepted messages (one entry per registration id), violations and injected faults.
    public let recorder = EmulatorRecorder<Received>()
    let tls: EmulatorTLS
    let logger: Logger
    let state = Mutex(XiaomiEmulatorState())
    private let listeners: EmulatorListeners

    /// Creates an emulator (not started).
    public init(configuration: Configuration, tls: EmulatorTLS, logger: Logger) {
        self.configuration = configuration
        self.tls = tls
        self.logger = logger
        self.listeners = EmulatorListeners(
            label: "Xiaomi emulator", host: configuration.host, servicePort: configuration.port,
            adminPort: configuration.adminPort, logger: logger)
    }

    /// Serves until graceful shutdown.
    public func run() async throws {
        try await listeners.run(tls: tls, service: { await self.serve($0) }, admin: { await self.serveAdmin($0) })
    }

    /// The bound ports, once both servers listen.
    public func ports() async -> EmulatorPorts { await listeners.ports() }

    /// The send API's base URL for a bound port.
    public func endpoint(port: Int) -> String { "https://\(configuration.host):\(port)" }

    // MARK: Swift admin API

    /// Makes these registration ids invalid: they are listed in `bad_regids` (an uninstalled app, an id of another
    /// app).
    public func markInvalid(_ registrationIDs: [String]) {
        state.withLock { $0.invalid.formUnion(registrationIDs) }
    }

    /// Send requests that passed the request checks (each may carry up to 1,000 ids).
    public var sendRequestCount: Int { state.withLock { $0.sendRequests } }
    /// The id counts of those requests, in order.
    public var batchSizes: [Int] { state.withLock { $0.batchSizes } }

    /// Sets the injected faults.
    public func setFaults(_ faults: FaultInjection) { recorder.faults = faults }

    /// Clears records, faults and invalid marks.
    public func reset() {
        recorder.reset()
        recorder.faults = .none
        state.withLock { $0 = XiaomiEmulatorState() }
    }
}

/// Invalid registration ids and counters of a ``XiaomiEmulator``.
struct XiaomiEmulatorState {
    var invalid = Set<String>()
    var sendRequests = 0
    var batchSizes: [Int] = []
}
