#!/usr/bin/env python3
"""The peer: the Python APNs client aioapns sends N notifications to an APNs endpoint with token auth.

aioapns always dials Apple's hosts on port 443; its protocol classes are pointed at the emulator instead. Prints
`peer.aioapns.<N>: <rate> notifications/s` and the number of failures.

    python3 Benchmarks/peer/aioapns_peer.py --port 4443 --ca emulator-ca.pem --key apns-auth-key.p8 \
        --key-id KEY1234567 --team-id TEAM123456 --topic com.example.bench --count 10000
"""
import argparse
import asyncio
import ssl
import sys
import time

from aioapns import APNs, NotificationRequest, PushType
from aioapns import connection


def device_token(index: int) -> str:
    return "%016x" % index + "ab" * 24


async def send_all(args: argparse.Namespace) -> int:
    context = ssl.create_default_context(cafile=args.ca)
    with open(args.key) as key_file:
        key = key_file.read()
    client = APNs(
        key=key, key_id=args.key_id, team_id=args.team_id, topic=args.topic, use_sandbox=False,
        max_connections=args.connections, ssl_context=context)
    payload = {"aps": {"alert": "Hello from the benchmark", "badge": 1}}
    limit = asyncio.Semaphore(args.concurrency)
    failures = 0

    async def one(index: int) -> None:
        nonlocal failures
        async with limit:
            result = await client.send_notification(
                NotificationRequest(device_token=device_token(index), message=payload, push_type=PushType.ALERT))
            if not result.is_successful:
                failures += 1
                if failures <= 3:
                    print(f"failure: {result.status} {result.description}", file=sys.stderr)

    # Warm-up: open the connections.
    await asyncio.gather(*(one(index) for index in range(args.connections * 10)))
    failures = 0
    started = time.perf_counter()
    await asyncio.gather(*(one(index) for index in range(args.count)))
    elapsed = time.perf_counter() - started
    print(f"peer.aioapns.{args.count}: {args.count / elapsed:.0f} notifications/s")
    print(f"peer.aioapns.{args.count}.failures: {failures} notifications")
    return 0 if failures == 0 else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--ca", required=True, help="the CA certificate the emulator's TLS certificate chains to")
    parser.add_argument("--key", required=True, help="the .p8 signing key")
    parser.add_argument("--key-id", required=True)
    parser.add_argument("--team-id", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--count", type=int, default=10000)
    parser.add_argument("--connections", type=int, default=10, help="aioapns max_connections")
    parser.add_argument("--concurrency", type=int, default=1000, help="requests in flight")
    args = parser.parse_args()
    connection.APNsProductionClientProtocol.APNS_SERVER = args.host
    connection.APNsTLSClientProtocol.APNS_PORT = args.port
    return asyncio.run(send_all(args))


if __name__ == "__main__":
    sys.exit(main())
