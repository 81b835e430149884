import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NotificationHub

/// `POST /{hub}/receipts`: a device app reports that a notification was `delivered`, `opened` or `dismissed` on
/// one of its installations, with the Listen key or its user's bearer token (then only for the user's own
/// installations). Idempotent per notification, installation and kind; rate-limited per installation and per hub.
/// An unknown notification, one not sent to the installation, and an installation the caller does not reach get
/// the same `404`.
struct ReceiptsController {
    let api: HubAPI
    let limiter = ReceiptLimiter()

    /// A receipt's body at most, in bytes.
    static let maximumBodyBytes = 4096

    var routes: RouteCollection<HubContext> {
        let routes = RouteCollection(context: HubContext.self)
        routes.post("receipts") { try await receipt($0, $1) }
        return routes
    }

    struct ReceiptBody: Decodable {
        var notificationId: String?
        var installationId: String?
        var kind: String?
    }

    struct Answer: Encodable {
        /// Whether this receipt was new (`false`: the device reported this kind before; nothing changed).
        var recorded: Bool
    }

    func receipt(_ request: Request, _ context: HubContext) async throws -> Response {
        // The Listen key (under the hub's listenKey policy), a key with Manage, or the device user's bearer token.
        let registrant = try context.registrant()
        let buffer: ByteBuffer
        do {
            buffer = try await request.body.collect(upTo: Self.maximumBodyBytes)
        } catch {
            throw APIError(
                .contentTooLarge, code: "ReceiptTooLarge", message: "a receipt's body has at most \(Self.maximumBodyBytes) bytes")
        }
        guard let body = try? JSONDecoder().decode(ReceiptBody.self, from: Data(buffer.readableBytesView)) else {
            throw APIError.badRequest(
                "InvalidReceipt", #"send a JSON object: {"notificationId": "…", "installationId": "…", "kind": "delivered|opened|dismissed"}"#)
        }
        guard let notificationID = body.notificationId, !notificationID.isEmpty,
            let installationID = body.installationId, !installationID.isEmpty
        else {
            throw APIError.badRequest("InvalidReceipt", "a receipt names its notificationId and installationId")
        }
        // An installation id that no installation can have is refused before it takes a rate-limit bucket. (A
        // malformed notification id gets the answer of an unknown one below.)
        try Identifier.validate(installationID, as: .installationID)
        guard let kindText = body.kind, let kind = ReceiptKind(rawValue: kindText) else {
            throw APIError.badRequest(
                "InvalidReceipt",
                "kind must be one of: \(ReceiptKind.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        let hub = context.hub
        if let wait = limiter.take(hub: hub.name, installation: installationID, now: api.clock.now()) {
            throw APIError(
                .tooManyRequests, code: "TooManyReceipts",
                message: "too many receipts from this installation or hub; retry after \(wait) s",
                headers: [.retryAfter: String(wait)])
        }
        let recorded: Bool
        do {
            recorded = try await hub.recordReceipt(
                ReceiptReport(notificationID: notificationID, installationID: installationID, kind: kind), as: registrant)
        } catch let error as HubError where error == Hub.receiptRefused {
            throw APIError(.notFound, code: "ReceiptRefused", message: error.message)
        }
        return try api.json(Answer(recorded: recorded), status: recorded ? .created : .ok)
    }
}
