import AdapterKit
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import Synchronization

extension ADMEmulator {
    /// The largest `data` ADM accepts, written without white space ("Send a Message": "up to 6 KB").
    static let maximumDataBytes = 6 * 1024
    /// The longest consolidation key ("Send a Message": "may not be greater than 64 characters").
    static let maximumConsolidationKeyLength = 64
    /// `expiresAfter` bounds ("Send a Message": from 60 seconds to 2,678,400 seconds, 31 days).
    static let expiresAfterRange = 60.0...2_678_400.0
    /// The request type ADM's send API takes (`X-Amzn-Type-Version`).
    static let messageType = "com.amazon.device.messaging.ADMMessage@1.0"
    /// The answer type ADM's send API gives (`X-Amzn-Accept-Type`, and `X-Amzn-Type-Version` of its answer).
    static let resultType = "com.amazon.device.messaging.ADMSendResult@1.0"

    struct DropConnection: Error {}

    func serve(_ request: Request) async -> Response {
        var request = request
        let path = request.uri.path
        if path == "/auth/o2/token" {
            if let answer = recorder.faults.tokenAnswer { return answer.response }
            guard request.method == .post else { return Self.oauthError(.methodNotAllowed, "invalid_request", "use POST") }
            guard request.headers[.contentType]?.lowercased().hasPrefix("application/x-www-form-urlencoded") == true else {
                recorder.violation("token request without a form body")
                return Self.oauthError(.badRequest, "invalid_request", "the body must be application/x-www-form-urlencoded")
            }
            let body = (try? await request.collectBody(upTo: 64 * 1024)) ?? ByteBuffer()
            return issueToken(form: EmulatorHTTP.form(String(buffer: body)))
        }
        let prefix = "/messaging/registrations/"
        let suffix = "/messages"
        guard path.hasPrefix(prefix), path.hasSuffix(suffix), path.count > prefix.count + suffix.count else {
            return Self.answer(.notFound, reason: "NotFound")
        }
        guard request.method == .post else { return Self.answer(.methodNotAllowed, reason: "MethodNotAllowed") }
        let faults = recorder.faults
        if faults.latency > .zero { try? await Task.sleep(for: faults.latency) }
        if let answer = faults.answer { return answer.response }
        switch faults.decide() {
        case .proceed: break
        case .serverError: return Self.answer(.internalServerError, reason: "InternalServerError")
        case .unavailable: return Self.answer(.serviceUnavailable, reason: "ServiceUnavailable", retryAfter: faults.retryAfterSeconds)
        case .throttle: return Self.answer(.tooManyRequests, reason: "MaxRateExceeded", retryAfter: faults.retryAfterSeconds)
        case .dropConnection: return Response(status: .earlyHints, body: ResponseBody { _ in throw DropConnection() })
        }

        let segment = String(path.dropFirst(prefix.count).dropLast(suffix.count))
        // The id is one path segment: "/" inside it arrives percent-encoded.
        guard !segment.contains("/"), let registrationID = segment.removingPercentEncoding else {
            recorder.violation("registration id not encoded as one path segment")
            return Self.answer(.badRequest, reason: "InvalidRegistrationId")
        }
        let authorization = request.headers[.authorization] ?? ""
        let bearer = authorization.hasPrefix("Bearer ") ? String(authorization.dropFirst(7)) : ""
        let expiry = state.withLock { $0.accessTokens[bearer] }
        guard let expiry else {
            recorder.violation(bearer.isEmpty ? "send without a bearer token" : "send with a token the emulator did not issue")
            return Self.answer(.unauthorized, reason: "AccessTokenExpired")
        }
        guard expiry > .now else { return Self.answer(.unauthorized, reason: "AccessTokenExpired") }
        let typeVersion = request.headers[HTTPField.Name("X-Amzn-Type-Version")!]
        let acceptType = request.headers[HTTPField.Name("X-Amzn-Accept-Type")!]
        guard typeVersion == Self.messageType, acceptType == Self.resultType else {
            recorder.violation("X-Amzn-Type-Version '\(typeVersion ?? "")' or X-Amzn-Accept-Type '\(acceptType ?? "")' is not ADM's")
            return Self.answer(.badRequest, reason: "InvalidType")
        }
        guard request.headers[.accept]?.lowercased().contains("application/json") == true,
            request.headers[.contentType]?.lowercased().hasPrefix("application/json") == true
        else {
            recorder.violation("send without Accept and Content-Type application/json")
            return Self.answer(.badRequest, reason: "InvalidType")
        }
        guard let body = try? await request.collectBody(upTo: 1 << 20),
            case .object(let root)? = try? JSONValue(parsing: body.readableBytesView),
            case .object(let dataMembers)? = root["data"]
        else {
            recorder.violation("body is not a JSON object with a data object")
            return Self.answer(.badRequest, reason: "InvalidData")
        }
        var data: [String: String] = [:]
        for (key, value) in dataMembers {
            guard let text = value.stringValue else {
                recorder.violation("data.\(key) is not a string")
                return Self.answer(.badRequest, reason: "InvalidData")
            }
            data[key] = text
        }
        if let unknown = root.keys.first(where: { !["data", "consolidationKey", "expiresAfter", "md5"].contains($0) }) {
            recorder.violation("unknown member '\(unknown)'")
            return Self.answer(.badRequest, reason: "InvalidData")
        }
        // The page counts keys, values, their quotes, colons, commas and braces, but no white space.
        guard JSONValue.object(dataMembers).jsonString().utf8.count <= Self.maximumDataBytes else {
            recorder.violation("data larger than 6 KB")
            return Self.answer(.contentTooLarge, reason: "MessageTooLarge")
        }
        var consolidationKey: String?
        if let key = root["consolidationKey"] {
            guard let text = key.stringValue, !text.isEmpty, text.count <= Self.maximumConsolidationKeyLength else {
                recorder.violation("consolidationKey is not a string of at most 64 characters")
                return Self.answer(.badRequest, reason: "InvalidConsolidationKey")
            }
            consolidationKey = text
        }
        var expiresAfter: Int?
        if let expires = root["expiresAfter"] {
            guard case .number(let seconds) = expires, Self.expiresAfterRange.contains(seconds), seconds.rounded() == seconds else {
                recorder.violation("expiresAfter is not whole seconds from 60 to 2678400")
                return Self.answer(.badRequest, reason: "InvalidExpiration")
            }
            expiresAfter = Int(seconds)
        }
        let checksum = Self.checksum(of: data)
        if let md5 = root["md5"], md5.stringValue != checksum {
            recorder.violation("md5 does not match the data")
            return Self.answer(.badRequest, reason: "InvalidChecksum")
        }
        let verdict = state.withLock { state -> (reason: String?, answeredID: String) in
            state.sendRequests += 1
            if !Self.looksLikeRegistrationID(registrationID) || state.invalid.contains(registrationID)
                || (!configuration.acceptsUnknownRegistrations && !state.known.contains(registrationID)
                    && state.replacements[registrationID] == nil)
            {
                return ("InvalidRegistrationId", registrationID)
            }
            if state.unregistered.contains(registrationID) { return ("Unregistered", registrationID) }
            return (nil, state.replacements[registrationID] ?? registrationID)
        }
        if let reason = verdict.reason { return Self.answer(.badRequest, reason: reason) }
        recorder.accept(
            Received(registrationID: registrationID, data: data, consolidationKey: consolidationKey, expiresAfter: expiresAfter))
        var headers = HTTPFields()
        headers[HTTPField.Name("X-Amzn-RequestId")!] = UUID().uuidString.lowercased()
        headers[HTTPField.Name("X-Amzn-Data-md5")!] = checksum
        headers[HTTPField.Name("X-Amzn-Type-Version")!] = Self.resultType
        return EmulatorHTTP.json(
            .ok, JSONValue.object(["registrationID": .string(verdict.answeredID)]).jsonString(), headers: headers)
    }

    func issueToken(form: [String: String]) -> Response {
        guard form["grant_type"] == "client_credentials" else {
            recorder.violation("token request with grant_type '\(form["grant_type"] ?? "")'")
            return Self.oauthError(.badRequest, "unsupported_grant_type", "grant_type must be client_credentials")
        }
        guard form["scope"] == "messaging:push" else {
            recorder.violation("token request with scope '\(form["scope"] ?? "")'")
            return Self.oauthError(.badRequest, "invalid_scope", "ADM's scope is messaging:push")
        }
        guard form["client_id"] == configuration.clientID, form["client_secret"] == configuration.clientSecret else {
            recorder.violation("token request with a wrong client id or secret")
            return Self.oauthError(.unauthorized, "invalid_client", "Client authentication failed")
        }
        let token = "Atc|" + UUID().uuidString.replacingOccurrences(of: "-", with: "")
        let lifetime = configuration.accessTokenLifetime
        state.withLock { state in
            state.tokenRequests += 1
            state.accessTokens[token] = .now + lifetime
        }
        let body = JSONValue.object([
            "access_token": .string(token), "expires_in": .number(Double(lifetime.components.seconds)),
            "scope": "messaging:push", "token_type": "bearer",
        ]).jsonString()
        return EmulatorHTTP.json(.ok, body)
    }

    /// Registration ids as the emulator accepts them: `amzn1.adm-registration.` and letters, digits and `.-_+/=`,
    /// at most 2,048 characters.
    static func looksLikeRegistrationID(_ id: String) -> Bool {
        let prefix = "amzn1.adm-registration."
        let allowed = Set(".-_+/=".utf8)
        return id.hasPrefix(prefix) && id.utf8.count > prefix.utf8.count && id.utf8.count <= 2048
            && id.utf8.allSatisfy { (48...57).contains($0) || (65...90).contains($0) || (97...122).contains($0) || allowed.contains($0) }
    }

    /// The data's checksum as ADM reports it in `X-Amzn-Data-md5`: the base64 MD5 of the pairs sorted by key,
    /// each written `key:value`, joined with `,` (the construction Amazon's client sample verifies).
    public static func checksum(of data: [String: String]) -> String {
        let text = data.keys.sorted().map { "\($0):\(data[$0] ?? "")" }.joined(separator: ",")
        return Data(Insecure.MD5.hash(data: Data(text.utf8))).base64EncodedString()
    }

    /// ADM's error answer: `{"reason"}`, the reason also in `X-Amzn-ErrorType`.
    static func answer(_ status: HTTPResponse.Status, reason: String, retryAfter: Int? = nil) -> Response {
        var headers = HTTPFields()
        if let retryAfter, retryAfter > 0 { headers[.retryAfter] = "\(retryAfter)" }
        headers[HTTPField.Name("X-Amzn-ErrorType")!] = "\(reason):http://internal.amazon.com/coral/com.amazon.device.messaging/"
        headers[HTTPField.Name("X-Amzn-RequestId")!] = UUID().uuidString.lowercased()
        return EmulatorHTTP.json(status, JSONValue.object(["reason": .string(reason)]).jsonString(), headers: headers)
    }

    /// The token endpoint's error (RFC 6749 §5.2): `{"error", "error_description"}`.
    static func oauthError(_ status: HTTPResponse.Status, _ error: String, _ description: String) -> Response {
        EmulatorHTTP.json(
            status, JSONValue.object(["error": .string(error), "error_description": .string(description)]).jsonString())
    }
}
