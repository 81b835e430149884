import AdapterKit
import Foundation
import Hummingbird
import NIOCore

extension XiaomiEmulator {
    /// The admin API (plain HTTP on its own port):
    ///
    /// - `GET /_emulator/xiaomi/stats`: `{"accepted", "sendRequests"}`
    /// - `GET /_emulator/received`: the accepted messages `[{"registrationID", "packageName", "fields"}]`
    /// - `GET /_emulator/violations`: rule violations, as strings
    /// - `POST /_emulator/reset`: clears records, faults and invalid marks
    /// - `POST /_emulator/faults`: as the other emulators (`latencyMilliseconds`, `throttleRate`, …)
    /// - `POST /_emulator/xiaomi/invalid`: `{"registrationIds": [...]}` makes ids invalid (listed in `bad_regids`)
    func serveAdmin(_ request: Request) async -> Response {
        var request = request
        let body = (try? await request.collectBody(upTo: 4 << 20)) ?? ByteBuffer()
        let json = try? JSONValue(parsing: body.readableBytesView)
        switch (request.method, request.uri.path) {
        case (.get, "/_emulator/xiaomi/stats"):
            return EmulatorHTTP.json(.ok, #"{"accepted":\#(recorder.acceptedCount),"sendRequests":\#(sendRequestCount)}"#)
        case (.get, "/_emulator/received"):
            let entries = recorder.accepted.map { entry in
                JSONValue.object([
                    "registrationID": .string(entry.registrationID), "packageName": .string(entry.packageName),
                    "fields": JSONValue.object(entry.fields.mapValues { JSONValue.string($0) }),
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
        case (.post, "/_emulator/xiaomi/invalid"):
            let ids = json?.objectValue?["registrationIds"]?.arrayValue?.compactMap(\.stringValue) ?? []
            markInvalid(ids)
            return EmulatorHTTP.json(.ok, #"{"marked":\#(ids.count)}"#)
        default:
            return EmulatorHTTP.json(.notFound, #"{"error":"unknown admin endpoint"}"#)
        }
    }
}
