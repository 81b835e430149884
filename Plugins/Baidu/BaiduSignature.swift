import Crypto
import Foundation

/// The `sign` parameter of a REST API 3.0 request, as "SDK开发指南" ("签名算法") defines it
/// (http://push.baidu.com/doc/restapi/sdk_developer): the HTTP method, the request URL, every other parameter as
/// `key=value` sorted by key, and the secret key, concatenated; that text URL-encoded (as PHP's `urlencode`: letters,
/// digits and `-_.` kept, a space as `+`, every other byte as `%XX`); its MD5 in lower-case hex.
public enum BaiduSignature {
    /// The `sign` of a request. `parameters` are the raw (not encoded) values, without `sign`.
    public static func sign(method: String, url: String, parameters: [String: String], secretKey: String) -> String {
        var text = method.uppercased() + url
        for key in parameters.keys.sorted() { text += key + "=" + (parameters[key] ?? "") }
        text += secretKey
        let digest = Insecure.MD5.hash(data: Data(urlEncode(text).utf8))
        return digest.map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
    }

    /// `text` URL-encoded as PHP's `urlencode` does.
    public static func urlEncode(_ text: String) -> String {
        var encoded = ""
        encoded.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."):
                encoded.unicodeScalars.append(UnicodeScalar(byte))
            case UInt8(ascii: " "):
                encoded += "+"
            default:
                let hex = String(byte, radix: 16, uppercase: true)
                encoded += byte < 16 ? "%0" + hex : "%" + hex
            }
        }
        return encoded
    }

    /// A form body (`application/x-www-form-urlencoded`) of `parameters`, sorted by key.
    public static func formBody(_ parameters: [String: String]) -> String {
        parameters.keys.sorted().map { "\(urlEncode($0))=\(urlEncode(parameters[$0] ?? ""))" }.joined(separator: "&")
    }
}
