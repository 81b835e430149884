import AdapterKit
import Foundation
import NIOCore
import NIOHTTP1
import Synchronization

extension WNSEmulator {
    static let maximumPayloadBytes = 5000
    static let types: [String: String?] = [
        "wns/toast": "toast", "wns/tile": "tile", "wns/badge": "badge", "wns/raw": nil,
    ]

    /// Answers a request on the TLS port.
    func handle(_ request: WNSHTTPRequest) -> WNSHTTPResponse {
        let path = request.path
        if path == "/accesstoken.srf" { return tokenEndpoint(request) }
        if path.hasSuffix("/oauth2/v2.0/token") { return entraTokenEndpoint(request) }
        if path == "/w/" || path == "/w" { return channelEndpoint(request) }
        return WNSHTTPResponse(status: .notFound)
    }

    // MARK: Token endpoint

    private func tokenError(_ error: String, _ description: String) -> WNSHTTPResponse {
        recorder.violation("token request: \(description)")
        return .json(.badRequest, #"{"error":"\#(error)","error_description":"\#(description)"}"#)
    }

    func tokenEndpoint(_ request: WNSHTTPRequest) -> WNSHTTPResponse {
        if let answer = recorder.faults.tokenAnswer { return WNSHTTPResponse(answer) }
        guard request.method == .POST else {
            recorder.violation("token request: method \(request.method) instead of POST")
            return WNSHTTPResponse(status: .methodNotAllowed)
        }
        guard let contentType = request.headers.first(name: "Content-Type"),
            contentType.lowercased().hasPrefix("application/x-www-form-urlencoded")
        else {
            return tokenError("invalid_request", "Content-Type must be application/x-www-form-urlencoded")
        }
        let form = WNSHTTPRequest.parseForm(String(buffer: request.body))
        guard form["grant_type"] == "client_credentials" else {
            return tokenError("unsupported_grant_type", "grant_type must be client_credentials")
        }
        guard form["scope"] == "notify.windows.com" else {
            return tokenError("invalid_scope", "scope must be notify.windows.com")
        }
        guard form["client_id"] == settings.packageSID, form["client_secret"] == settings.clientSecret else {
            return tokenError("invalid_client", "Invalid client id or client secret")
        }
        return issueToken(prefix: "EgB", tokenType: "bearer", entra: false)
    }

    /// Issues an access token valid for channel requests.
    private func issueToken(prefix: String, tokenType: String, entra: Bool) -> WNSHTTPResponse {
        let token = prefix + Self.randomHex(24)
        let (lifetime, asString) = state.withLock { state -> (Duration, Bool) in
            state.tokenRequests += 1
            state.tokens[token] = Date() + Double(state.tokenLifetime.components.seconds)
            if entra {
                state.entraTokenRequests += 1
                state.entraTokens.insert(token)
            }
            return (state.tokenLifetime, state.expiresInAsString)
        }
        let seconds = lifetime.components.seconds
        let expiresIn = asString ? "\"\(seconds)\"" : "\(seconds)"
        var body = #"{"token_type":"\#(tokenType)","expires_in":\#(expiresIn)"#
        if entra { body += #","ext_expires_in":\#(expiresIn)"# }
        return .json(.ok, body + #","access_token":"\#(token)"}"#)
    }

    // MARK: Entra token endpoint

    func entraError(_ status: HTTPResponseStatus, _ error: String, _ code: String, _ description: String) -> WNSHTTPResponse {
        recorder.violation("Entra token request: \(code): \(description)")
        let body = JSONValue.object([
            "error": .string(error), "error_description": .string("\(code): \(description)"),
            "error_codes": .array([.number(Double(code.dropFirst(6)) ?? 0)]),
        ]).jsonString()
        return .json(status, body)
    }

    /// `POST /{tenant}/oauth2/v2.0/token`: Microsoft Entra ID's client-credentials grant for a Windows App SDK app.
    /// Checks the tenant in the path, the form's content type and fields, the scope and the client's credentials (a
    /// client secret, or a client assertion signed with a registered certificate: see
    /// ``checkClientAssertion(_:type:app:now:)``), each with the `AADSTS` code Entra answers.
    func entraTokenEndpoint(_ request: WNSHTTPRequest) -> WNSHTTPResponse {
        if let answer = recorder.faults.tokenAnswer { return WNSHTTPResponse(answer) }
        guard request.method == .POST else {
            return entraError(.methodNotAllowed, "invalid_request", "AADSTS900561", "The endpoint only accepts POST requests.")
        }
        let segments = request.path.split(separator: "/", omittingEmptySubsequences: false)
        // "", tenant, "oauth2", "v2.0", "token"
        guard segments.count == 5, let app = settings.entra, segments[1] == Substring(app.tenantID) else {
            let tenant = segments.count > 1 ? String(segments[1].prefix(64)) : ""
            return entraError(
                .badRequest, "invalid_request", "AADSTS90002", "Tenant '\(tenant)' not found. Check the tenant id in the token URL.")
        }
        guard let contentType = request.headers.first(name: "Content-Type"),
            contentType.lowercased().hasPrefix("application/x-www-form-urlencoded")
        else {
            return entraError(
                .badRequest, "invalid_request", "AADSTS900144",
                "The request body must be application/x-www-form-urlencoded.")
        }
        let form = WNSHTTPRequest.parseForm(String(buffer: request.body))
        guard let grant = form["grant_type"] else {
            return entraError(.badRequest, "invalid_request", "AADSTS900144", "The request body must contain the parameter: 'grant_type'.")
        }
        guard grant == "client_credentials" else {
            return entraError(.badRequest, "unsupported_grant_type", "AADSTS70003", "The app requested an unsupported grant type '\(grant.prefix(40))'.")
        }
        guard let scope = form["scope"] else {
            return entraError(.badRequest, "invalid_request", "AADSTS900144", "The request body must contain the parameter: 'scope'.")
        }
        guard scope == "https://wns.windows.com/.default" else {
            return entraError(
                .badRequest, "invalid_scope", "AADSTS1002012",
                "The provided value for scope '\(scope.prefix(80))' is not valid. Client credential flows must have a scope value with /.default suffixed to the resource identifier: https://wns.windows.com/.default.")
        }
        guard let clientID = form["client_id"] else {
            return entraError(.badRequest, "invalid_request", "AADSTS900144", "The request body must contain the parameter: 'client_id'.")
        }
        guard clientID == app.clientID else {
            return entraError(
                .badRequest, "unauthorized_client", "AADSTS700016",
                "Application with identifier '\(clientID.prefix(64))' was not found in the directory '\(app.tenantID)'.")
        }
        if let assertion = form["client_assertion"] {
            guard form["client_secret"] == nil else {
                return entraError(
                    .badRequest, "invalid_request", "AADSTS90023",
                    "Send either client_secret or client_assertion, not both.")
            }
            if let refusal = checkClientAssertion(assertion, type: form["client_assertion_type"], app: app) {
                return refusal
            }
            return issueToken(prefix: "eyJ0eXAiOiJKV1Qi.", tokenType: "Bearer", entra: true)
        }
        guard let secret = form["client_secret"], !secret.isEmpty else {
            return entraError(
                .unauthorized, "invalid_client", "AADSTS7000216", "'client_assertion' or 'client_secret' is required for the 'client_credentials' grant type.")
        }
        // An app with certificate credentials only has no secret: every secret is invalid.
        guard let expected = app.clientSecret, secret == expected else {
            return entraError(
                .unauthorized, "invalid_client", "AADSTS7000215",
                "Invalid client secret provided. Ensure the secret being sent in the request is the client secret value, not the client secret ID.")
        }
        return issueToken(prefix: "eyJ0eXAiOiJKV1Qi.", tokenType: "Bearer", entra: true)
    }

    // MARK: Channel endpoint

    private func wnsError(
        _ status: HTTPResponseStatus, _ description: String, violation: Bool = true, extra: HTTPHeaders = [:]
    ) -> WNSHTTPResponse {
        if violation { recorder.violation("notification: \(description)") }
        var headers = extra
        headers.add(name: "X-WNS-Error-Description", value: description)
        headers.add(name: "X-WNS-Debug-Trace", value: "emulator-\(Self.randomHex(4))")
        return WNSHTTPResponse(status: status, headers: headers)
    }

    func channelEndpoint(_ request: WNSHTTPRequest) -> WNSHTTPResponse {
        let faults = recorder.faults
        var response = checkChannelRequest(request)
        if faults.latency > .zero {
            let (seconds, attoseconds) = faults.latency.components
            response.delay = .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
        }
        return response
    }

    private func checkChannelRequest(_ request: WNSHTTPRequest) -> WNSHTTPResponse {
        guard request.method == .POST else {
            return wnsError(.methodNotAllowed, "Notifications must be sent with POST")
        }
        // Faults: a raw answer, scripted ones, then rates.
        let faults = recorder.faults
        if let answer = faults.answer { return WNSHTTPResponse(answer) }
        if let scripted = state.withLock({ $0.scripted.isEmpty ? nil : $0.scripted.removeFirst() }) {
            var headers: HTTPHeaders = [:]
            if let seconds = scripted.retryAfterSeconds { headers.add(name: "Retry-After", value: "\(seconds)") }
            if let date = scripted.retryAfterDate {
                let formatter = DateFormatter()
                formatter.locale = Locale(identifier: "en_US_POSIX")
                formatter.timeZone = TimeZone(identifier: "GMT")
                formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
                headers.add(name: "Retry-After", value: formatter.string(from: date))
            }
            return wnsError(
                HTTPResponseStatus(statusCode: scripted.status), "Injected fault", violation: false, extra: headers)
        }
        switch faults.decide() {
        case .proceed: break
        case .dropConnection:
            var response = WNSHTTPResponse(status: .ok)
            response.dropConnection = true
            return response
        case .serverError:
            return wnsError(.internalServerError, "Internal server error", violation: false)
        case .unavailable:
            return wnsError(
                .serviceUnavailable, "Service unavailable", violation: false,
                extra: ["Retry-After": "\(faults.retryAfterSeconds)"])
        case .throttle:
            return wnsError(
                .notAcceptable, "Throttle limit exceeded", violation: false,
                extra: ["Retry-After": "\(faults.retryAfterSeconds)"])
        }

        // Authorization: a bearer token issued here and not expired.
        guard let authorization = request.headers.first(name: "Authorization"),
            authorization.count > 7, authorization.prefix(7).lowercased() == "bearer "
        else {
            return wnsError(.unauthorized, "Missing or malformed Authorization header; send Authorization: Bearer <token>")
        }
        let token = String(authorization.dropFirst(7))
        let channelID = request.query["token"] ?? ""
        let (expiry, channel, entraApp) = state.withLock { state in
            (state.tokens[token], state.channels[channelID], state.entraTokens.contains(token))
        }
        guard let expiry else {
            return wnsError(.unauthorized, "Invalid token")
        }
        if expiry <= Date() {
            return wnsError(
                .unauthorized, "Token expired", violation: false,
                extra: ["WWW-Authenticate": #"Bearer error="invalid_request",error_description="Token expired""#])
        }

        // The channel.
        let channelState = channel ?? (settings.acceptUnknownChannels && !channelID.isEmpty ? .active : nil)
        switch channelState {
        case nil, .unknown:
            return wnsError(.notFound, "The channel URI is not valid or is not recognized by WNS", violation: false)
        case .expired:
            return wnsError(.gone, "The channel expired", violation: false)
        case .otherApp:
            return wnsError(.forbidden, "The channel URI does not belong to the authenticated app", violation: false)
        case .active, .dropped, .throttled:
            break
        }

        // The notification.
        guard let typeHeader = request.headers.first(name: "X-WNS-Type") else {
            return wnsError(.badRequest, "X-WNS-Type is missing")
        }
        guard let root = Self.types[typeHeader] else {
            return wnsError(.badRequest, "X-WNS-Type '\(typeHeader.prefix(40))' is not valid")
        }
        // Windows App SDK apps (tokens from Entra ID) receive raw and toast notifications only.
        if entraApp, typeHeader == "wns/tile" || typeHeader == "wns/badge" {
            return wnsError(.badRequest, "\(typeHeader) is not supported for Windows App SDK apps; send wns/raw or wns/toast")
        }
        let contentType = request.headers.first(name: "Content-Type")?.lowercased() ?? ""
        let expectedContentType = root == nil ? "application/octet-stream" : "text/xml"
        guard contentType.hasPrefix(expectedContentType) else {
            return wnsError(.badRequest, "Content-Type must be \(expectedContentType) for \(typeHeader), not '\(contentType.prefix(60))'")
        }
        if request.body.readableBytes > Self.maximumPayloadBytes {
            return wnsError(.payloadTooLarge, "The notification payload exceeds \(Self.maximumPayloadBytes) bytes")
        }
        if request.body.readableBytes == 0 {
            return wnsError(.badRequest, "The notification payload is empty")
        }
        let payload = String(buffer: request.body)
        if let root {
            // A fan-out sends the same document many times: remember the roots of documents already found well-formed.
            let known = xmlDocuments.withLock { $0[request.body] }
            let found: String?
            if let known {
                found = known
            } else {
                if let problem = Self.encodingProblem(request.body) {
                    return wnsError(.badRequest, problem)
                }
                do {
                    try XMLWellFormedness.check(payload, what: "the payload", code: .invalidNotification)
                } catch {
                    return wnsError(.badRequest, "The XML payload is not well-formed")
                }
                found = Self.rootElement(payload)
                xmlDocuments.withLock { documents in
                    if documents.count >= 256 { documents.removeAll(keepingCapacity: true) }
                    documents[request.body] = found ?? ""
                }
            }
            guard found == root else {
                return wnsError(.badRequest, "The XML root element <\(found ?? "?")> does not match \(typeHeader)")
            }
        }
        if let policy = request.headers.first(name: "X-WNS-Cache-Policy"), policy != "cache", policy != "no-cache" {
            return wnsError(.badRequest, "X-WNS-Cache-Policy must be cache or no-cache")
        }
        if let ttl = request.headers.first(name: "X-WNS-TTL"), UInt32(ttl) == nil {
            return wnsError(.badRequest, "X-WNS-TTL must be an integer")
        }
        let requestForStatus = request.headers.first(name: "X-WNS-RequestForStatus")
        if let requestForStatus, requestForStatus != "true", requestForStatus != "false" {
            return wnsError(.badRequest, "X-WNS-RequestForStatus must be true or false")
        }
        for name in ["X-WNS-Tag", "X-WNS-Group"] {
            if let value = request.headers.first(name: name), value.isEmpty || value.utf8.count > 16 {
                return wnsError(.badRequest, "\(name) must be 1 to 16 characters")
            }
        }

        var headers: HTTPHeaders = ["X-WNS-Debug-Trace": "emulator-\(Self.randomHex(4))"]
        switch channelState {
        case .dropped?:
            headers.add(name: "X-WNS-Status", value: "dropped")
            return WNSHTTPResponse(status: .ok, headers: headers)
        case .throttled?:
            headers.add(name: "X-WNS-Status", value: "channelthrottled")
            return WNSHTTPResponse(status: .ok, headers: headers)
        default:
            break
        }
        let messageID = Self.randomHex(8)
        var passthrough: [String: String] = [:]
        for (name, value) in request.headers where name.lowercased().hasPrefix("x-wns-") && name.lowercased() != "x-wns-type" {
            passthrough[name] = value
        }
        recorder.accept(
            Received(
                channel: channelID, type: typeHeader, contentType: contentType, headers: passthrough, payload: payload,
                messageID: messageID))
        headers.add(name: "X-WNS-Status", value: "received")
        headers.add(name: "X-WNS-Msg-ID", value: messageID)
        if requestForStatus == "true" { headers.add(name: "X-WNS-DeviceConnectionStatus", value: "connected") }
        return WNSHTTPResponse(status: .ok, headers: headers)
    }

    /// Why an XML payload's bytes are not a UTF-8 document WNS can read, or `nil` when they are.
    ///
    /// WNS reads toast, tile and badge documents as UTF-8, and its XML parser refuses a document whose declaration
    /// names another encoding than the one its bytes are in: `encoding="utf-16"` on bytes without a UTF-16
    /// byte-order mark fails to switch to UTF-16. So the emulator takes valid UTF-8 whose declaration, if any, names
    /// `utf-8`; that is the only form a hub has reason to send.
    static func encodingProblem(_ body: ByteBuffer) -> String? {
        guard let text = String(validating: body.readableBytesView, as: UTF8.self) else {
            return "The XML payload is not valid UTF-8"
        }
        var rest = Substring(text)
        if rest.first == "\u{FEFF}" { rest = rest.dropFirst() }
        guard rest.hasPrefix("<?xml"), let afterName = rest.dropFirst(5).first, afterName.isWhitespace,
            let end = rest.range(of: "?>")
        else { return nil }
        let declaration = rest[..<end.lowerBound]
        guard let match = declaration.firstMatch(of: #/\sencoding\s*=\s*["']([^"']*)["']/#) else { return nil }
        let encoding = String(match.output.1)
        guard encoding.lowercased() == "utf-8" else {
            return "The XML declaration names encoding '\(encoding.prefix(40))', which does not match the payload's UTF-8 bytes"
        }
        return nil
    }

    /// The first element's name of an XML document (after the declaration, comments and DOCTYPE).
    static func rootElement(_ text: String) -> String? {
        var rest = Substring(text)
        while true {
            rest = rest.drop { $0.isWhitespace || $0 == "\u{FEFF}" }
            if rest.hasPrefix("<?") {
                guard let end = rest.range(of: "?>") else { return nil }
                rest = rest[end.upperBound...]
            } else if rest.hasPrefix("<!--") {
                guard let end = rest.range(of: "-->") else { return nil }
                rest = rest[end.upperBound...]
            } else if rest.hasPrefix("<!") {
                guard let end = rest.firstIndex(of: ">") else { return nil }
                rest = rest[rest.index(after: end)...]
            } else if rest.hasPrefix("<") {
                let name = rest.dropFirst().prefix { !$0.isWhitespace && $0 != ">" && $0 != "/" }
                return name.isEmpty ? nil : String(name)
            } else {
                return nil
            }
        }
    }

    // MARK: Admin API

    /// Answers a request on the admin port.
    func handleAdmin(_ request: WNSHTTPRequest) -> WNSHTTPResponse {
        let path = String(request.path)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        func encoded(_ value: some Encodable) -> WNSHTTPResponse {
            guard let data = try? encoder.encode(value) else { return WNSHTTPResponse(status: .internalServerError) }
            return .json(.ok, String(decoding: data, as: UTF8.self))
        }
        func body() -> [String: Any] {
            (try? JSONSerialization.jsonObject(with: Data(request.body.readableBytesView))) as? [String: Any] ?? [:]
        }
        switch (request.method, path) {
        case (.GET, "/_emulator/received"):
            return encoded(recorder.accepted)
        case (.GET, "/_emulator/violations"):
            return encoded(recorder.violations)
        case (.GET, "/_emulator/stats"):
            return encoded(["accepted": recorder.acceptedCount, "tokenRequests": tokenRequestCount])
        case (.POST, "/_emulator/reset"):
            reset()
            return WNSHTTPResponse(status: .noContent)
        case (.POST, "/_emulator/faults"):
            let object = (try? JSONValue(parsing: request.body.readableBytesView))?.objectValue ?? [:]
            recorder.faults = FaultInjection(adminSettings: object)
            return WNSHTTPResponse(status: .noContent)
        case (.GET, "/_emulator/entra/assertions"):
            return encoded(entraAssertions)
        case (.POST, "/_emulator/entra/certificates"):
            // The body is the certificate in PEM, as uploaded in the portal ("Certificates & secrets").
            do {
                return encoded(["thumbprintSHA256": try registerEntraCertificate(pem: String(buffer: request.body))])
            } catch {
                return .json(.badRequest, JSONValue.object(["error": .string(error.message)]).jsonString())
            }
        case (.POST, "/_emulator/tokens/expire"):
            expireAllTokens()
            return WNSHTTPResponse(status: .noContent)
        case (.POST, "/_emulator/channels"):
            let object = body()
            if let count = object["count"] as? Int, count > 0, count <= 1_000_000 {
                return encoded(["channelUris": createChannels(count: count, prefix: (object["prefix"] as? String) ?? "c")])
            }
            return encoded(["channelUri": createChannel(id: object["id"] as? String)])
        default:
            // POST /_emulator/channels/{id} {"state": "expired" | "otherApp" | "dropped" | "throttled" | "unknown" | "active"}
            let prefix = "/_emulator/channels/"
            if request.method == .POST, path.hasPrefix(prefix), path.count > prefix.count {
                let id = String(path.dropFirst(prefix.count))
                guard let text = body()["state"] as? String, let channelState = ChannelState(rawValue: text) else {
                    return .json(
                        .badRequest,
                        #"{"error":"state must be one of \#(ChannelState.allCases.map(\.rawValue).joined(separator: ", "))"}"#)
                }
                setChannel(id, channelState)
                return WNSHTTPResponse(status: .noContent)
            }
            return WNSHTTPResponse(status: .notFound)
        }
    }
}
