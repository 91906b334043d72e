#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Stress worker: napi-set, napi-get and queue-get over netdev netlink.

usage: stress_netlink.py --ksft-dir DIR --counts FILE --stop FILE
                         [--ready FILE] [--faults SHARE] --ns NS:MODE...

Until the stop file exists, one request after another, each in one of the
network namespaces NS ("-": this process's own), through the YNL library
of the installed kselftests in this one process:

  napi-set with NAPI IDs that exist, that died (seen in an earlier dump,
      gone since: device deleted, queue removed or device down), that never
      existed (0, 1, and above S32_MAX: below MIN_NAPI_ID or far above any
      ID given out), or no ID; with some of defer-hard-irqs (up to
      S32_MAX, or above it: ERANGE), gro-flush-timeout and
      irq-suspend-timeout (any u64 from 0 to U64_MAX)
  napi-get (do) with the same kinds of IDs
  napi-get dumps, whole or of one device (an existing ifindex, one that
      does not exist: ENODEV, or 0: ERANGE); each is checked: every NAPI
      once, each device's NAPIs in decreasing ID order, devices in
      increasing ifindex order (the order multi-step dumps resume by)
  queue-get dumps and gets

Each outcome is counted (stress_lib.Counters); an error the request may
return is expected, any other is unexpected unless a fault was injected
into it (--faults: that share of the requests' send and receive calls,
from when this process's set-up is done, fail an allocation; see
fail_nth.py).

MODE says what napi-set may do to the NAPIs of a namespace:
  verify   any values, and only on netdevsim NAPIs (this namespace also
           holds the guest's own NICs, which the stress leaves alone);
           each successful set is read back with napi-get and must have
           taken effect (nothing else sets these NAPIs)
  bounded  values a busy-polling receiver copes with (the receivers'
           namespaces: their transfers must complete): defer-hard-irqs up
           to 1000, gro-flush-timeout up to 20 ms, irq-suspend-timeout up
           to 5 s; invalid defer-hard-irqs too
  free     any values
"""

import argparse
import os
import random
import signal
import sys

import stress_lib as sl
from fail_nth import FailNth

S32_MAX = 2**31 - 1
U32_MAX = 2**32 - 1
U64_MAX = 2**64 - 1
# NAPI IDs no NAPI ever has: 0 (none) and 1 (below MIN_NAPI_ID, which is
# NR_CPUS + 1), and IDs far above any the guest's NAPIs get in a run
NEVER_LOW = (0, 1)
NEVER_HIGH = (S32_MAX + 1, U32_MAX)
# bounded mode: the largest values
BOUND_DEFER = 1000
BOUND_GRO = 20 * 10**6
BOUND_SUSPEND = 5 * 10**9
NL_TIMEOUT = 30
NAPI_ATTRS = ("defer-hard-irqs", "gro-flush-timeout", "irq-suspend-timeout")


class Space:
    """What this worker knows of one namespace's NAPIs."""

    def __init__(self, name, mode):
        self.name = name
        self.mode = mode
        self.live = {}      # NAPI ID -> ifindex, from the last whole dump
        self.dead = {}      # NAPI ID -> ifindex: seen, not in dumps since
        # netdevsim ifindexes seen (verify mode); ifindexes are not reused
        self.nsim = set()

    def settable(self, ifindex):
        return self.mode != "verify" or ifindex in self.nsim


def nsim_ifindexes():
    """The ifindexes of netdevsim devices in this process's sysfs view."""
    found = set()
    for dev in os.listdir("/sys/class/net"):
        base = os.path.join("/sys/class/net", dev)
        try:
            sub = os.path.realpath(os.path.join(base, "device/subsystem"))
            if os.path.basename(sub) != "netdevsim":
                continue
            with open(os.path.join(base, "ifindex")) as f:
                found.add(int(f.read()))
        except (OSError, ValueError):
            pass    # gone meanwhile, or a fault: not settable this time
    return found


class NetlinkWorker:
    def __init__(self, args):
        # armed by main() once the set-up is done
        self.faults = FailNth(0.0) if args.faults else None
        self.ctr = sl.Counters(args.counts, self.faults)
        self.nl = sl.NetdevNl(args.ksft_dir, NL_TIMEOUT, self.faults)
        self.spaces = [Space(*spec.split(":", 1)) for spec in args.ns]
        self.stop = args.stop

    def token(self):
        return self.faults.token() if self.faults else 0

    # --- values and IDs ---

    @staticmethod
    def defer_value(space, valid):
        if not valid:
            return random.randint(S32_MAX + 1, U32_MAX)
        if space.mode == "bounded":
            return random.choice((0, random.randint(1, BOUND_DEFER)))
        return random.choice((0, 1, random.randint(0, S32_MAX), S32_MAX))

    @staticmethod
    def timeout_value(space, bound):
        if space.mode == "bounded":
            return random.choice((0, random.randint(1, bound)))
        return random.choice((0, 1, random.randint(1, 10**9),
                              random.randint(0, U64_MAX), 2**63, U64_MAX))

    @staticmethod
    def pick_id(space, for_set):
        """(kind, NAPI ID or None): kind live, dead, never or none."""
        live = [i for i, ifx in space.live.items()
                if not for_set or space.settable(ifx)]
        dead = [i for i, ifx in space.dead.items()
                if not for_set or space.settable(ifx)]
        kind = random.choices(("live", "dead", "never", "none"),
                              (60, 15, 15, 10))[0]
        if kind == "live" and live:
            return kind, random.choice(live)
        if kind == "dead" and dead:
            return kind, random.choice(dead)
        if kind == "none":
            return kind, None
        return "never", random.choice(
            (random.choice(NEVER_LOW), random.randint(*NEVER_HIGH)))

    @staticmethod
    def expected_for(kind):
        return {"live": {"OK", "ENOENT"},   # ENOENT: gone meanwhile
                "dead": {"OK", "ENOENT"},   # OK: back, e.g. device up again
                "never": {"ENOENT"},
                "none": {"EINVAL"}}[kind]

    # --- operations ---

    def napi_set(self, space, token):
        kind, napi_id = self.pick_id(space, for_set=True)
        vals = {} if napi_id is None else {"id": napi_id}
        bad_defer = False
        for attr in random.sample(NAPI_ATTRS, random.randint(0, 3)):
            if attr == "defer-hard-irqs":
                bad_defer = random.random() < 0.15
                vals[attr] = self.defer_value(space, not bad_defer)
            elif attr == "gro-flush-timeout":
                vals[attr] = self.timeout_value(space, BOUND_GRO)
            else:
                vals[attr] = self.timeout_value(space, BOUND_SUSPEND)
        # The policy is checked before the handler looks at the ID
        expected = {"ERANGE"} if bad_defer else self.expected_for(kind)
        result, _ = self.nl.call(space.name, "napi-set", vals)
        self.ctr.outcome(f"napi-set.{kind}", expected, result, token,
                         f"{space.name} {vals}")
        if result == "OK" and space.mode == "verify" and len(vals) > 1:
            self.read_back(space, vals, token)

    def read_back(self, space, vals, token):
        """What napi-set just set, read with napi-get: nothing else sets
        the NAPIs of this namespace, and reconfiguration keeps a NAPI's
        settings with its ID (persistent config), so they must match."""
        result, rsp = self.nl.call(space.name, "napi-get", {"id": vals["id"]})
        self.ctr.outcome("napi-get.readback", {"OK", "ENOENT"}, result, token)
        if result != "OK":
            return
        wrong = {a: (v, rsp.get(a)) for a, v in vals.items()
                 if a != "id" and rsp.get(a) != v}
        if wrong:
            self.ctr.error("readback", None, f"napi {vals['id']} in "
                           f"{space.name}: (set, read) {wrong}")

    def napi_get(self, space, token):
        kind, napi_id = self.pick_id(space, for_set=False)
        vals = {} if napi_id is None else {"id": napi_id}
        result, rsp = self.nl.call(space.name, "napi-get", vals)
        self.ctr.outcome(f"napi-get.{kind}", self.expected_for(kind), result,
                         token, f"{space.name} {vals}")
        if result == "OK" and (rsp.get("id") != napi_id or
                               rsp.get("defer-hard-irqs", 0) > S32_MAX):
            self.ctr.error("napi_get_reply", None,
                           f"napi-get {napi_id} in {space.name}: {rsp}")

    def some_ifindex(self, space):
        """(expected results, ifindex) for a request about one device."""
        ifindexes = sorted(set(space.live.values()))
        pick = random.random()
        if pick < 0.7 and ifindexes:
            return {"OK", "ENODEV"}, random.choice(ifindexes)
        if pick < 0.85:
            return {"ENODEV"}, random.randint(10**6, S32_MAX)
        return {"ERANGE"}, 0    # the dump policy's minimum is 1

    def napi_dump(self, space, token, whole=None):
        if whole is None:
            whole = random.random() < 0.6
        expected, vals = {"OK"}, {}
        if not whole:
            expected, vals["ifindex"] = self.some_ifindex(space)
        result, napis = self.nl.call(space.name, "napi-get", vals, dump=True)
        self.ctr.outcome("napi-dump.all" if whole else "napi-dump.dev",
                         expected, result, token, f"{space.name} {vals}")
        if result != "OK":
            return
        self.check_order(space, napis)
        if whole:
            self.update(space, napis)

    def check_order(self, space, napis):
        seen = set()
        prev_if = prev_id = None
        for napi in napis:
            napi_id, ifindex = napi.get("id"), napi.get("ifindex")
            problem = None
            if napi_id in seen:
                problem = "listed twice"
            elif ifindex != prev_if:
                if prev_if is not None and ifindex < prev_if:
                    problem = f"device {ifindex} after device {prev_if}"
            elif napi_id >= prev_id:
                problem = f"after NAPI {prev_id} of the same device"
            if problem:
                self.ctr.error("dump_order", None, f"napi-get dump in "
                               f"{space.name}: NAPI {napi_id} (ifindex "
                               f"{ifindex}) {problem}")
                return
            seen.add(napi_id)
            prev_if, prev_id = ifindex, napi_id

    @staticmethod
    def update(space, napis):
        live = {n["id"]: n["ifindex"] for n in napis}
        for napi_id, ifindex in space.live.items():
            if napi_id not in live:
                space.dead[napi_id] = ifindex
        for napi_id in live:
            space.dead.pop(napi_id, None)
        space.live = live
        if space.mode == "verify":
            space.nsim |= nsim_ifindexes()

    def queue_dump(self, space, token):
        expected, vals = {"OK"}, {}
        if random.random() < 0.5:
            expected, vals["ifindex"] = self.some_ifindex(space)
        result, queues = self.nl.call(space.name, "queue-get", vals, dump=True)
        self.ctr.outcome("queue-dump", expected, result, token,
                         f"{space.name} {vals}")
        for queue in queues or []:
            if queue.get("napi-id", 2) in NEVER_LOW:
                self.ctr.error("queue_napi_id", None,
                               f"queue-get dump in {space.name}: {queue}")
                return

    def queue_get(self, space, token):
        expected, ifindex = self.some_ifindex(space)
        vals = {"ifindex": ifindex, "type": random.choice(("rx", "tx")),
                "id": random.randint(0, 9)}
        if "OK" in expected:
            # a queue beyond the count, or of a device that is down
            expected = expected | {"EINVAL", "ENOENT"}
        result, _ = self.nl.call(space.name, "queue-get", vals)
        self.ctr.outcome("queue-get", expected, result, token,
                         f"{space.name} {vals}")

    def run(self):
        ops = ((self.napi_set, 45), (self.napi_get, 25),
               (self.napi_dump, 15), (self.queue_dump, 8),
               (self.queue_get, 7))
        funcs, weights = zip(*ops)
        while not os.path.exists(self.stop):
            space = random.choice(self.spaces)
            func = random.choices(funcs, weights)[0]
            token = self.token()
            try:
                func(space, token)
            except Exception as e:  # pylint: disable=broad-except
                # A reply the library cannot decode, MemoryError under
                # fault injection, ...
                self.ctr.add("ops")
                self.ctr.error("EXC_" + type(e).__name__, token,
                               f"{func.__name__} in {space.name}: {e!r}")
                self.nl.reset(space.name)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--ksft-dir", required=True)
    ap.add_argument("--counts", required=True)
    ap.add_argument("--stop", required=True)
    ap.add_argument("--ready", help="file made once set up")
    ap.add_argument("--faults", type=float, default=0.0,
                    help="share of send and receive calls faulted")
    ap.add_argument("--ns", action="append", required=True,
                    help="NS:MODE, MODE verify, bounded or free")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))

    worker = NetlinkWorker(args)
    try:
        # Sockets and first dumps before faults may hit this process
        for space in worker.spaces:
            worker.nl.family(space.name)
            worker.napi_dump(space, worker.token(), whole=True)
        if worker.faults:
            worker.faults.share = args.faults
        sl.ready(args.ready)
        worker.run()
    finally:
        worker.ctr.flush(force=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
