#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Stress worker: epoll busy-poll parameters and IRQ suspension.

usage: stress_epoll.py --ksft-dir DIR --counts FILE --stop FILE [--ready FILE]
                       --server-ns NS --client-ns NS --addr ADDR --port PORT

The process listens on ADDR:PORT in the server namespace and connects to
it from the client namespace, across the receivers' two linked netdevsim
devices, so that its server sockets get NAPI IDs; it sets those NAPIs up
for IRQ suspension (napi-set: defer-hard-irqs, gro-flush-timeout,
irq-suspend-timeout) and keeps a few epoll contexts with prefer_busy_poll
on its server sockets. epoll_wait() returning events suspends the NAPI of
the context until the next one finds none or the context is freed. Until
the stop file exists, at random:

  EPIOCSPARAMS with valid values, read back with EPIOCGPARAMS; with
      invalid ones (__pad not 0, prefer_busy_poll above 1, busy_poll_usecs
      above S32_MAX: EINVAL; busy_poll_budget above NAPI_POLL_WEIGHT
      without CAP_NET_ADMIN in the effective set: EPERM; as root, a
      budget up to 65535 is accepted), which must change nothing
  epoll_wait() on a context, reading part of what is ready, so that the
      next one finds events again; every byte is checked against what the
      client sent on that connection
  right after events (the NAPI suspended): more data sent, a member
      socket removed from the context or closed with data queued, or the
      context closed
  EPOLL_CTL_ADD, MOD, DEL (EEXIST, ENOENT where the socket is or is not a
      member), connections opened and closed, contexts made and closed

A connect or accept that times out while reconfiguration has the devices
down is expected; every other error is unexpected (faults are not
injected into this worker).
"""

import argparse
import contextlib
import ctypes
import fcntl
import os
import random
import select
import signal
import socket
import struct
import sys

import stress_lib as sl

# include/uapi/linux/eventpoll.h: struct epoll_params, and _IOW/_IOR(0x8A,
# 1/2, struct epoll_params) = dir << 30 | size << 16 | type << 8 | nr
PARAMS = struct.Struct("=IHBB")     # usecs, budget, prefer, __pad
EPIOCSPARAMS = 1 << 30 | PARAMS.size << 16 | 0x8A << 8 | 1
EPIOCGPARAMS = 2 << 30 | PARAMS.size << 16 | 0x8A << 8 | 2
NAPI_POLL_WEIGHT = 64
S32_MAX = 2**31 - 1
U32_MAX = 2**32 - 1
SO_INCOMING_NAPI_ID = 56
CAP_NET_ADMIN = 12
LINUX_CAPABILITY_VERSION_3 = 0x20080522
CONNECT_TIMEOUT = 10
NL_TIMEOUT = 30
MAX_PAIRS = 6
MAX_CONTEXTS = 4
CHUNK = 65536

_libc = ctypes.CDLL(None, use_errno=True)


def errname_of(e):
    if isinstance(e, TimeoutError):
        return "TIMEOUT"
    return sl.errname(e.errno) if e.errno else type(e).__name__


@contextlib.contextmanager
def without_net_admin():
    """CAP_NET_ADMIN out of this thread's effective set for the body
    (capset(2); it stays permitted, so it can be raised again)."""
    hdr = (ctypes.c_uint32 * 2)(LINUX_CAPABILITY_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()  # 2 x {effective, permitted, inheritable}
    if _libc.capget(hdr, data):
        raise OSError(ctypes.get_errno(), "capget")
    effective = data[0]
    data[0] = effective & ~(1 << CAP_NET_ADMIN)
    if _libc.capset(hdr, data):
        raise OSError(ctypes.get_errno(), "capset")
    try:
        yield
    finally:
        data[0] = effective
        if _libc.capset(hdr, data):
            raise OSError(ctypes.get_errno(), "capset")


class Pair:
    """A connection: the client end sends, the server end is polled."""

    def __init__(self, client, server):
        self.client = client
        self.server = server
        self.pending = bytearray()  # sent, not received yet

    @property
    def fd(self):
        return self.server.fileno()

    def close(self):
        # The server end first: it may be in contexts, with data queued
        self.server.close()
        self.client.close()


class Context:
    def __init__(self):
        self.ep = select.epoll()
        self.params = None
        self.members = set()    # server fds

    @property
    def fd(self):
        return self.ep.fileno()


class EpollWorker:
    def __init__(self, args):
        self.args = args
        self.ctr = sl.Counters(args.counts)
        self.nl = sl.NetdevNl(args.ksft_dir, NL_TIMEOUT)
        self.pairs = {}         # server fd -> Pair
        self.contexts = []
        self.napis = set()      # NAPI IDs set up for suspension
        self.suspended = None   # context whose last wait returned events
        with sl.netns(args.server_ns):
            self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind((args.addr, args.port))
        self.listener.listen(8)
        self.listener.settimeout(CONNECT_TIMEOUT)

    def attempt(self, op, expected, func, *args):
        """Run func(*args) and count its outcome; (result, its value)."""
        value = None
        try:
            value = func(*args)
            result = "OK"
        except OSError as e:
            result = errname_of(e)
        self.ctr.outcome(op, expected, result, "")
        return result, value

    # --- epoll parameters ---

    @staticmethod
    def set_params(ctx, params):
        fcntl.ioctl(ctx.fd, EPIOCSPARAMS, PARAMS.pack(*params))

    @staticmethod
    def get_params(ctx):
        buf = bytearray(PARAMS.size)
        fcntl.ioctl(ctx.fd, EPIOCGPARAMS, buf, True)
        return PARAMS.unpack(buf)

    def check_params(self, op, ctx):
        result, got = self.attempt("get_params", {"OK"}, self.get_params, ctx)
        if result == "OK" and got != ctx.params:
            self.ctr.error("params_readback", None,
                           f"{op}: EPIOCGPARAMS {got}, set {ctx.params}")

    @staticmethod
    def valid_params():
        """Values for a context that is waited on: busy_poll_usecs stays
        small, since a wait with a timeout can spin that long when no
        event comes (big_usecs() tries the large ones)."""
        budget = random.choice((random.randint(1, NAPI_POLL_WEIGHT),
                                random.randint(NAPI_POLL_WEIGHT + 1, 65535)))
        usecs = random.choice((0, 0, random.randint(1, 200)))
        return (usecs, budget, random.choice((1, 1, 1, 0)), 0)

    def big_usecs(self):
        """Up to S32_MAX is valid, on a context that is never waited on."""
        ctx = Context()
        try:
            usecs = random.choice((S32_MAX, random.randint(201, S32_MAX)))
            params = (usecs,) + self.valid_params()[1:]
            result, _ = self.attempt("set_params.big_usecs", {"OK"},
                                     self.set_params, ctx, params)
            if result == "OK":
                ctx.params = params
                self.check_params("set_params.big_usecs", ctx)
        finally:
            ctx.ep.close()

    def new_context(self):
        if len(self.contexts) >= MAX_CONTEXTS:
            return self.close_context()
        ctx = Context()
        params = self.valid_params()
        result, _ = self.attempt("set_params", {"OK"}, self.set_params, ctx,
                                 params)
        if result == "OK":
            ctx.params = params
            self.check_params("set_params", ctx)
        self.contexts.append(ctx)
        return None

    def bad_params(self):
        ctx = self.some_context()
        if not ctx or ctx.params is None:
            return
        usecs, budget, prefer, _ = self.valid_params()
        kind = random.choice(("pad", "prefer", "usecs", "budget"))
        if kind == "pad":
            params, expected = (usecs, budget, prefer,
                                random.randint(1, 255)), {"EINVAL"}
        elif kind == "prefer":
            params, expected = (usecs, budget,
                                random.randint(2, 255), 0), {"EINVAL"}
        elif kind == "usecs":
            params, expected = (random.randint(S32_MAX + 1, U32_MAX), budget,
                                prefer, 0), {"EINVAL"}
        else:
            params, expected = (usecs, random.randint(NAPI_POLL_WEIGHT + 1,
                                                      65535), prefer, 0), \
                {"EPERM"}
        if kind == "budget":
            with without_net_admin():
                self.attempt("bad_params." + kind, expected, self.set_params,
                             ctx, params)
        else:
            self.attempt("bad_params." + kind, expected, self.set_params, ctx,
                         params)
        self.check_params("bad_params." + kind, ctx)

    # --- connections and their NAPIs ---

    def connect(self):
        if len(self.pairs) >= MAX_PAIRS:
            return self.close_pair()
        with sl.netns(self.args.client_ns):
            client = socket.socket()
        client.settimeout(CONNECT_TIMEOUT)
        # Reconfiguration may have a device down: no route, or no answer
        result, _ = self.attempt("connect", {"OK", "TIMEOUT", "ENETUNREACH",
                                             "EHOSTUNREACH"},
                                 client.connect,
                                 (self.args.addr, self.args.port))
        if result != "OK":
            client.close()
            return None
        # A connection whose connect() timed out earlier may be accepted
        # first: the client's own has its address
        for _ in range(4):
            result, accepted = self.attempt("accept", {"OK", "TIMEOUT"},
                                            self.listener.accept)
            if result != "OK" or accepted[1] == client.getsockname():
                break
            accepted[0].close()
            result = "STALE"
        if result != "OK":
            client.close()
            return None
        server = accepted[0]
        server.setblocking(False)
        client.setblocking(False)
        self.pairs[server.fileno()] = Pair(client, server)
        return None

    def setup_napi(self, pair):
        """Suspension settings on the NAPI the connection arrives on (the
        netlink worker may change them meanwhile)."""
        napi_id = struct.unpack("I", pair.server.getsockopt(
            socket.SOL_SOCKET, SO_INCOMING_NAPI_ID, 4))[0]
        if napi_id < 2 or (napi_id in self.napis and random.random() < 0.9):
            return
        vals = {"id": napi_id,
                "defer-hard-irqs": random.randint(10, 200),
                "gro-flush-timeout": random.randint(1, 10) * 10**6,
                "irq-suspend-timeout": random.randint(1, 50) * 10**8}
        result, _ = self.nl.call(self.args.server_ns, "napi-set", vals)
        # ENOENT: the queue's NAPI went away (channel change, device down)
        self.ctr.outcome("napi-set", {"OK", "ENOENT"}, result, "")
        if result == "OK":
            self.napis.add(napi_id)

    def send(self, pair=None):
        pair = pair or self.some_pair()
        if not pair:
            return
        data = os.urandom(random.randint(1, CHUNK))
        result, sent = self.attempt("send", {"OK", "EAGAIN"},
                                    pair.client.send, data)
        if result == "OK":
            pair.pending += data[:sent]
        self.setup_napi(pair)

    def receive(self, pair):
        """Read part of what arrived and check it."""
        result, data = self.attempt("recv", {"OK", "EAGAIN"},
                                    pair.server.recv,
                                    random.randint(1, CHUNK))
        if result != "OK":
            return
        if not data:
            self.ctr.error("EOF", None, "recv: end of stream on a "
                           "connection whose client is open")
        elif pair.pending[:len(data)] != data:
            self.ctr.error("data_corrupt", None,
                           f"recv: {len(data)} bytes differ from what was "
                           f"sent ({len(pair.pending)} pending)")
            pair.pending.clear()
        else:
            del pair.pending[:len(data)]

    def close_pair(self, pair=None):
        pair = pair or self.some_pair()
        if not pair:
            return None
        fd = pair.fd
        for ctx in self.contexts:
            ctx.members.discard(fd)
        del self.pairs[fd]
        self.attempt("close_pair", {"OK"}, pair.close)
        return None

    # --- contexts ---

    def some_context(self):
        return random.choice(self.contexts) if self.contexts else None

    def some_pair(self):
        return random.choice(list(self.pairs.values())) if self.pairs else None

    def close_context(self, ctx=None):
        ctx = ctx or self.some_context()
        if not ctx:
            return None
        self.contexts.remove(ctx)
        if self.suspended is ctx:
            self.suspended = None
        # Frees the context: resumes its NAPI if it was suspended
        self.attempt("close_context", {"OK"}, ctx.ep.close)
        return None

    def ctl(self):
        ctx, pair = self.some_context(), self.some_pair()
        if not ctx or not pair:
            return
        member = pair.fd in ctx.members
        action = random.choice(("add", "add", "mod", "del"))
        events = select.EPOLLIN | random.choice((0, select.EPOLLET))
        if action == "add":
            result, _ = self.attempt("ctl_add." + ("member" if member
                                                   else "new"),
                                     {"EEXIST"} if member else {"OK"},
                                     ctx.ep.register, pair.fd, events)
            if result == "OK":
                ctx.members.add(pair.fd)
        elif action == "mod":
            self.attempt("ctl_mod", {"OK"} if member else {"ENOENT"},
                         ctx.ep.modify, pair.fd, events)
        else:
            result, _ = self.attempt("ctl_del", {"OK"} if member
                                     else {"ENOENT"},
                                     ctx.ep.unregister, pair.fd)
            if result == "OK":
                ctx.members.discard(pair.fd)

    def wait(self):
        ctx = self.some_context()
        if not ctx:
            return
        result, ready = self.attempt(
            "epoll_wait", {"OK"}, ctx.ep.poll,
            random.choice((0, 0, 0.001, 0.01)), random.randint(1, 8))
        if result != "OK":
            return
        for fd, _ in ready:
            if fd in self.pairs:
                self.receive(self.pairs[fd])
        self.suspended = ctx if ready else None

    def while_suspended(self):
        """Right after epoll_wait() returned events: the context's NAPI is
        suspended (if its settings allow) until the next wait."""
        ctx = self.suspended
        self.suspended = None
        if ctx not in self.contexts:
            return
        members = [self.pairs[fd] for fd in ctx.members if fd in self.pairs]
        what = random.choice(("send", "send", "del", "close_pair",
                              "close_context"))
        if what == "close_context":
            self.close_context(ctx)
        elif not members:
            return
        elif what == "send":
            self.send(random.choice(members))
        elif what == "del":
            pair = random.choice(members)
            result, _ = self.attempt("suspended_del", {"OK"},
                                     ctx.ep.unregister, pair.fd)
            if result == "OK":
                ctx.members.discard(pair.fd)
        else:
            self.close_pair(random.choice(members))

    def run(self):
        ops = ((self.connect, 6), (self.new_context, 4), (self.close_context, 1),
               (self.bad_params, 5), (self.big_usecs, 1), (self.ctl, 12),
               (self.send, 20),
               (self.wait, 40), (self.close_pair, 2))
        funcs, weights = zip(*ops)
        while not os.path.exists(self.args.stop):
            if self.suspended and random.random() < 0.3:
                func = self.while_suspended
            else:
                func = random.choices(funcs, weights)[0]
            try:
                func()
            except Exception as e:  # pylint: disable=broad-except
                self.ctr.add("ops")
                self.ctr.error("EXC_" + type(e).__name__, None,
                               f"{func.__name__}: {e!r}")

    def close(self):
        for ctx in list(self.contexts):
            self.close_context(ctx)
        for pair in list(self.pairs.values()):
            self.close_pair(pair)
        self.listener.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    for opt in ("--ksft-dir", "--counts", "--stop", "--server-ns",
                "--client-ns", "--addr"):
        ap.add_argument(opt, required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--ready", help="file made once set up")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))

    worker = EpollWorker(args)
    sl.ready(args.ready)
    try:
        worker.run()
        worker.close()
    finally:
        worker.ctr.flush(force=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
