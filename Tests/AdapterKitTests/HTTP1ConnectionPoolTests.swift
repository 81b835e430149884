import AdapterKit
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOSSL
import PushEmulator
import Testing

/// The keep-alive HTTP/1.1 pool against a real TLS server (the WNS emulator): every request answered, in order, over
/// at most the allowed connections; and every way a request can go unanswered ends with a failure, never a hang.
@Suite struct HTTP1ConnectionPoolTests {
    static let tls = try! EmulatorTLS.generate()

    static var logger: Logger {
        var logger = Logger(label: "http1-pool-test")
        logger.logLevel = .warning
        return logger
    }

    static func withEmulator<T: Sendable>(_ body: @Sendable (WNSEmulator) async throws -> T) async throws -> T {
        let emulator = WNSEmulator(
            settings: .init(packageSID: "ms-app://s-1-15-2-test", clientSecret: "test-secret"), tls: tls, logger: logger)
        try await emulator.start()
        do {
            let result = try await body(emulator)
            await emulator.stop()
            return result
        } catch {
            await emulator.stop()
            throw error
        }
    }

    static func pool(connections: Int) throws -> HTTP1ConnectionPool {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.additionalTrustRoots = [.certificates([try Self.tls.caCertificate()])]
        return HTTP1ConnectionPool(settings: .init(maximumConnectionsPerHost: connections, tls: tls))
    }

    static func requests(to uris: [String], token: String) -> [HTTP1Request] {
        uris.map { uri in
            let query = uri.split(separator: "/w/", maxSplits: 1).last.map { "/w/" + $0 } ?? "/"
            var headers = HTTPHeaders()
            headers.add(name: "Authorization", value: "Bearer \(token)")
            headers.add(name: "X-WNS-Type", value: "wns/raw")
            headers.add(name: "Content-Type", value: "application/octet-stream")
            return HTTP1Request(
                host: "127.0.0.1", port: Int(uri.split(separator: ":").last!.split(separator: "/").first!)!,
                head: HTTPRequestHead(version: .http1_1, method: .POST, uri: query, headers: headers),
                body: ByteBuffer(string: #"{"n":1}"#))
        }
    }

    @Test func everyRequestIsAnsweredInOrderOverAtMostTheAllowedConnections() async throws {
        try await Self.withEmulator { emulator in
            let pool = try Self.pool(connections: 4)
            let uris = emulator.createChannels(count: 200, prefix: "p")
            let token = emulator.issueAccessToken()
            // Every fifth channel is unknown: 404, so the answers' order can be checked.
            var targets = uris
            for index in stride(from: 0, to: targets.count, by: 5) { targets[index] = targets[index].replacingOccurrences(of: "=p", with: "=unknown") }
            let answers = await pool.send(Self.requests(to: targets, token: token), timeout: .seconds(20))
            #expect(answers.count == 200)
            for (index, answer) in answers.enumerated() {
                #expect(answer.status == (index % 5 == 0 ? 404 : 200), "request \(index)")
            }
            #expect(emulator.peakOpenConnections <= 4)
            #expect(pool.connectionsOpened <= 4)
            // The connections are kept: a second batch opens none.
            let opened = pool.connectionsOpened
            let again = await pool.send(Self.requests(to: Array(uris.prefix(10)), token: token), timeout: .seconds(20))
            #expect(again.allSatisfy { $0.status == 200 })
            #expect(pool.connectionsOpened == opened)
            await pool.close()
            let closed = await pool.send(Self.requests(to: Array(uris.prefix(1)), token: token), timeout: .seconds(5))
            #expect(closed.map(\.failure) == ["ConnectionClosed"])
        }
    }

    @Test func aConnectionDroppedBeforeItsAnswerEndsItsRequestAndTheOthersGoOn() async throws {
        try await Self.withEmulator { emulator in
            let pool = try Self.pool(connections: 2)
            let uris = emulator.createChannels(count: 40, prefix: "d")
            emulator.recorder.faults = FaultInjection(dropConnectionRate: 0.5)
            let answers = await pool.send(Self.requests(to: uris, token: emulator.issueAccessToken()), timeout: .seconds(20))
            #expect(answers.count == 40)
            #expect(answers.allSatisfy { $0.status == 200 || $0.failure == "ConnectionClosed" })
            #expect(answers.contains { $0.status == 200 })
            #expect(answers.contains { $0.failure == "ConnectionClosed" })
            await pool.close()
        }
    }

    @Test func requestsStillUnansweredAtTheDeadlineEndWithTimeout() async throws {
        try await Self.withEmulator { emulator in
            let pool = try Self.pool(connections: 2)
            let uris = emulator.createChannels(count: 6, prefix: "t")
            emulator.recorder.faults = FaultInjection(latency: .seconds(5))
            let answers = await pool.send(Self.requests(to: uris, token: emulator.issueAccessToken()), timeout: .milliseconds(300))
            #expect(answers.map(\.failure) == Array(repeating: "Timeout", count: 6))
            // The pool recovers: new connections answer once the server does.
            emulator.recorder.faults = .none
            let later = await pool.send(Self.requests(to: uris, token: emulator.issueAccessToken()), timeout: .seconds(20))
            #expect(later.allSatisfy { $0.status == 200 })
            await pool.close()
        }
    }

    @Test func aHostNobodyListensOnEndsWithConnectFailed() async throws {
        let pool = try Self.pool(connections: 2)
        var headers = HTTPHeaders()
        headers.add(name: "X", value: "y")
        let request = HTTP1Request(
            host: "127.0.0.1", port: 1, head: HTTPRequestHead(version: .http1_1, method: .POST, uri: "/", headers: headers),
            body: ByteBuffer())
        let answers = await pool.send([request, request, request], timeout: .seconds(10))
        #expect(answers.map(\.failure) == ["ConnectFailed", "ConnectFailed", "ConnectFailed"])
        await pool.close()
    }
}
