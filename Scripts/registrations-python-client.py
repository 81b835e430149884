"""Drives a hub's registrations API with the azure-notification-hub-unofficial client (list, get, delete).

Usage: Scripts/registrations-python-client.py <connection string> <hub> <registration id to read and delete>
Prints one JSON object with what the client returned, for the Swift test to check.
"""
import json
import sys

import azure_notification_hub.client as hub_client
from azure_notification_hub import NotificationHubsClient
from azure_notification_hub.client import AzureNHError


def main() -> None:
    connection_string, hub, registration_id = sys.argv[1:4]
    # The client signs its tokens for the namespace URL (sr=https://namespace/). The hub's keys are per hub and it
    # accepts only tokens whose resource names the hub, so the token is signed for the hub's URL instead; requests
    # and answers are otherwise the client's own.
    sign = hub_client.create_sas_token
    hub_client.create_sas_token = lambda name, key, audience, expiry=None: sign(
        name, key, audience.rstrip("/") + "/" + hub, expiry)
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
