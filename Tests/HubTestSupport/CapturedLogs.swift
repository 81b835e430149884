import Logging
import Synchronization

/// Collects every log line (message and metadata, rendered as text) written through its loggers, so tests can
/// check what the hub logs — and that secrets never appear.
public final class CapturedLogs: Sendable {
    private let lines = Mutex<[String]>([])

    public init() {}

    /// A logger that writes here, at trace level.
    public func logger(_ label: String = "test") -> Logger {
        var logger = Logger(label: label) { _ in Handler(sink: self) }
        logger.logLevel = .trace
        return logger
    }

    /// Everything logged so far, one line per entry.
    public var text: String { lines.withLock { $0.joined(separator: "\n") } }

    /// The entries logged so far.
    public var entries: [String] { lines.withLock { $0 } }

    func append(_ line: String) { lines.withLock { $0.append(line) } }

    struct Handler: LogHandler {
        let sink: CapturedLogs
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace
        var metadataProvider: Logger.MetadataProvider?

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            var all = metadata
            if let extra = event.metadata { all.merge(extra) { $1 } }
            sink.append("\(event.level) \(event.message) \(all.map { "\($0.key)=\($0.value)" }.sorted().joined(separator: " "))")
        }
    }
}
