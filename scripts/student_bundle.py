#!/usr/bin/env python
"""The folder a course hands to students: the lecture and the exercises, no answers.

    python scripts/student_bundle.py [OUT]      default OUT: build/student-bundle (and OUT.zip)

It holds notebooks/*.ipynb (the lecture, executed), exercises/*.ipynb (the student copies) and
exercises/README.md. Never solutions/ or tests/: the answers and the hidden tests stay with the
instructor. Students install the package (`pip install asyncps`, or `pip install .` in a checkout)
and check their work with `python -m asyncps.check exercises/NAME.ipynb` (visible tests only).
"""
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PARTS = {"notebooks": "*.ipynb", "exercises": "*.ipynb"}


def build(out):
    out = Path(out)
    if out.exists():
        shutil.rmtree(out)
    for folder, pattern in PARTS.items():
        (out / folder).mkdir(parents=True)
        for path in sorted((ROOT / folder).glob(pattern)):
            shutil.copy2(path, out / folder / path.name)
    shutil.copy2(ROOT / "exercises" / "README.md", out / "README.md")
    shutil.copy2(ROOT / "exercises" / "README.md", out / "exercises" / "README.md")
    archive = shutil.make_archive(str(out), "zip", root_dir=out.parent, base_dir=out.name)
    return out, Path(archive)


if __name__ == "__main__":
    folder, archive = build(sys.argv[1] if len(sys.argv) > 1 else ROOT / "build" / "student-bundle")
    print(f"wrote {folder} and {archive}: the lecture and the exercises, no solutions, no hidden tests")
