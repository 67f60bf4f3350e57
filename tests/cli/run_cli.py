#!/usr/bin/env python3
"""Runs the bf16emu CLI once and checks what it did (driver for tests/cli/CMakeLists.txt).

  run_cli.py --rc 2 --expect "'x'" [--stdin FILE] [--json] [--json-check EXPR]
             [--stdout-file FILE] -- BINARY ARGS...

--rc N            required exit status
--expect TEXT     TEXT must occur in stdout+stderr (literal, repeatable)
--reject TEXT     TEXT must not occur (repeatable)
--stdin FILE      feed FILE on stdin
--json            stdout must parse as JSON (json.load)
--json-check E    Python expression on the parsed JSON `d` that must be true (repeatable)
--stdout-file F   stdout must equal the contents of F exactly
--lines N         stderr must have exactly N lines (e.g. 1 for a one-line error)
"""
import argparse
import json
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rc", type=int, required=True)
    ap.add_argument("--expect", action="append", default=[])
    ap.add_argument("--reject", action="append", default=[])
    ap.add_argument("--stdin")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--json-check", action="append", default=[])
    ap.add_argument("--stdout-file")
    ap.add_argument("--lines", type=int)
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd
    stdin = open(a.stdin, "rb") if a.stdin else subprocess.DEVNULL
    p = subprocess.run(cmd, stdin=stdin, capture_output=True, timeout=120)
    out, err = p.stdout.decode(), p.stderr.decode()
    both = out + err
    problems = []
    if p.returncode != a.rc:
        problems.append(f"exit status {p.returncode}, expected {a.rc}")
    for t in a.expect:
        if t not in both:
            problems.append(f"missing text: {t!r}")
    for t in a.reject:
        if t in both:
            problems.append(f"unexpected text: {t!r}")
    if a.lines is not None and len(err.splitlines()) != a.lines:
        problems.append(f"{len(err.splitlines())} lines on stderr, expected {a.lines}")
    if a.json or a.json_check:
        try:
            d = json.loads(out)
            for e in a.json_check:
                if not eval(e, {}, {"d": d}):
                    problems.append(f"JSON check failed: {e}")
        except Exception as ex:  # noqa: BLE001 - report any parse/eval failure
            problems.append(f"JSON: {ex}")
    if a.stdout_file:
        want = open(a.stdout_file).read()
        if out != want:
            problems.append(f"stdout differs from {a.stdout_file}:\n--- want\n{want}--- got\n{out}")
    if problems:
        print("$ " + " ".join(cmd))
        print("--- stdout\n" + out + "--- stderr\n" + err + "---")
        for pr in problems:
            print("FAIL: " + pr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
