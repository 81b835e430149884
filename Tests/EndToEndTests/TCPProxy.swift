import NIOCore
import NIOPosix
import Synchronization

/// A TCP proxy on a free loopback port to one target, whose link can be cut (every connection closed, new ones
/// closed as soon as they are accepted) and restored: a database that becomes unreachable for one client and comes
/// back.
final class TCPProxy: Sendable {
    private let server: any Channel
    private let registry: Registry
    /// A thread of its own: the proxied traffic never waits behind the emulators' work in the test process.
    private let group: MultiThreadedEventLoopGroup
    /// The port clients connect to.
    let port: Int

    private struct State {
        var cut = false
        var channels: [ObjectIdentifier: any Channel] = [:]
    }

    private init(server: any Channel, registry: Registry, group: MultiThreadedEventLoopGroup, port: Int) {
        self.server = server
        self.group = group
        self.registry = registry
        self.port = port
    }

    /// Starts a proxy to `host:port`.
    static func start(to host: String, port targetPort: Int) async throws -> TCPProxy {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let registry = Registry()
        let server = try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { inbound in
                guard registry.admit(inbound) else { return inbound.close() }
                inbound.closeFuture.whenComplete { _ in registry.forget(inbound) }
                return ClientBootstrap(group: inbound.eventLoop)
                    .connect(host: host, port: targetPort)
                    .flatMap { outbound in
                        guard registry.admit(outbound) else { return outbound.close().flatMap { inbound.close() } }
                        outbound.closeFuture.whenComplete { _ in
                            registry.forget(outbound)
                            inbound.close(promise: nil)
                        }
                        inbound.closeFuture.whenComplete { _ in outbound.close(promise: nil) }
                        let (toTarget, toClient) = GlueHandler.pair()
                        return inbound.pipeline.addHandler(toTarget).flatMap { outbound.pipeline.addHandler(toClient) }
                    }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return TCPProxy(server: server, registry: registry, group: group, port: server.localAddress?.port ?? 0)
    }

    /// Closes every proxied connection and refuses new ones until ``restore()``.
    func cut() {
        let channels = registry.state.withLock { state in
            state.cut = true
            return Array(state.channels.values)
        }
        for channel in channels { channel.close(promise: nil) }
    }

    /// Lets connections through again.
    func restore() {
        registry.state.withLock { $0.cut = false }
    }

    func stop() async {
        cut()
        try? await server.close()
        try? await group.shutdownGracefully()
    }

    /// The proxied channels, shared by the bootstrap's closures.
    private final class Registry: Sendable {
        let state = Mutex(State())

        func admit(_ channel: any Channel) -> Bool {
            state.withLock { state in
                guard !state.cut else { return false }
                state.channels[ObjectIdentifier(channel)] = channel
                return true
            }
        }

        func forget(_ channel: any Channel) {
            _ = state.withLock { $0.channels.removeValue(forKey: ObjectIdentifier(channel)) }
        }
    }
}

/// Copies bytes from its channel to its partner's channel (the two ends of a proxied connection).
private final class GlueHandler: ChannelDuplexHandler, @unchecked Sendable {
    // Unchecked: each handler is used on its own channel's event loop only; the partner's context is reached only
    // through that loop (both channels of a pair share one loop, the client bootstrap is created on the inbound's).
    typealias InboundIn = NIOAny
    typealias OutboundIn = NIOAny
    typealias OutboundOut = NIOAny

    private var partner: GlueHandler?
    private var context: ChannelHandlerContext?

    static func pair() -> (GlueHandler, GlueHandler) {
        let first = GlueHandler()
        let second = GlueHandler()
        first.partner = second
        second.partner = first
        return (first, second)
    }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        partner = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        partner?.context?.write(data, promise: nil)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        partner?.context?.flush()
    }

    func channelInactive(context: ChannelHandlerContext) {
        partner?.context?.close(promise: nil)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
