#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Fault injection scoped to one system call of the calling thread.

The stress run fails allocations (failslab, fail_page_alloc) only inside
the system calls it stresses: a napi-set or dump request, a procfs or
debugfs write. /proc/thread-self/fail-nth (Documentation/fault-injection/
fault-injection.rst) makes the N-th fault point the thread passes fail,
whatever the attributes' probability and task filter say (a fault point:
an allocation failslab or fail_page_alloc may fail; __GFP_NOFAIL and user
pages are not ones, but the page tables of a user page faulted in are). The thread arms it right before the call, into
buffers allocated beforehand, and disarms it right after. So nothing else
meets a fault: not the interpreter, not a child it executes, not the 9p
root file system the guest runs from (make-it-fail on a worker process
reached that, and broke every exec of the guest).

"Injected" means the kernel failed an allocation of the call; the call
need not fail: the debug kernel's own allocations (kmemleak, debug
objects, stack depot) absorb a failure, and some callers retry.

As a program, for stress.sh's shell workers:

  fail_nth.py FILE STRING
      write STRING to FILE in one write(), with its N-th fault point
      failed (N random, 1 to WRITE_NTH_MAX). Prints "injected" if
      the fault was injected, then the write's result as write_errno
      prints it: "OK" or the errno's name (status 0), or "open: ERR"
      (status 1).
"""

import errno
import os
import random
import sys

PATH = "/proc/thread-self/fail-nth"
# A netlink request passes a few to a few dozen fault points: up to 16
# fails an early one of most and lets some run without a fault. A procfs
# or debugfs write passes a few.
NTH_MAX = 16
WRITE_NTH_MAX = 4
# The largest receive YNL asks for (ynl.py: recv_size 131072)
RECV_MAX = 128 * 1024


def errname(err):
    """"EINVAL" for 22 and so on, as write_errno names them: EOPNOTSUPP
    for 95, which python's errno.errorcode calls ENOTSUP."""
    if err == errno.EOPNOTSUPP:
        return "EOPNOTSUPP"
    return errno.errorcode.get(err, f"E{err}")


class FailNth:
    """Faults for a share of this thread's calls through call().

    token() and clean() let an operation made of several calls ask whether
    a fault was injected into any of them (stress_lib.Counters)."""

    def __init__(self, share, nth_max=NTH_MAX):
        try:
            self.fd = os.open(PATH, os.O_RDWR)
        except OSError:
            self.fd = None      # a kernel without FAULT_INJECTION
        self.share = share
        self.nth_max = nth_max
        self.left = bytearray(32)
        self.iov = [self.left]
        self.armed = 0
        self.injected = 0

    @property
    def available(self):
        return self.fd is not None

    def call(self, func, *args):
        """func(*args), with a fault armed for it in a share of calls."""
        if self.fd is None or random.random() >= self.share:
            return func(*args)
        nth = str(random.randint(1, self.nth_max)).encode()
        os.write(self.fd, nth)
        try:
            return func(*args)
        finally:
            # What is left of N, "0" once the fault was injected: read
            # into a buffer made beforehand, nothing allocated while
            # armed; disarmed whatever the read does
            n = 0
            try:
                n = os.preadv(self.fd, self.iov, 0)
            finally:
                os.write(self.fd, b"0")
            self.armed += 1
            if self.left[:n].strip() == b"0":
                self.injected += 1

    def token(self):
        return self.injected

    def clean(self, start):
        return self.injected == start


class FaultySocket:
    """A socket whose send and receive calls go through FailNth.call();
    everything else is the socket's own. A receive lands in a buffer made
    beforehand, and is copied out once the fault is disarmed."""

    def __init__(self, sock, fail):
        self._sock = sock
        self._fail = fail
        self._buf = bytearray(RECV_MAX)

    def send(self, *args):
        return self._fail.call(self._sock.send, *args)

    def recv(self, bufsize, flags=0):
        n = self._fail.call(self._sock.recv_into, self._buf,
                            min(bufsize, RECV_MAX), flags)
        return bytes(self._buf[:n])

    def __getattr__(self, name):
        return getattr(self._sock, name)


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    fail = FailNth(1.0, WRITE_NTH_MAX)
    try:
        fd = os.open(sys.argv[1], os.O_WRONLY)
    except OSError as e:
        print(f"open: {errname(e.errno)}")
        return 1
    data = sys.argv[2].encode()
    try:
        fail.call(os.write, fd, data)
        result = "OK"
    except OSError as e:
        result = errname(e.errno)
    if fail.injected:
        print("injected")
    print(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
