import ArgumentParser
import AsyncHTTPClient
import Foundation
import HubServer
import Logging
import NIOCore
import NIOHTTP1
import NotificationHub

/// `hub send`: a command-line client for `POST /{hub}/messages`.
struct Send: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Send a notification through a running hub.")

    @OptionGroup var options: ConfigOptions

    @Option(help: "The hub (default: the first).")
    var hub: String?

    @Option(help: "The key name (default: the hub's first key with the Send or Manage right).")
    var key: String?

    @Option(help: "The hub's URL (default: from the configuration's server section).")
    var url: String?

    @Option(help: "The notification format: apple, gcm, fcmv1, windows, template, ...")
    var format: String

    @Option(help: "A tag expression; omit to send to every installation.")
    var tags: String?

    @Option(help: "Send directly to this device handle instead of by tags.")
    var deviceHandle: String?

    @Option(name: .customLong("header"), help: "A passthrough header, as Name:Value (repeatable).")
    var headers: [String] = []

    @Option(help: "The body (JSON, XML or text).")
    var body: String

    @Flag(help: "Wait until the notification finishes and print its telemetry.")
    var wait = false

    func run() async throws {
        let configuration = try ConfigurationFile.load(options.config)
        guard let hubConfiguration = hub.map({ configuration.hub(named: $0) }) ?? configuration.hubs.first else {
            throw ValidationError("no hub named '\(hub ?? "")'")
        }
        let accessKey =
            key.flatMap { name in hubConfiguration.keys.first { $0.name == name } }
            ?? hubConfiguration.keys.first { !$0.rights.isDisjoint(with: [.send, .manage]) }
        guard let accessKey else { throw ValidationError("hub '\(hubConfiguration.name)' has no key that may send") }
        let server = configuration.server
        let host = server.host == "0.0.0.0" || server.host == "::" ? "127.0.0.1" : server.host
        let base = url ?? "\(server.tls == nil ? "http" : "https")://\(host):\(server.port)"
        let token = SharedAccessSignature.make(
            resource: "\(base)/\(hubConfiguration.name)", keyName: accessKey.name, key: accessKey.primaryKey,
            expiry: Date() + 300)

        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        do {
            var request = HTTPClientRequest(url: "\(base)/\(hubConfiguration.name)/messages\(deviceHandle == nil ? "" : "?direct")")
            request.method = .POST
            request.headers.add(name: "Authorization", value: token)
            request.headers.add(name: "Accept", value: "application/json")
            request.headers.add(name: "ServiceBusNotification-Format", value: format)
            if let tags { request.headers.add(name: "ServiceBusNotification-Tags", value: tags) }
            if let deviceHandle { request.headers.add(name: "ServiceBusNotification-DeviceHandle", value: deviceHandle) }
            for header in headers {
                guard let colon = header.firstIndex(of: ":") else { throw ValidationError("--header takes Name:Value") }
                request.headers.add(
                    name: String(header[..<colon]), value: header[header.index(after: colon)...].trimmingCharacters(in: .whitespaces))
            }
            request.body = .bytes(ByteBuffer(string: body))
            let response = try await client.execute(request, timeout: .seconds(30))
            let text = String(buffer: try await response.body.collect(upTo: 1 << 20))
            guard response.status == .created else {
                print("\(response.status.code) \(text)")
                throw ExitCode(1)
            }
            let id = response.headers.first(name: "TrackingId") ?? ""
            print("accepted \(id) at \(response.headers.first(name: "Location") ?? "")")
            if wait {
                for _ in 0..<600 {
                    var poll = HTTPClientRequest(url: "\(base)/\(hubConfiguration.name)/messages/\(id)")
                    poll.headers.add(name: "Authorization", value: token)
                    poll.headers.add(name: "Accept", value: "application/json")
                    let details = try await client.execute(poll, timeout: .seconds(10))
                    let json = String(buffer: try await details.body.collect(upTo: 1 << 20))
                    if !json.contains(#""state":"Enqueued""#), !json.contains(#""state":"Processing""#) {
                        print(json)
                        break
                    }
                    try await Task.sleep(for: .milliseconds(200))
                }
            }
        } catch {
            try await client.shutdown()
            throw error
        }
        try await client.shutdown()
    }
}
