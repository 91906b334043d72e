#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Turn one guest test run into a table of results and a verdict.

Inputs, all from the run's results directory:
  kselftest-NN.ktap  output of run_kselftest.sh for one test each
  kselftest-user-NN.ktap  a test of user/, in the same format
  host-NAME.ktap     a test run on the host (package_install_boot), in the
                     same format
  dmesg.txt       the guest kernel log (KUnit KTAP, splats)
  console.log     the whole QEMU console (splats, if the guest died early)

Every selected kselftest must report; a missing result is a failure. The
kernel log must be free of splats. The last line printed is
"N passed, N failed, N skipped"; the exit status is 1 if anything failed.
"""

import argparse
import re
import sys
from pathlib import Path

TIMESTAMP = re.compile(r"^\[\s*\d+\.\d+\] ?")
RESULT = re.compile(r"^(?P<indent>\s*)(?P<not>not )?ok \d+ (?P<name>[^#]*?)\s*"
                    r"(?:#\s*(?P<directive>.*))?$")
SUBTEST = re.compile(r"^(?P<indent>\s*)# Subtest: (?P<name>\S+)")
KSFT_TOP = re.compile(r"^selftests: (?P<coll>\S+): (?P<test>\S+)$")
# A test's own KTAP results, as the runner prints them: "# ok 1 name".
KSFT_CASE = re.compile(r"^# (?P<not>not )?ok \d+ (?P<name>[^#]*?)\s*"
                       r"(?:#\s*(?P<directive>.*))?$")
# KTAP lines of a test's own output that are not messages
KTAP_FRAME = re.compile(r"^(K?TAP version \d+|1\.\.\d+|Totals: .*|"
                        r"(not )?ok \d+ .*)$")
# Lines of a failed case's messages shown in the summary
CASE_DETAIL = 12

# What a kernel splat looks like in the log. Lockdep and KASAN reports
# start with "WARNING:" and "BUG:" lines; the rest are listed explicitly.
SPLAT = re.compile(
    r"WARNING:|BUG:|Oops|Kernel panic|general protection fault|"
    r"kernel BUG at|UBSAN:|INFO: task .* blocked for more than|"
    r"rcu: INFO: .*detected (expedited )?stall|self-detected stall|"
    r"possible recursive locking|possible circular locking|"
    r"inconsistent lock state|suspicious RCU usage")
# The first line of a KCSAN report names the function of each access
# ("data-race in A / B"; one name if the other access is unknown).
KCSAN = re.compile(r"BUG: KCSAN: .* in (?P<a>[\w.]+)(?:\+\S+)?"
                   r"(?: / (?P<b>[\w.]+)(?:\+\S+)?)?\s*$")


class Result:
    def __init__(self, name, status, note="", detail=()):
        self.name = name
        self.status = status    # "pass", "fail" or "skip"
        self.note = note
        self.detail = list(detail)  # what a failed case printed


def read_lines(path):
    try:
        return Path(path).read_text(errors="replace").splitlines()
    except FileNotFoundError:
        return None


def directive_status(is_not, directive):
    directive = (directive or "").strip()
    if directive.upper().startswith("SKIP"):
        return "skip", directive[4:].strip(" :")
    if is_not:
        return "fail", directive
    return "pass", ""


def skip_reason(body):
    """The most specific reason a skipped kselftest gave in its output."""
    for line in reversed(body):
        text = line.lstrip("# ").strip()
        if "SKIP" in text.upper() and text.upper() not in ("SKIP", "# SKIP"):
            return text
    return body[-1].lstrip("# ").strip() if body else ""


def parse_cases(name, body):
    """The test cases a kselftest reported in its own KTAP output.

    A case's messages are the lines the test printed after the previous
    case's result; a failed case keeps the last CASE_DETAIL of them, so
    that the summary says why it failed.
    """
    cases = []
    printed = []
    for line in body:
        m = KSFT_CASE.match(line)
        if not m:
            text = line.lstrip("# ").strip()
            if text and not KTAP_FRAME.match(text):
                printed.append(text)
            continue
        status, note = directive_status(m.group("not"), m.group("directive"))
        detail = printed[-CASE_DETAIL:] if status == "fail" else ()
        cases.append(Result(f"  {name} / {m.group('name').strip()}",
                            status, note, detail))
        printed = []
    return cases


def parse_kselftest(lines):
    """One run_kselftest.sh run of one test: [test, its cases...] or [].

    The test's own output is '# '-prefixed and may come before or after
    the runner's result line. Its cases are listed as rows of their own, so
    that a case skipped inside a passing test is visible.
    """
    body = [line for line in lines if line.startswith("#")]
    for line in lines:
        m = RESULT.match(line)
        top = KSFT_TOP.match(m.group("name").strip()) if m else None
        if not top or m.group("indent"):
            continue
        name = f"{top.group('coll')}:{top.group('test')}"
        status, note = directive_status(m.group("not"), m.group("directive"))
        if status == "skip":
            note = skip_reason(body) or note
        elif status == "fail":
            note = note or "failed"
        return name, [Result("kselftest " + name, status, note)] + \
            parse_cases(name, body)
    return None, []


def parse_kunit(lines):
    """KUnit test cases (level-1 results) from the kernel log."""
    results = []
    suites = {}
    for raw in lines:
        line = TIMESTAMP.sub("", raw)
        m = SUBTEST.match(line)
        if m:
            suites[len(m.group("indent")) // 4] = m.group("name")
            continue
        m = RESULT.match(line)
        if not m or len(m.group("indent")) // 4 != 1:
            continue
        suite = suites.get(1, "?")
        status, note = directive_status(m.group("not"), m.group("directive"))
        results.append(Result(f"kunit {suite}.{m.group('name').strip()}",
                              status, note))
    return results


def base_kcsan_report(text, series_functions):
    """Whether a splat line is a KCSAN report with no access in a function
    the series touches (None: no list given, every report counts)."""
    m = KCSAN.search(text)
    if not m or series_functions is None:
        return False
    # "func.isra.0" and the like are compiler clones of func
    names = {n.split(".")[0] for n in m.group("a", "b") if n}
    return not names & series_functions


def find_splats(*logs, series_functions=None, left_out=None):
    """The splat lines of the logs, each once. KCSAN reports in base code
    only (see base_kcsan_report()) go to left_out instead, if given."""
    seen = []
    for lines in logs:
        for line in lines or []:
            if SPLAT.search(line):
                text = TIMESTAMP.sub("", line).strip()
                if base_kcsan_report(text, series_functions):
                    if left_out is not None and text not in left_out:
                        left_out.append(text)
                elif text not in seen:
                    seen.append(text)
    return seen


def guest_rows(status, splats, finished):
    """Whether the guest finished, and whether its log is free of splats."""
    reason = ("guest did not finish: timed out" if status == 124
              else f"guest did not finish (exit {status})")
    return [Result("guest run completed", "pass" if finished else "fail",
                   "" if finished else reason),
            Result("kernel log free of splats", "fail" if splats else "pass",
                   splats[0] if splats else "")]


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("results", help="results directory of the guest run")
    ap.add_argument("--expect", action="append", default=[],
                    help="a selected kselftest, collection:test")
    ap.add_argument("--kunit-expected", action="store_true",
                    help="KUnit suites are built in and must report")
    ap.add_argument("--guest-status", type=int, default=0,
                    help="exit status of the guest run")
    ap.add_argument("--no-guest", action="store_true",
                    help="no guest ran (only host tests were selected)")
    ap.add_argument("--series-functions", type=Path,
                    help="functions the series touches, one per line: a "
                    "KCSAN report with no access in one of them is listed, "
                    "not counted as a splat")
    args = ap.parse_args()
    res = Path(args.results)

    rows = []
    ksft = {}
    for path in sorted(res.glob("kselftest-*.ktap")) + \
            sorted(res.glob("host-*.ktap")):
        name, rows_of_test = parse_kselftest(read_lines(path))
        if name:
            ksft[name] = rows_of_test
    dmesg = read_lines(res / "dmesg.txt")
    console = read_lines(res / "console.log")

    for name in args.expect:
        rows.extend(ksft.pop(name, None) or
                    [Result("kselftest " + name, "fail", "no result reported")])
    for extra in ksft.values():
        rows.extend(extra)

    kunit = parse_kunit(dmesg if dmesg is not None else console or [])
    rows.extend(kunit)
    if args.kunit_expected and not kunit:
        rows.append(Result("kunit", "fail", "no KUnit results in the kernel log"))

    series_functions = None
    if args.series_functions:
        series_functions = set(args.series_functions.read_text().split())
    left_out = []
    splats = find_splats(dmesg, console, series_functions=series_functions,
                         left_out=left_out)
    if not args.no_guest:
        rows.extend(guest_rows(args.guest_status, splats, dmesg is not None))

    width = max(len(r.name) for r in rows)
    print(f"{'test':<{width}}  result  note")
    for r in rows:
        print(f"{r.name:<{width}}  {r.status:<6}  {r.note}".rstrip())

    failed = [r for r in rows if r.status == "fail"]
    if failed:
        print()
        logs = "" if args.no_guest else f"; full guest log: {res / 'console.log'}"
        print(f"FAILED ({len(failed)}){logs}")
        for r in failed:
            print(f"  {r.name}: {r.note}".rstrip())
            for text in r.detail:
                print(f"      | {text}")
        for s in splats[1:6]:
            print(f"  splat: {s}")
    if left_out:
        print()
        print(f"KCSAN reports left out ({len(left_out)}): no access in a "
              f"function the series touches")
        for text in left_out:
            print(f"  {text}")
    counts = {s: sum(r.status == s for r in rows) for s in ("pass", "fail", "skip")}
    print(f"{counts['pass']} passed, {counts['fail']} failed, "
          f"{counts['skip']} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
