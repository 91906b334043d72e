#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Fault injection scoped to one system call of the calling thread.

The stress run fails allocations (failslab, fail_page_alloc) only inside
the system calls it stresses: a napi-set or dump request, a procfs or
debugfs write. /proc/thread-self/fail-nth (Documentation/fault-injection/
fault-injection.rst) makes the N-th fault-injection point the thread passes
fail, whatever the attributes' probability and task filter say; the thread
arms it right before the call and disarms it right after. So nothing else
meets a fault: not the interpreter, not a child it executes, not the 9p
root file system the guest runs from (make-it-fail on a worker process
reached that, and broke every exec of the guest).

As a program, for stress.sh's shell workers:

  fail_nth.py FILE STRING
      write STRING to FILE in one write(), with the N-th allocation of
      that write() failed (N random, 1 to NTH_MAX). Prints "injected" if
      the fault was injected, then the write's result as write_errno
      prints it: "OK" or the errno's name (status 0), or "open: ERR"
      (status 1).
"""

import errno
import os
import random
import sys

PATH = "/proc/thread-self/fail-nth"
# The napi-set, dump and procfs write paths allocate a few to a few dozen
# times per call: up to 16 fails an early allocation of most calls and
# lets some calls run without a fault.
NTH_MAX = 16


def errname(err):
    return errno.errorcode.get(err, f"E{err}")


class FailNth:
    """Faults for a share of this thread's calls through call().

    token() and clean() let an operation made of several calls ask whether
    a fault was injected into any of them (stress_lib.Counters)."""

    def __init__(self, share):
        try:
            self.fd = os.open(PATH, os.O_RDWR)
        except OSError:
            self.fd = None      # a kernel without FAULT_INJECTION
        self.share = share
        self.armed = 0
        self.injected = 0

    @property
    def available(self):
        return self.fd is not None

    def call(self, func, *args):
        """func(*args), with a fault armed for it in a share of calls."""
        if self.fd is None or random.random() >= self.share:
            return func(*args)
        os.write(self.fd, str(random.randint(1, NTH_MAX)).encode())
        try:
            return func(*args)
        finally:
            # 0: the fault was injected; else what was left of N
            left = int(os.pread(self.fd, 32, 0))
            os.write(self.fd, b"0")
            self.armed += 1
            if left == 0:
                self.injected += 1

    def token(self):
        return self.injected

    def clean(self, start):
        return self.injected == start


class FaultySocket:
    """A socket whose send and receive calls go through FailNth.call();
    everything else is the socket's own."""

    def __init__(self, sock, fail):
        self._sock = sock
        self._fail = fail

    def send(self, *args):
        return self._fail.call(self._sock.send, *args)

    def recv(self, *args):
        return self._fail.call(self._sock.recv, *args)

    def __getattr__(self, name):
        return getattr(self._sock, name)


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    fail = FailNth(1.0)
    try:
        fd = os.open(sys.argv[1], os.O_WRONLY)
    except OSError as e:
        print(f"open: {errname(e.errno)}")
        return 1
    try:
        fail.call(os.write, fd, sys.argv[2].encode())
        result = "OK"
    except OSError as e:
        result = errname(e.errno)
    if fail.injected:
        print("injected")
    print(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
