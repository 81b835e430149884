"""Drives a hub's registrations API with the azure-notification-hub-unofficial client (list, get, delete).

Usage: Scripts/registrations-python-client.py <connection string> <hub> <registration id to read and delete>
Prints one JSON object with what the client returned, for the Swift test to check.
"""
import json
import sys

from azure_notification_hub import NotificationHubsClient
from azure_notification_hub.client import AzureNHError


def main() -> None:
    connection_string, hub, registration_id = sys.argv[1:4]
    # The client runs unmodified: it signs its tokens for the namespace URL, which the hub accepts when that URL's
    # host is the one the request went to.
    result = {}
    with NotificationHubsClient(connection_string, hub) as client:
        result["listed"] = client.list_registrations(top=100)
        result["read"] = client.get_registration(registration_id)
        result["deleted"] = client.delete_registration(registration_id)
        try:
            client.get_registration(registration_id)
            result["readAfterDelete"] = "found"
        except AzureNHError as error:
            result["readAfterDelete"] = error.status_code
    print(json.dumps(result, sort_keys=True))


if __name__ == "__main__":
    main()
