import AdapterKit
import Foundation
import _CryptoExtras

/// The fields of a Google service-account JSON key file that the FCM adapter uses.
///
/// ```json
/// {"type": "service_account", "project_id": "demo-project", "private_key_id": "…", "private_key": "-----BEGIN PRIVATE KEY-----…",
///  "client_email": "hub@demo-project.iam.gserviceaccount.com", "token_uri": "https://oauth2.googleapis.com/token"}
/// ```
public struct FCMServiceAccount: Sendable {
    /// The Firebase project the messages are sent for.
    public var projectID: String
    /// The key's identifier, sent as the assertion's `kid`.
    public var privateKeyID: String?
    /// The account's e-mail address: the assertion's `iss`.
    public var clientEmail: String
    /// Where assertions are exchanged for access tokens: the assertion's `aud`.
    public var tokenURI: String
    /// The RSA signing key (never logged).
    public var privateKey: _RSA.Signing.PrivateKey

    /// Parses a service-account JSON document. Error messages name missing fields, never their values.
    public init(json: String) throws(FCMError) {
        guard let object = try? JSONValue(parsing: Array(json.utf8)).objectValue else {
            throw FCMError(.invalidServiceAccount, "the service account file is not a JSON object")
        }
        func field(_ name: String) throws(FCMError) -> String {
            guard let value = object[name]?.stringValue, !value.isEmpty else {
                throw FCMError(.invalidServiceAccount, "the service account file has no '\(name)'")
            }
            return value
        }
        if let type = object["type"]?.stringValue, type != "service_account" {
            throw FCMError(.invalidServiceAccount, "the service account file's type is '\(type)'; expected service_account")
        }
        projectID = try field("project_id")
        clientEmail = try field("client_email")
        tokenURI = object["token_uri"]?.stringValue ?? "https://oauth2.googleapis.com/token"
        privateKeyID = object["private_key_id"]?.stringValue
        let pem = try field("private_key")
        do {
            privateKey = try _RSA.Signing.PrivateKey(pemRepresentation: pem)
        } catch {
            throw FCMError(.invalidServiceAccount, "the service account's private_key is not an RSA private key in PEM")
        }
    }

    /// A signed RS256 JWT assertion for the OAuth 2.0 JWT-bearer grant, valid for `lifetime` (at most one hour).
    public func assertion(scope: String, issuedAt: Date = Date(), lifetime: TimeInterval = 3600) throws -> String {
        let iat = Int(issuedAt.timeIntervalSince1970)
        var header: [String: JSONValue] = ["alg": "RS256", "typ": "JWT"]
        if let privateKeyID { header["kid"] = .string(privateKeyID) }
        let claims: [String: JSONValue] = [
            "iss": .string(clientEmail), "scope": .string(scope), "aud": .string(tokenURI),
            "iat": .number(Double(iat)), "exp": .number(Double(iat + Int(min(lifetime, 3600)))),
        ]
        let signingInput =
            Base64URL.encode(Array(JSONValue.object(header).jsonString().utf8)) + "."
            + Base64URL.encode(Array(JSONValue.object(claims).jsonString().utf8))
        let signature = try privateKey.signature(for: Array(signingInput.utf8), padding: .insecurePKCS1v1_5)
        return signingInput + "." + Base64URL.encode(Array(signature.rawRepresentation))
    }
}
