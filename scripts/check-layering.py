#!/usr/bin/env python3
"""Checks the include rules of docs/architecture.md ("Layers"): each folder includes only from the folders
below it, and the few includes that reach up are the ones listed (with their reason) in ALLOWED below.

    python3 scripts/check-layering.py          # exit 0 when every include follows the rules
    python3 scripts/check-layering.py --graph  # also print how many includes run from each folder to each
    python3 scripts/check-layering.py --root DIR  # check another tree (tests/layering_test.sh does)

Only project includes are checked (#include "folder/file.h"); system and library headers (<...>) are not.
A violation is printed as `file:line: folder/ includes target (allowed: ...)` and the exit status is 1."""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Which folders each folder may include from (its own folder is always allowed). The framework (core ops cpu
# cuda nn dist) sits below the programs (examples tools tests exercises fuzz); nothing in it includes them.
RULES = {
    "core": set(),
    "ops": {"core"},
    "cpu": {"core", "ops"},
    "cuda": {"core", "ops", "cpu"},
    "nn": {"core", "ops"},
    "dist": {"core", "ops", "nn"},
    "minidl": {"core", "ops", "nn"},  # minidl/minidl.h: the public API in one include
    "examples": {"core", "ops", "cpu", "cuda", "nn", "dist", "tools", "minidl"},
    "tools": {"core", "ops", "cpu", "cuda", "nn", "dist", "examples"},
    "tests": {"core", "ops", "cpu", "cuda", "nn", "dist", "examples", "tools", "exercises", "fuzz"},
    "exercises": {"core", "ops", "cpu", "cuda", "nn", "dist", "examples", "tools", "tests"},
    "fuzz": {"core", "ops", "cpu", "cuda", "nn", "dist", "examples", "tools"},
}

# cpu/ and cuda/ may use only these headers of ops/: the signatures they implement and the per-element math
# they share. (Kernels do not call ops: that would run the dispatch table from inside a kernel.)
KERNEL_OPS_HEADERS = re.compile(r"^ops/(kernel_signatures\.h|\w+_functors\.h|\w+_cell_math\.h)$")
# cuda/ may use one header of cpu/: the dtype switch.
CUDA_CPU_HEADERS = {"cpu/strided.h"}

# The includes that run up, each with the reason it stays (docs/architecture.md, "Layers").
ALLOWED = {
    ("core/autograd.cpp", "ops/ops.h"):
        "the engine's += is the op add, dispatched like every other computation",
    ("core/registry_init.cpp", "cpu/register.h"): "the composition root registers every backend once",
    ("core/registry_init.cpp", "cuda/register.h"): "the composition root registers every backend once",
    ("dist/nccl_backend.cpp", "cuda/cuda_common.h"): "the NCCL backend runs on the CUDA stream",
    ("nn/graphed_step.cpp", "cuda/graph.h"):
        "a training step captured as a CUDA graph; cuda/graph.h is plain C++, no CUDA headers",
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
SOURCE = (".h", ".hpp", ".cpp", ".cu", ".cuh")


def check(path, folder, line_no, target):
    """Returns a message when `path` (in `folder`) may not include `target`, else None."""
    top = target.split("/")[0]
    if "/" not in target or top not in RULES or top == folder:
        return None  # a header of the same folder, a library header in quotes, or a generated file
    if (path, target) in ALLOWED:
        return None
    if folder in ("cpu", "cuda") and top == "ops":
        return None if KERNEL_OPS_HEADERS.match(target) else "kernels use only ops/kernel_signatures.h and the shared math headers"
    if folder == "cuda" and top == "cpu":
        return None if target in CUDA_CPU_HEADERS else "cuda/ uses only cpu/strided.h of cpu/"
    if top not in RULES[folder]:
        return "allowed: " + (", ".join(sorted(RULES[folder])) or "core/ only")
    return None


def main():
    root = ROOT
    if "--root" in sys.argv:
        root = sys.argv[sys.argv.index("--root") + 1]
    graph = {}
    violations = []
    for folder in RULES:
        for dirpath, _, files in os.walk(os.path.join(root, folder)):
            for name in sorted(files):
                if not name.endswith(SOURCE):
                    continue
                full = os.path.join(dirpath, name)
                rel = os.path.relpath(full, root)
                with open(full, encoding="utf-8", errors="replace") as f:
                    for line_no, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        target = m.group(1)
                        top = target.split("/")[0]
                        if top in RULES:
                            graph[(folder, top)] = graph.get((folder, top), 0) + 1
                        why = check(rel, folder, line_no, target)
                        if why:
                            violations.append(f"{rel}:{line_no}: {folder}/ includes {target} ({why})")
    if "--graph" in sys.argv:
        for (a, b), n in sorted(graph.items()):
            print(f"{a:>9}/ -> {b}/  {n}")
    for v in violations:
        print(v)
    if violations:
        print(f"layering: {len(violations)} include(s) break the rules of docs/architecture.md; move the code, or "
              "add the include to ALLOWED in scripts/check-layering.py with its reason and document it there")
        return 1
    print(f"layering: every include follows docs/architecture.md ({len(ALLOWED)} documented exceptions)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
