import Foundation
import Logging
import NotificationHub

/// Runs one ``HubJob`` to its end, recording progress and state in its record as it goes.
///
/// Export writes every registration (installations' projections included) as one description per line to
/// `<jobId>-Output.txt`. Imports read the import file, one registration description per line (Azure's format:
/// what `RegistrationDescription.Serialize()` writes); each line's result goes to `<jobId>-Output.txt` (the stored
/// registration) or `<jobId>-Failed.txt` (`<line number>: <reason>`).
struct HubJobRunner: Sendable {
    let hub: Hub
    let area: HubFileArea
    let operations: HubOperations
    let clock: any WallClock
    let logger: Logger

    /// Largest import file read, in bytes.
    static let maximumImportBytes = 64 * 1024 * 1024
    /// Registrations read per page when exporting.
    static let exportPageSize = 500

    func run(_ submitted: HubJob, output: ContainerURL, importFile: ContainerURL?) async {
        var job = submitted
        job.status = .running
        job.updatedAt = clock.now()
        job.outputProperties = [HubJob.outputFileKey: job.outputFile, HubJob.failedFileKey: job.failedFile]
        save(job)
        do {
            if job.kind == .exportRegistrations {
                try await export(&job, to: output.container)
            } else if let importFile, let blob = importFile.blob {
                try await importRegistrations(&job, from: blob, in: importFile.container, to: output.container)
            }
            job.status = .completed
            job.progress = 100
        } catch is CancellationError {
            job.status = .failed
            job.failure = "the job was cancelled when the hub stopped; submit it again"
        } catch let error as HubJobFailure {
            job.status = .failed
            job.failure = error.message
        } catch {
            job.status = .failed
            job.failure = "the job failed: \(type(of: error)); see the hub's log"
            logger.error("job failed", metadata: ["hub.name": "\(hub.name)", "job.id": "\(job.id)", "error": "\(error)"])
        }
        job.updatedAt = clock.now()
        save(job)
    }

    private func save(_ job: HubJob) {
        do {
            try operations.save(job, in: area)
        } catch {
            logger.error("job record not written", metadata: ["job.id": "\(job.id)", "error": "\(error)"])
        }
    }

    private func export(_ job: inout HubJob, to container: String) async throws {
        var lines: [String] = []
        var cursor: RegistrationCursor?
        repeat {
            try Task.checkCancellation()
            let page = try await hub.installations.registrations(
                .all, after: cursor, limit: Self.exportPageSize, reachableBy: .unrestricted)
            lines += page.registrations.map(hub.installations.registrationXML.description)
            cursor = page.next
        } while cursor != nil
        try write(lines, to: job.outputFile, in: container)
        try write([], to: job.failedFile, in: container)
    }

    private func importRegistrations(_ job: inout HubJob, from blob: String, in input: String, to container: String) async throws {
        // The size first: a file an admin put in the container may be larger than any upload, and is not read then.
        guard let size = area.size(of: blob, in: input) else {
            throw HubJobFailure(message: "the import file '\(blob)' does not exist in container '\(input)'")
        }
        guard size <= Self.maximumImportBytes, let data = area.read(blob, in: input) else {
            throw HubJobFailure(message: "the import file is larger than \(Self.maximumImportBytes) bytes; split it")
        }
        let lines = String(decoding: data, as: UTF8.self).split(omittingEmptySubsequences: false, whereSeparator: \.isNewline)
        var succeeded: [String] = []
        var failed: [String] = []
        for (index, line) in lines.enumerated() {
            try Task.checkCancellation()
            let text = line.trimmingCharacters(in: .whitespaces)
            if text.isEmpty { continue }
            do {
                let stored = try await apply(job.kind, line: text)
                succeeded.append(stored.map(hub.installations.registrationXML.description) ?? text)
            } catch let error as HubError {
                failed.append("\(index + 1): \(error.code.rawValue): \(error.message)")
            }
            if index % 100 == 99 {
                job.progress = (Double(index + 1) * 100 / Double(lines.count) * 100).rounded() / 100
                job.updatedAt = clock.now()
                save(job)
            }
        }
        try write(succeeded, to: job.outputFile, in: container)
        try write(failed, to: job.failedFile, in: container)
    }

    /// Applies one line; returns the stored registration (nothing for a delete). A ``HubError`` refuses the line;
    /// any other error fails the job.
    private func apply(_ kind: HubJob.Kind, line: String) async throws -> Registration? {
        let element = try XMLReader().parse(line)
        let registration = try hub.installations.registrationXML.parseDescription(element).registration
        switch kind {
        case .importCreateRegistrations:
            return try await hub.installations.createRegistration(registration)
        case .importUpdateRegistrations:
            guard !registration.registrationID.isEmpty else {
                throw HubError(.invalidRegistration, "an update needs the <RegistrationId> of an existing registration")
            }
            return try await hub.installations.putRegistration(registration, condition: .exists)
        case .importUpsertRegistrations:
            if registration.registrationID.isEmpty { return try await hub.installations.createRegistration(registration) }
            return try await hub.installations.putRegistration(registration, condition: .unconditional)
        case .importDeleteRegistrations:
            guard !registration.registrationID.isEmpty else {
                throw HubError(.invalidRegistration, "a delete needs the <RegistrationId> of the registration")
            }
            guard try await hub.installations.deleteRegistration(id: registration.registrationID, condition: .unconditional)
            else { throw HubError(.notFound, "registration '\(registration.registrationID.prefix(300))' does not exist") }
            return nil
        case .exportRegistrations:
            return nil
        }
    }

    private func write(_ lines: [String], to blob: String, in container: String) throws {
        let text = lines.isEmpty ? "" : lines.joined(separator: "\n") + "\n"
        try area.write(Data(text.utf8), to: blob, in: container)
    }
}

/// Why a job failed, as its `Failure` says.
struct HubJobFailure: Error, Sendable {
    var message: String
}
