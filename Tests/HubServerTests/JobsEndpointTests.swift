import Foundation
import HTTPTypes
@testable import HubServer
import HubTestSupport
import Hummingbird
import HummingbirdTesting
import NIOCore
import NotificationHub
import Testing

/// `/{hub}/jobs`: bulk registration jobs reading and writing the hub's own containers.
@Suite struct JobsEndpointTests {
    static let atom: HTTPFields = [.contentType: "application/atom+xml;type=entry;charset=utf-8"]

    /// A job entry as the .NET SDK writes it (`DataContractSerializer` inside an Atom entry).
    static func jobEntry(type: String, output: String, importFile: String? = nil) -> String {
        let importElement = importFile.map { "<ImportFileUri>\(XMLText.escape($0))</ImportFileUri>" } ?? ""
        return """
            <?xml version="1.0" encoding="utf-8"?><entry xmlns = "http://www.w3.org/2005/Atom"><content type = "application/xml">\
            <NotificationHubJob xmlns:i="http://www.w3.org/2001/XMLSchema-instance" xmlns="http://schemas.microsoft.com/netservices/2010/10/servicebus/connect">\
            <Type>\(type)</Type><OutputContainerUri>\(XMLText.escape(output))</OutputContainerUri>\(importElement)\
            </NotificationHubJob></content></entry>
            """
    }

    static func appleLine(_ handle: String, tags: String) -> String {
        "<AppleRegistrationDescription \(RegistrationFixtures.connect)><Tags>\(tags)</Tags><DeviceToken>\(handle)</DeviceToken></AppleRegistrationDescription>"
    }

    /// A blob's URL inside a container URL.
    static func blobURL(_ container: String, _ blob: String) -> String {
        let parts = container.split(separator: "?", maxSplits: 1)
        return "\(parts[0])/\(blob)?\(parts[1])"
    }

    /// The `<NotificationHubJob>` of an entry.
    static func job(_ response: TestResponse) throws -> XMLElement {
        let entry = try XMLReader().parse(Array(response.body.readableBytesView))
        #expect(entry.name == "entry")
        return try #require(entry.children.first { $0.name == "content" }?.children.first)
    }

    static func field(_ job: XMLElement, _ name: String) -> String? {
        job.children.first { $0.name == name }?.text
    }

    static func waitForEnd(_ harness: APITestHarness, _ id: String) async throws -> XMLElement {
        for _ in 0..<500 {
            let answer = try await harness.request(.get, "/demo/jobs/\(id)?api-version=2017-04")
            let job = try Self.job(answer)
            if ["Completed", "Failed"].contains(field(job, "Status") ?? "") { return job }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw HubError(.conflict, "job \(id) did not end")
    }

    @Test func importCreatesRegistrationsAndExportWritesThemAll() async throws {
        try await RegistrationEndpointTests.run { harness, _, _ async throws in
            let container = try await harness.request(.get, "/demo/containers/bulk")
            #expect(container.status == .ok)
            let containerURL = container.text
            #expect(containerURL.hasPrefix("http://localhost/blobs/demo.bulk?") && containerURL.contains("sp=rwl"))

            let lines = [Self.appleLine("dev-i1", tags: "bulk,a"), Self.appleLine("dev-i2", tags: "bulk"), "<NotAnything/>"]
            let importURL = Self.blobURL(containerURL, "import.txt")
            let upload = try await harness.request(
                .put, try FeedbackContainerTests.pathAndQuery(importURL), key: nil,
                headers: [HTTPField.Name("x-ms-blob-type")!: "BlockBlob"], body: lines.joined(separator: "\n"))
            #expect(upload.status == .created)

            let submitted = try await harness.request(
                .post, "/demo/jobs?api-version=2017-04", headers: Self.atom,
                body: Self.jobEntry(type: "ImportCreateRegistrations", output: containerURL, importFile: importURL))
            #expect(submitted.status == .created, "\(submitted.text)")
            #expect(submitted.headers[.contentType] == "application/atom+xml;type=entry;charset=utf-8")
            let created = try Self.job(submitted)
            let id = try #require(Self.field(created, "JobId"))
            #expect(submitted.headers[.location] == "http://localhost/demo/jobs/\(id)")
            #expect(Self.field(created, "Type") == "ImportCreateRegistrations")
            #expect(Self.field(created, "ImportFileUri") == importURL)
            // Members in the SDK's DataContract order.
            let order = ["JobId", "Progress", "Type", "Status", "OutputContainerUri", "ImportFileUri", "Failure", "OutputProperties", "CreatedAt", "UpdatedAt"]
            let names = created.children.map(\.name)
            #expect(names == order.filter(names.contains))

            let done = try await Self.waitForEnd(harness, id)
            #expect(Self.field(done, "Status") == "Completed")
            #expect(Self.field(done, "Progress") == "100")
            let properties = try #require(done.children.first { $0.name == "OutputProperties" })
            let pairs = properties.children.map { pair in
                (pair.children.first { $0.name == "Key" }?.text ?? "", pair.children.first { $0.name == "Value" }?.text ?? "")
            }
            #expect(Dictionary(uniqueKeysWithValues: pairs) == ["OutputFilePath": "\(id)-Output.txt", "FailedFilePath": "\(id)-Failed.txt"])

            let output = try await harness.request(
                .get, try FeedbackContainerTests.pathAndQuery(Self.blobURL(containerURL, "\(id)-Output.txt")), key: nil)
            #expect(output.text.split(separator: "\n").count == 2)
            let failed = try await harness.request(
                .get, try FeedbackContainerTests.pathAndQuery(Self.blobURL(containerURL, "\(id)-Failed.txt")), key: nil)
            #expect(failed.text.hasPrefix("3: InvalidRegistration"), "\(failed.text)")

            let tagged = try await harness.request(.get, "/demo/tags/bulk/registrations")
            #expect(tagged.text.contains("dev-i1") && tagged.text.contains("dev-i2"))

            let export = try await harness.request(
                .post, "/demo/jobs", headers: Self.atom, body: Self.jobEntry(type: "ExportRegistrations", output: containerURL))
            #expect(export.status == .created)
            let exportID = try #require(Self.field(try Self.job(export), "JobId"))
            #expect(Self.field(try await Self.waitForEnd(harness, exportID), "Status") == "Completed")
            let exported = try await harness.request(
                .get, try FeedbackContainerTests.pathAndQuery(Self.blobURL(containerURL, "\(exportID)-Output.txt")), key: nil)
            let exportedLines = exported.text.split(separator: "\n")
            #expect(exportedLines.count == 2)
            let handles = try exportedLines.map { try RegistrationXML.azure.parseDescription(XMLReader().parse(String($0))).registration.pushChannel.handle }
            #expect(Set(handles.compactMap { $0 }) == ["dev-i1", "dev-i2"])

            let listing = try await harness.request(.get, "/demo/jobs?api-version=2017-04")
            #expect(listing.status == .ok)
            let feed = try XMLReader().parse(Array(listing.body.readableBytesView))
            #expect(feed.name == "feed")
            let ids = feed.children.filter { $0.name == "entry" }.compactMap { entry in
                entry.children.first { $0.name == "content" }?.children.first.flatMap { Self.field($0, "JobId") }
            }
            #expect(ids == [id, exportID])
        }
    }

    @Test func updateUpsertAndDeleteImportsUseTheRegistrationIDs() async throws {
        try await RegistrationEndpointTests.run { harness, _, _ async throws in
            let created = try await harness.request(
                .post, "/demo/registrations", key: "listen", headers: RegistrationEndpointTests.atom,
                body: RegistrationEndpointTests.appleNative("dev-u1", tags: "old"))
            let id = try RegistrationEndpointTests.entry(created).registration.registrationID
            let containerURL = try await harness.request(.get, "/demo/containers/bulk").text
            func run(_ type: String, _ lines: [String]) async throws -> XMLElement {
                let importURL = Self.blobURL(containerURL, "\(type).txt")
                _ = try await harness.request(
                    .put, try FeedbackContainerTests.pathAndQuery(importURL), key: nil, body: lines.joined(separator: "\n"))
                let submitted = try await harness.request(
                    .post, "/demo/jobs", headers: Self.atom,
                    body: Self.jobEntry(type: type, output: containerURL, importFile: importURL))
                #expect(submitted.status == .created)
                return try await Self.waitForEnd(harness, try #require(Self.field(try Self.job(submitted), "JobId")))
            }
            func withID(_ line: String, _ id: String) -> String {
                line.replacingOccurrences(of: "<Tags>", with: "<RegistrationId>\(id)</RegistrationId><Tags>")
            }
            _ = try await run("ImportUpdateRegistrations", [withID(Self.appleLine("dev-u1", tags: "new"), id)])
            let updated = try await harness.request(.get, "/demo/registrations/\(id)")
            #expect(try RegistrationEndpointTests.entry(updated).registration.tags == ["new"])

            _ = try await run("ImportUpsertRegistrations", [withID(Self.appleLine("dev-u2", tags: "up"), "upserted-1")])
            #expect(try await harness.request(.get, "/demo/registrations/upserted-1").status == .ok)

            let deleted = try await run("ImportDeleteRegistrations", [withID(Self.appleLine("dev-u1", tags: "new"), id), withID(Self.appleLine("dev-u9", tags: "x"), "absent-1")])
            #expect(Self.field(deleted, "Status") == "Completed")
            #expect(try await harness.request(.get, "/demo/registrations/\(id)").status == .notFound)
            let failedName = try #require(deleted.children.first { $0.name == "OutputProperties" }?.children.compactMap { pair in
                pair.children.first { $0.name == "Key" }?.text == "FailedFilePath" ? pair.children.first { $0.name == "Value" }?.text : nil
            }.first)
            let failed = try await harness.request(
                .get, try FeedbackContainerTests.pathAndQuery(Self.blobURL(containerURL, failedName)), key: nil)
            #expect(failed.text.hasPrefix("2: NotFound"), "\(failed.text)")
        }
    }

    @Test func submissionsAreRefusedWithWhatToFix() async throws {
        try await RegistrationEndpointTests.run { harness, _, _ async throws in
            let containerURL = try await harness.request(.get, "/demo/containers/bulk").text
            let query = String(containerURL.split(separator: "?")[1])
            let cases: [(String, String, HTTPResponse.Status)] = [
                ("<entry", "InvalidJob", .badRequest),
                (Self.jobEntry(type: "ExportEverything", output: containerURL), "InvalidJob", .badRequest),
                ("<entry xmlns=\"http://www.w3.org/2005/Atom\"><content type=\"application/xml\"><NotificationHubJob><Type>ExportRegistrations</Type></NotificationHubJob></content></entry>", "InvalidJob", .badRequest),
                (Self.jobEntry(type: "ImportCreateRegistrations", output: containerURL), "InvalidJob", .badRequest),
                // Another host, another hub, a file URL, a tampered or missing token, the feedback container.
                (Self.jobEntry(type: "ExportRegistrations", output: "https://storage.example.net/blobs/demo.bulk?\(query)"), "InvalidContainerUri", .badRequest),
                (Self.jobEntry(type: "ExportRegistrations", output: "http://169.254.169.254/latest/meta-data"), "InvalidContainerUri", .badRequest),
                (Self.jobEntry(type: "ExportRegistrations", output: "http://localhost/blobs/other.bulk?\(query)"), "InvalidContainerUri", .badRequest),
                (Self.jobEntry(type: "ExportRegistrations", output: "file:///etc/passwd"), "InvalidContainerUri", .badRequest),
                (Self.jobEntry(type: "ExportRegistrations", output: FeedbackContainerTests.tampered(containerURL)), "InvalidContainerUri", .badRequest),
                (Self.jobEntry(type: "ExportRegistrations", output: "http://localhost/blobs/demo.bulk"), "InvalidContainerUri", .badRequest),
                (Self.jobEntry(type: "ImportCreateRegistrations", output: containerURL, importFile: Self.blobURL(containerURL, "missing.txt")), "ImportFileNotFound", .badRequest),
            ]
            for (body, code, status) in cases {
                let refused = try await harness.request(.post, "/demo/jobs", headers: Self.atom, body: body)
                #expect(refused.status == status, "\(body)")
                #expect(refused.errorCode == code, "\(refused.text)")
            }
            let feedback = try await harness.request(.get, "/demo/feedbackcontainer").text
            let intoFeedback = try await harness.request(
                .post, "/demo/jobs", headers: Self.atom, body: Self.jobEntry(type: "ExportRegistrations", output: feedback))
            #expect(intoFeedback.status == .badRequest)

            for key in ["listen", "send"] {
                let refused = try await harness.request(
                    .post, "/demo/jobs", key: key, headers: Self.atom, body: Self.jobEntry(type: "ExportRegistrations", output: containerURL))
                #expect(refused.status == .forbidden)
                #expect(try await harness.request(.get, "/demo/jobs", key: key).status == .forbidden)
            }
            let unknown = try await harness.request(.get, "/demo/jobs/00000000-0000-0000-0000-000000000000")
            #expect(unknown.status == .notFound)
            #expect(unknown.errorCode == "JobNotFound")
            #expect(try await harness.request(.get, "/demo/jobs/..%2F..%2Fetc").status == .notFound)

            let reserved = try await harness.request(.get, "/demo/containers/feedback")
            #expect(reserved.errorCode == "ReservedContainerName")
            let badName = try await harness.request(.get, "/demo/containers/Bad_Name")
            #expect(badName.errorCode == "InvalidContainerName")
            let badBlob = try await harness.request(.put, "/blobs/demo.bulk/.hidden?\(query)", key: nil, body: "x")
            #expect(badBlob.errorCode == "InvalidBlobName")
        }
    }

    @Test func jobsLeftRunningByAnEarlierProcessAreMarkedFailed() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("jobs-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let area = HubFileArea(root: root)
        let now = Date()
        let running = HubJob(
            id: UUID().uuidString.lowercased(), kind: .exportRegistrations, status: .running, progress: 10,
            outputContainerURI: "http://localhost/blobs/demo.bulk", importFileURI: nil, failure: nil, outputProperties: [:],
            createdAt: now, updatedAt: now)
        var completed = running
        completed.id = UUID().uuidString.lowercased()
        completed.status = .completed
        try HubOperations().save(running, in: area)
        try HubOperations().save(completed, in: area)

        let restarted = HubOperations()
        let jobs = Dictionary(uniqueKeysWithValues: restarted.jobs(in: area, now: now + 5).map { ($0.id, $0) })
        #expect(jobs[running.id]?.status == .failed)
        #expect(jobs[running.id]?.failure?.contains("interrupted") == true)
        #expect(jobs[completed.id]?.status == .completed)
    }

    @Test func jobXMLFollowsTheDataContract() throws {
        let date = Date(timeIntervalSince1970: 1_593_712_408.2009314)
        #expect(HubJobXML.date(date).hasPrefix("2020-07-02T17:53:28.200"))
        #expect(HubJobXML.date(date).count == "2020-07-02T18:03:28.2009314Z".count)
        let started = HubJob(
            id: "j", kind: .importUpsertRegistrations, status: .started, progress: 0, outputContainerURI: "http://h/c?a=1&b=2",
            importFileURI: nil, failure: nil, outputProperties: [:], createdAt: date, updatedAt: date)
        let xml = HubJobXML.description(started)
        // Status Started and Progress 0 are the defaults the serializer leaves out.
        #expect(!xml.contains("<Status>") && !xml.contains("<Progress>"))
        #expect(xml.contains("<OutputContainerUri>http://h/c?a=1&amp;b=2</OutputContainerUri>"))
        #expect(xml.contains("<Type>ImportUpsertRegistrations</Type>"))
    }
}
