import Foundation
import Logging
import HTTPTypes
import Hummingbird
import NIOCore
import NotificationHub

/// An error answered to an API client: an HTTP status, a machine-readable code and a message that says what to fix,
/// written in Azure's XML or in JSON as the client asks (``response(from:context:)``).
public struct APIError: HTTPResponseError, Sendable, CustomStringConvertible {
    /// The HTTP status.
    public var status: HTTPResponse.Status
    /// The machine-readable code, e.g. `InvalidTag`.
    public var code: String
    /// What to fix. Never holds secrets or payloads.
    public var message: String
    /// Extra response headers (e.g. `WWW-Authenticate`).
    public var headers: HTTPFields

    /// Creates an error.
    public init(_ status: HTTPResponse.Status, code: String, message: String, headers: HTTPFields = [:]) {
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers
    }

    public var description: String { "\(status.code) \(code): \(message)" }

    /// 401 with the reason.
    public static func unauthorized(_ message: String) -> APIError {
        APIError(.unauthorized, code: "Unauthorized", message: message)
    }

    /// 403 naming the missing right.
    public static func forbidden(_ right: AccessRight) -> APIError {
        APIError(.forbidden, code: "Forbidden", message: "this operation needs a key with the \(right.rawValue) right")
    }

    /// 404 for an unknown hub.
    public static func unknownHub(_ name: String) -> APIError {
        APIError(.notFound, code: "HubNotFound", message: "there is no hub named '\(name)'")
    }

    /// 400 with a code.
    public static func badRequest(_ code: String, _ message: String) -> APIError {
        APIError(.badRequest, code: code, message: message)
    }

    /// Maps a core error to its status.
    public init(_ error: HubError) {
        let status: HTTPResponse.Status =
            switch error.code {
            case .notFound, .securePushDisabled: .notFound
            case .payloadTooLarge: .contentTooLarge
            case .conflict: .conflict
            case .userMismatch, .userTokenRequired: .forbidden
            case .preconditionFailed: .preconditionFailed
            case .storageFailure: .internalServerError
            case .storeFull: .serviceUnavailable
            default: .badRequest
            }
        var headers: HTTPFields = [:]
        // A full disk is freed by an operator, not by the next request: ask for a retry after a while.
        if error.code == .storeFull { headers[.retryAfter] = String(Self.storeFullRetrySeconds) }
        self.init(status, code: error.code.rawValue, message: error.message, headers: headers)
    }

    /// The `Retry-After` of a `503 StoreFull`.
    static let storeFullRetrySeconds = 30

    /// The answer: Azure's `<Error><Code>{status}</Code><Detail>{message}</Detail></Error>` (the body Azure's SDKs
    /// read the message from), with the machine-readable code in `<ErrorCode>`, or
    /// `{"error": {"code": …, "message": …}}` to a client that asks for JSON (``ResponseFormat``).
    public func response(from request: Request, context: some RequestContext) throws -> Response {
        var headers = self.headers
        let body: ByteBuffer
        switch ResponseFormat(request) {
        case .json:
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            body = ByteBuffer(bytes: try encoder.encode(["error": ["code": code, "message": message]]))
            headers[.contentType] = "application/json; charset=utf-8"
        case .xml:
            body = ByteBuffer(string: xml(trackingID: Self.trackingID(of: request)))
            headers[.contentType] = "application/xml; charset=utf-8"
        }
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: body))
    }

    /// The error in Azure's XML. Azure ends `Detail` with the request's `TrackingId` (which its SDKs send with
    /// every request), so a .NET developer can quote it; the hub does the same.
    func xml(trackingID: String?) -> String {
        var detail = message
        if let trackingID { detail += ". TrackingId:\(trackingID)" }
        return #"<?xml version="1.0" encoding="utf-8"?>"#
            + "<Error><Code>\(status.code)</Code><Detail>\(XMLText.escape(detail))</Detail>"
            + "<ErrorCode>\(XMLText.escape(code))</ErrorCode></Error>"
    }

    /// The request's `TrackingId` when it is one an SDK makes (a GUID or similar: 1–64 letters, digits, `-` and
    /// `_`), else `nil`: a client's header is never echoed unchecked.
    static func trackingID(of request: Request) -> String? {
        guard let value = request.headers[trackingIDHeader], (1...64).contains(value.utf8.count),
            value.utf8.allSatisfy({ $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") || (0x30...0x39).contains($0)
                || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) })
        else { return nil }
        return value
    }

    static let trackingIDHeader = HTTPField.Name("TrackingId")!
}

/// Turns every error a handler throws into an ``APIError`` response, so no request ends in an empty 500.
struct APIErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as APIError {
            throw error
        } catch let error as HubError {
            throw APIError(error)
        } catch let error as HTTPError {
            switch error.status {
            case .notFound:
                throw APIError(.notFound, code: "NotFound", message: "no endpoint matches \(request.method) \(request.uri.path)")
            case .contentTooLarge:
                throw APIError(.contentTooLarge, code: "RequestTooLarge", message: "the request body is larger than this hub accepts")
            case .methodNotAllowed:
                throw APIError(.methodNotAllowed, code: "MethodNotAllowed", message: "\(request.method) is not allowed on \(request.uri.path)")
            default:
                throw APIError(error.status, code: "HTTPError", message: error.body ?? error.status.reasonPhrase)
            }
        } catch {
            if let full = StoreCondition.storeFull(error) { throw APIError(full) }
            context.logger.error("request failed", metadata: ["error.type": "\(type(of: error))", "error": "\(error)"])
            throw APIError(.internalServerError, code: "InternalError", message: "the hub failed to process the request; it was logged")
        }
    }
}
