import AdapterKit
import Foundation
import Hummingbird
import NIOCore

extension ADMEmulator {
    /// The admin API (plain HTTP on its own port):
    ///
    /// - `GET /_emulator/adm/stats`: `{"accepted", "sendRequests", "tokenRequests"}`
    /// - `GET /_emulator/received`: the accepted messages `[{"registrationID", "data", "consolidationKey", "expiresAfter"}]`
    /// - `GET /_emulator/violations`: rule violations, as strings
    /// - `POST /_emulator/reset`: clears records, faults and registration marks
    /// - `POST /_emulator/faults`: as the other emulators (`latencyMilliseconds`, `throttleRate`, …)
    /// - `POST /_emulator/adm/registrations`, `/invalid`, `/unregistered`: `{"registrationIds": [...]}` registers,
    ///   invalidates or unregisters app instances
    /// - `POST /_emulator/adm/replace`: `{"from": id, "to": id}` gives an app instance a new registration id
    /// - `POST /_emulator/adm/expire-access-tokens`
    func serveAdmin(_ request: Request) async -> Response {
        var request = request
        let body = (try? await request.collectBody(upTo: 4 << 20)) ?? ByteBuffer()
        let json = try? JSONValue(parsing: body.readableBytesView)
        let ids = json?.objectValue?["registrationIds"]?.arrayValue?.compactMap(\.stringValue) ?? []
        switch (request.method, request.uri.path) {
        case (.get, "/_emulator/adm/stats"):
            return EmulatorHTTP.json(
                .ok, #"{"accepted":\#(recorder.acceptedCount),"sendRequests":\#(sendRequestCount),"tokenRequests":\#(tokenRequestCount)}"#)
        case (.get, "/_emulator/received"):
            let entries = recorder.accepted.map { entry in
                JSONValue.object([
                    "registrationID": .string(entry.registrationID), "data": JSONValue.object(entry.data.mapValues { JSONValue.string($0) }),
                    "consolidationKey": entry.consolidationKey.map { JSONValue.string($0) } ?? JSONValue.null,
                    "expiresAfter": entry.expiresAfter.map { JSONValue.number(Double($0)) } ?? JSONValue.null,
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
        case (.post, "/_emulator/adm/registrations"):
            register(ids)
            return EmulatorHTTP.json(.ok, #"{"registered":\#(ids.count)}"#)
        case (.post, "/_emulator/adm/invalid"):
            markInvalid(ids)
            return EmulatorHTTP.json(.ok, #"{"marked":\#(ids.count)}"#)
        case (.post, "/_emulator/adm/unregistered"):
            markUnregistered(ids)
            return EmulatorHTTP.json(.ok, #"{"marked":\#(ids.count)}"#)
        case (.post, "/_emulator/adm/replace"):
            guard let from = json?.objectValue?["from"]?.stringValue, let to = json?.objectValue?["to"]?.stringValue else {
                return EmulatorHTTP.json(.badRequest, #"{"error":"expected {\"from\": id, \"to\": id}"}"#)
            }
            replace(from, with: to)
            return EmulatorHTTP.json(.ok, "{}")
        case (.post, "/_emulator/adm/expire-access-tokens"):
            expireAccessTokens()
            return EmulatorHTTP.json(.ok, "{}")
        default:
            return EmulatorHTTP.json(.notFound, #"{"error":"unknown admin endpoint"}"#)
        }
    }
}
