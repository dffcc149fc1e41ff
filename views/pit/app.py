"""``tabled-pit``: the command line (docs/views.md, The pit view).

``tabled-pit --nats nats://… --users users.toml`` serves the floor on localhost unless
``--listen`` says otherwise; with ``--cert`` and ``--key`` it serves HTTPS (or put a
reverse proxy with TLS in front). ``tabled-pit hash-password`` reads a password on stdin
and prints the hash a users file holds.
"""

from __future__ import annotations

import argparse
import getpass
import logging
import ssl
import sys
from pathlib import Path

from aiohttp import web

from views.pit.service import Pit, make_app
from views.pit.users import UsersError, hash_password, load_users


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tabled-pit", description="The pit's view of the floor.")
    p.add_argument("command", nargs="?", choices=("serve", "hash-password"), default="serve")
    p.add_argument("--nats", action="append", help="a NATS server URL (repeat for a cluster)")
    p.add_argument("--users", help="the users file (TOML; docs/views.md)")
    p.add_argument("--listen", default="127.0.0.1:8090", help="HOST:PORT (default %(default)s)")
    p.add_argument("--stream", default="TABLES", help="the bridge's stream (default %(default)s)")
    p.add_argument("--durable", default="pit", help="the consumer's name (default %(default)s)")
    p.add_argument("--bucket", default="PIT_ACKS", help="the acknowledgements' KV bucket")
    p.add_argument(
        "--user-header",
        metavar="NAME",
        help="a trusted reverse proxy's header naming the user (role from --users); only behind that proxy",
    )
    p.add_argument("--cert", help="TLS certificate (PEM): serve HTTPS")
    p.add_argument("--key", help="its private key (PEM)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.command == "hash-password":
        pw = (
            getpass.getpass("password: ")
            if sys.stdin.isatty()
            else sys.stdin.readline().rstrip("\n")
        )
        if not pw:
            print("tabled-pit: an empty password", file=sys.stderr)
            return 2
        print(hash_password(pw))
        return 0
    if not args.nats or not args.users:
        print("tabled-pit: give --nats URL and --users FILE", file=sys.stderr)
        return 2
    host, _, port = args.listen.rpartition(":")
    if not host or not port.isdigit():
        print(f"tabled-pit: --listen {args.listen!r}: expected HOST:PORT", file=sys.stderr)
        return 2
    if bool(args.cert) != bool(args.key):
        print("tabled-pit: --cert and --key go together", file=sys.stderr)
        return 2
    try:
        users = load_users(Path(args.users))
    except UsersError as e:
        print(f"tabled-pit: {e}", file=sys.stderr)
        return 2
    tls = None
    if args.cert:
        tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        tls.load_cert_chain(args.cert, args.key)
    logging.basicConfig(level=logging.INFO, format="tabled-pit: %(message)s")
    pit = Pit(
        args.nats,
        users,
        stream=args.stream,
        durable=args.durable,
        bucket=args.bucket,
        user_header=args.user_header,
    )
    print(
        f"tabled-pit: {len(users)} users, floor from {', '.join(args.nats)} on {args.listen}",
        file=sys.stderr,
        flush=True,
    )
    web.run_app(
        make_app(pit),
        host=host.strip("[]"),
        port=int(port),
        ssl_context=tls,
        print=None,
        access_log=None,
        shutdown_timeout=2.0,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
