import AdapterKit
import Hummingbird
import HummingbirdHTTP2
import Logging
import ServiceLifecycle
import NIOCore
import Synchronization

/// The ports an emulator with an admin API listens on.
public struct EmulatorPorts: Sendable, Hashable {
    /// The platform's endpoints (TLS).
    public var service: Int
    /// The admin API (plain HTTP).
    public var admin: Int
}

/// The two listeners of an HTTP emulator: the platform's endpoints over TLS (HTTP/2 by ALPN, and HTTP/1.1) and a
/// plain-HTTP admin API, each on its own port, and the ports once both listen.
final class EmulatorListeners: Sendable {
    private struct Binding {
        var service: Int?
        var admin: Int?
        var waiters: [CheckedContinuation<EmulatorPorts, Never>] = []
    }

    /// What the log calls the emulator, e.g. `FCM emulator`.
    let label: String
    let host: String
    let servicePort: Int
    let adminPort: Int
    let logger: Logger
    private let binding = Mutex(Binding())

    init(label: String, host: String, servicePort: Int, adminPort: Int, logger: Logger) {
        self.label = label
        self.host = host
        self.servicePort = servicePort
        self.adminPort = adminPort
        self.logger = logger
    }

    /// How the platform's endpoints are served.
    enum Transport {
        /// Hummingbird: HTTP/2 by ALPN and HTTP/1.1.
        case http1AndHTTP2
        /// HTTP/2 only, at frame level (``FrameLevelHTTP2Listener``): several times cheaper per request, for
        /// platforms whose clients send one request per device.
        case frameLevelHTTP2
    }

    /// Serves both until a graceful shutdown (or cancellation) of the service that runs them.
    func run(
        tls: EmulatorTLS, transport: Transport = .http1AndHTTP2, service: @escaping @Sendable (Request) async -> Response,
        admin: @escaping @Sendable (Request) async -> Response
    ) async throws {
        let serviceListener: any Service
        switch transport {
        case .http1AndHTTP2:
            serviceListener = Application(
                responder: CallbackResponder<BasicRequestContext> { request, _ in await service(request) },
                server: try .http2Upgrade(tlsConfiguration: tls.serverConfiguration(applicationProtocols: ["h2", "http/1.1"])),
                configuration: ApplicationConfiguration(address: .hostname(host, port: servicePort)),
                onServerRunning: { channel in self.didBind(service: channel.localAddress?.port) },
                logger: logger)
        case .frameLevelHTTP2:
            serviceListener = FrameLevelHTTP2Listener(
                host: host, port: servicePort, tls: tls, respond: service, didBind: { self.didBind(service: $0) })
        }
        let adminApplication = Application(
            responder: CallbackResponder<BasicRequestContext> { request, _ in await admin(request) },
            configuration: ApplicationConfiguration(address: .hostname(host, port: adminPort)),
            onServerRunning: { channel in self.didBind(admin: channel.localAddress?.port) },
            logger: logger)
        // Both stop together, by a graceful shutdown even when one fails: a listener cancelled while it accepts a
        // connection leaves that connection neither served nor closed.
        let listeners = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: [serviceListener, adminApplication].map {
                    ServiceGroupConfiguration.ServiceConfiguration(
                        service: $0, successTerminationBehavior: .gracefullyShutdownGroup,
                        failureTerminationBehavior: .gracefullyShutdownGroup)
                },
                logger: logger))
        try await listeners.run()
    }

    /// The bound ports, once both listen.
    func ports() async -> EmulatorPorts {
        await withCheckedContinuation { continuation in
            let ready = binding.withLock { binding -> EmulatorPorts? in
                if let service = binding.service, let admin = binding.admin { return EmulatorPorts(service: service, admin: admin) }
                binding.waiters.append(continuation)
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    /// The service port once bound (the configured port before).
    var boundServicePort: Int { binding.withLock { $0.service ?? servicePort } }

    private func didBind(service: Int? = nil, admin: Int? = nil) {
        let (ports, waiters) = binding.withLock { binding -> (EmulatorPorts?, [CheckedContinuation<EmulatorPorts, Never>]) in
            if let service { binding.service = service }
            if let admin { binding.admin = admin }
            guard let service = binding.service, let admin = binding.admin else { return (nil, []) }
            defer { binding.waiters.removeAll() }
            return (EmulatorPorts(service: service, admin: admin), binding.waiters)
        }
        if let ports {
            logger.info("\(label) listening", metadata: ["emulator.port": "\(ports.service)", "emulator.adminPort": "\(ports.admin)"])
            for waiter in waiters { waiter.resume(returning: ports) }
        }
    }
}

extension FaultInjection {
    /// Faults from an admin API's JSON object (`serverErrorRate`, `unavailableRate`, `throttleRate`,
    /// `dropConnectionRate` as 0…1, `retryAfterSeconds` 0…86,400 (default 1), `latencyMilliseconds` 0…600,000; absent
    /// or out-of-range values are clamped).
    init(adminSettings object: [String: JSONValue]) {
        /// A finite number within `range` (absent, non-numbers and NaN are the range's lower end), so that no value
        /// a client sends can trap a conversion.
        func number(_ key: String, in range: ClosedRange<Double> = 0...1) -> Double {
            guard case .number(let value)? = object[key], value.isFinite else { return range.lowerBound }
            return min(max(value, range.lowerBound), range.upperBound)
        }
        self.init(
            serverErrorRate: number("serverErrorRate"), unavailableRate: number("unavailableRate"),
            throttleRate: number("throttleRate"),
            retryAfterSeconds: object["retryAfterSeconds"] == nil ? 1 : Int(number("retryAfterSeconds", in: 0...86_400)),
            latency: .milliseconds(Int64(number("latencyMilliseconds", in: 0...600_000))),
            dropConnectionRate: number("dropConnectionRate"))
    }
}
