import AdapterKit
import Foundation
import Hummingbird
import NIOCore

extension FCMEmulator {
    /// The admin API (plain HTTP on its own port):
    ///
    /// - `GET /_emulator/received`: accepted messages, most recent last: `[{"token", "headers", "body"}]`
    /// - `GET /_emulator/violations`: rule violations, as strings
    /// - `POST /_emulator/reset`: clears records, faults and token marks
    /// - `POST /_emulator/faults`: `{"serverErrorRate", "unavailableRate", "throttleRate", "retryAfterSeconds",
    ///   "latencyMilliseconds", "dropConnectionRate"}`
    /// - `POST /_emulator/fcm/unregister`, `/_emulator/fcm/sender-mismatch`, `/_emulator/fcm/third-party-auth-error`:
    ///   `{"tokens": [...]}`
    /// - `POST /_emulator/fcm/register-fid`: `{"fid", "token"}`: the device holding `token` moved to `fid`
    /// - `POST /_emulator/fcm/revoke-access-tokens`
    /// - `GET /_emulator/fcm/stats`: `{"accepted", "tokenRequests", "rejectedTokenRequests", "unauthenticatedSends"}`
    func serveAdmin(_ request: Request) async -> Response {
        var request = request
        let body = (try? await request.collectBody(upTo: 4 << 20)) ?? ByteBuffer()
        let json = try? JSONValue(parsing: body.readableBytesView)
        switch (request.method, request.uri.path) {
        case (.get, "/_emulator/received"):
            var text = "["
            for (index, entry) in recorder.accepted.enumerated() {
                if index > 0 { text += "," }
                let headers = JSONValue.object(entry.headers.mapValues { .string($0) }).jsonString()
                text += #"{"token":\#(JSONValue.string(entry.token).jsonString()),"headers":\#(headers),"fid":\#(entry.fid.map { JSONValue.string($0).jsonString() } ?? "null"),"body":\#(entry.body)}"#
            }
            return Self.json(.ok, text + "]")
        case (.get, "/_emulator/violations"):
            return Self.json(.ok, JSONValue.array(recorder.violations.map { .string($0) }).jsonString())
        case (.post, "/_emulator/reset"):
            reset()
            return Self.json(.ok, "{}")
        case (.post, "/_emulator/faults"):
            guard case .object(let object)? = json else { return Self.json(.badRequest, #"{"error":"expected a JSON object"}"#) }
            setFaults(FaultInjection(adminSettings: object))
            return Self.json(.ok, "{}")
        case (.post, "/_emulator/fcm/unregister"), (.post, "/_emulator/fcm/sender-mismatch"),
            (.post, "/_emulator/fcm/third-party-auth-error"):
            let tokens = json?.objectValue?["tokens"]?.arrayValue?.compactMap(\.stringValue) ?? []
            switch request.uri.path {
            case "/_emulator/fcm/unregister": unregister(tokens)
            case "/_emulator/fcm/sender-mismatch": markSenderMismatch(tokens)
            default: markThirdPartyAuthError(tokens)
            }
            return Self.json(.ok, #"{"marked":\#(tokens.count)}"#)
        case (.post, "/_emulator/fcm/register-fid"):
            guard let object = json?.objectValue, let fid = object["fid"]?.stringValue,
                let token = object["token"]?.stringValue
            else { return Self.json(.badRequest, #"{"error":"expected {\"fid\": string, \"token\": string}"}"#) }
            guard Self.isWellFormed(fid: fid) else {
                return Self.json(.badRequest, #"{"error":"fid is not a Firebase installation ID (22 URL-safe base64 characters starting with c, d, e or f)"}"#)
            }
            registerFID(fid, replacing: token)
            return Self.json(.ok, "{}")
        case (.post, "/_emulator/fcm/revoke-access-tokens"):
            revokeAccessTokens()
            return Self.json(.ok, "{}")
        case (.get, "/_emulator/fcm/stats"):
            return Self.json(
                .ok,
                #"{"accepted":\#(recorder.acceptedCount),"tokenRequests":\#(tokenRequestCount),"rejectedTokenRequests":\#(rejectedTokenRequestCount),"unauthenticatedSends":\#(unauthenticatedSendCount)}"#)
        default:
            return Self.json(.notFound, #"{"error":"unknown admin endpoint"}"#)
        }
    }
}
