import Foundation
import NIOCore
import NotificationHub

/// A Live Activity token an app registers under one of its installations, as the registration endpoints read it:
///
/// - `PUT /{hub}/installations/{id}/liveactivities/pushtostart` `{"pushToken":"<hex>"}`: the app's push-to-start
///   token (platform `apnspushtostart`);
/// - `PUT /{hub}/installations/{id}/liveactivities/{activityId}`
///   `{"pushToken":"<hex>","attributesType":"MatchAttributes","tags":["match:1234"]}`: one activity's update token
///   (platform `apnsactivity`), with optional user tags.
///
/// The hub stores each as a sub-resource row of the installation (``InstallationService/storeSubResource(_:of:systemTags:)``),
/// under ids no client can name: `{id}/liveactivities/pushtostart` and `{id}/liveactivities/activities/{activityId}`.
struct LiveActivityRegistration: Sendable, Hashable {
    /// The token, as ActivityKit gives it, in hex.
    var pushToken: String
    /// The activity's ActivityAttributes type (activity tokens only).
    var attributesType: String?
    /// User tags (activity tokens only).
    var tags: [String]

    /// The push-to-start token's platform.
    static let pushToStartPlatform = Platform("apnspushtostart")
    /// An activity update token's platform.
    static let activityPlatform = Platform("apnsactivity")
    /// The push variable that keeps an activity row's ActivityAttributes type.
    static let attributesTypeVariable = "attributesType"

    /// The row id of an installation's push-to-start token.
    static func pushToStartID(of installationID: String) -> String {
        InstallationService.subResourceID(of: installationID, "liveactivities/pushtostart")
    }

    /// The row id of one activity of an installation.
    static func activityRowID(of installationID: String, activityID: String) -> String {
        InstallationService.subResourceID(of: installationID, "liveactivities/activities/" + activityID)
    }

    /// The activity id of an activity row of `installationID`, or `nil` when the row is not one.
    static func activityID(ofRow rowID: String, installationID: String) -> String? {
        let prefix = activityRowID(of: installationID, activityID: "")
        guard rowID.hasPrefix(prefix), rowID.utf8.count > prefix.utf8.count else { return nil }
        return String(rowID.dropFirst(prefix.count))
    }

    /// Checks an activity id: 1–64 characters of `[A-Za-z0-9._-]` (what ActivityKit's ids and an app's own ids use,
    /// and what fits a system tag and a path segment as it is).
    static func checkActivityID(_ id: String) throws(APIError) {
        guard (1...64).contains(id.utf8.count), id.utf8.allSatisfy(isActivityIDByte) else {
            throw APIError.badRequest(
                "InvalidActivityId", "an activityId is 1–64 characters of letters, digits, '.', '_' and '-' (\(id.utf8.count) bytes given)")
        }
    }

    private static func isActivityIDByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"):
            true
        default:
            false
        }
    }

    /// Whether a name can be a Swift ActivityAttributes type's, as ActivityKit writes it in `attributes-type`: 1–200
    /// letters, digits, `_` and `.` (a nested type), not starting with a digit or `.`.
    static func isAttributesType(_ name: String) -> Bool {
        guard let first = name.utf8.first, (1...200).contains(name.utf8.count), !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first),
            first != UInt8(ascii: ".")
        else { return false }
        return name.utf8.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ".")
        }
    }

    /// Reads a registration body; `activity` tells an activity token (which takes `attributesType` and `tags`) from
    /// the push-to-start token (which takes `pushToken` only).
    init(body: ByteBuffer, activity: Bool) throws(APIError) {
        guard case .object(let object)? = try? JSONValue(parsing: Array(body.readableBytesView)) else {
            throw APIError.badRequest(
                "InvalidLiveActivity",
                activity
                    ? "the body must be a JSON object such as {\"pushToken\":\"<hex>\",\"attributesType\":\"MatchAttributes\",\"tags\":[\"match:1234\"]}"
                    : "the body must be a JSON object such as {\"pushToken\":\"<hex>\"}")
        }
        let fields: Set<String> = activity ? ["pushToken", "attributesType", "tags"] : ["pushToken"]
        if let unknown = object.keys.sorted().first(where: { !fields.contains($0) }) {
            throw APIError.badRequest(
                "UnknownField",
                "'\(unknown.prefix(40))' is not a field of \(activity ? "an activity's" : "the push-to-start") registration; use \(fields.sorted().joined(separator: ", "))")
        }
        guard let token = object["pushToken"] else {
            throw APIError.badRequest("MissingPushToken", "pushToken is required: the token ActivityKit gave, in hex")
        }
        guard let text = token.stringValue else {
            throw APIError.badRequest("InvalidPushChannel", "pushToken must be a string of hex digits")
        }
        pushToken = text
        tags = []
        attributesType = nil
        guard activity else { return }
        guard let type = object["attributesType"] else {
            throw APIError.badRequest("MissingAttributesType", "attributesType is required: the name of the activity's ActivityAttributes type")
        }
        guard let name = type.stringValue, Self.isAttributesType(name) else {
            throw APIError.badRequest(
                "InvalidAttributesType", "attributesType must name the ActivityAttributes type: 1–200 letters, digits, _ or .")
        }
        attributesType = name
        switch object["tags"] {
        case nil, .null?:
            break
        case .array(let values)?:
            var tags: [String] = []
            for value in values {
                guard let tag = value.stringValue else {
                    throw APIError.badRequest("InvalidTag", "tags must be an array of strings")
                }
                tags.append(tag)
            }
            self.tags = tags
        case _?:
            throw APIError.badRequest("InvalidTag", "tags must be an array of strings")
        }
    }
}
