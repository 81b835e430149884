import AdapterKit
import Foundation
import Hummingbird
import NIOCore

extension BaiduEmulator {
    /// The admin API (plain HTTP on its own port):
    ///
    /// - `GET /_emulator/baidu/stats`: `{"accepted", "sendRequests", "batchRequests"}`
    /// - `GET /_emulator/received`: the accepted messages `[{"channelId", "msgType", "msg", "batch"}]`
    /// - `GET /_emulator/violations`: rule violations, as strings
    /// - `POST /_emulator/reset`: clears records, faults and channel marks
    /// - `POST /_emulator/faults`: as the other emulators (`latencyMilliseconds`, `throttleRate`, …)
    /// - `POST /_emulator/baidu/channels`, `/unbound`, `/expired`: `{"channelIds": [...]}` registers, unbinds or
    ///   expires channels
    func serveAdmin(_ request: Request) async -> Response {
        var request = request
        let body = (try? await request.collectBody(upTo: 4 << 20)) ?? ByteBuffer()
        let json = try? JSONValue(parsing: body.readableBytesView)
        let ids = json?.objectValue?["channelIds"]?.arrayValue?.compactMap(\.stringValue) ?? []
        switch (request.method, request.uri.path) {
        case (.get, "/_emulator/baidu/stats"):
            return EmulatorHTTP.json(
                .ok,
                #"{"accepted":\#(recorder.acceptedCount),"sendRequests":\#(sendRequestCount),"batchRequests":\#(batchRequestCount)}"#)
        case (.get, "/_emulator/received"):
            let entries = recorder.accepted.map { entry in
                JSONValue.object([
                    "channelId": .string(entry.channelID), "msgType": .number(Double(entry.messageType)),
                    "msg": .string(entry.message), "batch": .bool(entry.batch),
                ])
            }
            return EmulatorHTTP.json(.ok, JSONValue.array(entries).jsonString())
        case (.get, "/_emulator/violations"):
            return EmulatorHTTP.json(.ok, JSONValue.array(recorder.violations.map { .string($0) }).jsonString())
        case (.post, "/_emulator/reset"):
            reset()
            return EmulatorHTTP.json(.ok, "{}")
        case (.post, "/_emulator/faults"):
            guard case .object(let object)? = json else { return EmulatorHTTP.json(.badRequest, #"{"error":"expected a JSON object"}"#) }
            setFaults(FaultInjection(adminSettings: object))
            return EmulatorHTTP.json(.ok, "{}")
        case (.post, "/_emulator/baidu/channels"):
            register(ids)
            return EmulatorHTTP.json(.ok, #"{"registered":\#(ids.count)}"#)
        case (.post, "/_emulator/baidu/unbound"):
            markUnbound(ids)
            return EmulatorHTTP.json(.ok, #"{"marked":\#(ids.count)}"#)
        case (.post, "/_emulator/baidu/expired"):
            markExpired(ids)
            return EmulatorHTTP.json(.ok, #"{"marked":\#(ids.count)}"#)
        default:
            return EmulatorHTTP.json(.notFound, #"{"error":"unknown admin endpoint"}"#)
        }
    }
}
