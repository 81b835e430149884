import AsyncHTTPClient
import Foundation
import HubServer
import HubTestSupport
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import NotificationHub
import ServiceLifecycle
import Synchronization
import Testing

/// `hub serve --self-signed-tls`: the certificate the hub makes lets a client that trusts it call the API over https.
@Suite struct SelfSignedTLSTests {
    @Test func aClientTrustingTheCertificateCallsHealthz() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("tls-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let tls = try SelfSignedTLS.loadOrGenerate(folder: folder)
        let files = SelfSignedTLS.Files(folder: folder)
        let attributes = try FileManager.default.attributesOfItem(atPath: files.privateKey)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        // Made once, then reused: a client trusts it once.
        #expect(try SelfSignedTLS.loadOrGenerate(folder: folder).certificatePEM == tls.certificatePEM)

        let server = ServerConfiguration(
            port: 0, tls: .pemFiles(certificateChain: files.certificate, privateKey: files.privateKey))
        let api = try HubAPI(hubs: [])
        let port = Mutex(0)
        let started = AsyncStream<Void>.makeStream()
        let application = try HubApplication.make(api: api, server: server, logger: Logger.forTest("test")) { channel in
            port.withLock { $0 = channel.localAddress?.port ?? 0 }
            started.continuation.yield()
        }
        let services = ServiceGroup(services: [application], logger: Logger.forTest("test"))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await services.run() }
            for await _ in started.stream { break }
            let port = port.withLock { $0 }

            var trusting = TLSConfiguration.makeClientConfiguration()
            trusting.trustRoots = .certificates([try tls.certificate()])
            let client = HTTPClient(
                eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: .init(tlsConfiguration: trusting))
            var strangerTLS = TLSConfiguration.makeClientConfiguration()
            strangerTLS.trustRoots = .certificates([try SelfSignedTLS.generate().certificate()])
            let stranger = HTTPClient(
                eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: .init(tlsConfiguration: strangerTLS))
            do {
                for host in ["127.0.0.1", "localhost"] {
                    let response = try await client.execute(
                        HTTPClientRequest(url: "https://\(host):\(port)/healthz"), timeout: .seconds(10))
                    #expect(response.status == .ok)
                    let body = try await response.body.collect(upTo: 1 << 16)
                    #expect(String(buffer: body).contains("\"ok\""))
                }
                // A client that does not trust this certificate is refused during the handshake.
                await #expect(throws: (any Error).self) {
                    _ = try await stranger.execute(HTTPClientRequest(url: "https://127.0.0.1:\(port)/healthz"), timeout: .seconds(2))
                }
            } catch {
                try? await client.shutdown()
                try? await stranger.shutdown()
                await services.triggerGracefulShutdown()
                throw error
            }
            try await client.shutdown()
            try await stranger.shutdown()
            await services.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
    }
}
