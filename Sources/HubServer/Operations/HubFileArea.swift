import Foundation
import NotificationHub

/// The files the hub keeps for one hub's operations: the blob containers that jobs read and write, and the job
/// records.
///
/// ```
/// <area>/containers/<container>/<blob>
/// <area>/jobs/<jobId>.json
/// ```
///
/// With SQLite storage the area is `<hub>.files/` beside the database file; with in-memory or PostgreSQL storage it
/// is a temporary directory of this process (so on PostgreSQL, job files stay on the node that ran the job).
struct HubFileArea: Sendable {
    let root: URL

    /// Blob containers' names: Azure's rule, 3–63 lowercase letters, digits and single hyphens.
    static func isValidContainer(_ name: String) -> Bool {
        guard (3...63).contains(name.count), !name.hasPrefix("-"), !name.hasSuffix("-"), !name.contains("--") else {
            return false
        }
        return name.allSatisfy { ($0.isASCII && ($0.isLowercase || $0.isNumber)) || $0 == "-" }
    }

    /// Blob names: 1–255 letters, digits, `.`, `_` and `-`, not starting with `.` (one level, no folders).
    static func isValidBlob(_ name: String) -> Bool {
        guard (1...255).contains(name.count), !name.hasPrefix(".") else { return false }
        return name.allSatisfy { ($0.isASCII && ($0.isLetter || $0.isNumber)) || $0 == "." || $0 == "_" || $0 == "-" }
    }

    func container(_ name: String) -> URL { root.appendingPathComponent("containers").appendingPathComponent(name) }

    func blob(_ name: String, in container: String) -> URL { self.container(container).appendingPathComponent(name) }

    var jobs: URL { root.appendingPathComponent("jobs") }

    /// Creates a container's folder if it is missing.
    func createContainer(_ name: String) throws {
        try FileManager.default.createDirectory(at: container(name), withIntermediateDirectories: true)
    }

    /// A stored blob.
    struct BlobInfo: Sendable, Hashable {
        var name: String
        var size: Int
        var modified: Date
    }

    /// The blobs of a container, by name; empty when the container does not exist.
    func blobs(in container: String) -> [BlobInfo] {
        let folder = self.container(container)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        return names.filter(Self.isValidBlob).sorted().compactMap { info($0, in: container) }
    }

    /// A blob's name, size and time, or `nil` when it does not exist.
    func info(_ name: String, in container: String) -> BlobInfo? {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: blob(name, in: container).path) else {
            return nil
        }
        return BlobInfo(
            name: name, size: (attributes[.size] as? NSNumber)?.intValue ?? 0,
            modified: attributes[.modificationDate] as? Date ?? Date(timeIntervalSince1970: 0))
    }

    /// A blob's size in bytes, or `nil` when it does not exist.
    func size(of name: String, in container: String) -> Int? {
        info(name, in: container)?.size
    }

    /// A blob's bytes, or `nil` when it does not exist.
    func read(_ name: String, in container: String) -> Data? {
        FileManager.default.contents(atPath: blob(name, in: container).path)
    }

    /// Writes a blob whole (creating its container), replacing an earlier one atomically.
    func write(_ data: Data, to name: String, in container: String) throws {
        try createContainer(container)
        try data.write(to: blob(name, in: container), options: .atomic)
    }
}
