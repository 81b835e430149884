import AsyncHTTPClient
import NIOCore

extension HTTPClientResponse.Body {
    /// At most `limit` bytes of the body, never throwing: a body longer than `limit` is cut at the limit (the rest
    /// is not read), and a body that breaks off gives what arrived before.
    ///
    /// Once a platform's status arrived it decides the outcome; a huge or truncated error body must not turn a
    /// permanent refusal into a retryable "unreachable".
    ///
    /// ```swift
    /// let response = try await client.execute(request, timeout: .seconds(30))
    /// let body = await response.body.prefix(upTo: 64 * 1024)
    /// ```
    public func prefix(upTo limit: Int) async -> ByteBuffer {
        var collected = ByteBuffer()
        do {
            for try await var chunk in self {
                let room = limit - collected.readableBytes
                if chunk.readableBytes >= room {
                    if let slice = chunk.readSlice(length: Swift.max(0, room)) { collected.writeImmutableBuffer(slice) }
                    break
                }
                collected.writeBuffer(&chunk)
            }
        } catch {
            // The body broke off: keep what arrived.
        }
        return collected
    }
}
