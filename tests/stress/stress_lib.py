#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Shared by the stress run's python workers and by stress.sh's end.

For the workers (stress_netlink.py, stress_epoll.py): operation counters in
the format stress.sh's own workers write, network namespaces, and the
netdev netlink family of the installed kselftests' YNL library, with one
socket per network namespace (its calls faulted through fail_nth.py).

As a program, for stress.sh once every worker has stopped:

  stress_lib.py ran COUNTS_DIR WORKER...
      each WORKER's operations; fails unless every one had some that
      succeeded
  stress_lib.py unexpected COUNTS_DIR
      the unexpected errors, by worker and kind, with the first of their
      messages; fails if there was any
  stress_lib.py summary COUNTS_DIR MINUTES [--json FILE] [--faults K=N]...
                [--case NAME=RESULT]...
      one line with the minutes, the operations per worker, the errors by
      kind and the faults injected; the same figures as JSON in FILE

A worker's counts are "key value" lines in COUNTS_DIR/WORKER.N (N: one
file per process of the worker, so that a restarted worker adds to what
its earlier processes did): ops, ok, ops.OP (per operation), exp.ERR
(errors the operation may return), fault.ERR (other errors of operations
a fault was injected into), unexp.ERR (the rest), faults.armed and
faults.injected (system calls armed and faulted through fail_nth.py);
their messages, one a line, in COUNTS_DIR/WORKER.N.unexpected.
"""

import argparse
import contextlib
import copy
import ctypes
import json
import os
import socket
import sys
import time

from fail_nth import FaultySocket, errname

CLONE_NEWNET = 0x40000000
NETNS_DIR = "/var/run/netns"
# Netlink socket options YnlFamily sets on its socket (uapi netlink.h)
SOL_NETLINK = 270
NETLINK_SOCKOPTS = (10, 11, 12)  # CAP_ACK, EXT_ACK, GET_STRICT_CHK
NETLINK_GENERIC = 16
# Unexpected errors kept per process, and shown per worker at the end
LOG_MAX = 30
SHOW_MAX = 8

_libc = ctypes.CDLL(None, use_errno=True)


class Counters:
    """One process's counts, flushed to its file at most twice a second."""

    def __init__(self, path, faults=None):
        self.path = path
        self.faults = faults
        self.counts = {}
        self.logged = 0
        self.flushed = 0.0

    def add(self, key, n=1):
        self.counts[key] = self.counts.get(key, 0) + n

    def error(self, kind, token, message):
        """An error outside what an operation may return: excused if a
        fault was injected into the operation (token: FailNth.token() from
        before it; None: never excused), unexpected otherwise. Returns
        True if excused."""
        if token is not None and self.faults and \
                not self.faults.clean(token):
            self.add("fault." + kind)
            return True
        self.add("unexp." + kind)
        if self.logged < LOG_MAX:
            self.logged += 1
            try:
                with open(self.path + ".unexpected", "a") as f:
                    f.write(" ".join(message.split())[:300] + "\n")
            except OSError:
                pass
        return False

    def outcome(self, op, expected, result, token, detail=""):
        """Count one operation that gave result ("OK" or an errno name);
        expected: the results it may give. A success that was not expected
        is never excused by fault injection."""
        self.add("ops")
        self.add("ops." + op)
        if result in expected:
            self.add("ok" if result == "OK" else "exp." + result)
            ret = True
        elif result == "OK":
            ret = self.error(result, None, f"{op}: OK, expected "
                             f"{'/'.join(sorted(expected))} {detail}")
        else:
            ret = self.error(result, token, f"{op}: {result}, expected "
                             f"{'/'.join(sorted(expected))} {detail}")
        self.flush()
        return ret

    def flush(self, force=False):
        now = time.monotonic()
        if not force and now - self.flushed < 0.5:
            return
        self.flushed = now
        if self.faults:
            self.counts["faults.armed"] = self.faults.armed
            self.counts["faults.injected"] = self.faults.injected
        tmp = self.path + ".tmp"
        try:
            with open(tmp, "w") as f:
                for key, n in sorted(self.counts.items()):
                    f.write(f"{key} {n}\n")
            os.replace(tmp, self.path)
        except OSError:
            pass    # the next flush writes it all


def ready(path):
    """Make the file that tells stress.sh this worker is set up."""
    if path:
        with open(path, "w", encoding="ascii"):
            pass


def _setns(fd):
    if _libc.setns(fd, CLONE_NEWNET):
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


@contextlib.contextmanager
def netns(name):
    """Run the body in the named network namespace ("-": this process's
    own). Sockets made meanwhile stay in it."""
    if name == "-":
        yield
        return
    own = os.open("/proc/self/ns/net", os.O_RDONLY)
    try:
        target = os.open(os.path.join(NETNS_DIR, name), os.O_RDONLY)
        try:
            _setns(target)
            try:
                yield
            finally:
                _setns(own)
        finally:
            os.close(target)
    finally:
        os.close(own)


class NetdevNl:
    """The netdev netlink family as napi_config.py uses it (NetdevFamily
    of the kselftests' net/lib/py), with a socket per network namespace.

    The spec is parsed once (slow on an emulated guest); each namespace
    gets a shallow copy whose socket is made in that namespace. Calls go
    through do() and dump(), which use the copy's socket (the per-op
    methods YnlFamily binds are bound to the original). A socket whose
    state is unknown (timeout, error from recv, a fault injected into one
    of its calls) is replaced by reset(). With fail (a fail_nth.FailNth),
    the sockets' send and receive calls may have faults injected.
    """

    def __init__(self, ksft_dir, timeout, fail=None):
        sys.path.insert(0, ksft_dir)
        # pylint: disable=import-outside-toplevel
        from net.lib.py import NetdevFamily, NlError
        self.NlError = NlError
        self.base = NetdevFamily()
        self.base.sock.close()
        self.timeout = timeout
        self.fail = fail
        self.fams = {}

    def _socket(self):
        sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW,
                             NETLINK_GENERIC)
        for opt in NETLINK_SOCKOPTS:
            sock.setsockopt(SOL_NETLINK, opt, 1)
        sock.settimeout(self.timeout)
        return FaultySocket(sock, self.fail) if self.fail else sock

    def family(self, ns):
        if ns not in self.fams:
            fam = copy.copy(self.base)
            with netns(ns):
                fam.sock = self._socket()
            self.fams[ns] = fam
        return self.fams[ns]

    def reset(self, ns):
        fam = self.fams.pop(ns, None)
        if fam:
            fam.sock.close()

    def call(self, ns, method, vals, dump=False):
        """(result, reply): result "OK", an errno name or "TIMEOUT"."""
        start = self.fail.token() if self.fail else 0
        try:
            fam = self.family(ns)
            if dump:
                return "OK", fam.dump(method, vals)
            return "OK", fam.do(method, vals)
        except self.NlError as e:
            return errname(e.error), None
        except TimeoutError:
            self.reset(ns)
            return "TIMEOUT", None
        except OSError as e:
            # ENOBUFS from a lost reply and the like: the socket may hold
            # answers to this request still
            self.reset(ns)
            return errname(e.errno) if e.errno else type(e).__name__, None
        finally:
            # a fault may have cut a dump short, or lost an answer
            if self.fail and not self.fail.clean(start):
                self.reset(ns)


# --- stress.sh's end: reading every worker's counts ---

def read_counts(counts_dir):
    """{worker: {key: n}} summed over the worker's processes, and
    {worker: [unexpected messages]}."""
    counts, messages = {}, {}
    for name in sorted(os.listdir(counts_dir)):
        path = os.path.join(counts_dir, name)
        worker = name.split(".")[0]
        if name.endswith(".unexpected"):
            with open(path, errors="replace") as f:
                messages.setdefault(worker, []).extend(f.read().splitlines())
            continue
        if name.endswith(".tmp"):
            continue
        mine = counts.setdefault(worker, {})
        with open(path) as f:
            for line in f:
                key, _, n = line.partition(" ")
                if n.strip().isdigit():
                    mine[key] = mine.get(key, 0) + int(n)
    return counts, messages


def by_prefix(counts, prefix):
    return {k[len(prefix):]: n for k, n in sorted(counts.items())
            if k.startswith(prefix)}


def fmt(d):
    return ", ".join(f"{k} {n}" for k, n in d.items()) or "none"


def cmd_ran(args):
    counts, _ = read_counts(args.counts_dir)
    bad = 0
    for worker in args.workers:
        c = counts.get(worker, {})
        print(f"# {worker}: {c.get('ops', 0)} operations, {c.get('ok', 0)} "
              f"succeeded ({fmt(by_prefix(c, 'ops.'))})")
        if not c.get("ops") or not c.get("ok"):
            print(f"# {worker}: no operation succeeded")
            bad = 1
    return bad


def cmd_unexpected(args):
    counts, messages = read_counts(args.counts_dir)
    total = 0
    for worker, c in sorted(counts.items()):
        unexp = by_prefix(c, "unexp.")
        if not unexp:
            continue
        total += sum(unexp.values())
        print(f"# {worker}: unexpected: {fmt(unexp)}")
        for msg in messages.get(worker, [])[:SHOW_MAX]:
            print(f"#   {msg}")
    print(f"# {total} unexpected errors")
    return 1 if total else 0


def cmd_summary(args):
    counts, _ = read_counts(args.counts_dir)
    faults = dict(kv.split("=", 1) for kv in args.faults)
    cases = dict(kv.split("=", 1) for kv in args.case)
    workers = {}
    errors = {"expected": {}, "during_faults": {}, "unexpected": {}}
    for worker, c in sorted(counts.items()):
        workers[worker] = {
            "ops": c.get("ops", 0), "ok": c.get("ok", 0),
            "ops_by_kind": by_prefix(c, "ops."),
            "expected": by_prefix(c, "exp."),
            "during_faults": by_prefix(c, "fault."),
            "unexpected": by_prefix(c, "unexp."),
        }
        for kind, prefix in (("expected", "exp."),
                             ("during_faults", "fault."),
                             ("unexpected", "unexp.")):
            for err, n in by_prefix(c, prefix).items():
                errors[kind][err] = errors[kind].get(err, 0) + n
    for worker, w in workers.items():
        if w["ops"] or w["unexpected"]:
            print(f"# {worker}: {fmt(w['ops_by_kind'])}; expected errors: "
                  f"{fmt(w['expected'])}; during faults: "
                  f"{fmt(w['during_faults'])}")
    ops = ", ".join(f"{w} {v['ops']}" for w, v in workers.items() if v["ops"])
    errs = "; ".join(f"{kind} {sum(e.values())}"
                     + (f" ({fmt(dict(sorted(e.items())))})" if e else "")
                     for kind, e in errors.items())
    print(f"# stress summary: {args.minutes} min; operations: {ops}; "
          f"errors: {errs}; faults injected: {fmt(faults)}")
    if args.json:
        data = {"minutes": args.minutes, "workers": workers,
                "errors": errors,
                "faults_injected": {k: int(v) if v.isdigit() else v
                                    for k, v in faults.items()},
                "cases": cases}
        with open(args.json, "w") as f:
            json.dump(data, f, indent=1, sort_keys=True)
            f.write("\n")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("ran")
    p.add_argument("counts_dir")
    p.add_argument("workers", nargs="+")
    p.set_defaults(func=cmd_ran)
    p = sub.add_parser("unexpected")
    p.add_argument("counts_dir")
    p.set_defaults(func=cmd_unexpected)
    p = sub.add_parser("summary")
    p.add_argument("counts_dir")
    p.add_argument("minutes", type=int)
    p.add_argument("--json")
    p.add_argument("--faults", action="append", default=[])
    p.add_argument("--case", action="append", default=[])
    p.set_defaults(func=cmd_summary)
    args = ap.parse_args()
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
