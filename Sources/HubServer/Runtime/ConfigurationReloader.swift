import Crypto
import Foundation
import Logging
import NotificationHub
import ServiceLifecycle
import Synchronization
import UnixSignals

/// Reloads the configuration of a running ``HubRuntime`` on `SIGHUP` and when the file, or a file it references
/// (keys, service accounts, certificates), changes on disk.
///
/// Files are watched by polling the SHA-256 of their contents (portable, and a file replaced by rename counts as
/// changed). A change is read once it has held still for one more interval, so a half-written file is read again
/// when it is complete. A file that does not validate is rejected whole: every problem is logged with
/// file:line:column and the running configuration stays (``HubRuntime/reject(_:started:)``).
public struct ConfigurationReloader: Service {
    /// How the reloader reads the file: the same rules `hub validate` applies.
    public typealias Load = @Sendable () -> Result<HubsConfiguration, ConfigurationError>

    let runtime: HubRuntime
    let file: String
    let load: Load
    let pollInterval: Duration
    let signals: Bool
    let logger: Logger
    /// The watched files' hashes as last read (first when the reloader was made, right after the configuration was
    /// read, so that a change made before it runs is not missed; then at every reload, so that a change a `SIGHUP`
    /// already applied is not read again).
    let seen: SeenFiles

    /// File hashes, shared by the reloads and the watcher.
    final class SeenFiles: Sendable {
        private let hashes: Mutex<[String: String?]>
        init(_ hashes: [String: String?]) { self.hashes = Mutex(hashes) }
        var value: [String: String?] {
            get { hashes.withLock { $0 } }
            set { hashes.withLock { $0 = newValue } }
        }
    }

    /// Creates the service.
    ///
    /// - Parameters:
    ///   - file: The configuration file.
    ///   - load: Reads and validates it.
    ///   - pollInterval: How often the files' hashes are compared. Default one second.
    ///   - signals: Whether `SIGHUP` reloads (the process's executable sets it; tests need not).
    public init(
        runtime: HubRuntime, file: String, pollInterval: Duration = .seconds(1), signals: Bool = true, logger: Logger,
        load: @escaping Load
    ) {
        self.runtime = runtime
        self.file = file
        self.load = load
        self.pollInterval = pollInterval
        self.signals = signals
        self.logger = logger
        self.seen = SeenFiles(Self.hashes(of: [file] + runtime.configuration.referencedFiles))
    }

    public func run() async throws {
        let requests = AsyncStream<String>.makeStream(bufferingPolicy: .bufferingNewest(1))
        await withDiscardingTaskGroup { group in
            if signals {
                group.addTask {
                    for await _ in await UnixSignalsSequence(trapping: .sighup).cancelOnGracefulShutdown() {
                        requests.continuation.yield("SIGHUP")
                    }
                }
            }
            group.addTask { await watch(requests.continuation) }
            for await trigger in requests.stream.cancelOnGracefulShutdown() {
                await reload(trigger: trigger)
            }
            group.cancelAll()
        }
    }

    /// Reads the file and applies it (or rejects it); returns what happened.
    @discardableResult
    public func reload(trigger: String) async -> HubRuntime.Report {
        let started = ContinuousClock.now
        logger.info("reloading the configuration", metadata: ["config.trigger": .string(trigger), "config.file": .string(file)])
        let files = watchedFiles()
        let hashes = Self.hashes(of: files)
        defer {
            // What was read now is what the watcher compares with (plus what the new configuration references).
            let after = watchedFiles()
            var seenNow = hashes
            for file in after where seenNow.index(forKey: file) == nil { seenNow[file] = Self.hashes(of: [file])[file] }
            seen.value = seenNow
        }
        switch load() {
        case .success(let configuration):
            for warning in configuration.warnings {
                logger.warning("configuration warning", metadata: ["config.warning": "\(warning)"])
            }
            return await runtime.apply(configuration, started: started)
        case .failure(let error):
            return runtime.reject(error.problems, started: started)
        }
    }

    /// The files watched: the configuration and every file the running one references.
    func watchedFiles() -> [String] {
        [file] + runtime.configuration.referencedFiles
    }

    /// Polls the watched files' hashes; asks for a reload when one changed and then held still for an interval.
    func watch(_ requests: AsyncStream<String>.Continuation) async {
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            do {
                try await cancelWhenGracefulShutdown { try await Task.sleep(for: pollInterval) }
            } catch {
                return
            }
            var known = seen.value
            let files = watchedFiles()
            var now = Self.hashes(of: files)
            // A file the configuration started referencing is watched from now on.
            for file in files where known.index(forKey: file) == nil { known[file] = now[file] }
            guard files.contains(where: { known[$0] != now[$0] }) else { continue }
            // Debounce: a file being written is read again once it stopped changing.
            while !Task.isCancelled {
                do {
                    try await cancelWhenGracefulShutdown { try await Task.sleep(for: pollInterval) }
                } catch {
                    return
                }
                let again = Self.hashes(of: files)
                if again == now { break }
                now = again
            }
            // A reload (SIGHUP) may have read the change meanwhile.
            known = seen.value
            let changed = files.filter { known[$0] != now[$0] }
            guard !changed.isEmpty else { continue }
            seen.value = known.merging(now) { _, new in new }
            requests.yield("changed: " + changed.joined(separator: ", "))
        }
    }

    /// The SHA-256 of each file's contents (`nil` for one that cannot be read).
    static func hashes(of files: [String]) -> [String: String?] {
        var hashes: [String: String?] = [:]
        for file in files {
            hashes[file] = FileManager.default.contents(atPath: file).map {
                SHA256.hash(data: $0).map { String(format: "%02x", $0) }.joined()
            }
        }
        return hashes
    }
}
