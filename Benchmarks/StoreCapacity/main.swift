// What one database sustains of the work hub nodes put on it, whatever the number of nodes, and on PostgreSQL what
// each operation costs the server: the store's own calls (the ones the API's `SendService` and the `DeliveryWorker`
// make) run by W concurrent workers, without HTTP, adapters or emulators. 100,000 installations tagged `all` and
// `user:<i>`.
//
//   URL=$(Scripts/test-postgres.sh $$)
//   swift build -c release --product StoreCapacity
//   .build/release/StoreCapacity --postgres "$URL" --workers 4,16 --seconds 5
//   .build/release/StoreCapacity                      # the embedded SQLite file, for comparison
//
// Operations, each run for `--seconds` by W workers (`<op>` below):
// - `perUser`: a per-user send as a node alone takes it: stored and leased at accept (`enqueue` with a
//   `ClaimRequest`; concurrent sends are stored together, as the API's are), its audience (one user's tag) read
//   through the delivery's page query (concurrent reads combined), finished with `complete(…, alone: true)`
//   (concurrent finishes combined).
// - `queued`: a per-user send through the shared queue, as several nodes take it: enqueued without a lease, claimed
//   in a batch (up to 64 per claim transaction), its audience read, completed. Each worker enqueues 16 sends, then
//   claims; what is left when the time is up is claimed and completed within the measured stretch.
// - `pages`: a fan-out page: 1,000 installations of the tag `all` read through the delivery's page query after the
//   partition's cursor, then its checkpoint (counts merged into the notification, cursor moved). Each worker holds
//   a partition of a notification of its own.
//
// Prints `name: value unit` lines:
// - `capacity.<store>.<op>.<W>`: operations per second.
// - PostgreSQL only (the server's processes read from `/proc`, so a server on this machine; statements from
//   `pg_stat_statements`, which `Scripts/test-postgres.sh` preloads):
//   `capacity.postgres.<op>.<W>.serverCPU` (µs of server CPU per operation), `.serverCores` (server CPU seconds per
//   second: how busy the server was), `.statements` and `.commits` per operation, and `.perCore`: operations per
//   second per server core (operations ÷ server CPU seconds).
// - `capacity.postgres.<op>.perCore`: the per-core figure of the run with the most workers (the largest batches, as
//   on a node at saturation): the input of the model in docs/scaling.md.
// - `# …` lines: what was read back from the store after each operation (sends stored, leased, completed,
//   installations counted), so that each figure is known to measure what its name says.

import BenchmarkSupport
import Foundation
import Logging
import NotificationHub
import Synchronization

struct Options {
    var postgres: String?
    var workers = [4, 16, 32]
    var seconds = 5.0
    var installations = 100_000

    init(_ arguments: [String]) {
        var iterator = arguments.dropFirst().makeIterator()
        while let argument = iterator.next() {
            func value() -> String { iterator.next() ?? "" }
            switch argument {
            case "--postgres": postgres = value()
            case "--workers": workers = value().split(separator: ",").compactMap { Int($0) }.filter { $0 > 0 }
            case "--seconds": seconds = Double(value()) ?? seconds
            case "--installations": installations = max(1000, Int(value()) ?? installations)
            default:
                FileHandle.standardError.write(Data("unknown option \(argument)\n".utf8))
                exit(2)
            }
        }
        if workers.isEmpty {
            FileHandle.standardError.write(Data("--workers needs worker counts, e.g. 4,16\n".utf8))
            exit(2)
        }
    }
}

let options = Options(CommandLine.arguments)
var logger = Logger(label: "capacity")
logger.logLevel = .warning
let storeName = options.postgres == nil ? "sqlite" : "postgres"
let path = FileManager.default.temporaryDirectory.appendingPathComponent("capacity-\(getpid()).sqlite").path
defer {
    for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
}

/// The storage of a fresh database: a schema of its own on PostgreSQL, with a pool of `connections`.
func storage(connections: Int) throws -> StorageConfiguration {
    guard let url = options.postgres else { return .sqlite(path: path) }
    return .postgres(
        try StorageConfiguration.PostgresSettings(url: url, schema: "capacity_\(getpid())", maximumConnections: connections))
}

func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

func figure(_ name: String, _ value: Double, _ unit: String, decimals: Int = 0) {
    say("capacity.\(storeName).\(name): \(String(format: "%.\(decimals)f", value)) \(unit)")
}

func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

/// Runs `workers` loops of `body` for the configured time; returns what they counted and the seconds it took.
func measure(
    workers: Int, _ body: @escaping @Sendable (_ worker: Int) async throws -> Int
) async throws -> (count: Int, seconds: Double) {
    let deadline = ContinuousClock.now + .seconds(options.seconds)
    let started = ContinuousClock.now
    let total = try await withThrowingTaskGroup(of: Int.self) { group in
        for worker in 0..<workers {
            group.addTask {
                var count = 0
                while ContinuousClock.now < deadline { count += try await body(worker) }
                return count
            }
        }
        return try await group.reduce(0, +)
    }
    return (total, seconds(ContinuousClock.now - started))
}

// Up to the most workers at once, plus the claims' and combined writes' connections.
let database = try await HubDatabases.open(storage: try storage(connections: (options.workers.max() ?? 8) + 4), logger: logger)
let installations = SQLInstallationStore(database: database)
let notifications = SQLNotificationStore(database: database)
let platform = Platform("apns")
let format = NotificationFormat("apple")
/// The delivery's settings that shape these calls (the hub's defaults): a page of 1,000, 4 partitions per node on
/// PostgreSQL (1 on SQLite), leases of 60 s, claims of up to 64.
let pageSize = 1000
let partitionsPerNode = options.postgres == nil ? 1 : 4
let leaseSeconds = 60.0
let claimBatch = 64

/// The page query a native send's delivery makes for `tag` (only installations, native sends, their addresses).
func audience(_ tag: String) -> InstallationQuery {
    InstallationQuery(
        expression: .tag(tag), scope: .installation, platforms: [platform], includeExpired: false, kinds: .nativeSends,
        detail: .address)
}

/// A per-user send to a random user's tag.
func perUserSend() -> NotificationHub.Notification {
    Notification(
        format: format, body: #"{"aps":{"alert":"Hello"}}"#,
        audience: .tags(.tag("user:\(Int.random(in: 0..<options.installations))")))
}

/// The one tag a per-user send is addressed to.
func userTag(of notification: NotificationHub.Notification) throws -> String {
    guard case .tags(.tag(let tag)) = notification.audience else {
        throw HubError(.conflict, "claimed notification \(notification.id), which is not a per-user send")
    }
    return tag
}

/// What the delivery records of `count` devices reached.
func successes(_ count: Int) -> DispatchSummary {
    var summary = DispatchSummary()
    if count > 0 { summary.record(.success, platform: platform, count: count) }
    return summary
}

/// Notifications by state and partitions by state, read back from the store.
func storedStates() async throws -> (notifications: [String: Int], partitions: [String: Int]) {
    var result: ([String: Int], [String: Int]) = ([:], [:])
    for row in try await database.read("SELECT state, COUNT(*) AS n FROM notifications GROUP BY state", []) {
        if let state = row.string("state") { result.0[state] = row.int("n") ?? 0 }
    }
    for row in try await database.read("SELECT state, COUNT(*) AS n FROM notification_partitions GROUP BY state", []) {
        if let state = row.string("state") { result.1[state] = row.int("n") ?? 0 }
    }
    return result
}

/// The change of each state's count, as `state +n` words (unchanged states left out).
func changes(_ before: [String: Int], _ after: [String: Int]) -> String {
    let states = Set(before.keys).union(after.keys).sorted()
    let words = states.compactMap { state -> String? in
        let change = after[state, default: 0] - before[state, default: 0]
        return change == 0 ? nil : "\(state) \(change > 0 ? "+" : "")\(change)"
    }
    return words.isEmpty ? "none" : words.joined(separator: ", ")
}

/// On PostgreSQL, what the server spent on each operation, and the operations per server core.
let serverCost = options.postgres == nil ? nil : try await PostgresServerCost.open(storage: try storage(connections: 2), logger: logger)
/// The per-core figure of each operation at the most workers so far.
nonisolated(unsafe) var perCore: [String: (workers: Int, value: Double)] = [:]

/// Runs `work` (returning the operations done and the seconds they took) between two samples of the server's
/// counters, and prints the rate and, on PostgreSQL, the cost per operation.
func costed(_ name: String, workers: Int, unit: String, _ work: () async throws -> (count: Int, seconds: Double)) async throws {
    let before = try await serverCost?.sample()
    let (count, elapsed) = try await work()
    figure("\(name).\(workers)", Double(count) / elapsed, "\(unit)s/s")
    guard let serverCost, let before, count > 0 else { return }
    let spent = try await serverCost.sample().spent(since: before)
    let operations = Double(count)
    if let statements = spent.statements {
        figure("\(name).\(workers).statements", Double(statements) / operations, "statements per \(unit)", decimals: 2)
    } else {
        say("  \(name).\(workers).statements: pg_stat_statements is not loaded (shared_preload_libraries)")
    }
    figure("\(name).\(workers).commits", Double(spent.commits) / operations, "commits per \(unit)", decimals: 2)
    guard let cpu = spent.cpuSeconds, cpu > 0 else {
        say("  \(name).\(workers).serverCPU: the server's processes are not visible here")
        return
    }
    figure("\(name).\(workers).serverCPU", 1e6 * cpu / operations, "µs per \(unit)", decimals: 1)
    figure("\(name).\(workers).serverCores", cpu / elapsed, "cores", decimals: 2)
    figure("\(name).\(workers).perCore", operations / cpu, "\(unit)s/s per server core")
    if workers >= perCore[name]?.workers ?? 0 { perCore[name] = (workers, operations / cpu) }
}

/// What the workers of one operation counted besides the operations.
struct Tally {
    var stored = 0
    var leased = 0
    var completed = 0
    var matches = 0
    var claims = 0
}

/// A ``Tally`` the workers of one operation share.
final class Tallies: Sendable {
    private let state = Mutex(Tally())

    func withLock<Result: Sendable>(_ body: (inout Tally) -> Result) -> Result { state.withLock { body(&$0) } }
}

// The audience: installations tagged `all` and `user:<i>`.
var batch: [Installation] = []
for index in 0..<options.installations {
    batch.append(
        Installation(
            installationID: "d\(index)", platform: platform, pushChannel: .handle(String(format: "%064x", index)),
            tags: ["all", "user:\(index)"]))
    if batch.count == 5000 {
        try await installations.upsert(contentsOf: batch)
        batch.removeAll(keepingCapacity: true)
    }
}
if !batch.isEmpty { try await installations.upsert(contentsOf: batch) }
say("# \(options.installations) installations stored in \(storeName); \(ProcessInfo.processInfo.activeProcessorCount) cores")

/// Per-user sends on a node alone, by `workers` at once: each stored and leased at accept, its audience read and
/// finished.
func perUserSends(workers: Int) async throws {
    let perUser = Tallies()
    let statesBefore = try await storedStates()
    try await costed("perUser", workers: workers, unit: "send") {
        try await measure(workers: workers) { _ in
            let claim = ClaimRequest(
                owner: "node", leaseSeconds: leaseSeconds, now: Date(), partitionsPerNode: partitionsPerNode,
                splitAbove: pageSize)
            let notification = perUserSend()
            let enqueued = try await notifications.enqueue(notification, scheduledTime: nil, idempotencyKey: nil, claim: claim)
            guard let work = enqueued.claimed else {
                throw HubError(.conflict, "a per-user send was not leased at accept")
            }
            let page = try await installations.query(audience(try userTag(of: notification)), after: work.resumeAfter, limit: pageSize)
            let final = try await notifications.complete(
                id: work.record.notification.id, partition: work.partition, owner: claim.owner,
                DispatchCheckpoint(summary: successes(page.installations.count), failures: [], cursor: nil), now: Date(),
                alone: true)
            perUser.withLock { tally in
                tally.stored += enqueued.stored ? 1 : 0
                tally.leased += 1
                tally.matches += page.installations.count
                tally.completed += final == .completed ? 1 : 0
            }
            return 1
        }
    }
    let statesAfter = try await storedStates()
    let counted = perUser.withLock { $0 }
    say(
        "# perUser.\(workers): \(counted.stored) sends stored, \(counted.leased) leased at accept, "
            + "\(counted.matches) devices read, \(counted.completed) completed; store: notifications "
            + "\(changes(statesBefore.notifications, statesAfter.notifications)); partitions "
            + "\(changes(statesBefore.partitions, statesAfter.partitions))")
}

/// Per-user sends through the shared queue, by `workers` at once: enqueued, claimed in batches, read and completed.
func queuedSends(workers: Int) async throws {
    let queued = Tallies()
    var drainedAfterDeadline = 0
    let statesBefore = try await storedStates()
    try await costed("queued", workers: workers, unit: "send") {
        /// Claims a batch as `owner` and delivers it: each claimed send's audience read and its completion.
        @Sendable func claimAndDeliver(_ owner: String) async throws -> Int {
            let claimed = try await notifications.claim(
                ClaimRequest(
                    owner: owner, leaseSeconds: leaseSeconds, now: Date(), partitionsPerNode: partitionsPerNode,
                    splitAbove: pageSize, limit: claimBatch))
            queued.withLock { $0.claims += 1 }
            return try await withThrowingTaskGroup(of: Int.self) { group in
                for claim in claimed {
                    guard let work = claim.work else { continue }
                    group.addTask {
                        let page = try await installations.query(
                            audience(try userTag(of: work.record.notification)), after: work.resumeAfter, limit: pageSize)
                        // As the worker judges it: the only partition, first claim, nothing recorded before.
                        let alone = work.lowerBound == nil && work.upperBound == nil && work.claims == 1 && work.cursor == nil
                        let final = try await notifications.complete(
                            id: work.record.notification.id, partition: work.partition, owner: owner,
                            DispatchCheckpoint(summary: successes(page.installations.count), failures: [], cursor: nil),
                            now: Date(), alone: alone)
                        queued.withLock { tally in
                            tally.leased += 1
                            tally.matches += page.installations.count
                            tally.completed += final == .completed ? 1 : 0
                        }
                        return 1
                    }
                }
                return try await group.reduce(0, +)
            }
        }
        let started = ContinuousClock.now
        let run = try await measure(workers: workers) { worker in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<16 {
                    group.addTask {
                        _ = try await notifications.enqueue(perUserSend(), scheduledTime: nil, idempotencyKey: nil)
                        queued.withLock { $0.stored += 1 }
                    }
                }
                try await group.waitForAll()
            }
            return try await claimAndDeliver("w\(worker)")
        }
        // What is still queued is claimed and delivered within the stretch, so that every send counted was whole.
        var drained = 0
        while true {
            let delivered = try await claimAndDeliver("drain")
            if delivered == 0 { break }
            drained += delivered
        }
        drainedAfterDeadline = drained
        return (run.count + drained, seconds(ContinuousClock.now - started))
    }
    let statesAfter = try await storedStates()
    let queuedCount = queued.withLock { $0 }
    figure("queued.\(workers).perClaim", Double(queuedCount.leased) / Double(max(1, queuedCount.claims)), "sends per claim", decimals: 1)
    say(
        "# queued.\(workers): \(queuedCount.stored) sends enqueued, \(queuedCount.leased) claimed in "
            + "\(queuedCount.claims) claims (\(drainedAfterDeadline) of them after the deadline), "
            + "\(queuedCount.matches) devices read, \(queuedCount.completed) completed; store: notifications "
            + "\(changes(statesBefore.notifications, statesAfter.notifications)); partitions "
            + "\(changes(statesBefore.partitions, statesAfter.partitions))")
}

/// Fan-out pages, by `workers` at once: a page of 1,000 read and checkpointed.
func fanOutPages(workers: Int) async throws {
    // Fan-out pages: one large notification per worker, each worker holding its one partition (claimed with one
    // partition per node, so that no partition is left open for the next operations' claims).
    var held: [DeliveryWork] = []
    var large: Set<String> = []
    for _ in 0..<workers {
        large.insert(
            try await notifications.enqueue(
                Notification(format: format, body: #"{"aps":{"alert":"Hello, all"}}"#, audience: .tags(.tag("all"))),
                scheduledTime: nil, idempotencyKey: nil))
    }
    while held.count < workers {
        let claimed = try await notifications.claim(
            ClaimRequest(owner: "f\(held.count)", leaseSeconds: 600, now: Date(), partitionsPerNode: 1, limit: 1))
        guard let work = claimed.first?.work else { break }
        if large.contains(work.record.notification.id) { held.append(work) }
    }
    let partitions = held
    let span = Int64(options.installations)
    // Each worker streams the audience from its own offset, wrapping around at the end.
    let cursors = Mutex((0..<partitions.count).map { InstallationCursor(position: Int64($0) * span / Int64(max(1, partitions.count))) })
    let pages = Tallies()
    try await costed("pages", workers: partitions.count, unit: "page") {
        try await measure(workers: partitions.count) { worker in
            let work = partitions[worker]
            let after = cursors.withLock { $0[worker] }
            let page = try await installations.query(audience("all"), after: after, limit: pageSize)
            let next = page.next ?? InstallationCursor(position: 0)
            guard
                try await notifications.recordCheckpoint(
                    id: work.record.notification.id, partition: work.partition, owner: "f\(worker)",
                    DispatchCheckpoint(summary: successes(page.installations.count), failures: [], cursor: next))
            else { throw HubError(.conflict, "a fan-out partition's lease was lost") }
            cursors.withLock { $0[worker] = next }
            pages.withLock { tally in
                tally.completed += 1
                tally.matches += page.installations.count
            }
            return 1
        }
    }
    // Read back: the notifications' counts hold every page's devices; then their partitions are finished.
    var recorded = 0
    for (worker, work) in partitions.enumerated() {
        recorded += try await notifications.record(id: work.record.notification.id)?.summary.total ?? 0
        _ = try await notifications.complete(
            id: work.record.notification.id, partition: work.partition, owner: "f\(worker)",
            DispatchCheckpoint(summary: DispatchSummary(), failures: [], cursor: nil), now: Date())
    }
    let paged = pages.withLock { $0 }
    say(
        "# pages.\(partitions.count): \(paged.completed) pages of \(paged.matches) devices read and checkpointed; "
            + "the notifications' counts hold \(recorded) devices")
}

for workers in options.workers {
    try await perUserSends(workers: workers)
    try await queuedSends(workers: workers)
    try await fanOutPages(workers: workers)
}
if options.postgres != nil {
    for name in ["perUser", "queued", "pages"] {
        guard let best = perCore[name] else { continue }
        figure("\(name).perCore", best.value, "\(name == "pages" ? "pages" : "sends")/s per server core (\(best.workers) workers)")
    }
}
await serverCost?.close()
if options.postgres != nil {
    // Later runs on the same server start without this run's tables (autovacuum on them would take its cores).
    _ = try await database.write(#"DROP SCHEMA "capacity_\#(getpid())" CASCADE"#, [])
}
try await database.close()
