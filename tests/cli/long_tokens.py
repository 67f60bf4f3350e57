#!/usr/bin/env python3
"""Bad input with a huge token: every case must exit 2 with a short message.

  long_tokens.py BINARY

Error messages quote at most ~80 characters of a bad token (io::shorten), so a 10 MB token
on stdin (a TestFloat line) or a 100 kB argument (the most one argument may be on Linux is
128 kB) must give exit status 2 and under 1 kB on stderr, which names the token by its
first characters and its length.
"""
import subprocess
import sys

MB10 = 10 * 1024 * 1024
ARG = 100 * 1024


def check(binary, name, args, stdin=b"", expect=()):
    p = subprocess.run([binary] + args, input=stdin, capture_output=True, timeout=120)
    problems = []
    if p.returncode != 2:
        problems.append(f"exit status {p.returncode}, expected 2")
    if len(p.stderr) >= 1024:
        problems.append(f"{len(p.stderr)} bytes on stderr, expected under 1024")
    err = p.stderr.decode(errors="replace")
    for t in expect:
        if t not in err:
            problems.append(f"missing text {t!r}")
    for pr in problems:
        print(f"FAIL {name}: {pr}\n--- stderr (first 300 bytes)\n{err[:300]}")
    return not problems


def main():
    b = sys.argv[1]
    digits, hexes, letters = "1" * ARG, "A" * ARG, "q" * ARG
    cases = [
        # TestFloat: a 10 MB operand field, a 10 MB extra token, a 10 MB flags field.
        # A 10 MB line stops at the TestFloat line limit (4,096 characters, docs/testing.md) before
        # it is read whole; a 3,000-character token within the limit is named and cut.
        ("testfloat_operand", ["testfloat", "f32_add"], b"G" * MB10 + b" 3F800000 3F800000 00\n",
         ["standard input:1: a line longer than 4096 characters"]),
        ("testfloat_extra", ["testfloat", "f32_add"], b"3F800000 3F800000 40000000 00 " + b"7" * MB10 + b"\n",
         ["standard input:1: a line longer than 4096 characters"]),
        ("testfloat_flags", ["testfloat", "f32_add"], b"3F800000 3F800000 40000000 " + b"0" * MB10 + b"\n",
         ["standard input:1: a line longer than 4096 characters"]),
        ("testfloat_operand_3k", ["testfloat", "f32_add"], b"G" * 3000 + b" 3F800000 3F800000 00\n",
         ["line 1: bad token 'GGGG", "(3000 characters)"]),
        ("testfloat_extra_3k", ["testfloat", "f32_add"], b"3F800000 3F800000 40000000 00 " + b"7" * 3000 + b"\n",
         ["unexpected extra token '7777", "(3000 characters)"]),
        ("testfloat_flags_3k", ["testfloat", "f32_add"], b"3F800000 3F800000 40000000 " + b"0" * 3000 + b"\n",
         ["bad token '0000", "(flags"]),
        ("testfloat_function", ["testfloat", letters], b"", ["unknown TestFloat function 'qqqq", f"({ARG} characters)"]),
        ("testfloat_option", ["testfloat", "-r" + letters, "f32_add"], b"", ["unknown option '-rqqq"]),
        # Arithmetic: operands (too long, extra), names, --random.
        ("operand", ["add", "1", digits + "x"], b"", ["cannot read '1111", "longer than 2000"]),
        ("operand_hex", ["add", "1", "0x" + hexes], b"", ["cannot read '0xAAAA"]),
        ("extra_operand", ["add", "1", "2", "0" * 1999], b"", ["<- extra", "(1999 characters)"]),
        ("round", ["add", "1", "2", "--round", letters], b"", ["unknown rounding mode 'qqqq"]),
        ("format", ["add", "1", "2", "--format", letters], b"", ["'qqqq"]),
        ("to", ["convert", "1", "--to", letters], b"", ["'qqqq"]),
        ("random", ["add", "1", "2", "--round", "sr", "--random", digits], b"", ["--random: cannot read '1111"]),
        # CLI11's own messages and the command name.
        ("option", ["add", "1", "2", "--" + letters], b"", ["--qqqq"]),
        ("command", [letters], b"", ["unknown command 'qqqq"]),
    ]
    ok = all([check(b, *c) for c in cases])
    print(f"{len(cases)} cases, {'all passed' if ok else 'some failed'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
