import Crypto
import Foundation
import NotificationHub
import PushEmulator
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Requests that once killed the hub process, sent with the Listen key (the key every app ships) to a real
/// `hub serve`: each is a 4xx, and the process keeps serving.
@Suite(.serialized, .oneProcessSuiteAtATime, .timeLimit(.minutes(5))) struct HostileClientProcessTests {
    static let listenKey = "listen-key-of-the-app-0123456789"

    /// A SharedAccessSignature token for the Listen key, signed for the hub's URL.
    static func token(port: Int) -> String {
        let resource = "http://127.0.0.1:\(port)/demo".lowercased()
            .addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~")))!
        let expiry = Int(Date().timeIntervalSince1970) + 600
        let mac = HMAC<SHA256>.authenticationCode(
            for: Data("\(resource)\n\(expiry)".utf8), using: SymmetricKey(data: Data(listenKey.utf8)))
        let signature = Data(mac).base64EncodedString()
            .addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~")))!
        return "SharedAccessSignature sr=\(resource)&sig=\(signature)&se=\(expiry)&skn=listen"
    }

    static func request(_ method: String, _ url: String, token: String?, body: String? = nil) async throws -> Int {
        var request = URLRequest(url: URL(string: url)!)
        request.httpMethod = method
        if let token { request.setValue(token, forHTTPHeaderField: "Authorization") }
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = body.map { Data($0.utf8) }
        let (_, response) = try await URLSession.shared.data(for: request)
        return (response as? HTTPURLResponse)?.statusCode ?? 0
    }

    @Test func hostileIdentifiersAreRefusedAndTheProcessKeepsServing() async throws {
        let directory = NSTemporaryDirectory() + "hub-hostile-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let apns = try await EmulatedAPNs.start(directory: directory)
        let configuration = """
            server: {host: 127.0.0.1, port: 0}
            hubs:
              demo:
                keys: [{name: listen, rights: [Listen], primaryKey: \(Self.listenKey)}]
                storage: {sqlite: {path: \(directory)/hub.sqlite}}
                adapters:
            \(apns.adapterYAML)
            """
        try configuration.write(toFile: directory + "/hub.yaml", atomically: true, encoding: .utf8)
        let hub = try HubProcess(configuration: directory + "/hub.yaml", logPath: directory + "/hub.log")
        defer { hub.killIfRunning() }

        var port = 0
        let listening = try await waitUntil(timeout: .seconds(60)) {
            let log = (try? String(contentsOfFile: directory + "/hub.log", encoding: .utf8)) ?? ""
            guard let line = log.split(separator: "\n").first(where: { $0.contains("hub is listening") }),
                let range = line.range(of: "server.address=")
            else { return false }
            port = Int(line[range.upperBound...].split(separator: ":").last?.prefix { $0.isNumber } ?? "") ?? 0
            return port > 0
        }
        #expect(listening, "\(hub.logTail())")
        let base = "http://127.0.0.1:\(port)/demo/installations/"
        let token = Self.token(port: port)
        let handle = String(repeating: "ab", count: 32)
        for (id, body) in [
            ("a%00b", #"{"installationId":"a\u0000b","platform":"apns","pushChannel":"\#(handle)"}"#),
            ("a%0Ab", #"{"installationId":"a\nb","platform":"apns","pushChannel":"\#(handle)"}"#),
            ("ok", #"{"installationId":"ok","userId":"al\u0000ice","platform":"apns","pushChannel":"\#(handle)"}"#),
            ("ok", #"{"installationId":"ok","platform":"apns","pushChannel":"\#(handle)","templates":{"x":{"body":"{}","headers":{"a\r\nb":"c"}}}}"#),
        ] {
            let status = try await Self.request("PUT", base + id, token: token, body: body)
            #expect(status == 400, "\(id): \(status)")
            #expect(try await Self.request("GET", base + id, token: token) != 500)
        }
        #expect(try await Self.request("PUT", base + "fine", token: token, body: #"{"installationId":"fine","platform":"apns","pushChannel":"\#(handle)"}"#) == 200)
        #expect(try await Self.request("GET", base + "fine", token: token) == 200)
        #expect(try await Self.request("GET", "http://127.0.0.1:\(port)/healthz", token: nil) == 200)
        #expect(await hub.terminate(), "the hub is alive and shuts down gracefully: \(hub.logTail())")
        await apns.emulator.stop()
    }
}
