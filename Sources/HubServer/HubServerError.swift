import NotificationHub
/// Placeholder namespace for the data-plane API.
public enum HubAPI {}
