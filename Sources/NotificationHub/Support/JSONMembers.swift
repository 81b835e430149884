import Foundation

/// The members of a JSON object as the exact bytes each value was written with, so that a value can be stored and
/// returned as the client sent it (no re-encoding of numbers, no reordering of keys).
///
/// The text must already be valid JSON (parse it with ``JSONValue/init(parsing:)`` first); this only finds where each
/// top-level member's value starts and ends.
public struct JSONMembers: Sendable {
    /// Each top-level key (unescaped) with its value's raw text, in document order.
    public private(set) var members: [(key: String, raw: String)] = []

    /// Splits a JSON object into its members. Throws when the text is not an object or a key appears twice.
    public init(object bytes: [UInt8]) throws(HubError) {
        var scanner = Scanner(bytes: bytes)
        scanner.skipSpace()
        guard scanner.consume(UInt8(ascii: "{")) else { throw HubError(.invalidNotification, "expected a JSON object") }
        var seen = Set<String>()
        scanner.skipSpace()
        if scanner.consume(UInt8(ascii: "}")) { return }
        repeat {
            scanner.skipSpace()
            let keyStart = scanner.position
            try scanner.skipString()
            let keyText = String(decoding: bytes[keyStart..<scanner.position], as: UTF8.self)
            guard let key = try? JSONDecoder().decode(String.self, from: Data(keyText.utf8)) else {
                throw HubError(.invalidNotification, "a key of the JSON object cannot be read")
            }
            guard seen.insert(key).inserted else {
                throw HubError(.invalidNotification, "the JSON object has the key '\(key.prefix(40))' twice; give it once")
            }
            scanner.skipSpace()
            guard scanner.consume(UInt8(ascii: ":")) else { throw HubError(.invalidNotification, "expected ':' in the JSON object") }
            scanner.skipSpace()
            let valueStart = scanner.position
            try scanner.skipValue(depth: 0)
            members.append((key: key, raw: String(decoding: bytes[valueStart..<scanner.position], as: UTF8.self)))
            scanner.skipSpace()
        } while scanner.consume(UInt8(ascii: ","))
        guard scanner.consume(UInt8(ascii: "}")) else { throw HubError(.invalidNotification, "expected '}' in the JSON object") }
    }

    /// The raw text of a member's value, or `nil`.
    public subscript(key: String) -> String? {
        members.first { $0.key == key }?.raw
    }

    struct Scanner {
        let bytes: [UInt8]
        var position = 0

        mutating func skipSpace() {
            while position < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[position]) { position += 1 }
        }

        mutating func consume(_ byte: UInt8) -> Bool {
            guard position < bytes.count, bytes[position] == byte else { return false }
            position += 1
            return true
        }

        mutating func skipString() throws(HubError) {
            guard consume(UInt8(ascii: "\"")) else { throw HubError(.invalidNotification, "expected a JSON string") }
            while position < bytes.count {
                switch bytes[position] {
                case UInt8(ascii: "\\"): position += 2
                case UInt8(ascii: "\""):
                    position += 1
                    return
                default: position += 1
                }
            }
            throw HubError(.invalidNotification, "a JSON string is not terminated")
        }

        mutating func skipValue(depth: Int) throws(HubError) {
            guard depth < 512 else { throw HubError(.invalidNotification, "the JSON nests too deeply") }
            guard position < bytes.count else { throw HubError(.invalidNotification, "expected a JSON value") }
            switch bytes[position] {
            case UInt8(ascii: "\""):
                try skipString()
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                let close = bytes[position] == UInt8(ascii: "{") ? UInt8(ascii: "}") : UInt8(ascii: "]")
                position += 1
                skipSpace()
                if consume(close) { return }
                repeat {
                    skipSpace()
                    if close == UInt8(ascii: "}") {
                        try skipString()
                        skipSpace()
                        guard consume(UInt8(ascii: ":")) else { throw HubError(.invalidNotification, "expected ':'") }
                        skipSpace()
                    }
                    try skipValue(depth: depth + 1)
                    skipSpace()
                } while consume(UInt8(ascii: ","))
                guard consume(close) else { throw HubError(.invalidNotification, "a JSON object or array is not closed") }
            default:
                // A number, true, false or null: up to the next delimiter.
                let start = position
                while position < bytes.count,
                    ![UInt8(ascii: ","), UInt8(ascii: "}"), UInt8(ascii: "]"), 0x20, 0x09, 0x0A, 0x0D].contains(bytes[position])
                {
                    position += 1
                }
                if position == start { throw HubError(.invalidNotification, "expected a JSON value") }
            }
        }
    }
}
