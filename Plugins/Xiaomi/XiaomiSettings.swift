import Foundation

/// The Xiaomi adapter's settings (`adapters: - type: xiaomi` in `hub.yaml`).
public struct XiaomiSettings: Sendable, Equatable {
    /// Where Mi Push's send API is: the region's host, as Xiaomi's "Server API Address and Parameters" lists them
    /// (https://dev.mi.com/xiaomihyperos/documentation/detail?pId=1696 and pId=1559). A device's messages go through
    /// the host of the region it registered in.
    public enum Region: String, Sendable, Equatable, CaseIterable {
        /// Mainland China: `https://api.xmpush.xiaomi.com` (also Azure's default Xiaomi endpoint).
        case china
        /// Outside mainland China: `https://api.xmpush.global.xiaomi.com` (Azure's other Xiaomi endpoint).
        case global
        /// Russia: `https://ru-api.xmpush.global.xiaomi.com`.
        case russia
        /// India: `https://idmb-api.xmpush.global.xiaomi.com`.
        case india
        /// The EEA and the UK: `https://fr-api.xmpush.global.xiaomi.com`.
        case europe
        /// Other countries and regions: `https://sgp-api.xmpush.global.xiaomi.com`.
        case singapore

        /// The region's base URL.
        public var endpoint: String {
            switch self {
            case .china: "https://api.xmpush.xiaomi.com"
            case .global: "https://api.xmpush.global.xiaomi.com"
            case .russia: "https://ru-api.xmpush.global.xiaomi.com"
            case .india: "https://idmb-api.xmpush.global.xiaomi.com"
            case .europe: "https://fr-api.xmpush.global.xiaomi.com"
            case .singapore: "https://sgp-api.xmpush.global.xiaomi.com"
            }
        }
    }

    /// The most registration ids one `/v3/message/regid` request carries.
    public static let maximumBatchSize = 1000

    /// The app's AppSecret, sent as `Authorization: key=<AppSecret>` (never logged).
    public var appSecret: String
    /// The app's package names, sent as `restricted_package_name` (comma-separated when several).
    public var packageNames: [String]
    /// The send API's base URL: a ``Region``'s endpoint or an explicit URL (the emulator's).
    public var endpoint: String
    /// An extra CA certificate (PEM) to trust besides the system's, for the emulator.
    public var caCertificatePEM: String?
    /// Registration ids per request, 1 to 1,000. Default 1,000.
    public var batchSize: Int
    /// Requests in flight at once across all callers. Default 64.
    public var maximumConcurrentRequests: Int
    /// HTTP clients requests are spread over. Default 4.
    public var connections: Int
    /// Deadline of each request. Default 30 seconds.
    public var requestTimeout: Duration
    /// Deadline of opening a connection. Default 10 seconds.
    public var connectTimeout: Duration

    /// Creates settings.
    public init(
        appSecret: String, packageNames: [String], endpoint: String = Region.china.endpoint,
        caCertificatePEM: String? = nil, batchSize: Int = XiaomiSettings.maximumBatchSize,
        maximumConcurrentRequests: Int = 64, connections: Int = 4, requestTimeout: Duration = .seconds(30),
        connectTimeout: Duration = .seconds(10)
    ) {
        self.appSecret = appSecret
        self.packageNames = packageNames
        self.endpoint = endpoint
        self.caCertificatePEM = caCertificatePEM
        self.batchSize = batchSize
        self.maximumConcurrentRequests = maximumConcurrentRequests
        self.connections = connections
        self.requestTimeout = requestTimeout
        self.connectTimeout = connectTimeout
    }

    /// Whether `name` is an Android package name: two or more dot-separated segments, each a letter followed by
    /// letters, digits and `_`.
    public static func isPackageName(_ name: String) -> Bool {
        let segments = name.split(separator: ".", omittingEmptySubsequences: false)
        guard segments.count >= 2, name.utf8.count <= 255 else { return false }
        return segments.allSatisfy { segment in
            guard let first = segment.utf8.first, (65...90).contains(first) || (97...122).contains(first) else { return false }
            return segment.utf8.allSatisfy { (48...57).contains($0) || (65...90).contains($0) || (97...122).contains($0) || $0 == UInt8(ascii: "_") }
        }
    }

    /// What is wrong with these settings, by `hub.yaml` key, each saying what to fix; empty when they are usable.
    public var problems: [(key: String, message: String)] {
        var problems: [(key: String, message: String)] = []
        if appSecret.isEmpty || appSecret.utf8.contains(where: { $0 <= 0x20 || $0 >= 0x7F }) {
            problems.append(("appSecret", "appSecret is the app's AppSecret from the Xiaomi console: printable ASCII, no spaces"))
        }
        if packageNames.isEmpty {
            problems.append(("packageNames", "packageNames needs the app's package name, e.g. [com.example.app]"))
        }
        for name in packageNames where !Self.isPackageName(name) {
            problems.append((
                "packageNames",
                "'\(name.prefix(80))' is not an Android package name: dot-separated segments of letters, digits and _, each starting with a letter"))
        }
        if let url = URL(string: endpoint), ["https", "http"].contains(url.scheme?.lowercased() ?? ""), url.host?.isEmpty == false,
            url.query == nil
        {
        } else {
            problems.append(("endpoint", "endpoint must be an https URL without a query, e.g. \(Region.china.endpoint)"))
        }
        if !(1...Self.maximumBatchSize).contains(batchSize) {
            problems.append(("batchSize", "batchSize must be from 1 to \(Self.maximumBatchSize)"))
        }
        if !(1...100_000).contains(maximumConcurrentRequests) {
            problems.append(("maximumConcurrentRequests", "maximumConcurrentRequests must be from 1 to 100000"))
        }
        if !(1...64).contains(connections) { problems.append(("connections", "connections must be from 1 to 64")) }
        if requestTimeout <= .zero { problems.append(("requestTimeoutSeconds", "requestTimeoutSeconds must be positive")) }
        if connectTimeout <= .zero { problems.append(("connectTimeoutSeconds", "connectTimeoutSeconds must be positive")) }
        return problems
    }
}
