import AdapterKit
import Foundation

/// Which push services the hub may post to: `https` endpoints whose host is a DNS name (never an IP literal) on an
/// allow-list, so that a client registering a "subscription" cannot make the hub send requests to an internal
/// address (SSRF).
///
/// Patterns are `host`, `host:port` or `*.domain` (any subdomain of `domain`, not `domain` itself); without a port
/// only 443 is allowed.
///
/// ```swift
/// let policy = try WebPushEndpointPolicy(allowedHosts: ["fcm.googleapis.com", "*.notify.windows.com"])
/// let endpoint = try policy.endpoint("https://fcm.googleapis.com/fcm/send/abc")   // origin https://fcm.googleapis.com
/// ```
public struct WebPushEndpointPolicy: Sendable, Hashable {
    /// The push services of Chrome and Edge on Android (FCM), Firefox (Mozilla autopush), Safari (Apple) and Edge on
    /// Windows (WNS).
    public static let defaultAllowedHosts = [
        "fcm.googleapis.com",
        "*.push.services.mozilla.com",
        "*.push.apple.com",
        "*.notify.windows.com",
    ]

    /// The longest endpoint accepted.
    public static let maximumEndpointLength = 2048

    /// One allowed host.
    struct Pattern: Sendable, Hashable {
        /// The host, or for a wildcard the domain after `*.`.
        var host: String
        var wildcard: Bool
        var port: Int

        func matches(host candidate: String, port candidatePort: Int) -> Bool {
            guard port == candidatePort else { return false }
            return wildcard ? candidate.hasSuffix("." + host) : candidate == host
        }
    }

    let patterns: [Pattern]
    /// The allow-list as given.
    public let allowedHosts: [String]

    /// Creates a policy; throws ``HubError/Code/invalidConfiguration`` naming the first pattern that is not a DNS
    /// name, `host:port` or `*.domain` (IP literals and schemes are refused).
    public init(allowedHosts: [String] = WebPushEndpointPolicy.defaultAllowedHosts) throws(HubError) {
        var patterns: [Pattern] = []
        for text in allowedHosts {
            patterns.append(try Self.pattern(text))
        }
        self.patterns = patterns
        self.allowedHosts = allowedHosts
    }

    static func pattern(_ text: String) throws(HubError) -> Pattern {
        if text.contains("/") {
            throw HubError(
                .invalidConfiguration,
                "the allowed host '\(text)' is not a DNS host name; write host, host:port or *.domain, without scheme or path")
        }
        var rest = Substring(text.lowercased())
        let wildcard = rest.hasPrefix("*.")
        if wildcard { rest = rest.dropFirst(2) }
        let (host, port) = try hostAndPort(rest, what: "the allowed host '\(text)'", code: .invalidConfiguration)
        if wildcard && !host.contains(".") {
            throw HubError(.invalidConfiguration, "the allowed host '\(text)' is too broad; write *.domain.tld")
        }
        return Pattern(host: host, wildcard: wildcard, port: port)
    }

    /// Splits `host[:port]`, checking the host is a DNS name and not an IP literal.
    static func hostAndPort(_ authority: Substring, what: String, code: HubError.Code) throws(HubError) -> (String, Int) {
        if authority.hasPrefix("[") {
            throw HubError(code, "\(what) is an IPv6 address; push endpoints must name their host")
        }
        var host = authority
        var port = 443
        if let colon = authority.lastIndex(of: ":") {
            let digits = authority[authority.index(after: colon)...]
            guard !digits.isEmpty, digits.count <= 5, digits.allSatisfy(\.isASCII), digits.allSatisfy(\.isNumber),
                let number = Int(digits), (1...65535).contains(number)
            else { throw HubError(code, "\(what) has an invalid port") }
            port = number
            host = authority[..<colon]
        }
        let labels = host.split(separator: ".", omittingEmptySubsequences: false)
        guard !host.isEmpty, host.utf8.count <= 253,
            labels.allSatisfy({ label in
                !label.isEmpty && label.utf8.count <= 63 && !label.hasPrefix("-") && !label.hasSuffix("-")
                    && label.utf8.allSatisfy { byte in
                        (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39) || byte == UInt8(ascii: "-")
                    }
            })
        else {
            throw HubError(code, "\(what) is not a DNS host name (letters, digits, '-' and '.')")
        }
        // A host whose last label is numeric is an IPv4 address in one of its spellings (127.0.0.1, 2130706433,
        // 0x7f.1, …).
        if let last = labels.last, last.allSatisfy(\.isNumber) || (last.hasPrefix("0x") && last.count > 2) {
            throw HubError(code, "\(what) is an IP address; push endpoints must name their host")
        }
        return (String(host), port)
    }

    /// Checks an endpoint URL: at most ``maximumEndpointLength`` characters, `https`, no user information, a DNS host
    /// on the allow-list, no spaces or control characters. Throws ``HubError/Code/invalidPushChannel`` with what to
    /// fix.
    public func endpoint(_ text: String) throws(HubError) -> WebPushEndpoint {
        guard !text.isEmpty else { throw HubError(.invalidPushChannel, "the browser pushChannel's endpoint is empty") }
        guard text.utf8.count <= Self.maximumEndpointLength else {
            throw HubError(
                .invalidPushChannel,
                "the endpoint has \(text.utf8.count) characters; push service endpoints have at most \(Self.maximumEndpointLength)")
        }
        guard text.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw HubError(.invalidPushChannel, "the endpoint holds spaces, control or non-ASCII characters; send it as the browser gave it")
        }
        guard let separator = text.range(of: "://") else {
            throw HubError(.invalidPushChannel, "the endpoint is not an absolute URL")
        }
        let scheme = text[..<separator.lowerBound].lowercased()
        guard scheme == "https" else {
            throw HubError(.invalidPushChannel, "the endpoint must use https, not '\(scheme)'")
        }
        let afterScheme = text[separator.upperBound...]
        let authorityEnd = afterScheme.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? afterScheme.endIndex
        let authority = afterScheme[..<authorityEnd]
        if authority.contains("@") {
            throw HubError(.invalidPushChannel, "the endpoint must not carry user information ('user@')")
        }
        if afterScheme[authorityEnd...].contains("#") {
            throw HubError(.invalidPushChannel, "the endpoint must not have a fragment ('#')")
        }
        let (host, port) = try Self.hostAndPort(
            Substring(authority.lowercased()), what: "the endpoint's host", code: .invalidPushChannel)
        guard patterns.contains(where: { $0.matches(host: host, port: port) }) else {
            let shown = port == 443 ? host : "\(host):\(port)"
            throw HubError(
                .invalidPushChannel,
                "the endpoint's host '\(shown)' is not an allowed push service (\(allowedHosts.joined(separator: ", ")))")
        }
        let path = afterScheme[authorityEnd...]
        return WebPushEndpoint(url: "https://\(port == 443 ? host : "\(host):\(port)")\(path)", host: host, port: port)
    }
}

/// A push service endpoint that passed ``WebPushEndpointPolicy``: `https`, a DNS host on the allow-list.
public struct WebPushEndpoint: Sendable, Hashable {
    /// The URL the hub posts to (scheme and host in lower case).
    public let url: String
    /// The host, in lower case.
    public let host: String
    /// The port (443 unless given).
    public let port: Int

    /// The origin, the VAPID token's audience: `https://host` or `https://host:port`.
    public var origin: String { port == 443 ? "https://\(host)" : "https://\(host):\(port)" }
}
