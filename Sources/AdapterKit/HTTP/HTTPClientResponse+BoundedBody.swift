import AsyncHTTPClient
import NIOCore
import Synchronization

extension HTTPClientResponse.Body {
    /// How long a body may take after its head, unless a caller says otherwise.
    public static let defaultReadLimit: Duration = .seconds(30)

    /// At most `limit` bytes of the body, read within `time`, never throwing: a body longer than `limit` is cut at the
    /// limit (the rest is not read), and a body that breaks off, or has not ended when `time` is up, gives what
    /// arrived before.
    ///
    /// Once a platform's status arrived it decides the outcome; a huge, truncated or stalled error body must not turn
    /// a permanent refusal into a retryable "unreachable", nor hold a delivery forever. (A client's request deadline
    /// ends with the head: a server that sends a head and then nothing, keeping the connection open, would otherwise
    /// keep the body's reader waiting as long as the connection lives. A Web Push endpoint is any URL a subscriber
    /// gave.)
    ///
    /// ```swift
    /// let response = try await client.execute(request, timeout: .seconds(30))
    /// let body = await response.body.prefix(upTo: 64 * 1024)
    /// ```
    public func prefix(upTo limit: Int, within time: Duration = Self.defaultReadLimit) async -> ByteBuffer {
        let read = BoundedRead()
        // The reader and the time limit run as tasks of their own, so that the first to end answers even if the
        // other does not end at once; the other is then cancelled (cancelling the reader cancels the request,
        // which closes its connection). The caller's cancellation answers at once too.
        let reader = Task {
            do {
                for try await var chunk in self {
                    let room = limit - read.count
                    if chunk.readableBytes >= room {
                        if let slice = chunk.readSlice(length: Swift.max(0, room)) { read.append(slice) }
                        break
                    }
                    read.append(chunk)
                }
            } catch {
                // The body broke off (or its reading was cancelled): keep what arrived.
            }
            read.finish()
        }
        let timer = Task {
            try? await Task.sleep(for: time)
            read.finish()
        }
        await withTaskCancellationHandler {
            await read.finished()
        } onCancel: {
            read.finish()
        }
        reader.cancel()
        timer.cancel()
        return read.collected
    }
}

/// The bytes of a body read so far, and the one wait for the end of the reading.
private final class BoundedRead: Sendable {
    private struct State {
        var buffer = ByteBuffer()
        var done = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state = Mutex(State())

    var count: Int { state.withLock { $0.buffer.readableBytes } }
    var collected: ByteBuffer { state.withLock { $0.buffer } }

    func append(_ bytes: ByteBuffer) {
        state.withLock { state in
            guard !state.done else { return }
            state.buffer.writeImmutableBuffer(bytes)
        }
    }

    /// Ends the reading (the first call counts): what arrives later is not kept.
    func finish() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.done = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    /// Returns once ``finish()`` was called.
    func finished() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state -> Bool in
                if state.done { return true }
                state.waiter = continuation
                return false
            }
            if now { continuation.resume() }
        }
    }
}
