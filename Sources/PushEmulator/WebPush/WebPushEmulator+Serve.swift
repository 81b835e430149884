import AdapterKit
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import Synchronization

extension WebPushEmulator {
    struct DropConnection: Error {}

    /// `POST /push/{id}`: checks the request as a push service and the message as the browser would.
    func serve(_ request: Request) async -> Response {
        var request = request
        let path = request.uri.path
        state.withLock { $0.requestCount += 1 }
        guard path.hasPrefix("/push/"), path.count > 6 else {
            return Self.problem(404, "no push endpoint at \(path)")
        }
        guard request.method == .post else { return Self.problem(405, "push messages are sent with POST") }
        let faults = recorder.faults
        if faults.latency > .zero { try? await Task.sleep(for: faults.latency) }
        if let answer = faults.answer { return answer.response }
        switch faults.decide() {
        case .proceed: break
        case .serverError: return Self.problem(500, "internal error")
        case .unavailable: return Self.problem(503, "service unavailable", retryAfter: retryAfterValue(faults))
        case .throttle: return Self.problem(429, "too many messages", retryAfter: retryAfterValue(faults))
        case .dropConnection:
            // Hummingbird writes a head before the body: an interim one, so the client gets no answer at all.
            return Response(status: .earlyHints, body: ResponseBody { _ in throw DropConnection() })
        }

        let id = String(path.dropFirst(6))
        let subscription: WebPushEmulatorSubscription
        switch state.withLock({ $0.subscriptions[id] }) {
        case .active(let active)?: subscription = active
        case .expired?: return Self.problem(410, "the subscription has expired")
        case nil: return Self.problem(404, "no such subscription")
        }
        let scripted = state.withLock { state -> ScriptedAnswer? in
            guard var answers = state.scripted[id], !answers.isEmpty else { return nil }
            let answer = answers.removeFirst()
            state.scripted[id] = answers
            return answer
        }
        if let scripted { return Self.problem(scripted.status, "scripted answer", retryAfter: scripted.retryAfter) }

        // VAPID (RFC 8292).
        let vapid: (subject: String, expiresAt: Date, key: String)
        switch verifyVAPID(request.headers[.authorization]) {
        case .success(let verified): vapid = verified
        case .failure(let failure): return reject(401, "VAPID: \(failure.reason)")
        }
        if let restricted = subscription.applicationServerKey, restricted != vapid.key {
            return reject(403, "the VAPID key is not the one the subscription was made with")
        }

        // RFC 8030 §5: TTL required; Urgency and Topic in their forms.
        guard let ttlText = request.headers[HTTPField.Name("TTL")!] else { return reject(400, "the TTL header is missing") }
        guard !ttlText.isEmpty, ttlText.allSatisfy({ $0.isASCII && $0.isNumber }), let ttl = Int(ttlText) else {
            return reject(400, "TTL must be a non-negative number of seconds")
        }
        let urgency = request.headers[HTTPField.Name("Urgency")!]
        if let urgency, !["very-low", "low", "normal", "high"].contains(urgency) {
            return reject(400, "Urgency must be very-low, low, normal or high")
        }
        let topic = request.headers[HTTPField.Name("Topic")!]
        if let topic, !Self.isValidTopic(topic) {
            return reject(400, "Topic must be at most 32 base64url characters")
        }

        // The message: aes128gcm, at most 4096 bytes, decrypting with the subscription's keys.
        guard request.headers[.contentEncoding]?.lowercased() == "aes128gcm" else {
            return reject(400, "Content-Encoding must be aes128gcm")
        }
        guard let body = try? await request.collectBody(upTo: 1 << 20) else {
            return reject(413, "the message body exceeds 1 MiB")
        }
        guard body.readableBytes <= configuration.maximumMessageBytes else {
            return reject(413, "the message body is \(body.readableBytes) bytes; at most \(configuration.maximumMessageBytes)")
        }
        let payload: [UInt8]
        do {
            payload = try WebPushMessageDecryption.decrypt(
                Array(body.readableBytesView), privateKey: subscription.privateKey, authSecret: subscription.authSecret)
        } catch {
            return reject(400, error.reason)
        }
        // A declarative message (web_push 8030) is parsed by the browser; one it cannot show is refused here.
        if let problem = WebPushDeclarativeRules.violation(in: payload) {
            return reject(400, "declarative push message: \(problem)")
        }
        recorder.accept(
            WebPushReceivedMessage(
                subscriptionID: id, payload: payload, timeToLive: ttl, urgency: urgency, topic: topic, subject: vapid.subject,
                expiresAt: vapid.expiresAt, encryptedBytes: body.readableBytes))
        let number = state.withLock { state -> Int in
            state.messageCounter += 1
            return state.messageCounter
        }
        var headers = HTTPFields()
        headers[.location] = "\(origin)/message/\(number)"
        headers[HTTPField.Name("TTL")!] = ttlText
        return Response(status: .created, headers: headers)
    }

    /// RFC 8030 §5.4: at most 32 characters of the base64url alphabet.
    static func isValidTopic(_ topic: String) -> Bool {
        guard (1...32).contains(topic.utf8.count) else { return false }
        return topic.utf8.allSatisfy { byte in
            let letter = (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
            let digit = byte >= 0x30 && byte <= 0x39
            return letter || digit || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
        }
    }

    struct VAPIDFailure: Error {
        var reason: String
    }

    /// Verifies `Authorization: vapid t=<JWT>, k=<key>`; returns the token's `sub`, `exp` and the key.
    func verifyVAPID(_ header: String?) -> Result<(subject: String, expiresAt: Date, key: String), VAPIDFailure> {
        func fail(_ reason: String) -> Result<(subject: String, expiresAt: Date, key: String), VAPIDFailure> {
            .failure(VAPIDFailure(reason: reason))
        }
        guard let header else { return fail("no Authorization header") }
        let now = Date().timeIntervalSince1970
        if let known = state.withLock({ $0.verifiedTokens[header] }) {
            guard known.expiresAt.timeIntervalSince1970 > now - configuration.clockSkew else { return fail("the JWT has expired") }
            return .success((known.subject, known.expiresAt, known.key))
        }
        guard header.lowercased().hasPrefix("vapid ") else { return fail("the Authorization scheme is not vapid") }
        var parameters: [String: String] = [:]
        for part in header.dropFirst(6).split(separator: ",") {
            let pair = part.trimmingCharacters(in: .whitespaces).split(separator: "=", maxSplits: 1)
            guard pair.count == 2 else { return fail("malformed parameter") }
            parameters[pair[0].lowercased()] = String(pair[1])
        }
        guard let token = parameters["t"], let key = parameters["k"] else { return fail("t and k are both required") }
        guard let keyBytes = Base64URL.decode(key), keyBytes.count == 65,
            let publicKey = try? P256.Signing.PublicKey(x963Representation: keyBytes)
        else { return fail("k is not a base64url uncompressed P-256 public key") }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = Base64URL.decode(parts[0]), let claimBytes = Base64URL.decode(parts[1]),
            let signatureBytes = Base64URL.decode(parts[2]),
            case .object(let jwtHeader)? = try? JSONValue(parsing: headerBytes),
            case .object(let claims)? = try? JSONValue(parsing: claimBytes)
        else { return fail("t is not a JWT") }
        guard jwtHeader["alg"]?.stringValue == "ES256" else { return fail("the JWT's alg is not ES256") }
        if let type = jwtHeader["typ"], type.stringValue?.uppercased() != "JWT" { return fail("the JWT's typ is not JWT") }
        let signingInput = Array(token.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
        guard let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signatureBytes),
            publicKey.isValidSignature(signature, for: signingInput)
        else { return fail("the JWT's signature does not verify with k") }
        guard claims["aud"]?.stringValue == origin else {
            return fail("aud must be this push service's origin \(origin)")
        }
        guard case .number(let exp)? = claims["exp"] else { return fail("exp is required") }
        guard exp > now - configuration.clockSkew else { return fail("the JWT has expired") }
        guard exp <= now + 86_400 + configuration.clockSkew else { return fail("exp is more than 24 hours ahead") }
        guard let subject = claims["sub"]?.stringValue,
            subject.lowercased().hasPrefix("mailto:") || subject.lowercased().hasPrefix("https:")
        else { return fail("sub must be a mailto: or https: URI") }
        let verified = WebPushEmulatorState.VerifiedToken(subject: subject, expiresAt: Date(timeIntervalSince1970: exp), key: key)
        state.withLock { state in
            if state.verifiedTokens.count >= 1024 { state.verifiedTokens.removeAll() }
            state.verifiedTokens[header] = verified
        }
        return .success((subject, verified.expiresAt, key))
    }

    private func retryAfterValue(_ faults: FaultInjection) -> String {
        guard state.withLock({ $0.retryAfterAsDate }) else { return "\(faults.retryAfterSeconds)" }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: Date() + TimeInterval(faults.retryAfterSeconds))
    }

    /// A 4xx refusal of a request to a live subscription: recorded as a violation.
    private func reject(_ status: Int, _ message: String) -> Response {
        state.withLock { $0.rejectedCount += 1 }
        recorder.violation("\(status): \(message)")
        return Self.problem(status, message)
    }

    /// An error answer in autopush's JSON shape.
    static func problem(_ status: Int, _ message: String, retryAfter: String? = nil) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        if let retryAfter { headers[.retryAfter] = retryAfter }
        let body = JSONValue.object([
            "code": .number(Double(status)), "error": .string(HTTPResponse.Status(code: status).reasonPhrase),
            "message": .string(message),
        ]).jsonString()
        return Response(
            status: HTTPResponse.Status(code: status), headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: body)))
    }
}
