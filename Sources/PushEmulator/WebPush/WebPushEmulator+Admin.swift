import AdapterKit
import Foundation
import Hummingbird
import NIOCore
import Synchronization

extension WebPushEmulator {
    /// The admin API (plain HTTP on its own port):
    ///
    /// - `POST /_emulator/webpush/subscriptions`: `{"applicationServerKey"?}` → `{"id", "endpoint", "p256dh", "auth"}`
    ///   (the endpoint and keys are Azure's `browser` pushChannel)
    /// - `POST /_emulator/webpush/subscriptions/{id}/expire`: later messages get 410
    /// - `DELETE /_emulator/webpush/subscriptions/{id}`: later messages get 404
    /// - `GET /_emulator/received`: decrypted messages, most recent last:
    ///   `[{"subscription", "payload", "ttl", "urgency", "topic", "subject"}]`
    /// - `GET /_emulator/violations`: rule violations, as strings
    /// - `POST /_emulator/reset`: clears records and faults
    /// - `POST /_emulator/faults`: `{"serverErrorRate", "unavailableRate", "throttleRate", "retryAfterSeconds",
    ///   "retryAfterAsDate", "latencyMilliseconds", "dropConnectionRate"}`
    /// - `GET /_emulator/webpush/stats`: `{"accepted", "rejected"}`
    func serveAdmin(_ request: Request) async -> Response {
        var request = request
        let body = (try? await request.collectBody(upTo: 1 << 20)) ?? ByteBuffer()
        let json = try? JSONValue(parsing: body.readableBytesView)
        let path = request.uri.path
        let subscriptions = "/_emulator/webpush/subscriptions"
        switch (request.method, path) {
        case (.post, subscriptions):
            let key = json?.objectValue?["applicationServerKey"]?.stringValue
            if let key, Base64URL.decode(key)?.count != 65 {
                return Self.json(.badRequest, #"{"error":"applicationServerKey must be a base64url 65-byte P-256 public key"}"#)
            }
            let subscription = createSubscription(applicationServerKey: key)
            return Self.json(
                .created,
                JSONValue.object([
                    "id": .string(subscription.id), "endpoint": .string(subscription.endpoint),
                    "p256dh": .string(subscription.p256dh), "auth": .string(subscription.auth),
                ]).jsonString())
        case (.post, _) where path.hasPrefix(subscriptions + "/") && path.hasSuffix("/expire"):
            expire(String(path.dropFirst(subscriptions.count + 1).dropLast("/expire".count)))
            return Self.json(.ok, "{}")
        case (.delete, _) where path.hasPrefix(subscriptions + "/"):
            remove(String(path.dropFirst(subscriptions.count + 1)))
            return Self.json(.ok, "{}")
        case (.get, "/_emulator/received"):
            let entries = recorder.accepted.map { message -> JSONValue in
                var entry: [String: JSONValue] = [
                    "subscription": .string(message.subscriptionID), "payload": .string(message.text),
                    "ttl": .number(Double(message.timeToLive)), "subject": .string(message.subject),
                ]
                if let urgency = message.urgency { entry["urgency"] = .string(urgency) }
                if let topic = message.topic { entry["topic"] = .string(topic) }
                return .object(entry)
            }
            return Self.json(.ok, JSONValue.array(entries).jsonString())
        case (.get, "/_emulator/violations"):
            return Self.json(.ok, JSONValue.array(recorder.violations.map { .string($0) }).jsonString())
        case (.post, "/_emulator/reset"):
            reset()
            return Self.json(.ok, "{}")
        case (.post, "/_emulator/faults"):
            guard case .object(let object)? = json else { return Self.json(.badRequest, #"{"error":"expected a JSON object"}"#) }
            setFaults(FaultInjection(adminSettings: object))
            if case .bool(let asDate)? = object["retryAfterAsDate"] { setRetryAfterAsDate(asDate) }
            return Self.json(.ok, "{}")
        case (.get, "/_emulator/webpush/stats"):
            return Self.json(.ok, #"{"accepted":\#(recorder.acceptedCount),"rejected":\#(rejectedCount)}"#)
        default:
            return Self.json(.notFound, #"{"error":"unknown admin endpoint"}"#)
        }
    }

    static func json(_ status: HTTPResponse.Status, _ text: String) -> Response {
        Response(
            status: status, headers: [.contentType: "application/json"],
            body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }
}
