import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NotificationHub
import ServiceLifecycle
import Synchronization

/// The hub's long-running operations beside delivery: bulk registration jobs (``HubJob``) and the files they read
/// and write, kept per hub in a ``HubFileArea``.
///
/// It is a `Service` of ``HubRuntime``: jobs submitted through the API run in its task group, one task per job, and
/// stop with it. A job's state is written to its record file as it goes. A job that was still running when the
/// process stopped is marked `Failed` ("interrupted") the first time its hub's jobs are read by the next process;
/// it is not resumed.
public final class HubOperations: Service, Sendable {
    private let work: AsyncStream<@Sendable () async -> Void>
    private let continuation: AsyncStream<@Sendable () async -> Void>.Continuation
    private let state = Mutex<(temporaryRoot: URL?, checked: Set<String>, scheme: String?)>((nil, [], nil))
    /// One record write at a time, so a job's record is never read half-written by the API.
    private let records = Mutex(())

    /// Creates the operations of one process.
    public init() {
        (work, continuation) = AsyncStream.makeStream()
    }

    /// Runs submitted jobs until graceful shutdown; jobs still running are cancelled. The temporary file area of
    /// hubs without a data directory is removed then (the API has stopped before this service).
    public func run() async throws {
        await withDiscardingTaskGroup { group in
            for await job in work.cancelOnGracefulShutdown() {
                group.addTask { await job() }
            }
            group.cancelAll()
        }
        if let temporary = state.withLock({ $0.temporaryRoot }) {
            try? FileManager.default.removeItem(at: temporary)
        }
    }

    /// Runs work in the service's task group (dropped when the service is not running).
    func perform(_ job: @escaping @Sendable () async -> Void) {
        continuation.yield(job)
    }

    /// The scheme the API is served with when it serves TLS itself (`https`); set by ``HubApplication``.
    var scheme: String? {
        get { state.withLock { $0.scheme } }
        set { state.withLock { $0.scheme = newValue } }
    }

    /// The scheme and authority clients reach the API at, for the container URLs the hub hands out:
    /// `X-Forwarded-Proto` when a proxy sets it, else `https` when the hub terminates TLS, else the request's.
    func origin(of request: Hummingbird.Request) -> String {
        let host = request.head.authority ?? request.headers[HTTPField.Name("Host")!] ?? "localhost"
        let forwarded = request.headers[HTTPField.Name("X-Forwarded-Proto")!]?.split(separator: ",").first
            .map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        let scheme = forwarded.flatMap { $0 == "https" || $0 == "http" ? $0 : nil } ?? self.scheme ?? request.head.scheme ?? "http"
        return "\(scheme)://\(host)"
    }

    /// The file area of a hub (see ``HubFileArea``).
    func area(for hub: Hub) -> HubFileArea {
        let root: URL
        switch hub.configuration.storage {
        case .sqlite(let path):
            root = URL(fileURLWithPath: path).deletingLastPathComponent().appendingPathComponent("\(hub.name).files")
        default:
            let temporary = state.withLock { state -> URL in
                if let root = state.temporaryRoot { return root }
                let root = FileManager.default.temporaryDirectory.appendingPathComponent(
                    "notification-hub-\(UUID().uuidString.lowercased())")
                state.temporaryRoot = root
                return root
            }
            root = temporary.appendingPathComponent(hub.name)
        }
        return HubFileArea(root: root)
    }

    // MARK: Job records

    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }()

    static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }()

    /// Stores a job's record.
    func save(_ job: HubJob, in area: HubFileArea) throws {
        let data = try Self.encoder.encode(job)
        try records.withLock { _ in
            try FileManager.default.createDirectory(at: area.jobs, withIntermediateDirectories: true)
            try data.write(to: area.jobs.appendingPathComponent("\(job.id).json"), options: .atomic)
        }
    }

    /// A job's record, or `nil` when the hub has no such job.
    func job(_ id: String, in area: HubFileArea, now: Date) -> HubJob? {
        guard HubJob.isValidID(id) else { return nil }
        markInterrupted(in: area, now: now)
        return records.withLock { _ in
            FileManager.default.contents(atPath: area.jobs.appendingPathComponent("\(id).json").path)
        }.flatMap { try? Self.decoder.decode(HubJob.self, from: $0) }
    }

    /// Every job of a hub, oldest first.
    func jobs(in area: HubFileArea, now: Date) -> [HubJob] {
        markInterrupted(in: area, now: now)
        return loadAll(area).sorted { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) }
    }

    private func loadAll(_ area: HubFileArea) -> [HubJob] {
        records.withLock { _ in
            let names = (try? FileManager.default.contentsOfDirectory(atPath: area.jobs.path)) ?? []
            return names.filter { $0.hasSuffix(".json") }.compactMap { name in
                FileManager.default.contents(atPath: area.jobs.appendingPathComponent(name).path)
                    .flatMap { try? Self.decoder.decode(HubJob.self, from: $0) }
            }
        }
    }

    /// Marks the jobs a previous process left unfinished as failed, once per area and process; called before a
    /// hub's jobs are read or a job is submitted.
    func markInterrupted(in area: HubFileArea, now: Date) {
        let first = state.withLock { $0.checked.insert(area.root.path).inserted }
        guard first else { return }
        for var job in loadAll(area) where !job.status.isFinal {
            job.status = .failed
            job.failure = "the job was interrupted when the hub stopped; submit it again"
            job.updatedAt = now
            try? save(job, in: area)
        }
    }
}
