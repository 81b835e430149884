import AsyncHTTPClient
import Crypto
import Foundation
import HubTestSupport
import Logging
import NIOCore
import NIOHTTP1
import NotificationHub
import PushEmulator
import Testing

/// Two hub processes on one PostgreSQL database share the work with the default sharing settings: a fan-out sent
/// through either node is delivered half by each, per-user sends are spread over both, and every device receives
/// each notification once. A node stopped with SIGTERM hands its partitions back at once; a killed node's partitions
/// are resumed by the other within the lease; a node cut off from the database stops and rejoins when it is back.
@Suite(.serialized, .oneProcessSuiteAtATime, .timeLimit(.minutes(20))) struct MultiNodeTests {
    static let devices = 12_000
    static let users = 400
    static let key = "multi-node-key-0123456789"

    /// The sharing settings (`partitions`, `parallelNotifications`, `leaseSeconds`) are the defaults; pages are
    /// smaller than the default, so that what a stopped node may repeat is bounded more tightly and the debug builds
    /// at the lowest CPU priority keep fewer deliveries in flight (4 partitions × 2 pages × 500 per node).
    static let smallPages = DeliverySettings(pageSize: 500, pagesInFlight: 2, leaseSeconds: nil)

    struct DeliverySettings {
        var pageSize: Int?
        var pagesInFlight: Int?
        var leaseSeconds: Int?

        var yaml: String {
            var lines: [String] = []
            if let pageSize { lines.append("pageSize: \(pageSize)") }
            if let pagesInFlight { lines.append("pagesInFlight: \(pagesInFlight)") }
            if let leaseSeconds { lines.append("leaseSeconds: \(leaseSeconds)") }
            return lines.isEmpty ? "" : "    delivery: {\(lines.joined(separator: ", "))}\n"
        }

        /// Deliveries a node stopped without committing may have made: the pages in flight in each partition it held.
        func window(partitions: Int) -> Int {
            let defaults = DeliveryConfiguration()
            return (pagesInFlight ?? defaults.pagesInFlight) * (pageSize ?? defaults.pageSize) * partitions
        }
    }

    /// A hub.yaml for one node: default delivery settings unless `delivery` says otherwise; `storage` holds the
    /// keys of `storage.postgres` besides `schema` (`url` and any other).
    static func configuration(
        apns: EmulatedAPNs, storage: String, schema: String, node: String, delivery: DeliverySettings
    ) -> String {
        """
        server: {host: 127.0.0.1, port: 0, nodeName: \(node)}
        hubs:
          demo:
            keys: [{name: full, rights: [Manage], primaryKey: \(key)}]
            storage: {postgres: {\(storage), schema: \(schema)}}
        \(delivery.yaml)    adapters:
        \(apns.adapterYAML)
        """
    }

    /// Two nodes on a fresh schema with the installations stored, and the emulator they deliver to.
    struct Cluster {
        let directory: String
        let url: String
        let schema: String
        let apns: EmulatedAPNs
        let nodes: [HubProcess]
        let ports: [Int]
        /// Installations stored, each tagged `everyone`; the first `users` also `user:<i>`.
        var devices = MultiNodeTests.devices
        var users = MultiNodeTests.users
        let names = ["node-a", "node-b"]

        /// What a node's `storage.postgres` holds besides `schema`, by schema and node index: `url` and any other key.
        typealias Storage = @Sendable (_ schema: String, _ node: Int) async throws -> String

        var everyDevice: Set<String> { Set((0..<devices).map(EmulatedAPNs.deviceToken)) }

        var logs: [String] { nodes.map(\.logPath) }

        /// Runs `body` with a started cluster, then kills what still runs and removes its files.
        static func run(
            delivery: DeliverySettings, proxy: TCPProxy? = nil, url: String? = nil, devices: Int = MultiNodeTests.devices,
            users: Int = MultiNodeTests.users, storage: Storage? = nil, _ body: (Cluster) async throws -> Void
        ) async throws {
            let cluster = try await start(
                delivery: delivery, proxy: proxy, url: url, devices: devices, users: users, storage: storage)
            do {
                try await body(cluster)
            } catch {
                await cluster.stop()
                throw error
            }
            await cluster.stop()
        }

        /// Starts the nodes; node B reaches the database through `proxy` when given, each node as `storage` says when
        /// given.
        static func start(
            delivery: DeliverySettings, proxy: TCPProxy? = nil, url: String? = nil, devices: Int = MultiNodeTests.devices,
            users: Int = MultiNodeTests.users, storage: Storage? = nil
        ) async throws -> Cluster {
            let directory = NSTemporaryDirectory() + "hub-nodes-\(UUID().uuidString.prefix(8))"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let url = try await resolve(url)
            let schema = "nodes_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(12).lowercased()
            let apns = try await EmulatedAPNs.start(directory: directory)
            try await MultiNodeTests.prepare(url: url, schema: schema, devices: devices, users: users)
            var nodes: [HubProcess] = []
            for (index, name) in ["node-a", "node-b"].enumerated() {
                var nodeURL = url
                if index == 1, let proxy, var components = URLComponents(string: url) {
                    components.port = proxy.port
                    nodeURL = components.string ?? url
                }
                let path = directory + "/\(name).yaml"
                let keys = try await storage?(schema, index) ?? "url: \"\(nodeURL)\""
                try MultiNodeTests.configuration(apns: apns, storage: keys, schema: schema, node: name, delivery: delivery)
                    .write(toFile: path, atomically: true, encoding: .utf8)
                nodes.append(try HubProcess(configuration: path, logPath: directory + "/\(name).log"))
            }
            var ports: [Int] = []
            for node in nodes { ports.append(try await node.port()) }
            var cluster = Cluster(directory: directory, url: url, schema: schema, apns: apns, nodes: nodes, ports: ports)
            cluster.devices = devices
            cluster.users = users
            // Both nodes count each other before the first send.
            let joined = try await waitUntil(timeout: .seconds(60)) { try await cluster.liveNodes(via: 0).count == 2 }
            #expect(joined, "both nodes are listed: \(cluster.tails)")
            return cluster
        }

        /// The given database URL, or the test server's.
        static func resolve(_ url: String?) async throws -> String {
            if let url { return url }
            return try await TestPostgres.shared.url()
        }

        var tails: String { nodes.map { $0.logTail() }.joined(separator: "\n---\n") }

        func stop() async {
            for node in nodes { node.killIfRunning() }
            await apns.emulator.stop()
            try? FileManager.default.removeItem(atPath: directory)
        }

        /// `GET /demo/nodes` through a node: the names of the live nodes and what each delivered.
        func liveNodes(via node: Int) async throws -> [String: Int] {
            let (status, body) = try await MultiNodeTests.request(.GET, port: ports[node], path: "/demo/nodes")
            guard status == 200, let object = try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any],
                let nodes = object["nodes"] as? [[String: Any]]
            else { return [:] }
            var result: [String: Int] = [:]
            for node in nodes {
                if let name = node["name"] as? String { result[name] = node["delivered"] as? Int ?? 0 }
            }
            return result
        }

        /// Deliveries each node counted in its `/metrics`.
        func delivered() async throws -> [Int] {
            var counts: [Int] = []
            for (index, port) in ports.enumerated() {
                guard nodes[index].isRunning else {
                    counts.append(0)
                    continue
                }
                let (_, body) = try await MultiNodeTests.request(.GET, port: port, path: "/metrics")
                let lines = body.split(separator: "\n").filter {
                    $0.hasPrefix("hub_notifications_delivered_total{") && $0.contains("node=\"\(names[index])\"")
                }
                counts.append(lines.reduce(0) { $0 + (Int(Double($1.split(separator: " ").last ?? "") ?? 0)) })
            }
            return counts
        }

        /// Sends through a node and returns the notification's id.
        func send(via node: Int, tags: String, alert: String) async throws -> String {
            let (status, location) = try await MultiNodeTests.request(
                .POST, port: ports[node], path: "/demo/messages?api-version=2015-01",
                headers: ["ServiceBusNotification-Format": "apple", "ServiceBusNotification-Tags": tags],
                body: #"{"aps":{"alert":"\#(alert)"}}"#, wantLocation: true)
            guard status == 201, let id = location.split(separator: "/").last?.split(separator: "?").first else {
                throw HubError(.invalidNotification, "the send was refused: \(status) \(location)")
            }
            return String(id)
        }

        /// Waits for a notification's final state.
        func waitForFinal(_ id: String, timeout: Duration = .seconds(240)) async throws -> NotificationRecord? {
            let database = try await HubDatabases.open(
                storage: .postgres(try .init(url: url, schema: schema)), logger: Logger.forTest("multi-node"))
            let store = SQLNotificationStore(database: database)
            var record: NotificationRecord?
            _ = try await waitUntil(timeout: timeout) {
                record = try await store.record(id: id)
                return record?.state.isFinal == true
            }
            try await database.close()
            return record
        }

        /// Partitions a node holds an unexpired lease on now.
        func leasesHeld(by node: String) async throws -> Int {
            let database = try await HubDatabases.open(
                storage: .postgres(try .init(url: url, schema: schema)), logger: Logger.forTest("multi-node"))
            let rows = try await database.read(
                """
                SELECT COUNT(*) AS n FROM notification_partitions
                WHERE state = 'Processing' AND lease_owner LIKE ? AND lease_expires > ?
                """, [.text(node + "/%"), .float(Date().timeIntervalSince1970)])
            try await database.close()
            return rows.first?.int("n") ?? -1
        }

        /// Devices that received more than one copy of notifications with this alert.
        func duplicates(alert: String) -> (received: Set<String>, duplicates: Int) {
            let tokens = apns.emulator.received.filter { $0.payload.contains(alert) }.map(\.deviceToken)
            let distinct = Set(tokens)
            return (distinct, tokens.count - distinct.count)
        }
    }

    /// Stores the installations `i<first>`… `i<first + devices - 1>`: each tagged `everyone`, those below `users`
    /// also `user:<i>`.
    static func prepare(url: String, schema: String, devices: Int = devices, users: Int = users, first: Int = 0) async throws {
        let database = try await HubDatabases.open(
            storage: .postgres(try .init(url: url, schema: schema)), logger: Logger.forTest("multi-node"))
        try await SQLInstallationStore(database: database).upsert(
            contentsOf: (first..<first + devices).map {
                Installation(
                    installationID: "i\($0)", platform: .apns, pushChannel: .handle(EmulatedAPNs.deviceToken($0)),
                    tags: $0 < users ? ["everyone", "user:\($0)"] : ["everyone"])
            })
        try await database.close()
    }

    static var everyDevice: Set<String> { Set((0..<devices).map(EmulatedAPNs.deviceToken)) }

    /// One HTTP request to a node with a Manage token; the status and the body (or the Location header).
    static func request(
        _ method: HTTPMethod, port: Int, path: String, headers: [String: String] = [:], body: String? = nil,
        wantLocation: Bool = false
    ) async throws -> (Int, String) {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)\(path)")
        request.method = method
        request.headers.add(name: "Authorization", value: token(port: port))
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: body))
        }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        let text = String(buffer: try await response.body.collect(upTo: 1 << 22))
        return (Int(response.status.code), wantLocation ? (response.headers.first(name: "Location") ?? text) : text)
    }

    /// A SharedAccessSignature for the demo hub on a node.
    static func token(port: Int) -> String {
        func encode(_ text: String) -> String {
            var allowed = CharacterSet.alphanumerics
            allowed.insert(charactersIn: "-._~")
            return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
        }
        let resource = encode("http://127.0.0.1:\(port)/demo")
        let expiry = Int(Date().timeIntervalSince1970) + 3600
        let mac = HMAC<SHA256>.authenticationCode(
            for: Data("\(resource)\n\(expiry)".utf8), using: SymmetricKey(data: Data(key.utf8)))
        return "SharedAccessSignature sr=\(resource)&sig=\(encode(Data(mac).base64EncodedString()))&se=\(expiry)&skn=full"
    }

    /// Whether each share is within ±25 % of an even split of `total`.
    static func even(_ shares: [Int], total: Int) -> Bool {
        let fair = Double(total) / Double(shares.count)
        return shares.allSatisfy { Double($0) >= fair * 0.75 && Double($0) <= fair * 1.25 }
    }

    @Test(arguments: [0, 1])
    func defaultSettingsShareAFanOutAndPerUserSends(accepting: Int) async throws {
        try await Cluster.run(delivery: Self.smallPages) { cluster in
            try await Self.shareAFanOutAndPerUserSends(cluster, accepting: accepting)
        }
    }

    /// A fan-out to every device and a per-user send to each user, all accepted by one node: both nodes deliver a
    /// share of each, every device receives each notification once (nothing repeated but what a stop or a retry may
    /// repeat), and both nodes are listed with what they delivered; then both shut down gracefully.
    /// `perUserSpread` false leaves out that both nodes deliver per-user sends (a node that does not listen may find
    /// them all delivered by the other at its next look for work).
    static func shareAFanOutAndPerUserSends(_ cluster: Cluster, accepting: Int, perUserSpread: Bool = true) async throws {
        let id = try await cluster.send(via: accepting, tags: "everyone", alert: "fan-out")
        let record = try await cluster.waitForFinal(id)
        #expect(record?.state == .completed, "\(cluster.tails)")
        #expect(record?.summary.count(of: .success) == cluster.devices)
        let fanOut = try await cluster.delivered()
        let (reached, duplicates) = cluster.duplicates(alert: "fan-out")
        #expect(reached == cluster.everyDevice, "every device receives it")
        let sources = RepeatSources(logs: cluster.logs)
        #expect(duplicates <= Self.smallPages.window(partitions: 4) * sources.stops + sources.retries, "\(sources)")
        // Exactly once between the nodes: every device is counted once (a partition resumed after a lost lease
        // counts only what it delivered after its checkpoint), and nothing is repeated on the wire but what a
        // retried delivery may have repeated.
        if sources.stops == 0 { #expect(fanOut.reduce(0, +) == cluster.devices) }
        if sources.stops == 0 && sources.retries == 0 { #expect(duplicates == 0) }
        #expect(Self.even(fanOut, total: cluster.devices), "each node delivers half of the fan-out: \(fanOut)")

        // Per-user sends, all accepted by the same node, are delivered by both.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for batch in 0..<8 {
                group.addTask {
                    for user in stride(from: batch, to: cluster.users, by: 8) {
                        _ = try await cluster.send(via: accepting, tags: "user:\(user)", alert: "per-user")
                    }
                }
            }
            try await group.waitForAll()
        }
        let all = try await waitUntil(timeout: .seconds(180)) {
            cluster.apns.emulator.acceptedCount >= cluster.devices + cluster.users
        }
        #expect(all, "\(cluster.tails)")
        var perUser: [Int] = []
        // The counts are committed with each send's final state, at most a moment after the emulator accepted it.
        _ = try await waitUntil(timeout: .seconds(30)) {
            perUser = zip(try await cluster.delivered(), fanOut).map { $0 - $1 }
            return perUser.reduce(0, +) == cluster.users
        }
        let (users, repeated) = cluster.duplicates(alert: "per-user")
        #expect(users.count == cluster.users && repeated <= RepeatSources(logs: cluster.logs).retries - sources.retries)
        if perUserSpread {
            #expect(perUser.allSatisfy { $0 >= cluster.users / 10 }, "per-user sends are spread over both nodes: \(perUser)")
        }

        // Both nodes are listed with what they delivered, as of their last heartbeat.
        var listed: [String: Int] = [:]
        _ = try await waitUntil(timeout: .seconds(30)) {
            listed = try await cluster.liveNodes(via: 1)
            return listed.values.reduce(0, +) == cluster.devices + cluster.users
        }
        #expect(listed == ["node-a": fanOut[0] + perUser[0], "node-b": fanOut[1] + perUser[1]])
        print("multi-node(accepting: \(cluster.names[accepting])): fan-out shares=\(fanOut) per-user shares=\(perUser) \(sources)")
        for node in cluster.nodes { #expect(await node.terminate(), "a node shuts down gracefully: \(node.logTail())") }
    }

    @Test func aNodeStoppedWithSIGTERMHandsItsPartitionsBackAtOnce() async throws {
        // The default 60 s lease: the other node finishes long before it could have run out.
        try await Cluster.run(delivery: Self.smallPages) { cluster in
            cluster.apns.emulator.faults = FaultInjection(latency: .milliseconds(20))
            let id = try await cluster.send(via: 1, tags: "everyone", alert: "handoff")
            _ = try await waitUntil(timeout: .seconds(180)) { cluster.apns.emulator.acceptedCount >= Self.devices / 3 }
            #expect(await cluster.nodes[1].terminate(grace: .seconds(120)), "node B shuts down gracefully: \(cluster.nodes[1].logTail())")
            let stopped = ContinuousClock.now
            // Node B left no lease running: every partition it held is open to node A at once, not after 60 s.
            let held = try await cluster.leasesHeld(by: "node-b")
            #expect(held == 0, "node B's partitions are handed back")
            let record = try await cluster.waitForFinal(id)
            let elapsed = ContinuousClock.now - stopped
            #expect(record?.state == .completed, "\(cluster.tails)")
            let (reached, duplicates) = cluster.duplicates(alert: "handoff")
            #expect(reached == Self.everyDevice)
            let sources = RepeatSources(logs: cluster.logs)
            // Node B's pages in flight when it stopped (it held half of the 8 partitions).
            let bound = Self.smallPages.window(partitions: 4) * (1 + sources.stops) + sources.retries
            #expect(duplicates <= bound, "\(sources)")
            #expect(HubLogs.lines(in: [cluster.logs[1]]).contains { $0.contains("fan-out stopped for shutdown") })
            print("multi-node(SIGTERM): finished \(elapsed) after the stop; duplicates=\(duplicates) bound=\(bound) \(sources)")
            #expect(await cluster.nodes[0].terminate(), "\(cluster.nodes[0].logTail())")
        }
    }

    @Test func aKilledNodesPartitionsAreResumedWithinTheLease() async throws {
        var delivery = Self.smallPages
        delivery.leaseSeconds = 20
        try await Cluster.run(delivery: delivery) { cluster in
            cluster.apns.emulator.faults = FaultInjection(latency: .milliseconds(20))
            let id = try await cluster.send(via: 0, tags: "everyone", alert: "killed")
            _ = try await waitUntil(timeout: .seconds(180)) { cluster.apns.emulator.acceptedCount >= Self.devices / 3 }
            await cluster.nodes[1].kill9()
            // Node A resumes node B's partitions once their 20 s lease has run out (and its next look for work).
            let resumed = try await waitUntil(timeout: .seconds(20 + 20)) {
                HubLogs.lines(in: [cluster.logs[0]]).contains { $0.contains("resuming a fan-out") }
            }
            #expect(resumed, "\(cluster.nodes[0].logTail())")
            let record = try await cluster.waitForFinal(id)
            #expect(record?.state == .completed && record?.summary.count(of: .success) == Self.devices, "\(cluster.tails)")
            let (reached, duplicates) = cluster.duplicates(alert: "killed")
            #expect(reached == Self.everyDevice)
            let sources = RepeatSources(logs: cluster.logs)
            let bound = delivery.window(partitions: 4) * (1 + sources.stops) + sources.retries
            #expect(duplicates <= bound, "\(sources)")
            print("multi-node(SIGKILL): duplicates=\(duplicates) bound=\(bound) \(sources)")
            #expect(await cluster.nodes[0].terminate(), "\(cluster.nodes[0].logTail())")
        }
    }

    @Test func aNodeCutOffFromTheDatabaseStopsAndRejoins() async throws {
        var delivery = Self.smallPages
        delivery.leaseSeconds = 20
        let url = try await TestPostgres.shared.url()
        guard let components = URLComponents(string: url), let host = components.host else {
            Issue.record("cannot read the PostgreSQL URL")
            return
        }
        let proxy = try await TCPProxy.start(to: host, port: components.port ?? 5432)
        defer { proxy.cut() }
        try await Cluster.run(delivery: delivery, proxy: proxy, url: url) { cluster in
            cluster.apns.emulator.faults = FaultInjection(latency: .milliseconds(20))
            let id = try await cluster.send(via: 0, tags: "everyone", alert: "cut off")
            _ = try await waitUntil(timeout: .seconds(180)) { cluster.apns.emulator.acceptedCount >= Self.devices / 3 }
            proxy.cut()
            let cutAt = cluster.apns.emulator.acceptedCount

            // Node A finishes the fan-out, node B's partitions once their lease ran out.
            let record = try await cluster.waitForFinal(id)
            #expect(record?.state == .completed && record?.summary.count(of: .success) == Self.devices, "\(cluster.tails)")
            let (reached, duplicates) = cluster.duplicates(alert: "cut off")
            #expect(reached == Self.everyDevice)
            let sources = RepeatSources(logs: cluster.logs)
            let bound = delivery.window(partitions: 4) * (1 + sources.stops) + sources.retries
            #expect(duplicates <= bound, "\(sources)")
            // Node B stopped: it claims nothing and is no longer listed once its heartbeat is old.
            let bLog = HubLogs.lines(in: [cluster.logs[1]])
            #expect(bLog.contains { $0.contains("could not record this node's heartbeat") }, "\(cluster.nodes[1].logTail())")
            let alone = try await waitUntil(timeout: .seconds(30)) { try await cluster.liveNodes(via: 0).keys.sorted() == ["node-a"] }
            #expect(alone)

            // Back: node B rejoins and takes its share of the next fan-out, and nothing reaches a device twice.
            cluster.apns.emulator.faults = FaultInjection()
            proxy.restore()
            let rejoined = try await waitUntil(timeout: .seconds(60)) { try await cluster.liveNodes(via: 0).count == 2 }
            #expect(rejoined, "\(cluster.nodes[1].logTail())")
            let before = try await cluster.delivered()
            let next = try await cluster.send(via: 0, tags: "everyone", alert: "rejoined")
            let second = try await cluster.waitForFinal(next)
            #expect(second?.state == .completed, "\(cluster.tails)")
            let shares = zip(try await cluster.delivered(), before).map { $0 - $1 }
            let (again, repeated) = cluster.duplicates(alert: "rejoined")
            let later = RepeatSources(logs: cluster.logs)
            #expect(again == Self.everyDevice)
            #expect(repeated <= Self.smallPages.window(partitions: 4) * (later.stops - sources.stops) + later.retries - sources.retries)
            #expect(Self.even(shares, total: Self.devices), "both nodes share the fan-out after the rejoin: \(shares)")
            print("multi-node(cut off at \(cutAt)): duplicates=\(duplicates) bound=\(bound) \(sources); after rejoin shares=\(shares)")
            for node in cluster.nodes { #expect(await node.terminate(), "a node exits by itself with status 0: \(node.logTail())") }
        }
        await proxy.stop()
    }
}
