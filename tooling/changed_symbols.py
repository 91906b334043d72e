#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""What a series changes in the kernel's shared headers, for the series check.

usage: changed_symbols.py [--functions] TREE BASE

Reads `git diff BASE HEAD` of TREE's include/ headers (uapi left out: its
ABI is checked elsewhere) and prints one git grep pattern per line:

  struct NAME   a struct or union whose definition a changed line is in
                (its users include those of a removed member)
  NAME          an inline function whose body a changed line is in, or a
                function, variable or macro a removed line outside any
                block declares

Every C file that matches one of them is a file whose build the series
may break, whether or not our own configs compile it.

With --functions, it prints instead the name of every kernel function (in
any C file or header, tools/ aside) whose body a line the series adds or
removes is in: the code the series touches, for telling KCSAN reports in
it from those in base code. A function that only inlines a changed one is
not listed; the series changed the callers of the inline helpers it added.
"""

import re
import subprocess
import sys

HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
OPEN = re.compile(r"^(?:struct|union)\s+(\w+)\s*\{")
# The identifier a removed top-level declaration names: a function
# pointer's, a function's (the word before the first parenthesis that is
# not a keyword or a type) or a variable's (the word before = or ;)
FUNC_PTR = re.compile(r"\(\s*\*\s*(\w+)\s*\)")
CALL = re.compile(r"(\w+)\s*\(")
VARIABLE = re.compile(r"(\w+)\s*(?:\[[^]]*\])?\s*[=;]")
DEFINE = re.compile(r"^#\s*define\s+(\w+)")
NOT_NAMES = {"if", "for", "while", "switch", "return", "sizeof", "typeof",
             "void", "int", "char", "long", "short", "unsigned", "signed",
             "bool", "const", "static", "inline", "extern", "struct",
             "union", "enum", "__always_inline", "__must_check"}


def git(tree, *args):
    return subprocess.run(["git", "-C", tree, *args], check=True,
                          capture_output=True, text=True).stdout


def enclosing(lines):
    """For each line number (1-based) of a file, what its top-level block
    is: "struct NAME" for a struct or union body, NAME for the body of
    function NAME (an inline function in a header)."""
    owner = {}
    current = None
    depth = 0
    head = ""       # text since the last top-level block or declaration
    for n, line in enumerate(lines, 1):
        code = line.split("//")[0]
        if current is None and is_comment(code):
            continue
        if current is None and "{" in code:
            m = OPEN.match(head.strip() + " " + code.strip()) or \
                OPEN.match(code)
            if m:
                current = f"struct {m.group(1)}"
            elif re.search(r"\benum\b", head + code):
                # new or changed constants: only their new users see them
                current = ""
            else:
                m = None
                for m in CALL.finditer(head + code):
                    if m.group(1) not in NOT_NAMES:
                        break
                current = m.group(1) if m and m.group(1) not in NOT_NAMES \
                    else None
            depth = 0
        if current is not None:
            if current:
                owner[n] = current
            depth += code.count("{") - code.count("}")
            if depth <= 0:
                current = None
                head = ""
            continue
        head = "" if code.rstrip().endswith((";", "}")) or \
            code.startswith("#") else head + " " + code
    return owner


def declared(text):
    """The name a removed top-level declaration declares, if any."""
    m = DEFINE.match(text)
    if m:
        return m.group(1)
    for regex in (FUNC_PTR, CALL, VARIABLE):
        for m in regex.finditer(text):
            if m.group(1) not in NOT_NAMES:
                return m.group(1)
    return None


def is_comment(text):
    text = text.strip()
    return not text or text.startswith(("/*", "*", "//"))


def changed_blocks(tree, base, pathspec):
    """What `git diff BASE HEAD -- PATHSPEC` of TREE changes: yields, per
    changed line, the top-level block it is in (see enclosing()) or, for a
    removed line outside any block, ("", the name it declared)."""
    diff = git(tree, "diff", "-U0", base, "HEAD", "--", *pathspec)
    owner = {}
    in_hunk = False
    new = 0
    for line in diff.splitlines():
        if line.startswith("diff --git "):
            in_hunk = False
            continue
        if not in_hunk and line.startswith("+++ "):
            path = line[6:] if line.startswith("+++ b/") else None
            owner = enclosing(git(tree, "show", f"HEAD:{path}").splitlines()) \
                if path else {}
            continue
        m = HUNK.match(line)
        if m:
            new = int(m.group(3))
            in_hunk = True
            continue
        if not in_hunk:
            continue
        if line.startswith("+"):
            if not is_comment(line[1:]) and new in owner:
                yield owner[new], None
            new += 1
        elif line.startswith("-") and not is_comment(line[1:]):
            # a removed line sat just before line "new" of the new file
            block = owner.get(new) or owner.get(new - 1)
            if block:
                yield block, None
            else:
                yield "", declared(line[1:].strip())


def main():
    args = sys.argv[1:]
    functions = args[:1] == ["--functions"]
    if functions:
        args = args[1:]
    tree, base = args
    patterns = set()
    if functions:
        # Every function the series adds or changes, in any C file
        for block, _ in changed_blocks(tree, base, ["*.c", "*.h",
                                                    ":(exclude)tools/"]):
            if block and not block.startswith("struct "):
                patterns.add(block)
    else:
        for block, name in changed_blocks(tree, base,
                                          ["include/", ":(exclude)include/uapi"]):
            if block or name:
                patterns.add(block or name)
    print("\n".join(sorted(patterns)))

if __name__ == "__main__":
    main()
