"""``python -m schedlab sweep FILE --out DIR --backend ray``: what
``schedlab sweep --backend ray`` runs. Exit 0, 1 when runs failed, 2 on
bad input, like the CLI."""

import argparse
import sys

import schedlab


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m schedlab")
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("sweep", help="run a sweep file")
    s.add_argument("file")
    s.add_argument("--out", required=True)
    s.add_argument("--jobs", type=int)
    s.add_argument("--resume", action="store_true")
    s.add_argument("--force", action="store_true")
    s.add_argument("--backend", default="local", choices=["local", "ray"])
    s.add_argument("--address")
    s.add_argument("--html")
    s.add_argument("--quiet", "-q", action="store_true")
    a = ap.parse_args(argv)
    import warnings

    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            schedlab.sweep(file=a.file, out=a.out, jobs=a.jobs, resume=a.resume, force=a.force,
                           backend=a.backend, address=a.address, html=a.html)
    except schedlab.InputError as e:
        print(f"schedlab: error: {e}", file=sys.stderr)
        return 2
    failed = [str(w.message) for w in caught if "failed" in str(w.message)]
    for m in failed:
        print(f"schedlab: {m}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
