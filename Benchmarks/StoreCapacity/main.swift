// What one database sustains of the work every hub node puts on it, whatever the number of nodes: the store's own
// operations run by many concurrent workers (as many nodes' workers would), without HTTP, adapters or emulators.
//
//   swift run -c release StoreCapacity --postgres postgres://hub@127.0.0.1:5432/postgres --workers 4,16,32
//   swift run -c release StoreCapacity            # the embedded SQLite file, for comparison
//
// Prints `name: value unit` lines:
// - `capacity.<store>.claims.<W>`: small notifications (one device each) taken through the queue per second by W
//   workers: claimed in batches of up to 64 (as the hub does) and completed (last checkpoint and finish, group
//   committed), without delivering anything.
// - `capacity.<store>.checkpoints.<W>`: checkpoints per second of W partitions being fanned out at once (counts
//   merged into the notification, cursor moved), each carrying a page of 1,000 successes.
// - `capacity.<store>.pages.<W>`: audience pages of 1,000 installations read per second by W workers, each streaming
//   its own range of 100,000 installations matching a tag.

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
            case "--workers": workers = value().split(separator: ",").compactMap { Int($0) }
            case "--seconds": seconds = Double(value()) ?? seconds
            case "--installations": installations = Int(value()) ?? installations
            default:
                FileHandle.standardError.write(Data("unknown option \(argument)\n".utf8))
                exit(2)
            }
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

/// A fresh database: a schema of its own on PostgreSQL with a pool as large as the most workers.
func openDatabase() async throws -> any HubDatabase {
    if let url = options.postgres {
        let pool = (options.workers.max() ?? 8) + 2
        let settings = try StorageConfiguration.PostgresSettings(
            url: url, schema: "capacity_\(getpid())", maximumConnections: pool)
        return try await HubDatabases.open(storage: .postgres(settings), logger: logger)
    }
    return try await HubDatabases.open(storage: .sqlite(path: path), logger: logger)
}

func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

func figure(_ name: String, _ value: Double, _ unit: String) {
    say("capacity.\(storeName).\(name): \(String(format: "%.0f", value)) \(unit)")
}

/// Runs `workers` loops of `body` for the configured time; returns what they counted per second.
func measure(workers: Int, _ body: @escaping @Sendable (_ worker: Int) async throws -> Int) async throws -> Double {
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
    let elapsed = ContinuousClock.now - started
    return Double(total) / (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
}

let database = try await openDatabase()
let installations = SQLInstallationStore(database: database)
let notifications = SQLNotificationStore(database: database)
let platform = Platform("apns")
let format = NotificationFormat("apple")

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

var success = DispatchSummary()
success.record(.success, platform: platform, count: 1)
var page = DispatchSummary()
page.record(.success, platform: platform, count: 1000)
let oneSuccess = success
let pageOfSuccesses = page

for workers in options.workers {
    // Claims: enough small notifications queued for the whole run.
    let queued = max(20_000, workers * 2000)
    try await withThrowingTaskGroup(of: Void.self) { group in
        for lane in 0..<16 {
            group.addTask {
                for index in stride(from: lane, to: queued, by: 16) {
                    _ = try await notifications.enqueue(
                        Notification(format: format, body: "{}", audience: .tags(.tag("user:\(index % options.installations)"))),
                        scheduledTime: nil, idempotencyKey: nil)
                }
            }
        }
        try await group.waitForAll()
    }
    let claims = try await measure(workers: workers) { worker in
        let claimed = try await notifications.claim(
            ClaimRequest(owner: "w\(worker)", leaseSeconds: 60, now: Date(), partitionsPerNode: 4, splitAbove: 1000, limit: 64))
        try await withThrowingTaskGroup(of: Void.self) { group in
            for claim in claimed {
                guard let work = claim.work else { continue }
                group.addTask {
                    _ = try await notifications.complete(
                        id: work.record.notification.id, partition: work.partition, owner: "w\(worker)",
                        DispatchCheckpoint(summary: oneSuccess, failures: [], cursor: nil), now: Date())
                }
            }
            try await group.waitForAll()
        }
        return claimed.count
    }
    figure("claims.\(workers)", claims, "notifications/s")

    // Checkpoints: one large notification per worker, each worker holding one of its partitions.
    // Scheduled a moment ago, so that they are claimed before what is left of the small ones.
    var held: [DeliveryWork] = []
    var large: Set<String> = []
    for _ in 0..<workers {
        large.insert(
            try await notifications.enqueue(
                Notification(format: format, body: "{}", audience: .tags(.tag("all"))), scheduledTime: Date() - 1,
                idempotencyKey: nil))
    }
    while held.count < workers {
        let claimed = try await notifications.claim(
            ClaimRequest(owner: "c\(held.count)", leaseSeconds: 600, now: Date(), partitionsPerNode: 1, limit: 1))
        guard let work = claimed.first?.work else { break }
        if large.contains(work.record.notification.id) { held.append(work) }
    }
    let partitions = held
    let cursors = Mutex([Int64](repeating: 0, count: workers))
    let checkpoints = try await measure(workers: partitions.count) { worker in
        let cursor = cursors.withLock { cursors in
            cursors[worker] += 1000
            return cursors[worker]
        }
        let work = partitions[worker]
        guard
            try await notifications.recordCheckpoint(
                id: work.record.notification.id, partition: work.partition, owner: "c\(worker)",
                DispatchCheckpoint(summary: pageOfSuccesses, failures: [], cursor: InstallationCursor(position: cursor)))
        else { throw HubError(.conflict, "lost the lease") }
        return 1
    }
    figure("checkpoints.\(workers)", checkpoints, "checkpoints/s")

    // Audience pages: each worker streams the matches of `all` from its own offset, wrapping around.
    let span = Int64(options.installations)
    let positions = Mutex((0..<workers).map { Int64($0) * span / Int64(workers) })
    let pages = try await measure(workers: workers) { worker in
        let after = positions.withLock { $0[worker] }
        let result = try await installations.query(
            InstallationQuery(expression: .tag("all"), includeExpired: false), after: InstallationCursor(position: after),
            limit: 1000)
        positions.withLock { $0[worker] = result.next?.position ?? 0 }
        return 1
    }
    figure("pages.\(workers)", pages, "pages/s")
}
try await database.close()
