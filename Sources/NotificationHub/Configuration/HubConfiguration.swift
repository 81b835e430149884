import Crypto
import Foundation

/// The whole `hub.yaml` as a value: server settings and one or more hubs' settings.
///
/// Reading a file produces plain values and has no side effect: no adapter is made, no connection opened, nothing
/// written. ``HubRuntime`` (in `HubServer`) builds the running services from these values, and a running hub
/// compares a reloaded value with the one it runs to decide what to apply.
public struct HubsConfiguration: Sendable, Equatable {
    /// Where the API listens.
    public var server: ServerConfiguration
    /// The hubs, in file order.
    public var hubs: [HubSettings]
    /// The file it was read from.
    public var file: String
    /// Settings that work but deserve a look (deprecated keys, risky combinations), with file:line:col and key path.
    /// `hub validate` prints them and `hub serve` logs them.
    public var warnings: [ConfigurationProblem]
    /// Every file the settings read (keys, service accounts, certificates), by resolved path: a running hub reloads
    /// when one of them changes.
    public var referencedFiles: [String]
    /// The `emulators:` section as written (positions left out), or `nil` without one: it needs a restart to change.
    public var emulators: ConfigurationTree?
    /// `observability.tracing`, if configured: where traces go. Read at start (a change needs a restart).
    public var tracing: TracingConfiguration?
    /// The SHA-256 of the file's bytes, in hex (empty for a configuration not read from a file).
    public var sha256: String

    /// Creates a configuration in code (tests, benchmarks, embedding).
    public init(server: ServerConfiguration = ServerConfiguration(), hubs: [HubSettings], file: String = "") {
        self.server = server
        self.hubs = hubs
        self.file = file
        self.warnings = []
        self.referencedFiles = []
        self.emulators = nil
        self.sha256 = ""
    }

    /// Reads and validates a configuration into values. Makes no adapter, opens nothing, writes nothing.
    ///
    /// - Parameters:
    ///   - root: The parsed file.
    ///   - registry: The adapter factories this process knows.
    ///   - reservedSections: Top-level keys read by someone else (e.g. `emulators`), accepted without checks here.
    /// - Throws: ``ConfigurationError`` with every problem found.
    public init(
        root: ConfigurationNode, registry: AdapterRegistry, reservedSections: [String] = ["emulators"]
    ) throws(ConfigurationError) {
        for section in reservedSections { _ = root.child(section) }
        self.file = root.file
        self.sha256 = ""
        self.emulators = root.child("emulators").tree
        self.server = ServerConfiguration(root.child("server"))
        self.tracing = TracingConfiguration(observability: root.child("observability"))
        var hubs: [HubSettings] = []
        let hubsNode = root.child("hubs")
        if !hubsNode.isPresent, root.problems.isEmpty {
            hubsNode.report("missing required key 'hubs'; declare at least one hub")
        }
        var stores: [String: String] = [:]
        for (name, node) in hubsNode.entries() {
            if server.console, name.lowercased() == "console" {
                node.report("the hub name 'console' is the admin console's path while server.console is on; rename the hub")
            }
            if name.lowercased() == "blobs" {
                node.report("the hub name 'blobs' is the path of the hubs' file containers (feedback, jobs); rename the hub")
            }
            let hub = HubSettings(name: name, node: node, registry: registry)
            // Two hubs on one store would share each other's installations and notifications.
            if let identity = hub.storage.identity {
                if let other = stores[identity] {
                    node.child("storage").report(
                        "hub '\(name)' uses the same store as hub '\(other)'; give each hub its own SQLite file or PostgreSQL schema")
                } else {
                    stores[identity] = name
                }
            }
            hubs.append(hub)
        }
        if hubsNode.isPresent, hubs.isEmpty, root.problems.isEmpty {
            hubsNode.report("declare at least one hub")
        }
        root.rejectUnknownKeys()
        try root.throwIfProblems()
        self.hubs = hubs
        self.warnings = root.warnings
        self.referencedFiles = root.referencedFiles.sorted()
    }

    /// Loads and validates a file. Writes nothing.
    ///
    /// - Parameter pendingFiles: Given the `emulators:` section, the files its emulators will write (by resolved
    ///   path), read from memory while they are not on disk, so that adapters that use them validate before anything
    ///   is written (`EmulatorSection.pendingFiles` in `PushEmulator`).
    public static func load(
        file: String, registry: AdapterRegistry, environment: [String: String] = ProcessInfo.processInfo.environment,
        pendingFiles: (ConfigurationNode) -> [String: Data] = { _ in [:] }
    ) throws(ConfigurationError) -> HubsConfiguration {
        let root = ConfigurationNode.load(file: file, environment: environment)
        try root.throwIfProblems()
        root.addPendingFiles(pendingFiles(root.child("emulators")))
        var configuration = try HubsConfiguration(root: root, registry: registry)
        configuration.sha256 = Self.sha256(ofFile: file) ?? ""
        return configuration
    }

    /// The SHA-256 of a file's bytes in hex, or `nil` when it cannot be read.
    public static func sha256(ofFile path: String) -> String? {
        FileManager.default.contents(atPath: path).map { SHA256.hash(data: $0).map { String(format: "%02x", $0) }.joined() }
    }

    /// The settings of the hub with a name.
    public func hub(named name: String) -> HubSettings? {
        hubs.first { $0.name == name }
    }
}

/// Where and how the API listens, and the limits that keep hostile or careless clients from exhausting it.
public struct ServerConfiguration: Sendable, Hashable {
    /// The address to bind. Default `127.0.0.1`.
    public var host: String
    /// The port. Default `8080`; `0` picks a free port.
    public var port: Int
    /// TLS certificate chain and key (PEM files), when the hub terminates TLS itself.
    public var tls: TLS?
    /// The largest request body accepted, in bytes. Default 64 KiB (Azure's limit).
    public var maximumRequestBytes: Int
    /// The largest `$batch` request body, in bytes: 1,000 handles and a payload. Default 1 MiB.
    public var maximumBatchRequestBytes: Int
    /// Open client connections at most; at the limit a new connection replaces the longest-idle one. Default 4096.
    public var maximumConnections: Int
    /// Seconds a new connection has to send a complete request head. Default 10.
    public var requestHeaderTimeoutSeconds: Double
    /// Seconds a request's body has to arrive after its head. Default 30.
    public var requestBodyTimeoutSeconds: Double
    /// Seconds a keep-alive connection may wait for its next request. Default 60.
    public var idleTimeoutSeconds: Double
    /// Whether `/console` serves the admin console. Default `false`.
    public var console: Bool
    /// This process's name among the nodes of its hubs (``HubNode/name``); `nil` uses `hub serve --node-name`, the
    /// `HUB_NODE_NAME` environment variable or ``HubNode/defaultName`` (`<host>-<pid>`), in that order.
    public var nodeName: String?

    /// PEM file paths for TLS.
    public struct TLS: Sendable, Hashable {
        /// The certificate chain.
        public var certificateChain: String
        /// The private key.
        public var privateKey: String
    }

    /// Defaults: `127.0.0.1:8080`, no TLS, 64 KiB bodies (1 MiB for `$batch`), 4096 connections, a 10 s header,
    /// 30 s body and 60 s idle timeout, no console.
    public init(
        host: String = "127.0.0.1", port: Int = 8080, tls: TLS? = nil, maximumRequestBytes: Int = 65_536,
        maximumBatchRequestBytes: Int = 1_048_576, maximumConnections: Int = 4096,
        requestHeaderTimeoutSeconds: Double = 10, requestBodyTimeoutSeconds: Double = 30, idleTimeoutSeconds: Double = 60,
        console: Bool = false
    ) {
        self.host = host
        self.port = port
        self.tls = tls
        self.maximumRequestBytes = maximumRequestBytes
        self.maximumBatchRequestBytes = maximumBatchRequestBytes
        self.maximumConnections = maximumConnections
        self.requestHeaderTimeoutSeconds = requestHeaderTimeoutSeconds
        self.requestBodyTimeoutSeconds = requestBodyTimeoutSeconds
        self.idleTimeoutSeconds = idleTimeoutSeconds
        self.console = console
    }

    init(_ node: ConfigurationNode) {
        self.init()
        guard node.isPresent else { return }
        host = node.string("host", default: host)
        port = node.integer("port", default: port, in: 0...65535)
        maximumRequestBytes = node.integer("maximumRequestBytes", default: maximumRequestBytes, in: 1024...16_777_216)
        maximumBatchRequestBytes = node.integer(
            "maximumBatchRequestBytes", default: maximumBatchRequestBytes, in: 1024...67_108_864)
        maximumConnections = node.integer("maximumConnections", default: maximumConnections, in: 1...1_000_000)
        requestHeaderTimeoutSeconds = node.seconds(
            "requestHeaderTimeoutSeconds", default: requestHeaderTimeoutSeconds, in: 0.1...3600)
        requestBodyTimeoutSeconds = node.seconds("requestBodyTimeoutSeconds", default: requestBodyTimeoutSeconds, in: 0.1...3600)
        idleTimeoutSeconds = node.seconds("idleTimeoutSeconds", default: idleTimeoutSeconds, in: 0.1...86_400)
        console = node.bool("console", default: console)
        if node.child("nodeName").isPresent {
            let name = node.string("nodeName", default: "")
            if HubNode.isValidName(name) {
                nodeName = name
            } else {
                node.child("nodeName").report("nodeName must be 1–100 letters, digits, '.', '_', '-' or ':'")
            }
        }
        let tlsNode = node.child("tls")
        if tlsNode.isPresent {
            let chain = tlsNode.string("certificateChain", required: true)
            let key = tlsNode.string("privateKey", required: true)
            tlsNode.rejectUnknownKeys()
            if let chain, let key {
                tls = TLS(certificateChain: node.resolvePath(chain), privateKey: node.resolvePath(key))
            }
        }
        node.rejectUnknownKeys()
    }
}

/// One running hub's configuration: its settings (a value read from `hub.yaml` or made in code) and the adapters
/// made from them. Every setting reads through: `configuration.keys` is `configuration.settings.keys`.
@dynamicMemberLookup
public struct HubConfiguration: Sendable {
    /// The hub's settings.
    public var settings: HubSettings
    /// The platform adapters made from ``HubSettings/adapters``.
    public var adapters: AdapterSet

    /// Pairs settings with the adapters made from them.
    public init(settings: HubSettings, adapters: AdapterSet) {
        self.settings = settings
        self.adapters = adapters
    }

    /// Creates a hub configuration in code (tests, embedding), around adapters made in code.
    public init(
        name: String, keys: [AccessKey] = [], storage: StorageConfiguration = .memory, limits: HubLimits = HubLimits(),
        delivery: DeliveryConfiguration = DeliveryConfiguration(), adapters: AdapterSet,
        deviceAuthentication: DeviceAuthentication? = nil, userBoundTags: UserBoundTags = UserBoundTags(),
        listenKey: ListenKeyPolicy = ListenKeyPolicy(), securePush: SecurePushConfiguration? = nil,
        feedbackWebhook: FeedbackWebhookConfiguration? = nil, eventWebhooks: EventWebhooksConfiguration? = nil
    ) {
        self.settings = HubSettings(
            name: name, keys: keys, storage: storage, limits: limits, delivery: delivery,
            adapters: adapters.adapters.map { AdapterSettings(adapter: $0) }, deviceAuthentication: deviceAuthentication,
            userBoundTags: userBoundTags, listenKey: listenKey, securePush: securePush, feedbackWebhook: feedbackWebhook,
            eventWebhooks: eventWebhooks)
        self.adapters = adapters
    }

    /// A setting of ``settings``.
    public subscript<Value>(dynamicMember keyPath: WritableKeyPath<HubSettings, Value>) -> Value {
        get { settings[keyPath: keyPath] }
        set { settings[keyPath: keyPath] = newValue }
    }
}

/// A shared access key and its rights.
public struct AccessKey: Sendable, Hashable {
    /// The key's name (`skn` in SAS tokens).
    public var name: String
    /// What the key allows.
    public var rights: Set<AccessRight>
    /// The primary key string.
    public var primaryKey: String
    /// The secondary key string, for rotation.
    public var secondaryKey: String?

    /// Creates a key.
    public init(name: String, rights: Set<AccessRight>, primaryKey: String, secondaryKey: String? = nil) {
        self.name = name
        self.rights = rights
        self.primaryKey = primaryKey
        self.secondaryKey = secondaryKey
    }

    init?(_ node: ConfigurationNode) {
        let name = node.string("name", required: true)
        var rights: Set<AccessRight> = []
        let rightsNode = node.child("rights")
        for text in node.strings("rights") {
            if let right = AccessRight(rawValue: text.capitalized) {
                rights.insert(right)
            } else {
                rightsNode.report("unknown right '\(text)'; use Listen, Send or Manage")
            }
        }
        if rights.isEmpty { rightsNode.report("give at least one right: Listen, Send or Manage") }
        let primary = node.secret("primaryKey")
        let secondary = node.secret("secondaryKey", required: false)
        for (key, value) in [("primaryKey", primary), ("secondaryKey", secondary)] {
            if let value, value.utf8.count < 16 {
                node.child(key).report("a key must be at least 16 characters; generate one with `hub token --new-key`")
            }
        }
        node.rejectUnknownKeys()
        guard let name, let primary else { return nil }
        self.init(name: name, rights: rights, primaryKey: primary, secondaryKey: secondary)
    }
}

/// A right granted by an access key.
public enum AccessRight: String, Sendable, Hashable, CaseIterable {
    /// Register devices: create, read, update and delete single installations.
    case listen = "Listen"
    /// Send notifications, and read their telemetry and feedback.
    case send = "Send"
    /// Everything, including queries over installations.
    case manage = "Manage"
}

/// Where a hub keeps its data.
public enum StorageConfiguration: Sendable, Hashable {
    /// An SQLite file.
    case sqlite(path: String)
    /// An in-memory SQLite database (tests).
    case memory
    /// A PostgreSQL database shared by several hub nodes.
    case postgres(PostgresSettings)

    /// How to reach a PostgreSQL database.
    public struct PostgresSettings: Sendable, Hashable {
        /// The server's host.
        public var host: String
        /// The server's port.
        public var port: Int
        /// The user.
        public var username: String
        /// The password, if any.
        public var password: String?
        /// The database.
        public var database: String
        /// The schema the hub's tables live in (one per hub, so hubs can share a database).
        public var schema: String
        /// Whether to require TLS.
        public var requireTLS: Bool
        /// Connections in the pool at most.
        public var maximumConnections: Int
        /// What lies between the hub and the server at ``host``: nothing, or a connection pooler. Default
        /// ``Pooler/none``.
        public var pooler: Pooler
        /// A direct session connection to the primary for `LISTEN` (`listenURL`), or `nil` to listen on a connection
        /// of the main address (never through a pooler in transaction mode: see ``listens``).
        public var listenServer: Server?
        /// A streaming replica that serves sends' audience reads (`readURL`), or `nil` to read them from the primary.
        public var replica: Server?

        /// What lies between the hub and PostgreSQL (`storage.postgres.pooler`).
        public enum Pooler: String, Sendable, Hashable, CaseIterable {
            /// The hub talks to PostgreSQL itself: it sets its schema with the `search_path` startup parameter and
            /// keeps its fixed statements prepared on each connection.
            case none
            /// A pooler that gives each client connection a server connection of its own for as long as it is
            /// connected (PgBouncer's `pool_mode = session`): prepared statements and `LISTEN` work, but a pooler may
            /// refuse the `search_path` startup parameter, so the schema is set on the pooler's side.
            case session
            /// A pooler that lends a server connection for one transaction at a time (PgBouncer's
            /// `pool_mode = transaction`): no statement is kept prepared (each runs as an unnamed statement), no
            /// session state is set, the schema is set on the pooler's side and `LISTEN` needs ``listenServer``.
            case transaction

            /// Whether the hub names its schema in the `search_path` startup parameter. Otherwise it checks at open
            /// that `current_schema()` is its schema.
            public var setsSearchPath: Bool { self == .none }

            /// Whether the hub keeps statements prepared on a connection: only where a client connection is one
            /// server session.
            public var preparesStatements: Bool { self != .transaction }

            /// Whether a connection of the main address holds a session, so that it can `LISTEN`.
            public var keepsSessions: Bool { self != .transaction }
        }

        /// A server to connect to: the primary's direct address (``listenServer``) or a replica (``replica``).
        public struct Server: Sendable, Hashable {
            /// The server's host.
            public var host: String
            /// The server's port.
            public var port: Int
            /// The user.
            public var username: String
            /// The password, if any.
            public var password: String?
            /// The database.
            public var database: String
            /// Whether to require TLS.
            public var requireTLS: Bool

            /// Creates a server address.
            public init(
                host: String, port: Int = 5432, username: String, password: String? = nil, database: String,
                requireTLS: Bool = false
            ) {
                self.host = host
                self.port = port
                self.username = username
                self.password = password
                self.database = database
                self.requireTLS = requireTLS
            }

            /// Parses `postgres://user:password@host:port/database?sslmode=require`; `key` names the setting in the
            /// error, which never repeats the URL (it may hold a password).
            public init(url text: String, key: String = "url") throws(HubError) {
                guard let components = URLComponents(string: text.trimmingCharacters(in: .whitespacesAndNewlines)),
                    ["postgres", "postgresql"].contains(components.scheme?.lowercased() ?? ""),
                    let host = components.host, !host.isEmpty, let user = components.user, !user.isEmpty
                else {
                    throw HubError(
                        .invalidConfiguration, "\(key) must look like postgres://user:password@host:5432/database")
                }
                let database = String(components.path.drop { $0 == "/" })
                let sslmode = components.queryItems?.first { $0.name == "sslmode" }?.value ?? "disable"
                self.init(
                    host: host, port: components.port ?? 5432, username: user,
                    password: components.password?.removingPercentEncoding ?? components.password,
                    database: database.isEmpty ? user : database,
                    requireTLS: ["require", "verify-ca", "verify-full"].contains(sslmode))
            }

            /// Host, port and database, lower-cased host: what says two addresses reach the same database. Holds no
            /// password.
            var place: String { "\(host.lowercased()):\(port)/\(database)" }
        }

        /// Creates settings.
        public init(
            host: String, port: Int = 5432, username: String, password: String? = nil, database: String,
            schema: String, requireTLS: Bool = false, maximumConnections: Int = 10, pooler: Pooler = .none,
            listenServer: Server? = nil, replica: Server? = nil
        ) {
            self.host = host
            self.port = port
            self.username = username
            self.password = password
            self.database = database
            self.schema = schema
            self.requireTLS = requireTLS
            self.maximumConnections = maximumConnections
            self.pooler = pooler
            self.listenServer = listenServer
            self.replica = replica
        }

        /// Parses `postgres://user:password@host:port/database?sslmode=require` (and `listenURL`, `readURL` alike).
        public init(
            url text: String, schema: String, maximumConnections: Int = 10, pooler: Pooler = .none,
            listenURL: String? = nil, readURL: String? = nil
        ) throws(HubError) {
            let server = try Server(url: text)
            self.init(
                server, schema: schema, maximumConnections: maximumConnections, pooler: pooler,
                listenServer: try listenURL.map { url throws(HubError) in try Server(url: url, key: "listenURL") },
                replica: try readURL.map { url throws(HubError) in try Server(url: url, key: "readURL") })
        }

        /// Settings whose main address is `server`.
        public init(
            _ server: Server, schema: String, maximumConnections: Int = 10, pooler: Pooler = .none,
            listenServer: Server? = nil, replica: Server? = nil
        ) {
            self.init(
                host: server.host, port: server.port, username: server.username, password: server.password,
                database: server.database, schema: schema, requireTLS: server.requireTLS,
                maximumConnections: maximumConnections, pooler: pooler, listenServer: listenServer, replica: replica)
        }

        /// The main address (`url`): the primary, or the pooler in front of it.
        public var server: Server {
            Server(host: host, port: port, username: username, password: password, database: database, requireTLS: requireTLS)
        }

        /// Where the node listens for work announced by other nodes: ``listenServer`` when given, else the main
        /// address where its connections hold sessions; `nil` behind a pooler in transaction mode without
        /// ``listenServer`` (a `LISTEN` there would end with the transaction's server connection), where the node
        /// finds other nodes' work at its next look for work instead.
        public var listens: Server? {
            listenServer ?? (pooler.keepsSessions ? server : nil)
        }
    }

    /// What makes two storages the same store (the SQLite file, or the PostgreSQL server, database and schema);
    /// `nil` for an in-memory database, which is never shared. Holds no password.
    public var identity: String? {
        switch self {
        case .memory: nil
        case .sqlite(let path): "sqlite:" + URL(fileURLWithPath: path).standardizedFileURL.resolvingSymlinksInPath().path
        case .postgres(let settings):
            "postgres:\(settings.host.lowercased()):\(settings.port)/\(settings.database)/\(settings.schema)"
        }
    }

    init(_ node: ConfigurationNode, hubName: String) {
        let sqlite = node.child("sqlite")
        let postgres = node.child("postgres")
        if postgres.isPresent, sqlite.isPresent {
            node.report("choose one storage: sqlite or postgres")
        }
        if postgres.isPresent {
            let settings = Self.postgres(postgres, hubName: hubName)
            node.rejectUnknownKeys()
            self = settings.map { .postgres($0) } ?? .memory
            return
        }
        if sqlite.isPresent {
            let path = sqlite.string("path", default: "data/\(hubName).sqlite")
            sqlite.rejectUnknownKeys()
            self = path == ":memory:" ? .memory : .sqlite(path: node.resolvePath(path))
        } else {
            self = .sqlite(path: node.resolvePath("data/\(hubName).sqlite"))
        }
        node.rejectUnknownKeys()
    }

    /// Reads `storage.postgres`; `nil` when a problem was reported. No message repeats a URL: it may hold a password.
    private static func postgres(_ postgres: ConfigurationNode, hubName: String) -> PostgresSettings? {
        let url = postgres.secret("url")
        let pool = postgres.integer("pool", default: 10, in: 1...1000)
        let defaultSchema = "hub_" + hubName.lowercased().map { $0.isLetter || $0.isNumber ? $0 : "_" }
        let schema = postgres.string("schema", default: String(defaultSchema))
        if !schema.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }) || schema.isEmpty {
            postgres.child("schema").report("schema must be letters, digits and '_'")
        }
        let poolerNode = postgres.child("pooler")
        let poolerName = postgres.choice("pooler", PostgresSettings.Pooler.allCases.map(\.rawValue), default: "none")
        let pooler = PostgresSettings.Pooler(rawValue: poolerName) ?? .none
        func server(_ key: String) -> PostgresSettings.Server? {
            guard let text = postgres.secret(key, required: false) else { return nil }
            do {
                return try PostgresSettings.Server(url: text, key: key)
            } catch {
                postgres.child(key).report(error.message)
                return nil
            }
        }
        let listenServer = server("listenURL")
        let replica = server("readURL")
        postgres.rejectUnknownKeys()
        guard let url else { return nil }
        let main: PostgresSettings.Server
        do {
            main = try PostgresSettings.Server(url: url)
        } catch {
            postgres.child("url").report(error.message)
            return nil
        }
        if let listenServer, listenServer.place == main.place, pooler == .transaction {
            postgres.child("listenURL").report(
                "listenURL reaches the same host, port and database as url, which is a pooler in transaction mode: a LISTEN there ends with its transaction's server connection; point listenURL at PostgreSQL itself (the primary's own host and port), not at the pooler")
        }
        if let replica, replica.place == main.place {
            postgres.child("readURL").warn(
                "readURL reaches the same host, port and database as url: audience reads gain nothing from it; point it at a streaming replica, or leave it out to read from the primary")
        }
        if pooler == .transaction, listenServer == nil {
            poolerNode.warn(
                "with pooler: transaction and no listenURL this node does not LISTEN (a LISTEN through the pooler would be lost with its transaction): work another node accepts is found here at the next look for work, within a second, instead of at once; set listenURL to a direct connection to the primary to be woken at once")
        }
        return PostgresSettings(
            main, schema: schema, maximumConnections: pool, pooler: pooler, listenServer: listenServer,
            replica: replica)
    }
}

/// Validation limits of a hub.
public struct HubLimits: Sendable, Hashable {
    /// Tags per installation. Default 60.
    public var tagsPerInstallation: Int
    /// Tag expression limits.
    public var tagExpression: TagExpression.Limits
    /// How often one device user or one key without Manage may write installations and registrations.
    public var installationWrites: InstallationWriteLimits

    /// Creates limits with the defaults.
    public init(
        tagsPerInstallation: Int = 60, tagExpression: TagExpression.Limits = .default,
        installationWrites: InstallationWriteLimits = InstallationWriteLimits()
    ) {
        self.tagsPerInstallation = tagsPerInstallation
        self.tagExpression = tagExpression
        self.installationWrites = installationWrites
    }

    init(_ node: ConfigurationNode) {
        self.init()
        guard node.isPresent else { return }
        tagsPerInstallation = node.integer("tagsPerInstallation", default: tagsPerInstallation, in: 1...10_000)
        let expression = node.child("tagExpression")
        if expression.isPresent {
            tagExpression.maximumTagsOrOnly = expression.integer(
                "maximumTagsOrOnly", default: tagExpression.maximumTagsOrOnly, in: 1...10_000)
            tagExpression.maximumTags = expression.integer("maximumTags", default: tagExpression.maximumTags, in: 1...10_000)
            tagExpression.maximumDepth = expression.integer("maximumDepth", default: tagExpression.maximumDepth, in: 1...256)
            expression.rejectUnknownKeys()
        }
        installationWrites = InstallationWriteLimits(node.child("installationWrites"))
        node.rejectUnknownKeys()
    }
}

/// How a hub fans out.
public struct DeliveryConfiguration: Sendable, Hashable {
    /// Installations read from the store per page; progress is recorded per page. Default 1000.
    public var pageSize: Int
    /// Pages of one notification delivered at once. A restarted fan-out repeats at most these pages. Default 6.
    public var pagesInFlight: Int
    /// Deliveries handed to an adapter in one call. Default 250.
    public var batchSize: Int
    /// Adapter calls in flight at once per notification. Default 16: with ``batchSize`` 250, 4,000 deliveries wait
    /// for a platform at once. A fan-out's rate is at most its deliveries in flight divided by the platform's round
    /// trip: 80,000 a second at 50 ms.
    public var concurrency: Int
    /// Seconds after which a notification not yet handed to the platform is abandoned. Default 1800.
    public var abandonAfterSeconds: Double
    /// Attempts per device for retryable outcomes, the first included. Default 8.
    public var maximumAttempts: Int
    /// The first retry's delay in seconds, doubled per attempt (with jitter). Default 0.5.
    public var initialBackoffSeconds: Double
    /// The longest delay between attempts in seconds. Default 60.
    public var maximumBackoffSeconds: Double
    /// Notifications a hub delivers at the same time. Default 256: many small sends (one user's devices) run side
    /// by side, enough to cover each one's round trips (database, platform) at thousands a second; large fan-outs
    /// share ``maximumDeliveriesInFlight``.
    public var parallelNotifications: Int
    /// Deliveries held in memory at once across all of the hub's notifications (a page takes as many as it has
    /// devices). Default 24,000: six 1,000-device pages of four fan-outs. Bounds a fan-out's memory.
    public var maximumDeliveriesInFlight: Int
    /// Audience partitions per live node that a notification is split into, each leased separately, so that
    /// several workers (on one node or several) fan one notification out at once: with 4 and two live nodes, a
    /// fan-out is split into 8 partitions and each node takes 4. An audience that fits in one page
    /// (``pageSize``) is not split. Default 1 (SQLite) or 4 (PostgreSQL).
    public var partitions: Int
    /// Seconds a worker's lease on a notification lasts; a crashed worker's fan-out resumes elsewhere after it.
    /// Renewed every quarter of it; a renewal that does not answer within half of it stops the fan-out. Default 60.
    public var leaseSeconds: Double
    /// What to do with an installation whose channel the platform reports expired. Default `markExpired`.
    public var expiredChannelPolicy: ExpiredChannelPolicy
    /// Adapter calls in flight per platform across all of the hub's notifications (platform name → limit).
    public var platformConcurrency: [String: Int]
    /// Deliveries per second the hub hands to platforms at most, across all notifications; `nil` = unlimited.
    public var rateLimitPerSecond: Double?

    /// What happens to installations whose push channel expired.
    public enum ExpiredChannelPolicy: String, Sendable, Hashable {
        /// Set `expiredPushChannel` and skip the installation until its channel is updated.
        case markExpired
        /// Delete the installation.
        case delete
    }

    /// Creates settings with the defaults.
    public init(
        pageSize: Int = 1000, batchSize: Int = 250, concurrency: Int = 16, abandonAfterSeconds: Double = 1800,
        maximumAttempts: Int = 8, initialBackoffSeconds: Double = 0.5, maximumBackoffSeconds: Double = 60,
        expiredChannelPolicy: ExpiredChannelPolicy = .markExpired, parallelNotifications: Int = 256,
        maximumDeliveriesInFlight: Int = 24_000,
        pagesInFlight: Int = 6, platformConcurrency: [String: Int] = [:], rateLimitPerSecond: Double? = nil,
        leaseSeconds: Double = 60, partitions: Int = 1
    ) {
        self.partitions = partitions
        self.leaseSeconds = leaseSeconds
        self.pagesInFlight = pagesInFlight
        self.platformConcurrency = platformConcurrency
        self.rateLimitPerSecond = rateLimitPerSecond
        self.parallelNotifications = parallelNotifications
        self.maximumDeliveriesInFlight = maximumDeliveriesInFlight
        self.pageSize = pageSize
        self.batchSize = batchSize
        self.concurrency = concurrency
        self.abandonAfterSeconds = abandonAfterSeconds
        self.maximumAttempts = maximumAttempts
        self.initialBackoffSeconds = initialBackoffSeconds
        self.maximumBackoffSeconds = maximumBackoffSeconds
        self.expiredChannelPolicy = expiredChannelPolicy
    }

    init(_ node: ConfigurationNode) {
        self.init()
        guard node.isPresent else { return }
        pageSize = node.integer("pageSize", default: pageSize, in: 1...100_000)
        batchSize = node.integer("batchSize", default: batchSize, in: 1...100_000)
        pagesInFlight = node.integer("pagesInFlight", default: pagesInFlight, in: 1...64)
        let platformNode = node.child("platformConcurrency")
        for (key, _) in platformNode.entries() {
            platformConcurrency[key] = platformNode.integer(key, default: 8, in: 1...4096)
        }
        if node.child("rateLimitPerSecond").isPresent {
            rateLimitPerSecond = Double(node.integer("rateLimitPerSecond", default: 1000, in: 1...10_000_000))
        }
        concurrency = node.integer("concurrency", default: concurrency, in: 1...1024)
        abandonAfterSeconds = node.seconds("abandonAfterSeconds", default: abandonAfterSeconds, in: 1...604_800)
        maximumAttempts = node.integer("maximumAttempts", default: maximumAttempts, in: 1...100)
        initialBackoffSeconds = node.seconds("initialBackoffSeconds", default: initialBackoffSeconds, in: 0...3600)
        maximumBackoffSeconds = node.seconds("maximumBackoffSeconds", default: maximumBackoffSeconds, in: 0...86_400)
        parallelNotifications = node.integer("parallelNotifications", default: parallelNotifications, in: 1...4096)
        maximumDeliveriesInFlight = node.integer(
            "maximumDeliveriesInFlight", default: maximumDeliveriesInFlight, in: 1...10_000_000)
        leaseSeconds = node.seconds("leaseSeconds", default: leaseSeconds, in: 3...3600)
        partitions = node.integer("partitions", default: partitions, in: 1...1024)
        let policy = node.choice("expiredChannelPolicy", ["markExpired", "delete"], default: expiredChannelPolicy.rawValue)
        expiredChannelPolicy = ExpiredChannelPolicy(rawValue: policy) ?? .markExpired
        node.rejectUnknownKeys()
    }
}
