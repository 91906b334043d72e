#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""A memcached get/set load whose every reply is checked.

usage: mc_load.py ADDR PORT SECONDS CONNECTIONS DEPTH

Each of CONNECTIONS connections sends DEPTH pairs of "set" and "get" of a
key of its own at a time (pipelined), then reads and checks all replies:
STORED for each set, and for each get the value just stored, whose bytes
are derived from the key. It stops after SECONDS and prints
"ops N seconds S"; any wrong, missing or late reply ends it with a
message and exit status 1.
"""

import hashlib
import selectors
import socket
import sys
import time

REPLY_TIMEOUT = 30


def value_of(key):
    digest = hashlib.sha256(key.encode()).hexdigest().encode()
    return digest * (1 + len(key) % 8)


class Conn:
    def __init__(self, addr, port, n):
        self.sock = socket.create_connection((addr, port), timeout=REPLY_TIMEOUT)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.n = n
        self.seq = 0
        self.buf = b""
        self.expect = []

    def send_batch(self, depth):
        out = []
        for _ in range(depth):
            key = f"c{self.n}-{self.seq}"
            self.seq += 1
            val = value_of(key)
            out.append(b"set %s 0 0 %d\r\n%s\r\nget %s\r\n" %
                       (key.encode(), len(val), val, key.encode()))
            self.expect.append(b"STORED\r\n")
            self.expect.append(b"VALUE %s 0 %d\r\n%s\r\nEND\r\n" %
                               (key.encode(), len(val), val))
        self.sock.sendall(b"".join(out))

    def read_replies(self):
        """Reads what arrived; returns the number of pairs completed."""
        data = self.sock.recv(65536)
        if not data:
            raise RuntimeError(f"connection {self.n}: closed by the server")
        self.buf += data
        done = 0
        while self.expect and len(self.buf) >= len(self.expect[0]):
            want = self.expect.pop(0)
            got, self.buf = self.buf[:len(want)], self.buf[len(want):]
            if got != want:
                raise RuntimeError(f"connection {self.n}: expected {want[:60]!r}, "
                                   f"got {got[:60]!r}")
            done += 1
        return done


def main():
    addr, port = sys.argv[1], int(sys.argv[2])
    seconds, nconn, depth = float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    conns = [Conn(addr, port, n) for n in range(nconn)]
    sel = selectors.DefaultSelector()
    for c in conns:
        sel.register(c.sock, selectors.EVENT_READ, c)
        c.send_batch(depth)
    replies = 0
    start = time.monotonic()
    end = start + seconds
    while True:
        events = sel.select(timeout=REPLY_TIMEOUT)
        if not events:
            raise RuntimeError(f"no reply for {REPLY_TIMEOUT} s")
        for key, _ in events:
            c = key.data
            replies += c.read_replies()
            if not c.expect and time.monotonic() < end:
                c.send_batch(depth)
        if time.monotonic() >= end and not any(c.expect for c in conns):
            break
    elapsed = time.monotonic() - start
    print(f"ops {replies} seconds {elapsed:.1f}")


if __name__ == "__main__":
    try:
        main()
    except (OSError, RuntimeError) as e:
        print(f"mc_load: {e}", file=sys.stderr)
        sys.exit(1)
