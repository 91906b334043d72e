#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Set the NAPI parameters of every NAPI of one device, in one process.

usage: napi_set.py KERNEL_TREE IFINDEX DEFER GRO_FLUSH_NS IRQ_SUSPEND_NS

Uses the kernel tree's YNL library on the netdev family (napi-get dump,
napi-set per NAPI), then reads the NAPIs back and prints them, so that the
benchmark log shows what each mode ran with. Run it in the device's netns.
"""
import sys


def main():
    tree, ifindex = sys.argv[1], int(sys.argv[2])
    defer, gro, suspend = (int(v) for v in sys.argv[3:6])
    sys.path.insert(0, f"{tree}/tools/net/ynl")
    from lib import YnlFamily  # pylint: disable=import-outside-toplevel

    ynl = YnlFamily(f"{tree}/Documentation/netlink/specs/netdev.yaml")
    napis = ynl.dump("napi-get", {"ifindex": ifindex})
    if not napis:
        sys.exit(f"no NAPI with an ID on ifindex {ifindex}")
    for napi in napis:
        ynl.do("napi-set", {"id": napi["id"], "defer-hard-irqs": defer,
                            "gro-flush-timeout": gro,
                            "irq-suspend-timeout": suspend})
    for napi in ynl.dump("napi-get", {"ifindex": ifindex}):
        got = (napi["defer-hard-irqs"], napi["gro-flush-timeout"],
               napi["irq-suspend-timeout"])
        if got != (defer, gro, suspend):
            sys.exit(f"NAPI {napi['id']} reads back {got}")
        print(f"napi {napi['id']}: defer-hard-irqs {got[0]} "
              f"gro-flush-timeout {got[1]} irq-suspend-timeout {got[2]}")


if __name__ == "__main__":
    main()
