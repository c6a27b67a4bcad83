#!/usr/bin/env python3
"""scripts/check-exercises.py — the student's view of every exercise stays as the course means it: the committed
stubs give no answers away, and each exercise's README, stub and checker name the same exercise.

An exercise is any folder exercises/NN-name/ other than common/ (exercises/README.md, "Layout"). Its parts:
README.md, check.cpp, a header NAME.h, stub/ and solution/ holding the same file names (the student's files,
also present as exercises/NN-name/FILE), and optionally bare/ (the no-scaffolding version: the same names).
For each one this checks:

  layout    the parts exist; stub/, solution/ (and bare/) hold the same file names
  title     README.md starts `# Exercise N: TITLE` with N the folder's number; check.cpp's
            `Checker c(argc, argv, {N, "TITLE", "exercises/NN-name/FILE"})` has the same N, the same words of
            TITLE (punctuation aside) and a FILE of stub/; stub/FILE's first line names
            `exercises/NN-name/FILE` and `EXERCISE N`; the README links FILE
  functions every function the header declares is defined in stub/, solution/ and bare/ and named by
            check.cpp; every function holding an `// EXERCISE` line in stub/ is named in the README (`name`)
  answers   no line of code that the solution adds to the stub appears in stub/ or bare/ (not even in a
            comment); where the README asks for a prediction ("predict", "do you expect ...?"), the comments
            of stub/ and bare/ state none (no "should take about a third of the time", "3x faster")

  python3 scripts/check-exercises.py             # exit 0 when every exercise passes, 1 (saying what is wrong) if not
  python3 scripts/check-exercises.py --root DIR  # check another tree (tests/exercises_student_view_test.sh does)
"""
import argparse
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
SOURCES = (".cpp", ".cu")
# A solution line shorter than this (after removing white space) is too generic to count as an answer
# ("return true;", "__syncthreads();", which a stub may name as a hint).
MIN_ANSWER_CHARS = 20
# A question asking the student to predict before running.
PREDICTION_QUESTION = re.compile(r"\bpredict|\bwhat\b[^.?]*\bexpect\b[^.?]*\?", re.IGNORECASE)
# A stated prediction of speed: "should take about a third of the time", "will be 3x faster", "a speed-up of 3".
PREDICTION = re.compile(
    r"\b(should|will|would|expect(ed)?)\b[^.;]*\b(faster|slower|speed-?up|third|half|quarter|times)\b"
    r"|\b\d+(\.\d+)?\s*x\s+(faster|slower)\b|\bspeed-?up of\b",
    re.IGNORECASE)


def strip_comments(code):
    code = re.sub(r"/\*.*?\*/", " ", code, flags=re.DOTALL)
    return re.sub(r"//[^\n]*", "", code)


def comments_of(code):
    return "\n".join(re.findall(r"//([^\n]*)", code) + re.findall(r"/\*(.*?)\*/", code, flags=re.DOTALL))


def squeeze(text):
    return re.sub(r"\s+", "", text)


def words(title):
    return re.findall(r"[A-Za-z0-9]+", title)


def declared_functions(header):
    """The functions a header declares at namespace scope (struct and class bodies left out)."""
    code = strip_comments(header)
    code = re.sub(r"^#.*$", "", code, flags=re.MULTILINE)
    # Drop the bodies of structs and classes (and any inline function body), keeping namespaces open.
    out, depth_stack, i = [], [], 0
    while i < len(code):
        c = code[i]
        if c == "{":
            before = code[max(code.rfind(";", 0, i), code.rfind("}", 0, i), code.rfind("{", 0, i)) + 1:i]
            depth_stack.append("namespace" in before)
            i += 1
            continue
        if c == "}":
            if depth_stack:
                depth_stack.pop()
            i += 1
            continue
        if all(depth_stack):
            out.append(c)
        i += 1
    flat = "".join(out)
    names = []
    for statement in flat.split(";"):
        m = re.search(r"\b([A-Za-z_]\w*)\s*\([^()]*\)\s*(const)?\s*$", statement.strip())
        if m and not re.match(r"^\s*(using|typedef|struct|class)\b", statement.strip()):
            names.append(m[1])
    # A function the header defines itself (inline, with its body) is given, not the student's to write.
    return sorted(n for n in set(names) if not defines(header, n))


def defines(code, name):
    return re.search(r"\b" + name + r"\s*\([^;{]*\)\s*(const\s*)?\{", strip_comments(code)) is not None


def functions_with_marker(code):
    """The functions of a source file (defined at namespace scope) whose bodies hold an `// EXERCISE` line."""
    found, current, depth = [], None, 0  # depth: braces open inside functions, namespaces not counted
    head = re.compile(r"^(?!\s)(?:[\w:<>,*&]+\s+)+[*&]?(\w+)\s*\(")
    for line in strip_strings(code).split("\n"):
        if re.match(r"^(namespace\b.*\{|}\s*//\s*namespace)", line):
            current = None
            continue
        if depth == 0:
            m = head.match(line)
            if m and not line.rstrip().endswith(";"):
                current = m[1]
        if re.search(r"//\s*EXERCISE\b", line) and depth > 0 and current:
            found.append(current)
        body = re.sub(r"//.*", "", line)
        depth += body.count("{") - body.count("}")
    return sorted(set(found))


def strip_strings(code):
    """The code with the contents of string and character literals emptied (their braces do not count)."""
    return re.sub(r'"(\\.|[^"\\\n])*"|\'(\\.|[^\'\\\n])*\'', '""', code)


def check_exercise(folder, root):
    name = folder.name
    where = f"exercises/{name}"
    problems = []

    def problem(text):
        problems.append(f"{where}: {text}")

    for part in ("README.md", "check.cpp", "stub", "solution"):
        if not (folder / part).exists():
            problem(f"has no {part} (an exercise holds README.md, check.cpp, stub/, solution/; exercises/README.md)")
    if problems:
        return problems
    variants = {v: folder / v for v in ("stub", "solution", "bare") if (folder / v).is_dir()}
    files = {v: sorted(p.name for p in d.iterdir() if p.is_file()) for v, d in variants.items()}
    for v in files:
        if files[v] != files["stub"]:
            problem(f"{v}/ holds {files[v]} but stub/ holds {files['stub']}: the same files, one per version")
    sources = [f for f in files["stub"] if f.endswith(SOURCES)]
    if not sources:
        problem("stub/ holds no .cpp or .cu file")
        return problems
    for f in files["stub"]:
        if not (folder / f).exists():
            problem(f"has no {f}: the student's copy of stub/{f}")

    readme = (folder / "README.md").read_text(encoding="utf-8")
    check = (folder / "check.cpp").read_text(encoding="utf-8")
    # The exercise's number as the course writes it: folder 04-... is "4", 04b-... is "4b".
    number_match = re.match(r"(\d+)([a-z]?)-", name)
    number = str(int(number_match[1])) + number_match[2] if number_match else None

    # title: README, checker and stub name the same exercise
    heading = re.match(r"# Exercise (\w+): (.+)", readme)
    # exercise::Checker c(ARGC, ARGV, {N or "Nb", "TITLE", "exercises/NN-name/FILE" or a constant holding it})
    info = re.search(r"Checker\s+\w+\s*\(.*?\{\s*\"?(\w+)\"?\s*,\s*\"([^\"]*)\"\s*,\s*(\"[^\"]*\"|\w+)\s*\}\s*\)",
                     strip_comments(check), re.DOTALL)
    if not heading:
        problem("README.md does not start with `# Exercise N: TITLE`")
    elif heading[1] != number:
        problem(f"README.md says exercise {heading[1]}, the folder is number {number}")
    if not info:
        problem('check.cpp has no `Checker c(argc, argv, {N, "TITLE", "exercises/.../FILE"})`')
    else:
        if info[1] != number:
            problem(f"check.cpp's Checker says exercise {info[1]}, the folder is number {number}")
        if heading and words(info[2]) != words(heading[2]):
            problem(f"check.cpp's title \"{info[2]}\" is not the README's \"{heading[2].strip()}\"")
        file_path = info[3].strip('"')
        if not info[3].startswith('"'):  # a constant: its definition in check.cpp
            constant = re.search(r"\b" + info[3] + r"\b[^=;]*=\s*\"([^\"]*)\"", check)
            file_path = constant[1] if constant else info[3]
        if not file_path.startswith(f"exercises/{name}/") or file_path.split("/")[-1] not in files["stub"]:
            problem(f"check.cpp names the student's file {file_path}, not exercises/{name}/ and a file of stub/")
        else:
            student_file = file_path.split("/")[-1]
            if f"]({student_file})" not in readme:
                problem(f"README.md does not link the student's file: [{student_file}]({student_file})")
            first = (folder / "stub" / student_file).read_text(encoding="utf-8").split("\n")[0]
            if not first.startswith(f"// {file_path} ") or f"EXERCISE {number}" not in first:
                problem(f"stub/{student_file}'s first line should be `// {file_path} — EXERCISE {number}: ...`; it is "
                        f"`{first}`")

    # functions: the header's, defined in every version and named by the checker; the exercise's, in the README
    for header in sorted(folder.glob("*.h")):
        for function in declared_functions(header.read_text(encoding="utf-8")):
            for v, d in variants.items():
                present = [d / f for f in sources if (d / f).exists()]  # a missing file is reported above
                if present and not any(defines(path.read_text(encoding="utf-8"), function) for path in present):
                    problem(f"{v}/ does not define {function}(), which {header.name} declares")
            if function.startswith("register_student") and not re.search(r"\b" + function + r"\s*\(",
                                                                         strip_comments(check)):
                problem(f"check.cpp does not call {function}(), which {header.name} declares")
    for f in sources:
        for function in functions_with_marker((folder / "stub" / f).read_text(encoding="utf-8")):
            if not re.search(r"`" + function + r"\b[^`]*`", readme):  # `name`, `name()`, `name(x, out)`
                problem(f"README.md does not name `{function}`, where stub/{f} says EXERCISE")

    # answers: no solution line in stub/ or bare/; no stated prediction where the README asks for one
    asks_prediction = PREDICTION_QUESTION.search(readme) is not None
    for f in sources:
        # The solution's lines of code that the stub's code does not have (compared without white space, so
        # that a signature wrapped differently is not an answer).
        stub_code = squeeze(strip_comments((folder / "stub" / f).read_text(encoding="utf-8")))
        solution = strip_comments((folder / "solution" / f).read_text(encoding="utf-8")).split("\n")
        answers = [l.strip() for l in solution if squeeze(l) not in stub_code and len(squeeze(l)) >= MIN_ANSWER_CHARS]
        for v in ("stub", "bare"):
            if v not in variants or not (folder / v / f).exists():
                continue
            text = (folder / v / f).read_text(encoding="utf-8")
            flat = squeeze(text.replace("//", ""))
            for line in answers:
                if squeeze(line) in flat:
                    problem(f"{v}/{f} holds a line of the solution: `{line}`")
            if asks_prediction:
                m = PREDICTION.search(comments_of(text))
                if m:
                    problem(f"{v}/{f} states a prediction the README asks the student to make: \"{m[0].strip()}\"")
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", default=str(ROOT), help="the tree whose exercises/ is checked")
    args = parser.parse_args()
    root = pathlib.Path(args.root).resolve()
    folders = sorted(p for p in (root / "exercises").iterdir() if p.is_dir() and p.name != "common")
    problems = []
    for folder in folders:
        problems += check_exercise(folder, root)
    for p in problems:
        print(p)
    if not folders:
        print("check-exercises: no exercise folder found")
        return 1
    print(f"check-exercises: {len(folders)} exercises, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
