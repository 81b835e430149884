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
        self.signature = signature.percentDecoded ?? signature
        self.expiry = expiry
        self.keyName = keyName.percentDecoded ?? keyName
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

    /// The one answer for a token that is not valid for the request — an unknown hub, an unknown key name, a bad
    /// signature or a signed resource that does not cover the request — so that nothing tells them apart.
    public static let invalid = APIError.unauthorized(
        "the SharedAccessSignature token is not valid for this request; sign sr = the hub's URL (e.g. https://host/hubname) with a key of this hub, and name that key in skn")

    /// Verifies the token for a request and returns the rights of the key that signed it.
    ///
    /// - The expiry is checked first, so an expired token is refused the same way whatever hub or key it names.
    /// - The key is looked up by name; the primary and the secondary key are both accepted; the signature is
    ///   compared in constant time.
    /// - The signed resource must cover the request at path-segment boundaries, compared after percent-decoding:
    ///   its path (scheme and host are ignored, since proxies rewrite them) must name the hub as its first segment
    ///   and every further segment must equal the request's segment at the same place. Segments compare
    ///   case-insensitively, as Azure compares them: Azure's SDKs sign the lower-cased request URL, so a token can
    ///   never tell `…/installations/MyPhone` from `…/installations/myphone`. A token for `/demo/installations/a`
    ///   covers `/demo/installations/a` and `…/A`, never `…/ab`; an empty `sr`, dot segments and another hub's URL
    ///   cover nothing. The bare namespace URL covers the hub only when its host is the request's `Host`.
    ///
    /// Every failure but expiry is ``invalid``.
    public func verify(
        keys: [AccessKey], hubName: String, requestPath: String, requestAuthority: String? = nil, now: Date
    ) throws(APIError) -> Set<AccessRight> {
        guard expiry > Int(now.timeIntervalSince1970) else {
            throw APIError.unauthorized("the token expired; create a new one")
        }
        guard let key = keys.first(where: { $0.name == keyName }) else { throw Self.invalid }
        let candidates = [key.primaryKey, key.secondaryKey].compactMap { $0 }
        let valid = candidates.contains { candidate in
            Self.constantTimeEquals(Self.sign(resource: resource, expiry: expiry, key: candidate), signature)
        }
        guard valid,
            Self.covers(signedResource: resource, hubName: hubName, requestPath: requestPath, requestAuthority: requestAuthority)
        else {
            throw Self.invalid
        }
        return key.rights
    }

    /// Whether a signed resource (as sent in `sr`, still URL-encoded) covers a request path of hub `hubName`.
    ///
    /// A token signed for the namespace itself (`https://namespace/`, what some Azure clients sign) covers every
    /// hub path when its host is the one the request was sent to; the signature still binds it to this hub's key.
    static func covers(signedResource: String, hubName: String, requestPath: String, requestAuthority: String? = nil) -> Bool {
        guard let decoded = signedResource.percentDecoded else { return false }
        if path(of: decoded) == "/" {
            guard let requestAuthority, let authority = authority(of: decoded) else { return false }
            return authority.lowercased() == requestAuthority.lowercased()
        }
        guard let signed = segments(of: path(of: decoded)), let first = signed.first else { return false }
        // The request's own segments are taken as they come (a malformed one is the handler's 400 to give).
        let request = requestPath.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map {
            $0.percentDecoded ?? String($0)
        }
        guard first.lowercased() == hubName.lowercased(), signed.count <= request.count,
            request.first?.lowercased() == hubName.lowercased()
        else { return false }
        return zip(signed.dropFirst(), request.dropFirst()).allSatisfy { Self.sameSegment($0, $1) }
    }

    /// Whether two decoded segments are the same to a token: equal once lower-cased as .NET's `ToLowerInvariant`
    /// lower-cases (Azure's SDKs sign `uri.ToLowerInvariant()`), compared byte for byte. Plain ASCII is compared
    /// without building new strings.
    static func sameSegment(_ signed: String, _ requested: String) -> Bool {
        if signed.utf8.allSatisfy({ $0 < 0x80 }) && requested.utf8.allSatisfy({ $0 < 0x80 }) {
            guard signed.utf8.count == requested.utf8.count else { return false }
            return zip(signed.utf8, requested.utf8).allSatisfy { asciiLower($0) == asciiLower($1) }
        }
        return signed.lowercased().utf8.elementsEqual(requested.lowercased().utf8)
    }

    static func asciiLower(_ byte: UInt8) -> UInt8 {
        (0x41...0x5A).contains(byte) ? byte | 0x20 : byte
    }

    /// The percent-decoded segments of a path, a trailing slash ignored; `nil` for an empty or dot segment or an
    /// undecodable one.
    static func segments(of path: String) -> [String]? {
        var parts = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        if parts.last == "" { parts = parts.dropLast() }
        var result: [String] = []
        for part in parts {
            guard let segment = part.percentDecoded, !segment.isEmpty, segment != ".", segment != ".." else {
                return nil
            }
            result.append(segment)
        }
        return result.isEmpty ? nil : result
    }

    /// The authority (`host[:port]`) of an absolute resource URI, or `nil` for a bare path or an empty host.
    static func authority(of resource: String) -> String? {
        guard let scheme = resource.range(of: "://") else { return nil }
        let rest = resource[scheme.upperBound...]
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        return authority.isEmpty ? nil : String(authority)
    }

    /// The path part of a resource URI: `https://host/hub/x` → `/hub/x`; a bare path is kept; a query or fragment
    /// is dropped.
    static func path(of resource: String) -> String {
        var rest = Substring(resource)
        if let end = rest.firstIndex(where: { $0 == "?" || $0 == "#" }) { rest = rest[..<end] }
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
