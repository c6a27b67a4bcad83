#!/usr/bin/env python3
"""Checks docs/reading-path.md: every file it lists exists, each listed line count is the file's real
length, the total line matches, and the total stays within the limit (8,000 lines: a weekend's reading).

    python3 scripts/check-reading-path.py         # exit 0 when the page is true, 1 (saying what is wrong) if not
    python3 scripts/check-reading-path.py --fix   # rewrite the counts and the total from the files

--fix does not add or remove files and cannot make a path over the limit pass."""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGE = os.path.join(ROOT, "docs", "reading-path.md")
LIMIT = 8000
ROW = re.compile(r"^\| (\d+) \| (\S+) \| ([\d,]+) \| (.*) \|$")
TOTAL = re.compile(r"^\*\*Total: ([\d,]+) lines\.\*\*$")


def count_lines(path):
    with open(os.path.join(ROOT, path), "rb") as f:
        return f.read().count(b"\n")


def main():
    fix = "--fix" in sys.argv
    with open(PAGE, encoding="utf-8") as f:
        lines = f.read().split("\n")
    problems = []
    total = 0
    rows = 0
    inside = False
    for i, line in enumerate(lines):
        if "reading-path: begin" in line:
            inside = True
            continue
        if "reading-path: end" in line:
            inside = False
            continue
        m = ROW.match(line)
        if inside and m:
            rows += 1
            path, listed = m.group(2), int(m.group(3).replace(",", ""))
            if not os.path.isfile(os.path.join(ROOT, path)):
                problems.append(f"{path}: listed but not in the tree (moved or renamed?)")
                continue
            real = count_lines(path)
            total += real
            if real != listed:
                if fix:
                    lines[i] = f"| {m.group(1)} | {path} | {real} | {m.group(4)} |"
                else:
                    problems.append(f"{path}: listed as {listed} lines, has {real}")
    if rows == 0:
        problems.append("no table rows between the reading-path markers")
    for i, line in enumerate(lines):
        m = TOTAL.match(line)
        if m:
            listed_total = int(m.group(1).replace(",", ""))
            if listed_total != total:
                if fix:
                    lines[i] = f"**Total: {total:,} lines.**"
                else:
                    problems.append(f"total: listed as {listed_total:,} lines, the files hold {total:,}")
            break
    else:
        problems.append("no '**Total: N lines.**' line")
    if total > LIMIT:
        problems.append(f"the path holds {total:,} lines, over the limit of {LIMIT:,}: shorten it")
    if fix:
        with open(PAGE, "w", encoding="utf-8") as f:
            f.write("\n".join(lines))
    for p in problems:
        print("reading-path: " + p)
    if problems:
        print("reading-path: docs/reading-path.md is out of date; `python3 scripts/check-reading-path.py --fix` "
              "rewrites the counts")
        return 1
    print(f"reading-path: {rows} files, {total:,} lines (limit {LIMIT:,})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
