import Foundation
import MultipartKit
import NIOCore
import NotificationHub

/// The body of a batch direct send (`POST /{hub}/messages/$batch?direct`): a `multipart/mixed` message with a
/// `notification` part (the payload, with its own Content-Type) and a `devices` part (a JSON array of handles).
struct BatchMultipart {
    /// The most handles one batch may name.
    static let maximumDevices = 1000

    var notification: ByteBuffer
    var contentType: String
    var devices: [String]

    private struct Part {
        var headers: [String: String] = [:]
        var body = ByteBuffer()

        /// The part's name from `Content-Disposition: inline; name="…"`.
        var name: String? {
            guard let disposition = headers["content-disposition"] else { return nil }
            for parameter in disposition.split(separator: ";").dropFirst() {
                let pair = parameter.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
                if pair.count == 2, pair[0].lowercased() == "name" {
                    return pair[1].trimmingCharacters(in: CharacterSet(charactersIn: "\""))
                }
            }
            return nil
        }
    }

    /// Parses the body; every problem is an ``APIError`` naming what to fix.
    static func parse(_ body: ByteBuffer, contentType: String) throws -> BatchMultipart {
        guard contentType.lowercased().hasPrefix("multipart/"), let boundary = boundary(of: contentType) else {
            throw APIError.badRequest(
                "InvalidBatch", "Content-Type must be multipart/mixed with a boundary parameter, e.g. multipart/mixed; boundary=batch")
        }
        var parts: [Part] = []
        var current = Part()
        let parser = MultipartParser(boundary: boundary)
        parser.onHeader = { name, value in current.headers[name.lowercased()] = value }
        parser.onBody = { buffer in current.body.writeBuffer(&buffer) }
        parser.onPartComplete = {
            parts.append(current)
            current = Part()
        }
        do {
            try parser.execute(body)
        } catch {
            throw APIError.badRequest("InvalidBatch", "the multipart body is malformed (boundary '\(boundary)')")
        }
        guard let notification = parts.first(where: { $0.name == "notification" }) else {
            throw APIError.badRequest(
                "InvalidBatch", "the batch needs a part with Content-Disposition: inline; name=notification holding the payload")
        }
        guard let devicesPart = parts.first(where: { $0.name == "devices" }) else {
            throw APIError.badRequest(
                "InvalidBatch", "the batch needs a part with Content-Disposition: inline; name=devices holding a JSON array of handles")
        }
        guard let devices = try? JSONDecoder().decode([String].self, from: Data(devicesPart.body.readableBytesView)) else {
            throw APIError.badRequest("InvalidBatch", "the devices part must be a JSON array of device handle strings")
        }
        guard !devices.isEmpty, devices.count <= maximumDevices else {
            throw APIError.badRequest("InvalidBatch", "a batch names 1 to \(maximumDevices) devices; this one names \(devices.count)")
        }
        if let empty = devices.firstIndex(where: \.isEmpty) {
            throw APIError.badRequest("InvalidBatch", "device handle #\(empty + 1) is empty")
        }
        return BatchMultipart(
            notification: notification.body, contentType: notification.headers["content-type"] ?? "application/json",
            devices: devices)
    }

    /// The `boundary` parameter of a Content-Type.
    static func boundary(of contentType: String) -> String? {
        for parameter in contentType.split(separator: ";").dropFirst() {
            let pair = parameter.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            if pair.count == 2, pair[0].lowercased() == "boundary" {
                let value = pair[1].trimmingCharacters(in: CharacterSet(charactersIn: "\""))
                return value.isEmpty ? nil : value
            }
        }
        return nil
    }
}

/// Azure's `NotificationOutcome`: the per-device result of a test send.
struct TestSendOutcome: Encodable {
    struct Result: Encodable {
        var applicationPlatform: String
        var pnsHandle: String
        var registrationId: String?
        var outcome: String
        var reason: String?
    }

    var success: Int
    var failure: Int
    var results: [Result]

    init(_ results: [TestSendResult]) {
        success = results.filter { $0.outcome == .success }.count
        failure = results.count - success
        self.results = results.map {
            Result(
                applicationPlatform: $0.platform.name, pnsHandle: $0.handle, registrationId: $0.installationID,
                outcome: $0.outcome.name, reason: $0.reason)
        }
    }

    /// The outcome in Azure's XML shape.
    func xml() -> String {
        var text = #"<NotificationOutcome xmlns="http://schemas.microsoft.com/netservices/2010/10/servicebus/connect">"#
        text += "<Success>\(success)</Success><Failure>\(failure)</Failure><Results>"
        for result in results {
            text += "<RegistrationResult><ApplicationPlatform>\(XMLText.escape(result.applicationPlatform))</ApplicationPlatform>"
            text += "<PnsHandle>\(XMLText.escape(result.pnsHandle))</PnsHandle>"
            text += "<RegistrationId>\(XMLText.escape(result.registrationId ?? ""))</RegistrationId>"
            text += "<Outcome>\(XMLText.escape(result.outcome))</Outcome></RegistrationResult>"
        }
        return text + "</Results></NotificationOutcome>"
    }
}
