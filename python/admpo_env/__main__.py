"""python3 -m admpo_env MODULE:FACTORY [--host H] [--port P | --unix PATH] [--copies N]"""

import argparse
import sys

from .server import load_factory, serve


def main(argv=None):
    p = argparse.ArgumentParser(
        prog="python3 -m admpo_env",
        description="Serve a Gymnasium-API environment to admpo (admpo train online --env tcp://HOST:PORT).")
    p.add_argument("factory", metavar="MODULE:FACTORY",
                   help="a callable that returns a new environment, e.g. my_robot:make_env")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=5555, help="TCP port (0: any free port; the address is printed)")
    p.add_argument("--unix", metavar="PATH", help="listen on this Unix socket instead of TCP")
    p.add_argument("--copies", type=int, default=1, metavar="N",
                   help="offer each connection up to N env copies stepped in batches (docs/remote-envs.md; default 1: none)")
    a = p.parse_args(argv)
    if not 1 <= a.copies <= 4096:
        print(f"admpo_env: --copies {a.copies}: want 1 to 4096", file=sys.stderr)
        return 2
    try:
        factory = load_factory(a.factory)
    except Exception as e:  # a clear one-line error, not a traceback
        print(f"admpo_env: {e}", file=sys.stderr)
        return 2
    try:
        serve(factory, name=a.factory, host=a.host, port=a.port, unix=a.unix, copies=a.copies)
    except KeyboardInterrupt:
        pass
    except OSError as e:
        print(f"admpo_env: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
