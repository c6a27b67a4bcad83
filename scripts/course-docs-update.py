#!/usr/bin/env python3
"""scripts/course-docs-update.py — refreshes the quotes of docs/course/*.md from the code, for maintainers.

tests/test_course_docs.cpp fails when a chapter's quote no longer matches the code. After a change that
was meant (a marked region edited, a worked example's output changed), this script rewrites:
  - every ```cpp block after `<!-- snippet: PATH#NAME -->` with the region between `// [doc:NAME]` and
    `// [/doc:NAME]` of PATH (common indentation removed; preprocessor lines kept in column 0);
  - every ```text block after `<!-- output: NAME -->` with what `BUILD/bin/course_example NAME` prints.
Then read the diff: the prose around a quote may need to change too. Figures in the prose marked
`<!-- checked: ... -->` are not rewritten: `python3 scripts/check-course-figures.py BUILD/bin` names each
one that no longer holds (ctest course_figures), for a person to correct. With --links it also moves every
line-range link (PATH#L10-L20) whose name moved: it runs the links test of BUILD/bin/minidl_tests and shifts
each range it reports by the distance to the name's definition, keeping the range's length (read the diff:
a definition that grew or shrank needs a new end line).

  python3 scripts/course-docs-update.py [--build build] [--links]
"""
import argparse
import html
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def region(path, name):
    lines = (ROOT / path).read_text().split("\n")
    begin = next(i for i, l in enumerate(lines) if f"[doc:{name}]" in l) + 1
    end = next(i for i, l in enumerate(lines) if f"[/doc:{name}]" in l)
    body = lines[begin:end]
    code = [l for l in body if l and not l.startswith("#")]
    indent = min((len(l) - len(l.lstrip(" ")) for l in code), default=0)
    return "".join((l if l.startswith("#") else l[indent:]) + "\n" for l in body)


def rewrite(text, build):
    out, lines, i = [], text.split("\n"), 0
    last = ""
    while i < len(lines):
        line = lines[i]
        out.append(line)
        if line.startswith("```") and len(line) > 3:
            snippet = re.search(r"<!-- snippet: ([^#]+)#([A-Za-z0-9_]+) -->", last)
            output = re.search(r"<!-- output: ([A-Za-z0-9_]+) -->", last)
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            if snippet and line == "```cpp":
                out.append(region(snippet[1], snippet[2]).rstrip("\n"))
                i = j
                continue
            if output and line == "```text":
                printed = subprocess.run([str(build / "bin" / "course_example"), output[1]], check=True,
                                         capture_output=True, text=True).stdout
                out.append(printed.rstrip("\n"))
                i = j
                continue
            out.extend(lines[i + 1:j])
            i = j
            continue
        if line.strip():
            last = line
        i += 1
    return "\n".join(out)


def move_links(build):
    """Shifts the line ranges the links test reports as moved (its messages name the chapter, the link, the
    range's first line of code and where the definition is now)."""
    run = subprocess.run([str(build / "bin" / "minidl_tests"), "course: links resolve*", "--reporter", "xml"],
                         capture_output=True, text=True)
    text = html.unescape(run.stdout)  # the xml reporter: one message per line, never wrapped
    moves = re.findall(r"(docs/course/[\w.-]+\.md): \[[^\n]*?\]\(([^)\s]+)\)\s+</Info>\s+<Info>\s+`[^`]+` is not defined where "
                       r"lines \d+-\d+ of \S+ start \(their first line of code, (\d+), should define it\); its "
                       r"definition is now at line (\d+)", text)
    for md, target, code_line, now in moves:
        m = re.search(r"#L(\d+)(?:-L(\d+))?$", target)
        if not m or int(now) == 0:
            print(f"{md}: {target}: no definition found; fix by hand")
            continue
        shift = int(now) - int(code_line)
        first = int(m[1]) + shift
        new = target[:m.start()] + f"#L{first}" + (f"-L{int(m[2]) + shift}" if m[2] else "")
        path = ROOT / md
        path.write_text(path.read_text().replace(f"]({target})", f"]({new})"))
        print(f"{md}: {target} -> {new}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default="build", help="the build folder holding bin/course_example")
    parser.add_argument("--links", action="store_true", help="also move line-range links whose names moved")
    args = parser.parse_args()
    build = ROOT / args.build
    if not (build / "bin" / "course_example").exists():
        sys.exit(f"course-docs-update: no {build}/bin/course_example; build first (make)")
    for md in sorted((ROOT / "docs" / "course").glob("*.md")):
        text = md.read_text()
        new = rewrite(text, build)
        if new != text:
            md.write_text(new)
            print(f"updated {md.relative_to(ROOT)}")
    if args.links:
        move_links(build)


if __name__ == "__main__":
    main()
