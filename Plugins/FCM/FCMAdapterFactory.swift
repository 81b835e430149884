import AdapterKit
import Foundation

/// Creates ``FCMAdapter``s from `hub.yaml`:
///
/// ```yaml
/// adapters:
///   - type: fcm
///     serviceAccount: {file: keys/service-account.json}   # a secret: the service-account JSON
///     endpoint: https://fcm.googleapis.com                # default
///     caCertificate: .emulator/emulator-ca.pem            # optional extra CA (emulator only)
///     maximumConcurrentRequests: 3200                     # requests in flight at once
///     connections: 32                                     # HTTP/2 connections to spread them over
///     requestTimeoutSeconds: 30
///     connectTimeoutSeconds: 10
///     tokenRenewalMarginSeconds: 300                      # renew access tokens this long before they expire
///     target: automatic                                   # fcmv1 handles: token | fid | automatic (by form)
/// ```
public enum FCMAdapterFactory: PlatformAdapterFactory {
    /// `fcm`.
    public static let type = "fcm"

    /// The registration descriptions ``FCMAdapter`` declares.
    public static var registrationFormats: [RegistrationFormat] { FCMAdapter.descriptor.registrationFormats }

    /// Reads the settings (the service account's contents included), recording every problem; opens nothing.
    public static func settings(from configuration: ConfigurationNode) -> FCMSettings? {
        let json = configuration.secret("serviceAccount")
        var settings = FCMAdapter.Configuration()
        settings.endpoint = configuration.string("endpoint", default: settings.endpoint)
        settings.maximumConcurrentRequests = configuration.integer(
            "maximumConcurrentRequests", default: settings.maximumConcurrentRequests, in: 1...100_000)
        settings.requestTimeout = .milliseconds(
            Int64(configuration.seconds("requestTimeoutSeconds", default: 30, in: 0.1...600) * 1000))
        settings.connections = configuration.integer("connections", default: settings.connections, in: 1...64)
        settings.connectTimeout = .milliseconds(
            Int64(configuration.seconds("connectTimeoutSeconds", default: 10, in: 0.1...600) * 1000))
        settings.tokenRenewalMargin = .milliseconds(
            Int64(configuration.seconds("tokenRenewalMarginSeconds", default: 300, in: 0...3000) * 1000))
        settings.caCertificatePEM = configuration.caCertificatePEM()
        settings.target = targetSetting(from: configuration)
        if configuration.child("caCertificate").isPresent, settings.caCertificatePEM == nil { return nil }
        if !(settings.endpoint.hasPrefix("https://") || settings.endpoint.hasPrefix("http://")) {
            configuration.child("endpoint").report("expected an http(s) URL such as https://fcm.googleapis.com")
            return nil
        }
        guard let json else { return nil }
        do {
            _ = try FCMServiceAccount(json: json)
        } catch {
            configuration.child("serviceAccount").report(error.message)
            return nil
        }
        return FCMSettings(serviceAccountJSON: json, configuration: settings)
    }

    /// `target`: `token`, `fid` or `automatic` (the default); any other value is reported.
    static func targetSetting(from configuration: ConfigurationNode) -> FCMTarget {
        let text = configuration.choice("target", FCMTarget.allCases.map(\.rawValue), default: FCMTarget.automatic.rawValue)
        return FCMTarget(rawValue: text) ?? .automatic
    }

    /// Makes the adapter (not started; its HTTP client is created on first use).
    public static func makeAdapter(settings: FCMSettings, context: AdapterContext) throws(HubError) -> any PlatformAdapter {
        let account: FCMServiceAccount
        do {
            account = try FCMServiceAccount(json: settings.serviceAccountJSON)
        } catch {
            throw HubError(.invalidConfiguration, error.message)
        }
        return try FCMAdapter(serviceAccount: account, configuration: settings.configuration, logger: context.logger)
    }
}

extension FCMAdapter.Configuration: Equatable {
    /// Equal when every setting is.
    public static func == (lhs: FCMAdapter.Configuration, rhs: FCMAdapter.Configuration) -> Bool {
        lhs.endpoint == rhs.endpoint && lhs.caCertificatePEM == rhs.caCertificatePEM
            && lhs.maximumConcurrentRequests == rhs.maximumConcurrentRequests && lhs.requestTimeout == rhs.requestTimeout
            && lhs.tokenRenewalMargin == rhs.tokenRenewalMargin && lhs.connectTimeout == rhs.connectTimeout
            && lhs.connections == rhs.connections && lhs.target == rhs.target
    }
}
