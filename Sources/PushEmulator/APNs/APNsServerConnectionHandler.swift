import DequeModule
import Foundation
import NIOCore
import NIOHPACK
import NIOHTTP2
import Synchronization

/// Commands sent down an emulator connection's pipeline as inbound user events.
enum APNsEmulatorCommand: Sendable {
    /// Send GOAWAY (no error) naming the last stream seen, then close.
    case goAway
    /// Close the connection without a word.
    case drop
}

/// What an emulator listener serves: device and broadcast pushes, or broadcast channel management.
enum APNsListenerRole: String, Sendable, CustomStringConvertible {
    /// `api.push.apple.com`: `/3/device/…` and `/4/broadcasts/apps/…`.
    case push
    /// `api-manage-broadcast.push.apple.com`: `/1/apps/…/channels`, `/1/apps/…/all-channels`.
    case management

    var description: String { rawValue }
}

/// Serves one HTTP/2 connection frame by frame: collects each stream's headers and body, applies APNs' rules, and
/// answers on the same stream. Raises `SETTINGS_MAX_CONCURRENT_STREAMS` after the first authenticated request.
///
/// Confined to its channel's event loop.
final class APNsServerConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    private struct Stream {
        var headers: HPACKHeaders
        var body: ByteBuffer?
    }

    private let emulator: APNsEmulator
    /// The environment this connection's listener serves.
    private let environment: APNsEmulatorEnvironment
    /// What the listener serves.
    private let role: APNsListenerRole
    private var streams: [HTTP2StreamID: Stream] = [:]
    private var token = APNsConnectionTokenState()
    private var raised = false
    private var lastStreamID = HTTP2StreamID.rootStream
    private var open = 0
    private var needsFlush = false
    /// Request bytes consumed since the last connection WINDOW_UPDATE.
    private var consumedBytes = 0
    private var closing = false
    /// Answers held back by the latency fault, oldest first.
    private var delayed: Deque<DelayedAnswer> = []

    /// What a stream is answered: its status, headers and JSON body.
    private struct Reply {
        var status: Int
        var apnsID: String? = nil
        var retryAfter: Int? = nil
        var json: ByteBuffer?
        /// Further headers (`apns-request-id`, `apns-channel-id`, …).
        var headers: [(name: String, value: String)] = []
    }

    /// An answer the latency fault holds back until `due`.
    private struct DelayedAnswer {
        var due: NIODeadline
        var reply: Reply
        var streamID: HTTP2StreamID
    }

    /// The client certificate verdict of this connection, when the emulator asks for client certificates.
    private let certificate: APNsConnectionCertificate?

    init(
        emulator: APNsEmulator, environment: APNsEmulatorEnvironment = .production, certificate: APNsConnectionCertificate? = nil,
        role: APNsListenerRole = .push
    ) {
        self.emulator = emulator
        self.environment = environment
        self.certificate = certificate
        self.role = role
    }

    func channelActive(context: ChannelHandlerContext) {
        // A large connection window so hundreds of requests in flight do not stall.
        context.write(
            wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: 16 << 20))),
            promise: nil)
        context.flush()
        context.fireChannelActive()
    }

    /// Gives consumed request bytes back to the client's connection-level send window once they add up to a
    /// megabyte, as a real server does; the window granted at start would otherwise run out after that many bytes.
    private func returnToConnectionWindow(_ bytes: Int, context: ChannelHandlerContext) {
        consumedBytes += bytes
        guard consumedBytes >= 1 << 20 else { return }
        context.write(
            wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: consumedBytes))),
            promise: nil)
        consumedBytes = 0
        needsFlush = true
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.payload {
        case .headers(let headers):
            if streams[frame.streamID] == nil {
                // After GOAWAY, new streams are refused.
                if closing {
                    context.write(wrapOutboundOut(HTTP2Frame(streamID: frame.streamID, payload: .rstStream(.refusedStream))), promise: nil)
                    needsFlush = true
                    return
                }
                streams[frame.streamID] = Stream(headers: headers.headers, body: nil)
                open += 1
                emulator.observeConcurrency(open)
                if frame.streamID > lastStreamID { lastStreamID = frame.streamID }
            }
            if headers.endStream { handle(streamID: frame.streamID, context: context) }
        case .data(let data):
            returnToConnectionWindow(data.data.readableBytes + (data.paddingBytes ?? 0), context: context)
            guard var stream = streams[frame.streamID] else { return }
            if case .byteBuffer(var buffer) = data.data, buffer.readableBytes > 0 {
                if stream.body == nil {
                    stream.body = buffer
                } else {
                    stream.body!.writeBuffer(&buffer)
                }
                streams[frame.streamID] = stream
            }
            if data.endStream { handle(streamID: frame.streamID, context: context) }
        case .rstStream:
            if streams.removeValue(forKey: frame.streamID) != nil { open -= 1 }
        default:
            break
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if needsFlush {
            needsFlush = false
            context.flush()
        }
        context.fireChannelReadComplete()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        switch event {
        case APNsEmulatorCommand.goAway:
            closing = true
            context.writeAndFlush(
                wrapOutboundOut(
                    HTTP2Frame(streamID: .rootStream, payload: .goAway(lastStreamID: lastStreamID, errorCode: .noError, opaqueData: nil))),
                promise: nil)
            let channel = context.channel
            context.eventLoop.scheduleTask(in: .milliseconds(100)) { channel.close(promise: nil) }
        case APNsEmulatorCommand.drop:
            context.close(promise: nil)
        default:
            context.fireUserInboundEventTriggered(event)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    private func handle(streamID: HTTP2StreamID, context: ChannelHandlerContext) {
        guard let stream = streams.removeValue(forKey: streamID) else { return }
        let method = stream.headers.first(name: ":method")
        let path = stream.headers.first(name: ":path")
        if let path, path.hasPrefix("/_emulator/") {
            let (status, body) = emulator.admin(method: method ?? "GET", path: path, body: stream.body)
            write(Reply(status: status, json: body), streamID: streamID, context: context)
            return
        }
        if role == .push { emulator.rules.countRequest(in: environment) }
        if let raw = emulator.rules.recorder.faults.answer {
            if raw.status < 200 {
                context.close(promise: nil)
            } else {
                write(raw, streamID: streamID, context: context)
            }
            return
        }
        let answer: APNsAnswer
        if role == .management {
            // Broadcast channel management and broadcasts authenticate with provider tokens here (certificate-based
            // authentication is checked on device pushes only).
            answer = emulator.broadcastRules.manage(
                method: method, path: path, headers: stream.headers, body: stream.body, token: &token, environment: environment)
        } else if let path, path.hasPrefix("/4/broadcasts/") {
            answer = emulator.broadcastRules.broadcast(
                method: method, path: path, headers: stream.headers, body: stream.body, token: &token, environment: environment)
        } else {
            answer = emulator.rules.answer(
                method: method, path: path, headers: stream.headers, body: stream.body, token: &token, environment: environment,
                certificate: certificate?.verdict.withLock { $0 } ?? .notPresented)
        }
        if answer.dropConnection {
            context.close(promise: nil)
            return
        }
        let json: ByteBuffer? = answer.body.map { ByteBuffer(string: $0) } ?? answer.reason.map { reason in
            if let timestamp = answer.timestamp {
                return ByteBuffer(string: #"{"reason":"\#(reason)","timestamp":\#(timestamp)}"#)
            }
            return ByteBuffer(string: #"{"reason":"\#(reason)"}"#)
        }
        let reply = Reply(
            status: answer.status, apnsID: answer.apnsID, retryAfter: answer.retryAfter, json: json, headers: answer.headers)
        let latency = emulator.rules.recorder.faults.latency
        if latency > .zero {
            delay(DelayedAnswer(due: .now() + TimeAmount(latency), reply: reply, streamID: streamID), context: context)
        } else {
            write(reply, streamID: streamID, context: context)
        }
        if token.authenticated && !raised {
            raised = true
            let settings = HTTP2Frame(
                streamID: .rootStream,
                payload: .settings(.settings([HTTP2Setting(parameter: .maxConcurrentStreams, value: emulator.configuration.maximumConcurrentStreams)])))
            context.write(wrapOutboundOut(settings), promise: nil)
            needsFlush = true
        }
    }

    /// Queues an answer held back by the latency fault. Answers leave in the order they were queued: one timer for
    /// the oldest, and every answer due by then (within a millisecond) written with one flush, as a server sends what
    /// is ready together, instead of a timer and a flush (a TLS record and a write) per answer.
    private func delay(_ answer: DelayedAnswer, context: ChannelHandlerContext) {
        delayed.append(answer)
        if delayed.count == 1 { scheduleDelayed(context: context) }
    }

    private func scheduleDelayed(context: ChannelHandlerContext) {
        guard let first = delayed.first else { return }
        context.eventLoop.assumeIsolated().scheduleTask(deadline: first.due) { [self] in
            let cutoff = NIODeadline.now() + .milliseconds(1)
            while let next = delayed.first, next.due <= cutoff {
                delayed.removeFirst()
                write(next.reply, streamID: next.streamID, context: context)
            }
            needsFlush = false
            context.flush()
            scheduleDelayed(context: context)
        }
    }

    private func write(_ reply: Reply, streamID: HTTP2StreamID, context: ChannelHandlerContext) {
        open -= 1
        guard context.channel.isActive else { return }
        var headers = HPACKHeaders()
        headers.add(name: ":status", value: String(reply.status))
        if let apnsID = reply.apnsID { headers.add(name: "apns-id", value: apnsID) }
        if let retryAfter = reply.retryAfter { headers.add(name: "retry-after", value: String(retryAfter)) }
        for field in reply.headers { headers.add(name: field.name, value: field.value) }
        let json = reply.json
        if let json {
            headers.add(name: "content-type", value: "application/json")
            headers.add(name: "content-length", value: String(json.readableBytes))
        }
        context.write(
            wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .headers(.init(headers: headers, endStream: json == nil)))),
            promise: nil)
        if let json {
            context.write(wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .data(.init(data: .byteBuffer(json), endStream: true)))), promise: nil)
        }
        needsFlush = true
    }

    /// Answers a stream with a raw answer as given; a truncated one sends half its body, then resets the stream.
    private func write(_ answer: RawAnswer, streamID: HTTP2StreamID, context: ChannelHandlerContext) {
        open -= 1
        guard context.channel.isActive else { return }
        var headers = HPACKHeaders()
        headers.add(name: ":status", value: String(answer.status))
        for field in answer.sendableHeaders { headers.add(name: field.name.lowercased(), value: field.value) }
        let body = answer.sendableBody
        headers.add(name: "content-length", value: String(body.count))
        let endsWithHeaders = body.isEmpty && !answer.truncated
        context.write(
            wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .headers(.init(headers: headers, endStream: endsWithHeaders)))),
            promise: nil)
        if answer.truncated {
            let half = ByteBuffer(bytes: body.prefix(body.count / 2))
            context.write(wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .data(.init(data: .byteBuffer(half))))), promise: nil)
            context.write(wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .rstStream(.internalError))), promise: nil)
        } else if !body.isEmpty {
            let data = ByteBuffer(bytes: body)
            context.write(wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .data(.init(data: .byteBuffer(data), endStream: true)))), promise: nil)
        }
        needsFlush = true
    }
}
