import Foundation
import NotificationHub

/// A bulk registration job, as Azure's `NotificationHubJob`: export every registration to a container, or create,
/// update, upsert or delete the registrations listed in an import file, one registration description per line.
struct HubJob: Codable, Sendable, Hashable {
    /// What a job does (Azure's `NotificationHubJobType`).
    enum Kind: String, Codable, Sendable, CaseIterable {
        case exportRegistrations = "ExportRegistrations"
        case importCreateRegistrations = "ImportCreateRegistrations"
        case importUpdateRegistrations = "ImportUpdateRegistrations"
        case importDeleteRegistrations = "ImportDeleteRegistrations"
        case importUpsertRegistrations = "ImportUpsertRegistrations"

        /// Whether the job reads an import file.
        var isImport: Bool { self != .exportRegistrations }
    }

    /// Where a job is (Azure's `NotificationHubJobStatus`).
    enum Status: String, Codable, Sendable {
        case started = "Started"
        case running = "Running"
        case completed = "Completed"
        case failed = "Failed"

        /// Whether the job has ended.
        var isFinal: Bool { self == .completed || self == .failed }
    }

    /// The `OutputProperties` key naming the blob of results.
    static let outputFileKey = "OutputFilePath"
    /// The `OutputProperties` key naming the blob of failed lines.
    static let failedFileKey = "FailedFilePath"

    /// The blob of results in the output container.
    var outputFile: String { "\(id)-Output.txt" }
    /// The blob of failed lines in the output container.
    var failedFile: String { "\(id)-Failed.txt" }

    /// The job's id.
    var id: String
    /// What it does.
    var kind: Kind
    /// Where it is.
    var status: Status
    /// Percent done, 0–100.
    var progress: Double
    /// The container results are written to, as submitted.
    var outputContainerURI: String
    /// The import file, as submitted (import jobs).
    var importFileURI: String?
    /// Why it failed.
    var failure: String?
    /// `OutputFilePath` and `FailedFilePath`: blob names in the output container.
    var outputProperties: [String: String]
    /// When it was submitted.
    var createdAt: Date
    /// When it last changed.
    var updatedAt: Date

    /// Job ids the hub makes: lowercase UUIDs.
    static func isValidID(_ id: String) -> Bool {
        id.count == 36 && UUID(uuidString: id) != nil && id == id.lowercased()
    }
}

/// Azure's Atom/XML form of ``HubJob``, member names and order as the .NET SDK's `DataContractSerializer` reads them
/// (`JobId`, `Progress`, `Type`, `Status`, `OutputContainerUri`, `ImportFileUri`, `Failure`, `OutputProperties`,
/// `CreatedAt`, `UpdatedAt`). Members at their default value (`Progress` 0, `Status` `Started`) are left out, as the
/// serializer writes them.
enum HubJobXML {
    static let arraysNamespace = "http://schemas.microsoft.com/2003/10/Serialization/Arrays"

    /// What a submitted job description says.
    struct Submission: Sendable, Hashable {
        var kind: HubJob.Kind
        var outputContainerURI: String
        var importFileURI: String?
    }

    /// Why a body is refused.
    struct Invalid: Error, Sendable {
        var message: String
    }

    /// Parses `<entry><content><NotificationHubJob>…` or a bare `<NotificationHubJob>`.
    static func parseSubmission(_ bytes: some Collection<UInt8>) throws(Invalid) -> Submission {
        let root: XMLElement
        do {
            root = try XMLReader(limits: .init(maximumBytes: 64 * 1024)).parse(bytes)
        } catch {
            throw Invalid(message: "the body is not well-formed XML: \(error.message)")
        }
        var job = root
        if root.name == "entry" {
            guard let content = root.children.first(where: { $0.name == "content" }),
                let inner = content.children.first
            else { throw Invalid(message: "the Atom entry has no <content> with a <NotificationHubJob>") }
            job = inner
        }
        guard job.name == "NotificationHubJob" else {
            throw Invalid(message: "expected a <NotificationHubJob> element, found <\(job.name.prefix(64))>")
        }
        func text(_ name: String) -> String? {
            job.children.first(where: { $0.name == name }).map { $0.text.trimmingCharacters(in: .whitespacesAndNewlines) }
                .flatMap { $0.isEmpty ? nil : $0 }
        }
        guard let typeText = text("Type") else {
            throw Invalid(
                message: "<Type> is required: one of \(HubJob.Kind.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        guard let kind = HubJob.Kind(rawValue: typeText) else {
            throw Invalid(
                message: "<Type> '\(typeText.prefix(64))' is not one of \(HubJob.Kind.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        guard let output = text("OutputContainerUri") else {
            throw Invalid(message: "<OutputContainerUri> is required: a container URL of this hub (GET /{hub}/containers/{name})")
        }
        let importFile = text("ImportFileUri")
        if kind.isImport && importFile == nil {
            throw Invalid(message: "<ImportFileUri> is required for \(kind.rawValue): a blob URL in a container of this hub")
        }
        return Submission(kind: kind, outputContainerURI: output, importFileURI: kind.isImport ? importFile : nil)
    }

    /// DataContract's `DateTime` text: UTC with seven fractional digits.
    static func date(_ date: Date) -> String {
        let seconds = date.timeIntervalSince1970.rounded(.down)
        let ticks = Int(((date.timeIntervalSince1970 - seconds) * 10_000_000).rounded(.down))
        let base = Date.ISO8601FormatStyle(includingFractionalSeconds: false).format(Date(timeIntervalSince1970: seconds))
        return String(base.dropLast()) + "." + String(format: "%07ld", min(ticks, 9_999_999)) + "Z"
    }

    /// The `<NotificationHubJob>` element.
    static func description(_ job: HubJob) -> String {
        var xml = "<NotificationHubJob xmlns=\"\(RegistrationXML.descriptionNamespace)\" xmlns:i=\"\(RegistrationXML.instanceNamespace)\">"
        func add(_ name: String, _ value: String) { xml += "<\(name)>\(XMLText.escape(value))</\(name)>" }
        add("JobId", job.id)
        if job.progress > 0 {
            add("Progress", job.progress == job.progress.rounded() ? String(Int(job.progress)) : String(format: "%.2f", job.progress))
        }
        add("Type", job.kind.rawValue)
        if job.status != .started { add("Status", job.status.rawValue) }
        add("OutputContainerUri", job.outputContainerURI)
        if let importFile = job.importFileURI { add("ImportFileUri", importFile) }
        if let failure = job.failure { add("Failure", failure) }
        if !job.outputProperties.isEmpty {
            xml += "<OutputProperties xmlns:d2p1=\"\(arraysNamespace)\">"
            for (key, value) in job.outputProperties.sorted(by: { $0.key < $1.key }) {
                xml += "<d2p1:KeyValueOfstringstring><d2p1:Key>\(XMLText.escape(key))</d2p1:Key>"
                    + "<d2p1:Value>\(XMLText.escape(value))</d2p1:Value></d2p1:KeyValueOfstringstring>"
            }
            xml += "</OutputProperties>"
        }
        add("CreatedAt", date(job.createdAt))
        add("UpdatedAt", date(job.updatedAt))
        return xml + "</NotificationHubJob>"
    }

    static func atomDate(_ date: Date) -> String {
        Date.ISO8601FormatStyle(includingFractionalSeconds: false).format(date)
    }

    static func entryElement(_ job: HubJob, url: String, declaringAtom: Bool) -> String {
        let atom = declaringAtom ? " xmlns=\"\(RegistrationXML.atomNamespace)\"" : ""
        return "<entry\(atom)><id>\(XMLText.escape(url))</id><title type=\"text\">\(XMLText.escape(job.id))</title>"
            + "<published>\(atomDate(job.createdAt))</published><updated>\(atomDate(job.updatedAt))</updated>"
            + "<link rel=\"self\" href=\"\(XMLText.escapeAttribute(url))\"/>"
            + "<content type=\"application/xml\">\(description(job))</content></entry>"
    }

    /// One job as an Atom entry.
    static func entry(_ job: HubJob, url: String) -> String {
        "<?xml version=\"1.0\" encoding=\"utf-8\"?>" + entryElement(job, url: url, declaringAtom: true)
    }

    /// Jobs as an Atom feed.
    static func feed(_ jobs: [HubJob], url: String, updated: Date, jobURL: (HubJob) -> String) -> String {
        var xml = "<?xml version=\"1.0\" encoding=\"utf-8\"?><feed xmlns=\"\(RegistrationXML.atomNamespace)\">"
        xml += "<title type=\"text\">jobs</title><id>\(XMLText.escape(url))</id><updated>\(atomDate(updated))</updated>"
        xml += "<link rel=\"self\" href=\"\(XMLText.escapeAttribute(url))\"/>"
        for job in jobs { xml += entryElement(job, url: jobURL(job), declaringAtom: false) }
        return xml + "</feed>"
    }
}
