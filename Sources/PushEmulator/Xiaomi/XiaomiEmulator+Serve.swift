import AdapterKit
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import Synchronization

extension XiaomiEmulator {
    /// The most registration ids one request may name.
    static let maximumRegistrationIDs = 1000
    /// The largest `payload`, in bytes.
    static let maximumPayloadBytes = 4096
    /// How far ahead `time_to_send` may schedule a message ("仅支持七天内的定时消息"), in milliseconds.
    static let maximumScheduleMilliseconds: Int64 = 7 * 24 * 3600 * 1000
    /// The parameters of `/v3/message/regid` besides `extra.*`.
    static let parameters: Set<String> = [
        "registration_id", "restricted_package_name", "payload", "title", "description", "pass_through", "notify_type",
        "time_to_live", "time_to_send", "notify_id",
    ]

    struct DropConnection: Error {}

    func serve(_ request: Request) async -> Response {
        var request = request
        guard request.uri.path == "/v3/message/regid" else {
            return Self.answer(.notFound, code: 10012, description: "非法请求", reason: "no such API")
        }
        guard request.method == .post else {
            return Self.answer(.methodNotAllowed, code: 10012, description: "非法请求", reason: "use POST")
        }
        let faults = recorder.faults
        if faults.latency > .zero { try? await Task.sleep(for: faults.latency) }
        if let answer = faults.answer { return answer.response }
        switch faults.decide() {
        case .proceed: break
        case .serverError: return Self.answer(.internalServerError, code: 10001, description: "系统错误")
        case .unavailable:
            return Self.answer(.serviceUnavailable, code: 10002, description: "系统繁忙", retryAfter: faults.retryAfterSeconds)
        case .throttle:
            return Self.answer(.tooManyRequests, code: 10027, description: "应用的API调用太频繁", retryAfter: faults.retryAfterSeconds)
        case .dropConnection: return Response(status: .earlyHints, body: ResponseBody { _ in throw DropConnection() })
        }

        let authorization = request.headers[.authorization] ?? ""
        guard authorization == "key=\(configuration.appSecret)" else {
            recorder.violation(
                authorization.lowercased().hasPrefix("key=") && !authorization.hasPrefix("key=")
                    ? "Authorization with 'key' not in lower case" : "send without the app's Authorization: key=<AppSecret>")
            return Self.answer(.ok, code: 21301, description: "认证失败", reason: "Authentication failed")
        }
        guard request.headers[.contentType]?.lowercased().hasPrefix("application/x-www-form-urlencoded") == true else {
            recorder.violation("send without a form body")
            return Self.answer(.ok, code: 10017, description: "参数值非法", reason: "the body must be application/x-www-form-urlencoded")
        }
        let body = (try? await request.collectBody(upTo: 1 << 20)) ?? ByteBuffer()
        let form = EmulatorHTTP.form(String(buffer: body))
        if let unknown = form.keys.sorted().first(where: { !Self.parameters.contains($0) && !$0.hasPrefix("extra.") }) {
            recorder.violation("unknown parameter '\(unknown)'")
            return Self.invalid("unknown parameter \(unknown)")
        }
        guard let packages = form["restricted_package_name"], !packages.isEmpty else {
            recorder.violation("send without restricted_package_name")
            return Self.answer(.ok, code: 10016, description: "缺失必选参数", reason: "restricted_package_name is required")
        }
        let packageNames = packages.split(separator: ",").map(String.init)
        guard packageNames.allSatisfy(configuration.packageNames.contains) else {
            recorder.violation("restricted_package_name '\(packages)' is not the app's")
            return Self.answer(.ok, code: 22022, description: "应用程序package name不合法", reason: "Invalid package name: \(packages)")
        }
        guard let targets = form["registration_id"], !targets.isEmpty else {
            recorder.violation("send without registration_id")
            return Self.answer(.ok, code: 10016, description: "缺失必选参数", reason: "registration_id is required")
        }
        let ids = targets.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
        guard (1...Self.maximumRegistrationIDs).contains(ids.count), !ids.contains(where: \.isEmpty) else {
            recorder.violation("registration_id is not 1 to 1000 comma-separated ids")
            return Self.invalid("registration_id holds 1 to 1000 comma-separated ids")
        }
        let passThrough = form["pass_through"] ?? "0"
        guard passThrough == "0" || passThrough == "1" else {
            recorder.violation("pass_through '\(passThrough)'")
            return Self.invalid("pass_through must be 0 or 1")
        }
        if passThrough == "0" {
            for (key, limit) in [("title", 50), ("description", 128)] {
                guard let value = form[key], !value.allSatisfy(\.isWhitespace) else {
                    recorder.violation("notification message without \(key)")
                    return Self.answer(.ok, code: 10016, description: "缺失必选参数", reason: "\(key) is required for a notification message")
                }
                guard value.count < limit else {
                    recorder.violation("\(key) of \(value.count) characters")
                    return Self.invalid("\(key) must be shorter than \(limit) characters")
                }
            }
        } else if form["payload"] == nil {
            recorder.violation("pass-through message without payload")
            return Self.answer(.ok, code: 10016, description: "缺失必选参数", reason: "payload is required for a pass-through message")
        }
        if let payload = form["payload"], payload.utf8.count > Self.maximumPayloadBytes {
            recorder.violation("payload of \(payload.utf8.count) bytes")
            return Self.answer(.ok, code: 65009, description: "消息内容太长", reason: "payload is too long")
        }
        if let value = form["notify_type"] {
            guard let type = PlatformNumber.int64(value), type == -1 || (1...7).contains(type) else {
                recorder.violation("notify_type '\(value)'")
                return Self.invalid("notify_type must be -1 or an OR of 1, 2 and 4")
            }
        }
        if let value = form["time_to_live"] {
            guard let ttl = PlatformNumber.int64(value), ttl > 0 else {
                recorder.violation("time_to_live '\(value)'")
                return Self.invalid("time_to_live must be positive milliseconds")
            }
        }
        if let value = form["time_to_send"] {
            let now = Int64(Date().timeIntervalSince1970 * 1000)
            guard let time = PlatformNumber.int64(value), time > 0, time <= now + Self.maximumScheduleMilliseconds else {
                recorder.violation("time_to_send '\(value)'")
                return Self.invalid("time_to_send must be a UNIX time in milliseconds within seven days")
            }
        }
        if let value = form["notify_id"] {
            guard let id = PlatformNumber.int64(value), (0...Int64(Int32.max)).contains(id) else {
                recorder.violation("notify_id '\(value)'")
                return Self.invalid("notify_id must be a non-negative integer")
            }
        }
        var fields = form
        fields["registration_id"] = nil
        fields["restricted_package_name"] = nil
        let bad = state.withLock { state -> [String] in
            state.sendRequests += 1
            state.batchSizes.append(ids.count)
            return ids.filter { state.invalid.contains($0) || !Self.looksLikeRegistrationID($0) }
        }
        let badSet = Set(bad)
        guard badSet.count < Set(ids).count else {
            return Self.answer(.ok, code: 20301, description: "发送消息失败", reason: "No valid targets!")
        }
        for id in ids where !badSet.contains(id) {
            recorder.accept(Received(registrationID: id, packageName: packages, fields: fields))
        }
        var data: [String: JSONValue] = ["id": .string("xm" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(20))]
        if !bad.isEmpty { data["bad_regids"] = .string(bad.joined(separator: ",")) }
        return Self.answer(
            .ok, code: 0, description: "成功", data: .object(data), info: "Received push messages for \(ids.count - bad.count) REGID")
    }

    /// Registration ids as the emulator accepts them: 20 to 512 characters of letters, digits and `+/=-_.:`.
    static func looksLikeRegistrationID(_ id: String) -> Bool {
        let allowed = Set("+/=-_.:".utf8)
        return (20...512).contains(id.utf8.count)
            && id.utf8.allSatisfy { (48...57).contains($0) || (65...90).contains($0) || (97...122).contains($0) || allowed.contains($0) }
    }

    /// `10017`, an illegal parameter value.
    static func invalid(_ reason: String) -> Response {
        answer(.ok, code: 10017, description: "参数值非法", reason: reason)
    }

    /// Mi Push's answer: `{"result", "code", "description", "reason"?, "info"?, "data"?, "trace_id"}`.
    static func answer(
        _ status: HTTPResponse.Status, code: Int, description: String, reason: String? = nil, data: JSONValue? = nil,
        info: String? = nil, retryAfter: Int? = nil
    ) -> Response {
        var headers = HTTPFields()
        if let retryAfter, retryAfter > 0 { headers[.retryAfter] = "\(retryAfter)" }
        var body: [String: JSONValue] = [
            "result": .string(code == 0 ? "ok" : "error"), "code": .number(Double(code)), "description": .string(description),
            "trace_id": .string("Xcm" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(19)),
        ]
        if let reason { body["reason"] = .string(reason) }
        if let data { body["data"] = data }
        if let info { body["info"] = .string(info) }
        return EmulatorHTTP.json(status, JSONValue.object(body).jsonString(), headers: headers)
    }
}
