import AdapterKit
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import Synchronization

extension HMSEmulator {
    /// The most tokens one message may name.
    static let maximumTokens = 1000
    /// The largest message body without its tokens, in bytes.
    static let maximumMessageBytes = 4096

    struct DropConnection: Error {}

    func serve(_ request: Request) async -> Response {
        var request = request
        let path = request.uri.path
        if path == "/oauth2/v3/token" {
            if let answer = recorder.faults.tokenAnswer { return answer.response }
            guard request.method == .post else { return Self.oauthError(.methodNotAllowed, 1102, 20001, "method not allowed") }
            guard request.headers[.contentType]?.lowercased().hasPrefix("application/x-www-form-urlencoded") == true else {
                recorder.violation("token request without a form body")
                return Self.oauthError(.badRequest, 1102, 20001, "invalid request")
            }
            let body = (try? await request.collectBody(upTo: 64 * 1024)) ?? ByteBuffer()
            return issueToken(form: Self.form(String(buffer: body)))
        }
        let prefix = "/v1/"
        let suffix = "/messages:send"
        guard path.hasPrefix(prefix), path.hasSuffix(suffix), path.count > prefix.count + suffix.count else {
            return Self.answer(.notFound, code: "80100001", msg: "Service not found")
        }
        guard request.method == .post else { return Self.answer(.methodNotAllowed, code: "80100001", msg: "use POST") }
        let faults = recorder.faults
        if faults.latency > .zero { try? await Task.sleep(for: faults.latency) }
        if let answer = faults.answer { return answer.response }
        switch faults.decide() {
        case .proceed: break
        case .serverError:
            return Self.answer(.internalServerError, code: "81000001", msg: "System internal error")
        case .unavailable, .throttle:
            return Self.answer(
                .serviceUnavailable, code: "80600003", msg: "Request rate too high", retryAfter: faults.retryAfterSeconds)
        case .dropConnection:
            return Response(status: .earlyHints, body: ResponseBody { _ in throw DropConnection() })
        }

        let appID = String(path.dropFirst(prefix.count).dropLast(suffix.count))
        let authorization = request.headers[.authorization] ?? ""
        let bearer = authorization.hasPrefix("Bearer ") ? String(authorization.dropFirst(7)) : ""
        let expiry = state.withLock { $0.accessTokens[bearer] }
        guard let expiry, appID == configuration.appID else {
            recorder.violation(bearer.isEmpty ? "send without a bearer token" : "send with a token not issued for app '\(appID)'")
            return Self.answer(.unauthorized, code: "80200001", msg: "Oauth authentication error")
        }
        guard expiry > .now else {
            return Self.answer(.unauthorized, code: "80200003", msg: "Oauth Token expired")
        }
        guard request.headers[.contentType]?.lowercased().hasPrefix("application/json") == true else {
            recorder.violation("send without content-type application/json")
            return Self.answer(.badRequest, code: "80100003", msg: "Illegal payload, Content-Type must be application/json")
        }
        guard let body = try? await request.collectBody(upTo: 1 << 20),
            case .object(let root)? = try? JSONValue(parsing: body.readableBytesView),
            case .object(var message)? = root["message"]
        else {
            recorder.violation("body is not a JSON object with a message")
            return Self.answer(.badRequest, code: "80100003", msg: "Illegal payload, message is required")
        }
        guard case .array(let tokenValues)? = message.removeValue(forKey: "token"),
            (1...Self.maximumTokens).contains(tokenValues.count)
        else {
            recorder.violation("message.token is not an array of 1 to 1000 tokens")
            return Self.answer(.badRequest, code: "80300010", msg: "The number of tokens in the message body exceeds the default value")
        }
        let tokens = tokenValues.compactMap(\.stringValue)
        guard tokens.count == tokenValues.count else {
            return Self.answer(.badRequest, code: "80100003", msg: "Illegal payload, token must be strings")
        }
        if let data = message["data"], data.stringValue == nil {
            recorder.violation("message.data is not a string")
            return Self.answer(.badRequest, code: "80100003", msg: "Illegal payload, data must be a JSON string")
        }
        let androidNotification = message["android"]?.objectValue?["notification"]
        guard message["data"] != nil || message["notification"] != nil || androidNotification != nil else {
            recorder.violation("message without data or notification")
            return Self.answer(.badRequest, code: "80100003", msg: "Illegal payload, message must contain data or notification")
        }
        let messageText = JSONValue.object(message).jsonString()
        let tokenBytes = tokens.reduce(0) { $0 + $1.utf8.count + 3 }
        guard body.readableBytes - tokenBytes <= Self.maximumMessageBytes else {
            recorder.violation("message body too large")
            return Self.answer(.badRequest, code: "80300008", msg: "The message body size exceeds the default value")
        }
        if root["validate_only"] == .bool(true) {
            return Self.answer(.ok, code: "80000000", msg: "Success")
        }
        let illegal = state.withLock { state -> [String] in
            state.sendRequests += 1
            state.batchSizes.append(tokens.count)
            return tokens.filter { state.illegalTokens.contains($0) || !Self.looksLikeToken($0) }
        }
        let illegalSet = Set(illegal)
        for token in tokens where !illegalSet.contains(token) {
            recorder.accept(Received(token: token, message: messageText))
        }
        if illegal.isEmpty { return Self.answer(.ok, code: "80000000", msg: "Success") }
        let detail = JSONValue.object([
            "success": .number(Double(tokens.count - illegal.count)), "failure": .number(Double(illegal.count)),
            "illegal_tokens": .array(illegal.map { .string($0) }),
        ]).jsonString()
        if illegal.count == tokens.count {
            return Self.answer(.badRequest, code: "80300007", msg: detail)
        }
        return Self.answer(.ok, code: "80100000", msg: detail)
    }

    func issueToken(form: [String: String]) -> Response {
        guard form["grant_type"] == "client_credentials" else {
            recorder.violation("token request with grant_type '\(form["grant_type"] ?? "")'")
            return Self.oauthError(.badRequest, 1102, 20001, "invalid request")
        }
        guard form["client_id"] == configuration.appID, form["client_secret"] == configuration.clientSecret else {
            recorder.violation("token request with a wrong client id or secret")
            return Self.oauthError(.badRequest, 1101, 20152, "invalid client")
        }
        let token = "HMS" + UUID().uuidString.replacingOccurrences(of: "-", with: "")
        let lifetime = configuration.accessTokenLifetime
        state.withLock { state in
            state.tokenRequests += 1
            state.accessTokens[token] = .now + lifetime
        }
        let body = JSONValue.object([
            "access_token": .string(token), "expires_in": .number(Double(lifetime.components.seconds)),
            "token_type": "Bearer",
        ]).jsonString()
        return Self.json(.ok, body)
    }

    /// Push tokens as the emulator accepts them: 32 to 512 characters of letters, digits and `-_.:+/=`.
    static func looksLikeToken(_ token: String) -> Bool {
        let allowed = Set("-_.:+/=".utf8)
        return (32...512).contains(token.utf8.count)
            && token.utf8.allSatisfy { (48...57).contains($0) || (65...90).contains($0) || (97...122).contains($0) || allowed.contains($0) }
    }

    /// A form body's fields (see ``EmulatorHTTP/form(_:)``).
    static func form(_ text: String) -> [String: String] { EmulatorHTTP.form(text) }

    /// Push Kit's answer: `{"code", "msg", "requestId"}`.
    static func answer(_ status: HTTPResponse.Status, code: String, msg: String, retryAfter: Int? = nil) -> Response {
        var headers = HTTPFields()
        if let retryAfter, retryAfter > 0 { headers[.retryAfter] = "\(retryAfter)" }
        let body = JSONValue.object([
            "code": .string(code), "msg": .string(msg),
            "requestId": .string(String(UUID().uuidString.prefix(18))),
        ]).jsonString()
        return json(status, body, headers: headers)
    }

    /// The OAuth endpoint's error: `{"error", "sub_error", "error_description"}`.
    static func oauthError(_ status: HTTPResponse.Status, _ error: Int, _ subError: Int, _ description: String) -> Response {
        json(
            status,
            JSONValue.object([
                "error": .number(Double(error)), "sub_error": .number(Double(subError)),
                "error_description": .string(description),
            ]).jsonString())
    }

    static func json(_ status: HTTPResponse.Status, _ text: String, headers: HTTPFields = HTTPFields()) -> Response {
        EmulatorHTTP.json(status, text, headers: headers)
    }

    /// The admin API (plain HTTP on its own port):
    ///
    /// - `GET /_emulator/hms/stats`: `{"accepted", "sendRequests", "tokenRequests"}`
    /// - `GET /_emulator/violations`: rule violations, as strings
    /// - `POST /_emulator/reset`: clears records, faults and illegal tokens
    /// - `POST /_emulator/faults`: as the other emulators (`latencyMilliseconds`, `throttleRate`, …)
    /// - `POST /_emulator/hms/illegal`: `{"tokens": [...]}` marks tokens illegal
    /// - `POST /_emulator/hms/expire-access-tokens`
    func serveAdmin(_ request: Request) async -> Response {
        var request = request
        let body = (try? await request.collectBody(upTo: 4 << 20)) ?? ByteBuffer()
        let json = try? JSONValue(parsing: body.readableBytesView)
        switch (request.method, request.uri.path) {
        case (.get, "/_emulator/hms/stats"):
            return Self.json(
                .ok, #"{"accepted":\#(recorder.acceptedCount),"sendRequests":\#(sendRequestCount),"tokenRequests":\#(tokenRequestCount)}"#)
        case (.get, "/_emulator/violations"):
            return Self.json(.ok, JSONValue.array(recorder.violations.map { .string($0) }).jsonString())
        case (.post, "/_emulator/reset"):
            reset()
            return Self.json(.ok, "{}")
        case (.post, "/_emulator/faults"):
            guard case .object(let object)? = json else { return Self.json(.badRequest, #"{"error":"expected a JSON object"}"#) }
            setFaults(FaultInjection(adminSettings: object))
            return Self.json(.ok, "{}")
        case (.post, "/_emulator/hms/illegal"):
            let tokens = json?.objectValue?["tokens"]?.arrayValue?.compactMap(\.stringValue) ?? []
            markIllegal(tokens)
            return Self.json(.ok, #"{"marked":\#(tokens.count)}"#)
        case (.post, "/_emulator/hms/expire-access-tokens"):
            expireAccessTokens()
            return Self.json(.ok, "{}")
        default:
            return Self.json(.notFound, #"{"error":"unknown admin endpoint"}"#)
        }
    }
}
