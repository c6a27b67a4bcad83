#!/usr/bin/env python3
"""scripts/check-course-figures.py BIN_DIR — the figures of the course that describe the code (kernel counts,
defaults, priorities, which kernel serves a call) are what the built programs print.

A measured figure (a time, a GFLOP/s) names its machine and date in the text; a figure that describes the
code is instead marked with a comment, on a line of its own just before the paragraph, fenced block or SVG
group it is in, and this script runs the command and compares:

  <!-- checked: COMMAND; count: REGEX; text: TEXT -->
      the block contains TEXT, {n} in it replaced by how many lines of COMMAND's output REGEX matches
      (as digits, or as a word: "3" or "three", any case)
  <!-- checked: COMMAND; each: REGEX; text: TEXT -->
      for every match of REGEX in the output, the block contains TEXT with \\1, \\2 ... replaced by its groups
  <!-- checked: COMMAND; lines: REGEX -->
      every line of the block that REGEX matches has a line of the output that REGEX matches with the same
      groups (a quoted excerpt of the output: the rows it shows exist)

In an SVG file the marker is a processing instruction, `<?checked COMMAND; ... ?>` (an XML comment may not
hold the `--` of a flag). After any of them, `; when: REGEX`: the figure belongs to one build configuration, checked only where
`minidl info` matches REGEX (elsewhere it is reported as skipped). REGEX is Python's, applied line by line
(re.MULTILINE); text is compared with runs of white space taken as one space. COMMAND runs in the
repository root: optional VAR=value settings, then a program of BIN_DIR (minidl, mnist, course_example) and
its arguments; stdout and stderr are read together, with every MINIDL_* variable of the caller's
environment removed (the figures describe the defaults).

Files read: docs/course/*.md, docs/course/img/*.svg, exercises/*/README.md.

  python3 scripts/check-course-figures.py build/bin              # exit 0 when every figure holds, 1 if not
  python3 scripts/check-course-figures.py build/bin --root DIR   # check another tree's pages (the self-test)
"""
import argparse
import os
import pathlib
import re
import shlex
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
MARKER = re.compile(r"<!-- checked: (.*?) -->|<\?checked (.*?) \?>")
WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"]


def squeeze(text):
    return re.sub(r"\s+", " ", text).strip()


def pages(root):
    out = sorted((root / "docs" / "course").glob("*.md"))
    out += sorted((root / "docs" / "course" / "img").glob("*.svg"))
    out += sorted((root / "exercises").glob("*/README.md"))
    return out


def block_after(lines, i):
    """The block a marker on line i describes: the fenced block that starts after the markers, else the
    lines up to the next blank line."""
    j = i + 1
    while j < len(lines) and MARKER.match(lines[j].lstrip()):
        j += 1
    if j < len(lines) and lines[j].startswith("```"):
        k = j + 1
        while k < len(lines) and not lines[k].startswith("```"):
            k += 1
        return lines[j + 1:k]
    k = j
    while k < len(lines) and lines[k].strip():
        k += 1
    return lines[j:k]


def parse(spec):
    """'COMMAND; kind: REGEX; text: TEXT; when: REGEX' -> dict. Fields are split at '; NAME: '."""
    parts = re.split(r";\s+(count|each|lines|text|when):\s", spec)
    fields = {"command": parts[0].strip()}
    for name, value in zip(parts[1::2], parts[2::2]):
        fields[name] = value.strip()
    return fields


class Runner:
    def __init__(self, bin_dir, root):
        self.bin_dir, self.root, self.cache = bin_dir, root, {}

    def run(self, command):
        if command in self.cache:
            return self.cache[command]
        words = shlex.split(command)
        env = {k: v for k, v in os.environ.items() if not k.startswith("MINIDL_")}
        while words and re.match(r"^[A-Z_][A-Z0-9_]*=", words[0]):
            name, value = words.pop(0).split("=", 1)
            env[name] = value
        program = self.bin_dir / words[0]
        if not program.exists():
            raise RuntimeError(f"no program {program} (build it first)")
        run = subprocess.run([str(program)] + words[1:], cwd=self.root, env=env, capture_output=True, text=True,
                             timeout=600)
        if run.returncode != 0:
            raise RuntimeError(f"`{command}` exited {run.returncode}:\n{run.stdout}{run.stderr}")
        self.cache[command] = run.stdout + run.stderr
        return self.cache[command]


def check(fields, block, output):
    """What is wrong with one marked figure ("" when it holds)."""
    text = squeeze("\n".join(block))
    if "count" in fields:
        n = len(re.findall(fields["count"], output, re.MULTILINE))
        want = [fields["text"].replace("{n}", str(n))]
        if n < len(WORDS):
            want.append(fields["text"].replace("{n}", WORDS[n]))
        if any(squeeze(w).lower() in text.lower() for w in want):
            return ""
        return f"the output has {n} lines matching /{fields['count']}/, so the text should say \"{want[0]}\""
    if "each" in fields:
        matches = list(re.finditer(fields["each"], output, re.MULTILINE))
        if not matches:
            return f"no line of the output matches /{fields['each']}/"
        missing = [squeeze(m.expand(fields["text"])) for m in matches]
        missing = [w for w in missing if w not in text]
        return "" if not missing else "the text lacks " + ", ".join(f'"{w}"' for w in missing)
    if "lines" in fields:
        regex = re.compile(fields["lines"])
        printed = {m.groups() for line in output.split("\n") for m in [regex.search(line)] if m}
        quoted = [(line, m.groups()) for line in block for m in [regex.search(line)] if m]
        if not quoted:
            return f"no line of the block matches /{fields['lines']}/"
        wrong = [line.strip() for line, groups in quoted if groups not in printed]
        return "" if not wrong else "the output has no line like:\n    " + "\n    ".join(wrong)
    return "the marker needs one of count:, each: or lines:"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("bin_dir", help="the build's bin folder (minidl, mnist, course_example)")
    parser.add_argument("--root", default=str(ROOT), help="the tree whose pages are checked")
    args = parser.parse_args()
    root = pathlib.Path(args.root).resolve()
    runner = Runner(pathlib.Path(args.bin_dir).resolve(), ROOT)
    info = None
    checked, skipped, problems = 0, 0, []
    for page in pages(root):
        lines = page.read_text(encoding="utf-8").split("\n")
        for i, line in enumerate(lines):
            marker = MARKER.match(line.lstrip())  # a marker has a line of its own
            if not marker:
                continue
            where = f"{page.relative_to(root)}:{i + 1}"
            fields = parse(marker[1] or marker[2])
            try:
                if "when" in fields:
                    info = info if info is not None else runner.run("minidl info")
                    if not re.search(fields["when"], info, re.MULTILINE | re.DOTALL):
                        skipped += 1
                        print(f"{where}: skipped: this build's `minidl info` does not match /{fields['when']}/")
                        continue
                wrong = check(fields, block_after(lines, i), runner.run(fields["command"]))
            except (RuntimeError, re.error, subprocess.TimeoutExpired) as e:
                wrong = str(e)
            checked += 1
            if wrong:
                problems.append(f"{where}: `{fields['command']}`: {wrong}")
    for p in problems:
        print(p)
    if checked + skipped == 0:
        print("check-course-figures: no <!-- checked: ... --> marker found")
        return 1
    print(f"check-course-figures: {checked} figures checked, {len(problems)} wrong, {skipped} skipped")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
