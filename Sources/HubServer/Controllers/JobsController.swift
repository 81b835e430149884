import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NotificationHub

/// `/{hub}/jobs` (Manage): Azure's bulk registration jobs (`NotificationHubClient.SubmitNotificationHubJobAsync`,
/// `GetNotificationHubJobAsync`, `GetNotificationHubJobsAsync`), as Atom entries of `NotificationHubJob`.
///
/// | method | path |
/// |---|---|
/// | POST | `/{hub}/jobs` (an entry with `Type`, `OutputContainerUri` and, for imports, `ImportFileUri`) |
/// | GET | `/{hub}/jobs/{jobId}` |
/// | GET | `/{hub}/jobs` |
///
/// `OutputContainerUri` must be a container URL this hub issued (`GET /{hub}/containers/{name}`) allowing writes;
/// `ImportFileUri` a blob in such a container allowing reads. Any other URL is refused with 400
/// `InvalidContainerUri`: the hub never fetches a URL it is given.
struct JobsController {
    let api: HubAPI

    static let entryContentType = "application/atom+xml;type=entry;charset=utf-8"
    static let feedContentType = "application/atom+xml;type=feed;charset=utf-8"

    var operations: HubOperations { api.directory.operations }

    var routes: RouteCollection<HubContext> {
        let routes = RouteCollection(context: HubContext.self)
        let manage = routes.group().add(middleware: CallerRequirement.manage)
        manage.post("jobs") { try await submit($0, $1) }
        manage.get("jobs") { try await list($0, $1) }
        manage.get("jobs/{jobId}") { try await get($0, $1) }
        return routes
    }

    func jobURL(_ job: HubJob, hub: Hub, request: Request) -> String {
        "\(operations.origin(of: request))/\(hub.name)/jobs/\(job.id)"
    }

    func submit(_ request: Request, _ context: HubContext) async throws -> Response {
        let hub = context.hub
        let body = try await api.body(request)
        let submission: HubJobXML.Submission
        do {
            submission = try HubJobXML.parseSubmission(body.readableBytesView)
        } catch {
            throw APIError.badRequest("InvalidJob", error.message)
        }
        let now = api.clock.now()
        let origin = operations.origin(of: request)
        let output: ContainerURL
        var importFile: ContainerURL?
        do {
            output = try ContainerURL.parse(
                submission.outputContainerURI, field: "OutputContainerUri", hub: hub, origin: origin, needed: .write,
                wantsBlob: false, now: now)
            if let uri = submission.importFileURI {
                importFile = try ContainerURL.parse(
                    uri, field: "ImportFileUri", hub: hub, origin: origin, needed: .read, wantsBlob: true, now: now)
            }
        } catch {
            throw APIError.badRequest("InvalidContainerUri", error.message)
        }
        guard output.container != PNSFeedbackFiles.container else {
            throw APIError.badRequest("InvalidContainerUri", "OutputContainerUri: the feedback container is read-only")
        }
        let area = operations.area(for: hub)
        if let importFile, let blob = importFile.blob, area.read(blob, in: importFile.container) == nil {
            throw APIError.badRequest(
                "ImportFileNotFound", "ImportFileUri: the container '\(importFile.container)' has no blob '\(blob)'; upload it first (PUT to the blob's URL)")
        }
        operations.markInterrupted(in: area, now: now)
        let job = HubJob(
            id: UUID().uuidString.lowercased(), kind: submission.kind, status: .started, progress: 0,
            outputContainerURI: submission.outputContainerURI, importFileURI: submission.importFileURI, failure: nil,
            outputProperties: [:], createdAt: now, updatedAt: now)
        try operations.save(job, in: area)
        let runner = HubJobRunner(hub: hub, area: area, operations: operations, clock: api.clock, logger: context.logger)
        let importURL = importFile
        operations.perform { await runner.run(job, output: output, importFile: importURL) }
        let url = jobURL(job, hub: hub, request: request)
        return Response(
            status: .created, headers: [.contentType: Self.entryContentType, .location: url],
            body: .init(byteBuffer: ByteBuffer(string: HubJobXML.entry(job, url: url))))
    }

    func get(_ request: Request, _ context: HubContext) async throws -> Response {
        let hub = context.hub
        let id = try APIPath.decode(context.parameters.require("jobId"))
        guard let job = operations.job(id, in: operations.area(for: hub), now: api.clock.now()) else {
            throw APIError(.notFound, code: "JobNotFound", message: "the hub has no job '\(id.prefix(100))'")
        }
        let url = jobURL(job, hub: hub, request: request)
        return Response(
            status: .ok, headers: [.contentType: Self.entryContentType, .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(string: HubJobXML.entry(job, url: url))))
    }

    func list(_ request: Request, _ context: HubContext) async throws -> Response {
        let hub = context.hub
        let now = api.clock.now()
        let jobs = operations.jobs(in: operations.area(for: hub), now: now)
        let xml = HubJobXML.feed(jobs, url: "\(operations.origin(of: request))/\(hub.name)/jobs", updated: now) {
            jobURL($0, hub: hub, request: request)
        }
        return Response(
            status: .ok, headers: [.contentType: Self.feedContentType, .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(string: xml)))
    }
}
