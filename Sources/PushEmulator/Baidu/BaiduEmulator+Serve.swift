import AdapterKit
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import Synchronization

extension BaiduEmulator {
    /// The largest `msg` accepted, in bytes.
    static let maximumMessageBytes = 4096
    /// How long a signature is valid after its `timestamp` ("本次请求签名的有效时间为该时间戳向后10分钟").
    static let signatureWindow: Int64 = 600
    /// The most channel ids of one `push/batch_device` request.
    static let maximumBatchChannels = 10_000

    struct DropConnection: Error {}

    /// A refusal: the HTTP status and Baidu's code.
    struct Refusal: Error {
        var status: HTTPResponse.Status
        var code: Int
        var violation: String?
    }

    func serve(_ request: Request) async -> Response {
        var request = request
        let path = request.uri.path
        let methods = ["/rest/3.0/push/single_device": false, "/rest/3.0/push/batch_device": true]
        guard let batch = methods[path] else { return answer(.notFound, code: 30601) }
        guard request.method == .post else { return answer(.methodNotAllowed, code: 30601) }
        let faults = recorder.faults
        if faults.latency > .zero { try? await Task.sleep(for: faults.latency) }
        if let answer = faults.answer { return answer.response }
        switch faults.decide() {
        case .proceed: break
        case .serverError: return answer(.internalServerError, code: 30600)
        case .unavailable: return answer(.serviceUnavailable, code: 30600, retryAfter: faults.retryAfterSeconds)
        case .throttle: return answer(.tooManyRequests, code: 30699, retryAfter: faults.retryAfterSeconds)
        case .dropConnection: return Response(status: .earlyHints, body: ResponseBody { _ in throw DropConnection() })
        }
        let body = (try? await request.collectBody(upTo: 1 << 20)) ?? ByteBuffer()
        let authority = request.head.authority ?? ""
        do {
            let form = try check(headers: request.headers, body: body, url: "https://\(authority)\(path)")
            let accepted = batch ? try checkBatch(form) : [try checkSingle(form)]
            return deliver(accepted, batch: batch)
        } catch let refusal as Refusal {
            if let violation = refusal.violation { recorder.violation(violation) }
            return answer(refusal.status, code: refusal.code)
        } catch {
            return answer(.internalServerError, code: 30600)
        }
    }

    /// The headers, the signature and the common parameters; answers the form's fields.
    func check(headers: HTTPFields, body: ByteBuffer, url: String) throws -> [String: String] {
        guard headers[.contentType]?.lowercased().hasPrefix("application/x-www-form-urlencoded") == true else {
            throw Refusal(status: .badRequest, code: 30602, violation: "request without a form body")
        }
        guard headers[.userAgent]?.hasPrefix("BCCS_SDK/3.0 (") == true else {
            let agent = headers[.userAgent] ?? ""
            throw Refusal(status: .badRequest, code: 30602, violation: "User-Agent '\(agent)' is not of the form BCCS_SDK/3.0 (…)")
        }
        let form = EmulatorHTTP.form(String(buffer: body))
        guard form["apikey"] == configuration.apiKey else {
            throw Refusal(status: .unauthorized, code: 30603, violation: "apikey '\(form["apikey"] ?? "")' is not the app's")
        }
        var signed = form
        signed["sign"] = nil
        guard let sign = form["sign"], sign == Self.sign(url: url, parameters: signed, secretKey: configuration.secretKey) else {
            throw Refusal(status: .unauthorized, code: 30603, violation: "sign does not match the request")
        }
        let now = Int64(Date().timeIntervalSince1970)
        guard let text = form["timestamp"], let timestamp = Int64(text), abs(now - timestamp) <= Self.signatureWindow else {
            throw Refusal(status: .forbidden, code: 30606, violation: "timestamp '\(form["timestamp"] ?? "")' is not within ten minutes of now")
        }
        if let text = form["expires"] {
            guard let expires = Int64(text), expires >= now else {
                throw Refusal(status: .forbidden, code: 30606, violation: "expires '\(text)' is past")
            }
        }
        if let text = form["device_type"], text != String(configuration.deviceType) {
            throw Refusal(status: .badRequest, code: 30602, violation: "device_type '\(text)' is not the app's \(configuration.deviceType)")
        }
        return form
    }

    /// The message parameters shared by both methods.
    func checkMessage(_ form: [String: String], maximumExpiry: Int, minimumExpiry: Int) throws -> (type: Int, msg: String, expires: Int?) {
        let type = form["msg_type"].map { Int($0) ?? -1 } ?? 0
        guard [0, 1].contains(type) else {
            throw Refusal(status: .badRequest, code: 30602, violation: "msg_type '\(form["msg_type"] ?? "")' is not 0 or 1")
        }
        guard let msg = form["msg"], !msg.isEmpty, msg.utf8.count <= Self.maximumMessageBytes,
            (try? JSONValue(parsing: Array(msg.utf8))) != nil
        else {
            throw Refusal(status: .badRequest, code: 30602, violation: "msg is missing, not JSON or longer than 4096 bytes")
        }
        var expires: Int?
        if let text = form["msg_expires"] {
            guard let seconds = Int(text), (minimumExpiry...maximumExpiry).contains(seconds) else {
                throw Refusal(status: .badRequest, code: 30602, violation: "msg_expires '\(text)' is not \(minimumExpiry) to \(maximumExpiry)")
            }
            expires = seconds
        }
        return (type, msg, expires)
    }

    func checkSingle(_ form: [String: String]) throws -> Received {
        guard let channel = form["channel_id"], Self.isChannelID(channel) else {
            throw Refusal(status: .badRequest, code: 30602, violation: "channel_id '\(form["channel_id"] ?? "")' is not a channel id")
        }
        let message = try checkMessage(form, maximumExpiry: 604_800, minimumExpiry: 0)
        var deployStatus: Int?
        if let text = form["deploy_status"] {
            guard configuration.deviceType == 4, let status = Int(text), [1, 2].contains(status) else {
                throw Refusal(status: .badRequest, code: 30602, violation: "deploy_status '\(text)' is not 1 or 2 for an iOS app")
            }
            deployStatus = status
        }
        return Received(
            channelID: channel, messageType: message.type, message: message.msg, messageExpires: message.expires,
            deployStatus: deployStatus, batch: false, topicID: nil)
    }

    func checkBatch(_ form: [String: String]) throws -> [Received] {
        guard configuration.deviceType == 3 else {
            throw Refusal(status: .badRequest, code: 30602, violation: "push/batch_device for an iOS app")
        }
        guard let text = form["channel_ids"], case .array(let list)? = try? JSONValue(parsing: Array(text.utf8)),
            (1...Self.maximumBatchChannels).contains(list.count)
        else {
            throw Refusal(status: .badRequest, code: 30602, violation: "channel_ids is not a JSON array of 1 to 10000 channel ids")
        }
        var channels: [String] = []
        for value in list {
            guard let channel = value.stringValue, Self.isChannelID(channel) else {
                throw Refusal(status: .badRequest, code: 30602, violation: "channel_ids holds something that is not a channel id")
            }
            channels.append(channel)
        }
        guard let topic = form["topic_id"], (1...128).contains(topic.utf8.count),
            topic.utf8.allSatisfy({ (48...57).contains($0) || (65...90).contains($0) || (97...122).contains($0) || $0 == 95 })
        else {
            throw Refusal(status: .badRequest, code: 30602, violation: "topic_id '\(form["topic_id"] ?? "")' is not 1 to 128 letters, digits and _")
        }
        let message = try checkMessage(form, maximumExpiry: 86_400, minimumExpiry: 1)
        return channels.map {
            Received(
                channelID: $0, messageType: message.type, message: message.msg, messageExpires: message.expires,
                deployStatus: nil, batch: true, topicID: topic)
        }
    }

    /// Accepts the messages whose channels are bound; a single push to an unbound or expired channel is refused.
    func deliver(_ messages: [Received], batch: Bool) -> Response {
        let verdict = state.withLock { state -> (code: Int?, accepted: [Received], requestID: Int64) in
            state.sendRequests += 1
            state.nextRequestID += 1
            if batch { state.batchRequests += 1 }
            var accepted: [Received] = []
            for message in messages {
                let channel = message.channelID
                let code: Int? =
                    state.expired.contains(channel)
                    ? 30607
                    : state.unbound.contains(channel) || (!configuration.acceptsUnknownChannels && !state.known.contains(channel))
                        ? 30608 : nil
                if let code, !batch { return (code, [], state.nextRequestID) }
                if code == nil { accepted.append(message) }
            }
            return (nil, accepted, state.nextRequestID)
        }
        if let code = verdict.code { return answer(.notFound, code: code) }
        for message in verdict.accepted { recorder.accept(message) }
        let body = JSONValue.object([
            "request_id": .number(Double(verdict.requestID)),
            "response_params": .object([
                "msg_id": .string(String(verdict.requestID * 7)), "send_time": .number(Date().timeIntervalSince1970.rounded(.down)),
            ]),
        ])
        return EmulatorHTTP.json(.ok, body.jsonString())
    }

    /// Channel ids as the emulator accepts them: 1 to 64 digits.
    static func isChannelID(_ text: String) -> Bool {
        (1...64).contains(text.utf8.count) && text.utf8.allSatisfy { (48...57).contains($0) }
    }

    /// The signature "SDK开发指南" defines: MD5, in lower-case hex, of the URL-encoded (PHP `urlencode`) text of
    /// `POST`, the URL, the parameters as `key=value` sorted by key, and the secret key.
    public static func sign(url: String, parameters: [String: String], secretKey: String) -> String {
        var text = "POST" + url
        for key in parameters.keys.sorted() { text += "\(key)=\(parameters[key] ?? "")" }
        text += secretKey
        var encoded = ""
        for byte in text.utf8 {
            if (48...57).contains(byte) || (65...90).contains(byte) || (97...122).contains(byte) || [45, 46, 95].contains(byte) {
                encoded.append(Character(UnicodeScalar(byte)))
            } else if byte == 32 {
                encoded.append("+")
            } else {
                encoded += String(format: "%%%02X", byte)
            }
        }
        return Insecure.MD5.hash(data: Data(encoded.utf8)).map { String(format: "%02x", $0) }.joined()
    }

    /// Baidu's error answer: `{"request_id", "error_code", "error_msg"}`.
    func answer(_ status: HTTPResponse.Status, code: Int, retryAfter: Int? = nil) -> Response {
        var headers = HTTPFields()
        if let retryAfter, retryAfter > 0 { headers[.retryAfter] = "\(retryAfter)" }
        let requestID = state.withLock { state -> Int64 in
            state.nextRequestID += 1
            return state.nextRequestID
        }
        let body = JSONValue.object([
            "request_id": .number(Double(requestID)), "error_code": .number(Double(code)),
            "error_msg": .string(Self.messages[code] ?? "Unknown Error"),
        ])
        return EmulatorHTTP.json(status, body.jsonString(), headers: headers)
    }

    /// The `error_msg` of each code.
    static let messages: [Int: String] = [
        30600: "Internal Server Error", 30601: "Method Not Allowed", 30602: "Request Params Not Valid",
        30603: "Authentication Failed", 30604: "Quota Use Up Payment Required", 30605: "Data Required Not Found",
        30606: "Request Time Expires Timeout", 30607: "Channel Token Timeout", 30608: "Bind Relation Not Found",
        30609: "Bind Number Too Many", 30699: "Requests Are Too Frequent To Be Temporarily Rejected",
    ]
}
