"""run.py report: the class report of a grading run, as one HTML file.

    python3 run.py report GRADES_DIR [--out FILE]

GRADES_DIR is run.py grade's --out folder (or run.py merge's). The page
(class_report.py) is self-contained: inline SVG charts, no script, nothing
fetched. Exit codes: 0 written, 2 usage (not a grading folder, or a file in
it that is not readable JSON: the message names the file).
"""
from __future__ import annotations

import argparse
from pathlib import Path

from . import EXIT_OK, EXIT_USAGE, class_report, console, repo_root

HELP = "write the class report of a grading run (instructors): one HTML file"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = ("exit codes: 0 written; 2 usage (not a grading folder, or a file in it that is "
                     "not readable JSON: the message names it)")
    parser.add_argument("grades", metavar="GRADES_DIR", help="run.py grade's (or merge's) output folder")
    parser.add_argument("--out", metavar="FILE", help="where to write it (default: GRADES_DIR/report.html)")


def run(args: argparse.Namespace) -> int:
    folder = Path(args.grades)
    try:
        records, manifest = class_report.load(folder)
    except (ValueError, OSError) as e:
        console.error(str(e))
        return EXIT_USAGE
    out = Path(args.out) if args.out else folder / "report.html"
    page = class_report.render(records, manifest, repo_root())
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page, encoding="utf-8")
    console.say(f"wrote {out} ({len(records)} submissions, {len(page) // 1024} KiB)")
    return EXIT_OK
