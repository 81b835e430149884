import Foundation
import Logging
import NotificationHub

// Audience resolution in the embedded store: imports N installations, then streams the matches of expressions
// page by page and prints `name: value unit` lines.

let arguments = CommandLine.arguments.dropFirst()
let count = arguments.first.flatMap { Int($0) } ?? 100_000
let path = FileManager.default.temporaryDirectory.appendingPathComponent("store-bench-\(getpid()).sqlite").path
defer {
    for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
}

var logger = Logger(label: "bench")
logger.logLevel = .warning
let store = try await SQLInstallationStore.open(storage: .sqlite(path: path), logger: logger)

func seconds(since start: ContinuousClock.Instant) -> Double {
    let elapsed = ContinuousClock.now - start
    return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
}

let importStart = ContinuousClock.now
var batch: [Installation] = []
batch.reserveCapacity(5000)
for index in 0..<count {
    var tags = ["all", "group:\(index % 100)", "lang:\(["en", "de", "fr", "es"][index % 4])"]
    if index % 2 == 0 { tags.append("sports") }
    if index % 3 == 0 { tags.append("news") }
    if index % 10 == 0 { tags.append("muted") }
    batch.append(
        Installation(
            installationID: "device-\(index)", userID: "user-\(index)", platform: .apns,
            pushChannel: .handle(String(format: "%064x", index)), tags: tags))
    if batch.count == 5000 {
        try await store.upsert(contentsOf: batch)
        batch.removeAll(keepingCapacity: true)
    }
}
if !batch.isEmpty { try await store.upsert(contentsOf: batch) }
let importSeconds = seconds(since: importStart)
print("store.import.\(count): \(Int(Double(count) / importSeconds)) installations/s")

for (name, text) in [
    ("tag", "sports"),
    ("three-terms", "(sports || news) && !muted"),
    ("driven-three-terms", "lang:en && (sports || news) && !muted"),
    ("user", "$UserId:user-\(count / 2)"),
] {
    let expression = try TagExpression(parsing: text)
    let start = ContinuousClock.now
    var streamed = 0
    for try await page in store.pages(InstallationQuery(expression: expression, includeExpired: false), pageSize: 1000) {
        streamed += page.installations.count
    }
    let elapsed = seconds(since: start)
    print("store.resolve.\(name).\(count): \(Int(Double(streamed) / max(elapsed, 1e-9))) installations/s")
    print("store.resolve.\(name).\(count).matches: \(streamed) installations")
    print("store.resolve.\(name).\(count).time: \(String(format: "%.1f", elapsed * 1000)) ms")
}
try await store.database.close()
