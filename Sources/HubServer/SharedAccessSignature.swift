import Crypto
import Foundation
import NotificationHub

/// Azure's Shared Access Signature tokens:
/// `SharedAccessSignature sr=<url-encoded resource>&sig=<url-encoded base64 HMAC>&se=<unix expiry>&skn=<key name>`.
///
/// The signature is HMAC-SHA256, keyed with the key string's UTF-8 bytes, over `sr + "\n" + se`, where `sr` is
/// taken exactly as it appears in the token (still URL-encoded).
public struct SharedAccessSignature: Sendable, Hashable {
    /// The signed resource as sent (URL-encoded).
    public var resource: String
    /// The signature (decoded base64 text).
    public var signature: String
    /// Expiry, seconds since 1970.
    public var expiry: Int
    /// The key name.
    public var keyName: String

    /// Parses an `Authorization` header value. Parameters may come in any order.
    public init(header: String) throws(APIError) {
        let prefix = "SharedAccessSignature "
        guard header.count > prefix.count, header.prefix(prefix.count).lowercased() == prefix.lowercased() else {
            throw APIError.unauthorized("the Authorization header must be a SharedAccessSignature token")
        }
        var fields: [String: String] = [:]
        for pair in header.dropFirst(prefix.count).split(separator: "&") {
            guard let equals = pair.firstIndex(of: "=") else { continue }
            fields[pair[..<equals].trimmingCharacters(in: .whitespaces).lowercased()] = String(pair[pair.index(after: equals)...])
        }
        guard let resource = fields["sr"], let signature = fields["sig"], let expiryText = fields["se"],
            let keyName = fields["skn"]
        else {
            throw APIError.unauthorized("the SharedAccessSignature token must have sr, sig, se and skn")
        }
        guard let expiry = Int(expiryText) else {
            throw APIError.unauthorized("the SharedAccessSignature token's se must be a Unix time in seconds")
        }
        self.resource = resource
        self.signature = signature.removingPercentEncoding ?? signature
        self.expiry = expiry
        self.keyName = keyName.removingPercentEncoding ?? keyName
    }

    /// Creates a token for a resource, valid until `expiry`.
    public static func make(resource: String, keyName: String, key: String, expiry: Date) -> String {
        let encodedResource = percentEncode(resource.lowercased())
        let se = Int(expiry.timeIntervalSince1970)
        let signature = sign(resource: encodedResource, expiry: se, key: key)
        return "SharedAccessSignature sr=\(encodedResource)&sig=\(percentEncode(signature))&se=\(se)&skn=\(percentEncode(keyName))"
    }

    static func sign(resource: String, expiry: Int, key: String) -> String {
        let mac = HMAC<SHA256>.authenticationCode(
            for: Data("\(resource)\n\(expiry)".utf8), using: SymmetricKey(data: Data(key.utf8)))
        return Data(mac).base64EncodedString()
    }

    static func percentEncode(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
    }

    /// Verifies the token for a request path and returns the rights of the key that signed it.
    ///
    /// - The key is looked up by name; the primary and the secondary key are both accepted.
    /// - The signature is compared in constant time.
    /// - The token must not be expired.
    /// - The signed resource's path (scheme and host are ignored, since proxies rewrite them; keys are per hub)
    ///   must be a case-insensitive prefix of the request path, so a token may sign the namespace, the hub, or
    ///   the full URL.
    public func verify(keys: [AccessKey], requestPath: String, now: Date) throws(APIError) -> Set<AccessRight> {
        guard let key = keys.first(where: { $0.name == keyName }) else {
            throw APIError.unauthorized("the key named in the token (skn) is not a key of this hub")
        }
        let candidates = [key.primaryKey, key.secondaryKey].compactMap { $0 }
        let valid = candidates.contains { candidate in
            Self.constantTimeEquals(Self.sign(resource: resource, expiry: expiry, key: candidate), signature)
        }
        guard valid else {
            throw APIError.unauthorized("the token's signature does not match; sign sr + \"\\n\" + se with the key")
        }
        guard expiry > Int(now.timeIntervalSince1970) else {
            throw APIError.unauthorized("the token expired; create a new one")
        }
        let signedPath = Self.path(of: (resource.removingPercentEncoding ?? resource).lowercased())
        let path = requestPath.lowercased()
        guard path.hasPrefix(signedPath) || signedPath == path + "/" else {
            throw APIError.unauthorized("the token was signed for another resource (sr); sign the hub's URL")
        }
        return key.rights
    }

    /// The path part of a resource URI: `https://host/hub/x` → `/hub/x`; a bare path is kept.
    static func path(of resource: String) -> String {
        var rest = Substring(resource)
        if let scheme = rest.range(of: "://") {
            rest = rest[scheme.upperBound...]
            guard let slash = rest.firstIndex(of: "/") else { return "/" }
            rest = rest[slash...]
        }
        return rest.hasPrefix("/") ? String(rest) : "/" + rest
    }

    static func constantTimeEquals(_ a: String, _ b: String) -> Bool {
        let lhs = Array(a.utf8)
        let rhs = Array(b.utf8)
        var difference = UInt8(lhs.count == rhs.count ? 0 : 1)
        for index in 0..<max(lhs.count, rhs.count) {
            difference |= (index < lhs.count ? lhs[index] : 0) ^ (index < rhs.count ? rhs[index] : 0)
        }
        return difference == 0
    }
}
