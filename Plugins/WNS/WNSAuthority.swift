/// Who issues the WNS adapter's access tokens, which decides the token request and the notification types allowed.
///
/// - ``live``: packaged UWP apps registered in Partner Center. The package SID and its secret are exchanged at
///   `https://login.live.com/accesstoken.srf` for scope `notify.windows.com`; every type (raw, toast, tile, badge).
/// - ``entra(tenantID:)``: Windows App SDK (WinUI 3) apps registered in Microsoft Entra ID. The application (client)
///   id and a client secret are exchanged at `https://login.microsoftonline.com/{tenant}/oauth2/v2.0/token` for scope
///   `https://wns.windows.com/.default`; only raw and toast notifications.
public enum WNSAuthority: Sendable, Hashable {
    /// The classic Live authority (package SID and client secret).
    case live
    /// Microsoft Entra ID, for the tenant (directory) id the app is registered in.
    case entra(tenantID: String)

    /// The Entra scope that grants sending WNS notifications.
    public static let entraScope = "https://wns.windows.com/.default"
    /// The Live scope.
    public static let liveScope = "notify.windows.com"

    /// The `scope` form field of the token request.
    public var scope: String {
        switch self {
        case .live: Self.liveScope
        case .entra: Self.entraScope
        }
    }

    /// The Entra token endpoint of `tenantID` under `host` (Microsoft's login host by default).
    public static func entraTokenEndpoint(tenantID: String, host: String = "https://login.microsoftonline.com") -> String {
        var host = host
        while host.hasSuffix("/") { host.removeLast() }
        return "\(host)/\(tenantID)/oauth2/v2.0/token"
    }

    /// Whether notifications of `type` can be sent to apps of this authority (Entra: raw and toast only).
    public func allows(_ type: WNSNotificationType) -> Bool {
        switch self {
        case .live: true
        case .entra: type == .raw || type == .toast
        }
    }

    /// The refusal of a `type` this authority does not allow, as the REST layer and the outcome report it.
    func refusal(of type: WNSNotificationType) -> String {
        "\(type.rawValue) notifications cannot be sent to Windows App SDK apps (authority entra): WNS delivers only wns/raw and wns/toast to them"
    }

    /// Whether `text` can be a tenant id in a URL path: a GUID or a verified domain (`contoso.onmicrosoft.com`).
    public static func isValidTenantID(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= 253
            && text.utf8.allSatisfy { byte in
                (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                    || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
            }
    }
}
