import AdapterKit
import Foundation
import Hummingbird
import NIOCore
import Synchronization
import _CryptoExtras

extension FCMEmulator {
    static let jwtBearerGrant = "urn:ietf:params:oauth:grant-type:jwt-bearer"
    static let messagingScope = "https://www.googleapis.com/auth/firebase.messaging"
    static let messageKeys: Set<String> = [
        "name", "data", "notification", "android", "webpush", "apns", "fcm_options", "token", "topic", "condition", "fid",
    ]
    static let androidKeys: Set<String> = [
        "collapse_key", "priority", "ttl", "restricted_package_name", "data", "notification", "fcm_options",
        "direct_boot_ok",
    ]
    /// The largest message, in bytes of the request without its target.
    static let maximumMessageBytes = 4096

    struct DropConnection: Error {}

    func serve(_ request: Request) async -> Response {
        var request = request
        let path = request.uri.path
        if path == "/token" {
            if let answer = recorder.faults.tokenAnswer { return answer.response }
            guard request.method == .post else { return Self.oauthError(.methodNotAllowed, "invalid_request", "use POST") }
            guard request.headers[.contentType]?.lowercased().hasPrefix("application/x-www-form-urlencoded") == true else {
                return rejectToken("invalid_request", "Content-Type must be application/x-www-form-urlencoded.")
            }
            let body = (try? await request.collectBody(upTo: 64 * 1024)) ?? ByteBuffer()
            return issueToken(body: body)
        }
        let prefix = "/v1/projects/"
        let suffix = "/messages:send"
        guard path.hasPrefix(prefix), path.hasSuffix(suffix), path.count > prefix.count + suffix.count else {
            return Self.googleError(404, "NOT_FOUND", "The requested URL \(path) was not found on this server.")
        }
        guard request.method == .post else {
            return Self.googleError(405, "METHOD_NOT_ALLOWED", "Use POST for messages:send.")
        }
        let faults = recorder.faults
        if faults.latency > .zero { try? await Task.sleep(for: faults.latency) }
        if let answer = faults.answer { return answer.response }
        switch faults.decide() {
        case .proceed: break
        case .serverError:
            return Self.googleError(500, "INTERNAL", "Internal error encountered.", errorCode: "INTERNAL")
        case .unavailable:
            return Self.googleError(
                503, "UNAVAILABLE", "The service is currently unavailable.", errorCode: "UNAVAILABLE",
                retryAfter: faults.retryAfterSeconds)
        case .throttle:
            return Self.googleError(
                429, "RESOURCE_EXHAUSTED", "Quota exceeded for quota metric 'Send requests'.",
                errorCode: "QUOTA_EXCEEDED", retryAfter: faults.retryAfterSeconds)
        case .dropConnection:
            // Hummingbird writes a head before the body: an interim one, so the client gets no answer at all.
            return Response(status: .earlyHints, body: ResponseBody { _ in throw DropConnection() })
        }

        // Authentication: a bearer token this emulator issued, not expired.
        let authorization = request.headers[.authorization] ?? ""
        let bearer = authorization.hasPrefix("Bearer ") ? String(authorization.dropFirst(7)) : ""
        let now = ContinuousClock.now
        let authenticated = state.withLock { state -> Bool in
            if let expiry = state.accessTokens[bearer], expiry > now { return true }
            state.unauthenticatedSends += 1
            return false
        }
        guard authenticated else {
            recorder.violation(bearer.isEmpty ? "send without a bearer token" : "send with an unknown or expired access token")
            return Self.googleError(
                401, "UNAUTHENTICATED",
                "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.")
        }
        let project = String(path.dropFirst(prefix.count).dropLast(suffix.count))
        guard project == configuration.projectID else {
            recorder.violation("send for project '\(project)'")
            return Self.googleError(
                403, "PERMISSION_DENIED",
                "Permission 'cloudmessaging.messages.create' denied on resource '//cloudresourcemanager.googleapis.com/projects/\(project)' (or it may not exist).")
        }
        guard request.headers[.contentType]?.lowercased().hasPrefix("application/json") == true else {
            recorder.violation("send without content-type application/json")
            return invalidArgument("Invalid Content-Type; expected application/json.")
        }
        guard let body = try? await request.collectBody(upTo: 1 << 20) else {
            return invalidArgument("Request body too large.")
        }
        guard case .object(let root)? = try? JSONValue(parsing: body.readableBytesView) else {
            recorder.violation("body is not a JSON object")
            return invalidArgument("Invalid JSON payload received.")
        }
        for key in root.keys where key != "message" && key != "validate_only" {
            return invalidArgument("Invalid JSON payload received. Unknown name \"\(key)\": Cannot find field.")
        }
        guard case .object(let message)? = root["message"] else {
            return invalidArgument("Request contains an invalid argument: message is required.", field: "message")
        }
        if let (field, description) = Self.violation(in: message) {
            return invalidArgument(description, field: field)
        }
        let token = message["token"]?.stringValue
        let fid = message["fid"]?.stringValue
        if let fid, !Self.isWellFormed(fid: fid) {
            recorder.violation("malformed installation ID")
            return invalidArgument("The installation ID is not a valid Firebase installation ID", field: "message.fid")
        }
        if let token, !Self.isWellFormed(token: token) {
            recorder.violation("malformed registration token")
            return invalidArgument("The registration token is not a valid FCM registration token", field: "message.token")
        }
        if let handle = token ?? fid {
            if body.readableBytes - handle.utf8.count > Self.maximumMessageBytes + 32 {
                recorder.violation("message too big")
                return invalidArgument("Message is too big", field: "message")
            }
            // A token whose device moved to a FID stops working, as FCM does once an app sends to the FID.
            if let token, state.withLock({ $0.supersededTokens[token] }) != nil {
                return Self.googleError(404, "NOT_FOUND", "Requested entity was not found.", errorCode: "UNREGISTERED")
            }
            switch state.withLock({ $0.tokenStates[handle] }) {
            case .unregistered?:
                return Self.googleError(404, "NOT_FOUND", "Requested entity was not found.", errorCode: "UNREGISTERED")
            case .senderMismatch?:
                return Self.googleError(
                    403, "PERMISSION_DENIED", "SenderId mismatch", errorCode: "SENDER_ID_MISMATCH")
            case .thirdPartyAuthError?:
                return Self.googleError(
                    401, "UNAUTHENTICATED", "Auth error from APNS or Web Push Service", errorCode: "THIRD_PARTY_AUTH_ERROR")
            case nil: break
            }
        }
        if case .bool(true)? = root["validate_only"] {
            return Self.json(.ok, #"{"name":"projects/\#(configuration.projectID)/messages/fake_message_id"}"#)
        }
        var headers: [String: String] = [:]
        for field in request.headers where field.name != .authorization {
            headers[field.name.canonicalName] = field.value
        }
        recorder.accept(FCMReceivedMessage(token: token ?? "", fid: fid, body: String(buffer: body), headers: headers))
        let number = state.withLock { state -> Int in
            state.messageCounter += 1
            return state.messageCounter
        }
        return Self.json(.ok, #"{"name":"projects/\#(configuration.projectID)/messages/\#(number)"}"#)
    }

    /// The first rule a message breaks, as (field, description), or `nil`.
    static func violation(in message: [String: JSONValue]) -> (String, String)? {
        for key in message.keys where !messageKeys.contains(key) {
            return ("message", "Invalid JSON payload received. Unknown name \"\(key)\" at 'message': Cannot find field.")
        }
        let targets = ["token", "topic", "condition", "fid"].filter { message[$0] != nil }
        guard targets.count == 1 else {
            return ("message", "Exactly one of token, topic, condition or fid must be specified; found \(targets.count).")
        }
        if let target = message[targets[0]], target.stringValue == nil {
            return ("message.\(targets[0])", "Invalid value at 'message.\(targets[0])': expected a string.")
        }
        if let data = message["data"], let problem = dataViolation(data, path: "message.data") { return problem }
        if let value = message["notification"] {
            guard case .object(let notification) = value else {
                return ("message.notification", "Invalid value at 'message.notification': expected an object.")
            }
            for (key, value) in notification {
                guard ["title", "body", "image"].contains(key) else {
                    return ("message.notification", "Invalid JSON payload received. Unknown name \"\(key)\" at 'message.notification': Cannot find field.")
                }
                if value.stringValue == nil {
                    return ("message.notification.\(key)", "Invalid value at 'message.notification.\(key)' (TYPE_STRING)")
                }
            }
        }
        if let value = message["android"] {
            guard case .object(let android) = value else {
                return ("message.android", "Invalid value at 'message.android': expected an object.")
            }
            for key in android.keys where !androidKeys.contains(key) {
                return ("message.android", "Invalid JSON payload received. Unknown name \"\(key)\" at 'message.android': Cannot find field.")
            }
            if let priority = android["priority"], !["NORMAL", "HIGH"].contains(priority.stringValue ?? "") {
                return ("message.android.priority", "Invalid value at 'message.android.priority' (type.googleapis.com/google.firebase.fcm.v1.AndroidMessagePriority)")
            }
            if let ttl = android["ttl"], !isDuration(ttl.stringValue ?? "") {
                return ("message.android.ttl", "Invalid value at 'message.android.ttl' (type.googleapis.com/google.protobuf.Duration)")
            }
            if let data = android["data"], let problem = dataViolation(data, path: "message.android.data") { return problem }
            if let notification = android["notification"], notification.objectValue == nil {
                return ("message.android.notification", "Invalid value at 'message.android.notification': expected an object.")
            }
            for key in ["collapse_key", "restricted_package_name"] where android[key] != nil && android[key]?.stringValue == nil {
                return ("message.android.\(key)", "Invalid value at 'message.android.\(key)' (TYPE_STRING)")
            }
        }
        for key in ["apns", "webpush", "fcm_options"] where message[key] != nil && message[key]?.objectValue == nil {
            return ("message.\(key)", "Invalid value at 'message.\(key)': expected an object.")
        }
        return nil
    }

    static func dataViolation(_ value: JSONValue, path: String) -> (String, String)? {
        guard case .object(let data) = value else { return (path, "Invalid value at '\(path)': expected a map of strings.") }
        for (key, value) in data {
            if key == "from" || key == "message_type" || key.hasPrefix("google") || key.hasPrefix("gcm") {
                return (path, "Invalid data payload key: \(key)")
            }
            if value.stringValue == nil {
                return ("\(path)[\(key)]", "Invalid value at '\(path)[0].value' (TYPE_STRING), \(value.jsonString())")
            }
        }
        return nil
    }

    /// A protobuf Duration in JSON: seconds with up to nine fractional digits and an `s`.
    static func isDuration(_ text: String) -> Bool {
        guard text.hasSuffix("s") else { return false }
        let number = text.dropLast().split(separator: ".", omittingEmptySubsequences: false)
        guard (1...2).contains(number.count), !number[0].isEmpty, number[0].allSatisfy(\.isASCII), number[0].allSatisfy(\.isNumber)
        else { return false }
        if number.count == 2 { return (1...9).contains(number[1].count) && number[1].allSatisfy { $0.isASCII && $0.isNumber } }
        return true
    }

    /// Registration tokens the emulator considers well-formed: 20 to 4096 of `A-Z a-z 0-9 _ - : .`.
    /// Whether `fid` is a Firebase installation ID: 22 URL-safe base64 characters whose first 4 bits are `0111`.
    public static func isWellFormed(fid: String) -> Bool {
        guard fid.utf8.count == 22, let first = fid.utf8.first, (UInt8(ascii: "c")...UInt8(ascii: "f")).contains(first)
        else { return false }
        return fid.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
        }
    }

    public static func isWellFormed(token: String) -> Bool {
        (20...4096).contains(token.utf8.count)
            && token.utf8.allSatisfy { byte in
                (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                    || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ":")
                    || byte == UInt8(ascii: ".")
            }
    }

    // MARK: Token endpoint

    func issueToken(body: ByteBuffer) -> Response {
        var form: [String: String] = [:]
        for pair in String(buffer: body).split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2 else { continue }
            func decode(_ text: Substring) -> String {
                text.replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String(text)
            }
            form[decode(parts[0])] = decode(parts[1])
        }
        guard form["grant_type"] == Self.jwtBearerGrant else {
            return rejectToken("unsupported_grant_type", "Invalid grant_type: \(form["grant_type"] ?? "")")
        }
        guard let assertion = form["assertion"] else { return rejectToken("invalid_request", "Missing required parameter: assertion") }
        let parts = assertion.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = Base64URL.decode(parts[0]), let claimBytes = Base64URL.decode(parts[1]),
            let signature = Base64URL.decode(parts[2]),
            case .object(let header)? = try? JSONValue(parsing: headerBytes),
            case .object(let claims)? = try? JSONValue(parsing: claimBytes)
        else { return rejectToken("invalid_grant", "Invalid JWT: malformed assertion.") }
        guard header["alg"]?.stringValue == "RS256" else { return rejectToken("invalid_grant", "Invalid JWT: alg must be RS256.") }
        if let kid = header["kid"], kid.stringValue != configuration.privateKeyID {
            return rejectToken("invalid_grant", "Invalid JWT Signature.")
        }
        let signingInput = Array(assertion.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
        guard configuration.publicKey.isValidSignature(
            _RSA.Signing.RSASignature(rawRepresentation: signature), for: signingInput, padding: .insecurePKCS1v1_5)
        else { return rejectToken("invalid_grant", "Invalid JWT Signature.") }
        guard claims["iss"]?.stringValue == configuration.clientEmail else {
            return rejectToken("invalid_grant", "Invalid JWT: iss is not this service account.")
        }
        let scopes = (claims["scope"]?.stringValue ?? "").split(separator: " ").map(String.init)
        guard scopes.contains(Self.messagingScope) else {
            return rejectToken("invalid_scope", "Invalid OAuth scope or ID token audience provided.")
        }
        let port = boundServicePort
        guard claims["aud"]?.stringValue == tokenURI(port: port) else {
            return rejectToken("invalid_grant", "Invalid JWT: aud must be the token_uri \(tokenURI(port: port)).")
        }
        guard case .number(let iat)? = claims["iat"], case .number(let exp)? = claims["exp"] else {
            return rejectToken("invalid_grant", "Invalid JWT: iat and exp are required numbers.")
        }
        let now = Date().timeIntervalSince1970
        guard iat <= now + configuration.clockSkew, exp > now - configuration.clockSkew else {
            return rejectToken("invalid_grant", "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim.")
        }
        guard exp > iat, exp - iat <= 3600 else {
            return rejectToken("invalid_grant", "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim.")
        }
        let token = "ya29.emu-" + (0..<4).map { _ in String(UInt64.random(in: .min ... .max), radix: 36) }.joined(separator: "-")
        let lifetime = configuration.accessTokenLifetime
        state.withLock { state in
            state.tokenRequests += 1
            state.accessTokens[token] = .now + lifetime
        }
        let seconds = max(0, Int(lifetime.components.seconds))
        return Self.json(.ok, #"{"access_token":"\#(token)","expires_in":\#(seconds),"token_type":"Bearer"}"#)
    }

    private func rejectToken(_ error: String, _ description: String) -> Response {
        state.withLock { $0.rejectedTokenRequests += 1 }
        recorder.violation("token request refused: \(error): \(description)")
        return Self.oauthError(.badRequest, error, description)
    }

    static func oauthError(_ status: HTTPResponse.Status, _ error: String, _ description: String) -> Response {
        json(status, JSONValue.object(["error": .string(error), "error_description": .string(description)]).jsonString())
    }

    // MARK: Responses

    func invalidArgument(_ message: String, field: String? = nil) -> Response {
        Self.googleError(400, "INVALID_ARGUMENT", message, errorCode: "INVALID_ARGUMENT", field: field)
    }

    /// Google's error body: `{"error": {"code", "message", "status", "details": [FcmError, BadRequest]}}`.
    static func googleError(
        _ code: Int, _ status: String, _ message: String, errorCode: String? = nil, field: String? = nil,
        retryAfter: Int? = nil
    ) -> Response {
        var details: [JSONValue] = []
        if let errorCode {
            details.append(["@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": .string(errorCode)])
        }
        if let field {
            details.append([
                "@type": "type.googleapis.com/google.rpc.BadRequest",
                "fieldViolations": [["field": .string(field), "description": .string(message)]],
            ])
        }
        var error: [String: JSONValue] = [
            "code": .number(Double(code)), "message": .string(message), "status": .string(status),
        ]
        if !details.isEmpty { error["details"] = .array(details) }
        var headers = HTTPFields()
        if let retryAfter, retryAfter > 0 { headers[.retryAfter] = "\(retryAfter)" }
        return json(HTTPResponse.Status(code: code), JSONValue.object(["error": .object(error)]).jsonString(), headers: headers)
    }

    static func json(_ status: HTTPResponse.Status, _ text: String, headers: HTTPFields = HTTPFields()) -> Response {
        var fields = headers
        fields[.contentType] = "application/json; charset=UTF-8"
        return Response(status: status, headers: fields, body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }
}
