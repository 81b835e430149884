import AdapterKit

/// MDM pushes (`apns-push-type: mdm`): "a notification that tells managed devices to contact the MDM server".
///
/// They are sent with the MDM vendor's push certificate (its topic, `com.apple.mgmt.External.<uuid>`, is the
/// certificate's `UID` and becomes the adapter's default topic), never with a provider token, so an adapter using
/// token-based authentication refuses them. Their payload is the device's push magic alone, `{"mdm": "<PushMagic>"}`,
/// without an `aps` dictionary; the topic carries no suffix.
extension APNsAdapter {
    /// Whether every environment of the adapter authenticates with a provider certificate.
    public var usesCertificateAuthentication: Bool { routes.allSatisfy { $0.certificate != nil } }

    /// Refuses an MDM push when the adapter uses tokens or the payload is not `{"mdm": "…"}`, and an MDM-shaped
    /// payload (no `aps`) sent as another push type.
    func checkMDM(pushType: String, shape: PayloadShape) throws(HubError) {
        if let problem = mdmProblem(pushType: pushType, shape: shape) { throw HubError(.invalidNotification, problem) }
    }

    /// The outcome of a delivery ``checkMDM(pushType:shape:)`` refuses, `nil` when it may be sent.
    func mdmRejection(pushType: String, shape: PayloadShape) -> Rejected? {
        guard mdmProblem(pushType: pushType, shape: shape) != nil else { return nil }
        return Rejected(
            result: DeliveryResult(
                .invalidNotificationFormat, reason: pushType == "mdm" && shape.isMDM ? "MDMNeedsCertificate" : "BadPayload"))
    }

    private func mdmProblem(pushType: String, shape: PayloadShape) -> String? {
        guard pushType == "mdm" else {
            return shape.isMDM ? "an APNs payload must be a JSON object with an \"aps\" dictionary" : nil
        }
        guard usesCertificateAuthentication else {
            return "apns-push-type mdm needs certificate authentication: configure this APNs adapter with the MDM push certificate (certificate: {file: …}) instead of teamId, keyId and privateKey"
        }
        guard shape.isMDM else {
            return "an MDM push's payload is {\"mdm\": \"<PushMagic>\"}: the push magic string the device sent when it enrolled"
        }
        return nil
    }

    /// `{"mdm": "<non-empty string>"}` and nothing else.
    static func isMDMPayload(_ object: [String: Any]) -> Bool {
        guard object.count == 1, let magic = object["mdm"] as? String else { return false }
        return !magic.isEmpty
    }
}
