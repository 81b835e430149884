import AdapterKit
import NIOCore

/// The character encoding of a toast, tile or badge document, and the bytes WNS is sent.
///
/// WNS reads these documents as UTF-8, and an XML parser refuses a document whose declaration names an encoding
/// its bytes are not in. The .NET SDK's `WindowsNotification` gives a document without a declaration
/// `<?xml version="1.0" encoding="utf-16"?>` (the encoding of .NET strings) and then sends the text as UTF-8; Azure
/// accepts that, and so does the hub: a declaration naming `utf-16` (in any case) on bytes that are valid UTF-8
/// without a byte-order mark is read as UTF-8, and WNS is sent the same document with the declaration naming
/// `utf-8`. Everything else that is not plainly UTF-8 is refused:
///
/// - bytes in UTF-16 (a UTF-16 byte-order mark, or a zero byte among the first two), whatever the declaration says;
/// - bytes that are not valid UTF-8;
/// - a declaration naming any encoding other than `utf-8` or `utf-16`;
/// - a declaration naming `utf-16` on a document that starts with a UTF-8 byte-order mark.
public enum WNSXMLEncoding {
    /// The document to send WNS for `payload`: the payload itself, or, when its declaration names `utf-16`, the
    /// payload with that name replaced by `utf-8`. `what` names the document in error messages.
    ///
    /// Throws ``HubError/Code/invalidNotification`` with what to change when the payload is not UTF-8.
    public static func documentToSend(_ payload: ByteBuffer, what: String) throws(HubError) -> ByteBuffer {
        let bytes = payload.readableBytesView
        if bytes.starts(with: [0xFF, 0xFE]) || bytes.starts(with: [0xFE, 0xFF]) {
            throw HubError(
                .invalidNotification,
                "\(what) is UTF-16 (it starts with a UTF-16 byte-order mark); WNS takes UTF-8: send the XML encoded as UTF-8")
        }
        if bytes.prefix(2).contains(0) {
            throw HubError(
                .invalidNotification,
                "\(what) looks like UTF-16 or UTF-32 (a zero byte in its first characters); WNS takes UTF-8: send the XML encoded as UTF-8")
        }
        if let offset = firstInvalidUTF8Offset(bytes) {
            throw HubError(
                .invalidNotification, "\(what) is not valid UTF-8 (byte \(offset)); WNS takes UTF-8: send the XML encoded as UTF-8")
        }
        let hasByteOrderMark = bytes.starts(with: [0xEF, 0xBB, 0xBF])
        guard let declared = declaredEncoding(in: bytes, from: bytes.startIndex + (hasByteOrderMark ? 3 : 0)) else {
            return payload
        }
        let name = String(decoding: bytes[declared], as: UTF8.self)
        switch name.lowercased() {
        case "utf-8":
            return payload
        case "utf-16":
            guard !hasByteOrderMark else {
                throw HubError(
                    .invalidNotification,
                    "\(what) starts with a UTF-8 byte-order mark but its XML declaration names encoding '\(name)'; declare utf-8 or drop the mark")
            }
            var document = ByteBufferAllocator().buffer(capacity: payload.readableBytes)
            document.writeBytes(bytes[bytes.startIndex..<declared.lowerBound])
            document.writeString("utf-8")
            document.writeBytes(bytes[declared.upperBound...])
            return document
        default:
            throw HubError(
                .invalidNotification,
                "\(what)'s XML declaration names encoding '\(name.prefix(40))'; WNS takes UTF-8: send UTF-8 and declare encoding=\"utf-8\" (or no encoding)")
        }
    }

    /// The byte offset (from the start of `bytes`) of the first byte that is not part of valid UTF-8, if any.
    static func firstInvalidUTF8Offset(_ bytes: ByteBufferView) -> Int? {
        var parser = Unicode.UTF8.ForwardParser()
        var iterator = bytes.makeIterator()
        var offset = 0
        while true {
            switch parser.parseScalar(from: &iterator) {
            case .valid(let scalar): offset += scalar.count
            case .emptyInput: return nil
            case .error: return offset
            }
        }
    }

    /// The range of the `encoding` pseudo-attribute's value in an XML declaration that starts at `start`, or `nil`
    /// when there is no declaration there, it names no encoding, or it is malformed (the well-formedness check
    /// reports that).
    static func declaredEncoding(in bytes: ByteBufferView, from start: Int) -> Range<Int>? {
        let opening = Array("<?xml".utf8)
        guard bytes[start...].starts(with: opening) else { return nil }
        var index = start + opening.count
        func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D }
        func skipSpace() { while index < bytes.endIndex, isSpace(bytes[index]) { index += 1 } }
        // `<?xml` must be followed by white space, else it is a processing instruction such as `<?xml-stylesheet`.
        guard index < bytes.endIndex, isSpace(bytes[index]) else { return nil }
        while true {
            skipSpace()
            let nameStart = index
            while index < bytes.endIndex, (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(bytes[index]) { index += 1 }
            guard index > nameStart else { return nil }
            let name = bytes[nameStart..<index]
            skipSpace()
            guard index < bytes.endIndex, bytes[index] == UInt8(ascii: "=") else { return nil }
            index += 1
            skipSpace()
            guard index < bytes.endIndex, bytes[index] == UInt8(ascii: "\"") || bytes[index] == UInt8(ascii: "'") else {
                return nil
            }
            let quote = bytes[index]
            index += 1
            let valueStart = index
            while index < bytes.endIndex, bytes[index] != quote, bytes[index] != UInt8(ascii: "?") { index += 1 }
            guard index < bytes.endIndex, bytes[index] == quote else { return nil }
            if name.elementsEqual("encoding".utf8) { return valueStart..<index }
            index += 1
        }
    }
}
