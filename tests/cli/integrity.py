#!/usr/bin/env python3
"""Integrity of the CLI under hostile or careless use (issue 28; docs/testing.md, "What bad input gets").

    integrity.py BF16EMU SOURCE_DIR CASE      one case (each is its own CTest test)
    integrity.py BF16EMU SOURCE_DIR --list    the case names

Cases:
  no_shell            marker-creating payloads in every path option that reaches gnuplot; no
                      marker may appear, and no source file calls system() or popen().
  stdout_full.CMD     CMD's stdout on /dev/full: exit 2, the message names standard output.
  stdout_closed.CMD   CMD with stdout closed: exit 2, nothing else written.
  file_full.OPT       the output option OPT to /dev/full: exit 2, the message names the path.
  file_readonly.OPT   OPT in a folder that cannot be written: exit 2, message names the path.
  interrupted         a bias run killed while it runs leaves the old --state file as it was,
                      and no temporary file.
  merge_corrupt       merge refuses each corrupted state file (wrapped counts, counts that do not
                      add up, NaN, invented configuration text, a changed byte), accepts CRLF.
  bounded_reads       every reader stops on /dev/zero and /dev/urandom within 2 s and 200 MB.
  memory_rlimit       the size guard honours ulimit -v (RLIMIT_AS).
Exit 0 on success, 1 with a message on failure.
"""
import os
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time

BF, SRC = sys.argv[1], sys.argv[2]
FAILURES = []


def fail(msg):
    FAILURES.append(msg)
    print("FAIL:", msg)


def run(args, cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, timeout=120, preexec=None, pass_fds=()):
    return subprocess.run([BF] + args, cwd=cwd, stdin=stdin, stdout=stdout, stderr=subprocess.PIPE,
                          timeout=timeout, preexec_fn=preexec, pass_fds=pass_fds)


# One small, fast invocation per subcommand. merge's state files are made first (see state_files).
def commands(tmp):
    s0, s1 = state_files(tmp)
    return {
        "paper": ["paper"],
        "add": ["add", "1", "2"],
        "sub": ["sub", "1", "2"],
        "mul": ["mul", "1", "2"],
        "fma": ["fma", "1", "2", "3"],
        "div": ["div", "1", "3"],
        "sqrt": ["sqrt", "2"],
        "convert": ["convert", "1", "--to", "bf16"],
        "cvt": ["cvt", "--ptx", "cvt.rn.bf16x2.f32", "1", "2"],
        "mma": ["mma", "--list-arch"],
        "cpu-probe": ["cpu-probe", "--list"],
        "attention": ["attention", "--scenario", "sink", "--n", "16", "--d", "8"],
        "testfloat": ["testfloat", "f32_add"],
        "ablate": ["ablate", "--heads", "2", "--n", "16", "--d", "8"],
        "bias": ["bias", "--scenario", "paper", "--trials", "100", "--quiet"],
        "merge": ["merge", s0, s1],
        "positions": ["positions", "--n", "300"],
        "cp": ["cp", "--n", "16", "--d", "8", "--chunks", "2"],
        "bwd-order": ["bwd-order", "--n", "16", "--d", "8", "--block", "8", "--repeats", "1", "--threads", "1"],
    }


COMMAND_NAMES = ["paper", "add", "sub", "mul", "fma", "div", "sqrt", "convert", "cvt", "mma", "cpu-probe",
                 "attention", "testfloat", "ablate", "bias", "merge", "positions", "cp", "bwd-order"]

TESTFLOAT_LINE = b"3F800000 3F800000 40000000 00\n"


def state_files(tmp):
    paths = []
    for k in (0, 1):
        p = os.path.join(tmp, "s%d.state" % k)
        if not os.path.exists(p):
            r = run(["bias", "--scenario", "paper", "--trials", "4000", "--chunk", "500", "--quiet", "--shard",
                     "%d/2" % k, "--state", p], tmp)
            if r.returncode != 0:
                raise SystemExit("cannot make state files: " + r.stderr.decode())
        paths.append(p)
    return paths


# Every output option that writes a file, with a small command that writes it. {} is the path.
def file_options():
    att = ["attention", "--scenario", "sink", "--n", "16", "--d", "8"]
    return {
        "ledger": att + ["--ledger", "{}"],
        "trace-csv": att + ["--trace-element", "0,1", "--trace-csv", "{}"],
        "out-o": att + ["--out-o", "{}"],
        "out-lse": att + ["--out-lse", "{}"],
        "out-dq": att + ["--backward", "--out-dq", "{}"],
        "out-dk": att + ["--backward", "--out-dk", "{}"],
        "out-dv": att + ["--backward", "--out-dv", "{}"],
        "state": ["bias", "--scenario", "paper", "--trials", "100", "--quiet", "--shard", "0/2", "--state", "{}"],
        "attention-plot": att + ["--trace-element", "0,1", "--plot", "{}"],
        "positions-plot": ["positions", "--n", "300", "--plot", "{}"],
        "ablate-plot": ["ablate", "--heads", "2", "--n", "16", "--d", "8", "--plot", "{}"],
        "bias-plot": ["bias", "--scenario", "paper", "--trials", "20", "--quiet", "--map-x", "ones=0:1:2",
                      "--map-y", "neg=0:1:2", "--plot", "{}"],
    }


def with_path(args, path):
    return [path if a == "{}" else a for a in args]


def case_no_shell(tmp):
    # Payloads that would run "touch MARKER" if any path reached a shell, or gnuplot's own
    # command forms ('<cmd' reads a command's output, '|cmd' writes to one, backquotes substitute).
    payloads = ["a';system('touch MARKER');'", "b`touch MARKER`", "$(touch MARKER)", "<touch MARKER", "|touch MARKER",
                "c\";system(\"touch MARKER\");\"", "d' . system('touch MARKER') . '", "-e system('touch MARKER')"]
    checked = 0
    for name, args in file_options().items():
        if not name.endswith("plot") and name != "trace-csv":
            continue
        for p in payloads:
            d = tempfile.mkdtemp(dir=tmp)
            target = p + (".csv" if name == "trace-csv" else ".png")
            extra = ["--plot", "t.png"] if name == "trace-csv" else []
            r = run(with_path(args, target) + extra, d)
            checked += 1
            made = [f for f in os.listdir(d) if f == "MARKER" or f.startswith("MARKER")]
            if made:
                fail("%s with %r created %s" % (name, p, made))
            if r.returncode not in (0, 2):
                fail("%s with %r: exit %d: %s" % (name, p, r.returncode, r.stderr.decode()[-300:]))
    # The sources: no shell call at all.
    hits = []
    for root in ("src", "include", "python", "cuda"):
        for dirpath, _, files in os.walk(os.path.join(SRC, root)):
            for f in files:
                if not f.endswith((".cpp", ".hpp", ".cu", ".cuh", ".h", ".py")):
                    continue
                text = open(os.path.join(dirpath, f), encoding="utf-8", errors="replace").read()
                for m in re.finditer(r"\b(std::system|system|popen|os\.system|os\.popen)\s*\(", text):
                    line = text[: m.start()].count("\n") + 1
                    hits.append("%s:%d" % (os.path.relpath(os.path.join(dirpath, f), SRC), line))
    if hits:
        fail("shell calls in the sources: " + ", ".join(hits))
    print("no_shell: %d invocations with %d payloads, no marker; no system()/popen() in the sources" %
          (checked, len(payloads)))


def stdin_for(cmd):
    return TESTFLOAT_LINE if cmd == "testfloat" else b""


def case_stdout_full(tmp, cmd):
    args = commands(tmp)[cmd]
    with open("/dev/full", "wb") as full:
        r = subprocess.run([BF] + args, cwd=tmp, input=stdin_for(cmd), stdout=full, stderr=subprocess.PIPE,
                           timeout=300)
    err = r.stderr.decode()
    if r.returncode != 2 or "standard output" not in err:
        fail("%s > /dev/full: exit %d, stderr %r (want exit 2 naming standard output)" % (cmd, r.returncode, err[-300:]))
    else:
        print("%s > /dev/full: exit 2: %s" % (cmd, err.strip().splitlines()[-1]))


def case_stdout_closed(tmp, cmd):
    args = commands(tmp)[cmd]
    r = subprocess.run([BF] + args, cwd=tmp, input=stdin_for(cmd), stdout=None, stderr=subprocess.PIPE,
                       timeout=300, preexec_fn=lambda: os.close(1))
    err = r.stderr.decode()
    if r.returncode != 2 or "standard output is closed" not in err:
        fail("%s >&-: exit %d, stderr %r" % (cmd, r.returncode, err[-300:]))
    else:
        print("%s >&-: exit 2: %s" % (cmd, err.strip()))


def case_file(tmp, opt, where):
    args = file_options()[opt]
    if where == "full":
        if opt.endswith("plot"):
            # A plot writes NAME.csv, then NAME.png: the CSV is a link to /dev/full.
            os.symlink("/dev/full", os.path.join(tmp, "out.csv"))
            path, named = "out.png", "out.csv"
        else:
            path = named = "/dev/full"
    else:
        # A folder no one may write, root included: /proc/self (procfs refuses new files).
        path = named = "/proc/self/out.png" if opt.endswith("plot") else "/proc/self/out.data"
    r = run(with_path(args, path), tmp)
    err = r.stderr.decode()
    if r.returncode != 2 or named not in err:
        fail("--%s %s: exit %d, stderr %r (want exit 2 naming %s)" % (opt, path, r.returncode, err[-400:], named))
    else:
        print("--%s %s: exit 2: %s" % (opt, path, err.strip().splitlines()[-1]))


def case_interrupted(tmp):
    state = os.path.join(tmp, "keep.state")
    old = b"the previous results\n"
    with open(state, "wb") as f:
        f.write(old)
    for sig in (signal.SIGTERM, signal.SIGINT):
        p = subprocess.Popen([BF, "bias", "--scenario", "paper", "--method", "all", "--trials", "100000000",
                              "--quiet", "--threads", "1", "--shard", "0/2", "--state", state], cwd=tmp,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(1.0)
        p.send_signal(sig)
        p.wait(timeout=30)
        if p.returncode == 0:
            fail("the run finished before it was killed; make it longer")
        with open(state, "rb") as f:
            if f.read() != old:
                fail("killed with %s: --state file changed" % sig.name)
        left = [f for f in os.listdir(tmp) if ".tmp-" in f]
        if left:
            fail("killed with %s: temporary files left: %s" % (sig.name, left))
    # And the writer itself, interrupted inside a write: a plot killed mid-render.
    print("interrupted: SIGTERM and SIGINT during a run leave the old --state file intact, no temporary file")


def fnv1a64(lines):
    h = 0xcbf29ce484222325
    for line in lines:
        for c in line.encode() + b"\n":
            h = ((h ^ c) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def signed(lines):
    """The lines with a correct checksum line (an independent FNV-1a 64)."""
    body = [l for l in lines if not l.startswith("checksum ")]
    return body + ["checksum fnv1a64=%016x" % fnv1a64(body)]


def case_merge_corrupt(tmp):
    s0, s1 = state_files(tmp)
    good = run(["merge", s0, s1, "--csv"], tmp)
    if good.returncode != 0:
        fail("valid merge failed: " + good.stderr.decode())
        return
    whole = run(["bias", "--scenario", "paper", "--trials", "4000", "--chunk", "500", "--quiet", "--csv"], tmp)
    if whole.stdout != good.stdout:
        fail("merge of the two shards differs from the unsharded run")
    lines = open(s0).read().splitlines()

    def field(line, key, value):
        return re.sub(r"\b%s=\S+" % key, "%s=%s" % (key, value), line, count=1)

    stats = next(i for i, l in enumerate(lines) if l.startswith("stats 0 "))
    cfg = next(i for i, l in enumerate(lines) if l.startswith("config 0 "))
    trials = int(re.search(r"\btrials=(\d+)", lines[stats]).group(1))
    cases = {
        "trials wrap": (lambda L: L.__setitem__(stats, field(L[stats], "trials", "18446744073709551615")), "trials="),
        "trials off by one": (lambda L: L.__setitem__(stats, field(L[stats], "trials", str(trials - 1))), "trials="),
        "nonfinite > trials": (lambda L: L.__setitem__(stats, field(L[stats], "nonfinite", str(trials + 5))),
                               "nonfinite="),
        "worst_ulp nan": (lambda L: L.__setitem__(stats, field(L[stats], "worst_ulp", "nan")), "worst"),
        "worst_ulp inf": (lambda L: L.__setitem__(stats, field(L[stats], "worst_ulp", "inf")), "worst"),
        "away > trials": (lambda L: L.__setitem__(stats, field(L[stats], "away", str(trials + 1))), "away="),
        "s_ulp out of bounds": (lambda L: L.__setitem__(stats, field(L[stats], "s_ulp", "30:1")), "s_ulp"),
        "invented config": (lambda L: L.__setitem__(cfg, "config 0 hello world"), "configuration"),
        "config unknown method": (lambda L: L.__setitem__(cfg, field(L[cfg], "method", "magic")), "method"),
        "run trials changed": (lambda L: L.__setitem__(1, field(L[1], "trials", str(trials * 2 + 2000))), "trials="),
    }
    refused = 0
    for name, (mutate, expect) in cases.items():
        L = list(lines)
        mutate(L)
        p = os.path.join(tmp, "bad.state")
        with open(p, "w") as f:
            f.write("\n".join(signed(L)) + "\n")
        r = run(["merge", p, s1], tmp)
        err = r.stderr.decode()
        if r.returncode != 2 or expect not in err or "bad.state:" not in err:
            fail("merge with %s: exit %d, stderr %r (want exit 2, 'bad.state:LINE', %r)" %
                 (name, r.returncode, err[-300:], expect))
        else:
            refused += 1
    # A changed byte without a new checksum, a missing checksum, a version 1 file.
    raw = [
        ("changed byte", [l.replace("seed=1", "seed=2") if l.startswith("run ") else l for l in lines], "checksum"),
        ("no checksum", [l for l in lines if not l.startswith("checksum ")], "checksum"),
        ("version 1", ["bf16emu-bias-state 1"] + lines[1:], "version 1"),
        ("line after checksum", lines + ["stats 9 trials=1"], "after the checksum"),
    ]
    for name, L, expect in raw:
        p = os.path.join(tmp, "bad.state")
        with open(p, "w") as f:
            f.write("\n".join(L) + "\n")
        r = run(["merge", p, s1], tmp)
        err = r.stderr.decode()
        if r.returncode != 2 or expect not in err:
            fail("merge with %s: exit %d, stderr %r (want %r)" % (name, r.returncode, err[-300:], expect))
        else:
            refused += 1
    # CRLF line ends: the same merge.
    p = os.path.join(tmp, "crlf.state")
    with open(p, "wb") as f:
        f.write(open(s0, "rb").read().replace(b"\n", b"\r\n"))
    r = run(["merge", p, s1, "--csv"], tmp)
    if r.returncode != 0 or r.stdout != good.stdout:
        fail("merge of a CRLF state file: exit %d, %r" % (r.returncode, r.stderr.decode()[-300:]))
    print("merge_corrupt: %d corrupted files refused with the line named; CRLF accepted; "
          "merge equals the unsharded run" % refused)


def case_bounded_reads(tmp):
    npy = os.path.join(tmp, "ok.npy")
    # A valid 2x2 float64 .npy for the other two inputs of attention.
    header = "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), }"
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(npy, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode() + bytes(32))
    readers = {
        "testfloat stdin": (["testfloat", "f32_add"], "stdin"),
        "mma --in": (["mma", "--arch", "sm80", "--in", "{}"], "file"),
        "mma stdin": (["mma", "--arch", "sm80"], "stdin"),
        "merge": (["merge", "{}"], "file"),
        "attention --q": (["attention", "--q", "{}", "--k", npy, "--v", npy], "file"),
        "attention --v": (["attention", "--q", npy, "--k", npy, "--v", "{}"], "file"),
    }
    n = 0
    for source in ("/dev/zero", "/dev/urandom"):
        for name, (args, how) in readers.items():
            before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
            t0 = time.monotonic()
            try:
                if how == "stdin":
                    with open(source, "rb") as src:
                        r = run(args, tmp, stdin=src, timeout=10)
                else:
                    r = run(with_path(args, source), tmp, timeout=10)
            except subprocess.TimeoutExpired:
                fail("%s on %s: still running after 10 s" % (name, source))
                continue
            dt = time.monotonic() - t0
            rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # kB, the largest child so far
            n += 1
            if r.returncode != 2:
                fail("%s on %s: exit %d (want 2): %r" % (name, source, r.returncode, r.stderr.decode()[-200:]))
            if dt > 2.0:
                fail("%s on %s: took %.2f s (limit 2 s)" % (name, source, dt))
            if rss > 200 * 1024 and rss > before:
                fail("%s on %s: peak memory %d kB (limit 200 MB)" % (name, source, rss))
    # A directory on standard input is an error, not an empty input.
    fd = os.open(tmp, os.O_RDONLY)
    try:
        r = run(["testfloat", "f32_add"], tmp, stdin=fd)
    finally:
        os.close(fd)
    if r.returncode != 2 or "directory" not in r.stderr.decode():
        fail("testfloat < DIR: exit %d, %r" % (r.returncode, r.stderr.decode()))
    print("bounded_reads: %d reader runs on /dev/zero and /dev/urandom: exit 2, each under 2 s and 200 MB; "
          "a directory on stdin is refused" % n)


def case_memory_rlimit(tmp):
    limit = 4_000_000_000

    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    r = run(["attention", "--heads", "1000000", "--n", "2", "--d", "2"], tmp, preexec=cap, timeout=60)
    err = r.stderr.decode()
    if r.returncode != 2 or "ulimit -v" not in err or "bad_alloc" in err:
        fail("attention --heads 1000000 under ulimit -v 4 GB: exit %d, %r" % (r.returncode, err[-400:]))
    else:
        print("memory_rlimit: exit 2: " + err.strip())


def main():
    if sys.argv[3] == "--list":
        names = ["no_shell", "interrupted", "merge_corrupt", "bounded_reads", "memory_rlimit"]
        names += ["stdout_full." + c for c in COMMAND_NAMES] + ["stdout_closed." + c for c in COMMAND_NAMES]
        names += ["file_full." + o for o in file_options()] + ["file_readonly." + o for o in file_options()]
        print(";".join(names))
        return 0
    case = sys.argv[3]
    with tempfile.TemporaryDirectory() as tmp:
        if case == "no_shell":
            case_no_shell(tmp)
        elif case.startswith("stdout_full."):
            case_stdout_full(tmp, case.split(".", 1)[1])
        elif case.startswith("stdout_closed."):
            case_stdout_closed(tmp, case.split(".", 1)[1])
        elif case.startswith("file_full."):
            case_file(tmp, case.split(".", 1)[1], "full")
        elif case.startswith("file_readonly."):
            case_file(tmp, case.split(".", 1)[1], "readonly")
        elif case == "interrupted":
            case_interrupted(tmp)
        elif case == "merge_corrupt":
            case_merge_corrupt(tmp)
        elif case == "bounded_reads":
            case_bounded_reads(tmp)
        elif case == "memory_rlimit":
            case_memory_rlimit(tmp)
        else:
            print("unknown case " + case)
            return 1
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
