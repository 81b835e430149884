import Foundation

/// Which addresses a hub may post its event webhooks to: the same rules the hub keeps for every address it posts to
/// on someone's behalf (web push endpoints), so that a configured URL cannot make the hub post to an internal service.
///
/// A URL passes when it is `http` or `https`, carries no user information and no fragment, names its host as a DNS
/// name — never an IP literal in any spelling (`127.0.0.1`, `[::1]`, `2130706433`, `0x7f.1`) — and that host is on the
/// allow-list, on the scheme's default port unless the allow-list names `host:port`. `*.domain` allows any subdomain
/// of `domain`, not `domain` itself.
///
/// ```swift
/// let policy = try WebhookAddressPolicy(allowedHosts: ["hooks.example.com", "localhost:8081"])
/// let url = try policy.check("https://hooks.example.com/hub-events")
/// ```
public struct WebhookAddressPolicy: Sendable, Hashable {
    struct Pattern: Sendable, Hashable {
        var host: String
        var wildcard: Bool
        var port: Int?

        func matches(host other: String, port otherPort: Int, defaultPort: Int) -> Bool {
            let hostMatches = wildcard ? other.hasSuffix("." + host) : other == host
            return hostMatches && otherPort == (port ?? defaultPort)
        }
    }

    let patterns: [Pattern]
    /// The allow-list as given.
    public let allowedHosts: [String]

    /// The policy that allows no address: what a configuration without a valid allow-list gets.
    public static let allowingNothing = WebhookAddressPolicy(patterns: [], allowedHosts: [])

    private init(patterns: [Pattern], allowedHosts: [String]) {
        self.patterns = patterns
        self.allowedHosts = allowedHosts
    }

    /// Creates a policy; throws ``HubError/Code/invalidConfiguration`` naming the first entry that is not `host`,
    /// `host:port` or `*.domain` with a DNS host name.
    public init(allowedHosts: [String]) throws(HubError) {
        var patterns: [Pattern] = []
        for text in allowedHosts {
            if text.contains("/") || text.contains("@") {
                throw HubError(
                    .invalidConfiguration,
                    "the allowed host '\(text)' is not a host name; write host, host:port or *.domain, without scheme or path")
            }
            var rest = Substring(text.lowercased())
            let wildcard = rest.hasPrefix("*.")
            if wildcard { rest = rest.dropFirst(2) }
            let (host, port) = try Self.hostAndPort(rest, what: "the allowed host '\(text)'", code: .invalidConfiguration)
            if wildcard && !host.contains(".") {
                throw HubError(.invalidConfiguration, "the allowed host '\(text)' is too broad; write *.domain.tld")
            }
            patterns.append(Pattern(host: host, wildcard: wildcard, port: port))
        }
        self.patterns = patterns
        self.allowedHosts = allowedHosts
    }

    /// Checks a webhook URL and returns it; throws ``HubError/Code/invalidConfiguration`` saying what to fix.
    public func check(_ text: String) throws(HubError) -> URL {
        guard text.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw HubError(.invalidConfiguration, "the webhook url holds spaces, control or non-ASCII characters")
        }
        guard let separator = text.range(of: "://") else {
            throw HubError(.invalidConfiguration, "the webhook url is not an absolute http:// or https:// URL")
        }
        let scheme = text[..<separator.lowerBound].lowercased()
        guard scheme == "https" || scheme == "http" else {
            throw HubError(.invalidConfiguration, "the webhook url must use https or http, not '\(scheme)'")
        }
        let afterScheme = text[separator.upperBound...]
        let authorityEnd = afterScheme.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? afterScheme.endIndex
        let authority = afterScheme[..<authorityEnd]
        if authority.contains("@") {
            throw HubError(.invalidConfiguration, "the webhook url must not carry user information ('user@')")
        }
        if afterScheme[authorityEnd...].contains("#") {
            throw HubError(.invalidConfiguration, "the webhook url must not have a fragment ('#')")
        }
        let defaultPort = scheme == "https" ? 443 : 80
        let (host, port) = try Self.hostAndPort(
            Substring(authority.lowercased()), what: "the webhook url's host", code: .invalidConfiguration)
        let effectivePort = port ?? defaultPort
        guard patterns.contains(where: { $0.matches(host: host, port: effectivePort, defaultPort: defaultPort) }) else {
            let shown = port == nil ? host : "\(host):\(effectivePort)"
            let allowed = allowedHosts.isEmpty ? "the list is empty" : allowedHosts.joined(separator: ", ")
            throw HubError(
                .invalidConfiguration,
                "the webhook url's host '\(shown)' is not in webhooks.allowedHosts (\(allowed)); add it there to allow it")
        }
        guard let url = URL(string: text) else {
            throw HubError(.invalidConfiguration, "the webhook url cannot be parsed")
        }
        return url
    }

    /// Splits `host[:port]`, checking the host is a DNS name and not an IP literal.
    static func hostAndPort(_ authority: Substring, what: String, code: HubError.Code) throws(HubError) -> (String, Int?) {
        if authority.hasPrefix("[") {
            throw HubError(code, "\(what) is an IPv6 address; name the host (an address is never allowed)")
        }
        var host = authority
        var port: Int?
        if let colon = authority.lastIndex(of: ":") {
            let digits = authority[authority.index(after: colon)...]
            guard !digits.isEmpty, digits.count <= 5, digits.allSatisfy({ $0.isASCII && $0.isNumber }),
                let number = Int(digits), (1...65535).contains(number)
            else { throw HubError(code, "\(what) has an invalid port") }
            port = number
            host = authority[..<colon]
        }
        let labels = host.split(separator: ".", omittingEmptySubsequences: false)
        let isLabel = { (label: Substring) -> Bool in
            !label.isEmpty && label.utf8.count <= 63 && !label.hasPrefix("-") && !label.hasSuffix("-")
                && label.utf8.allSatisfy { ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2D }
        }
        guard !host.isEmpty, host.utf8.count <= 253, labels.allSatisfy(isLabel) else {
            throw HubError(code, "\(what) is not a DNS host name (letters, digits, '-' and '.')")
        }
        // A last label that is a number is an IPv4 address in one of its spellings (127.0.0.1, 2130706433, 0x7f.1).
        if let last = labels.last, last.allSatisfy(\.isNumber) || (last.hasPrefix("0x") && last.count > 2) {
            throw HubError(code, "\(what) is an IP address; name the host (an address is never allowed)")
        }
        return (String(host), port)
    }
}
