"""run.py's command line: one subcommand per module bwlab.cmd_NAME.

Each command module defines HELP (one line), add_arguments(parser) and
run(args) -> exit code. Modules are imported only when needed, so a command
that another part of the kit has not shipped yet (or that is left out of a
copy of the kit) fails on its own with a clear message.
"""
from __future__ import annotations

import argparse
import importlib
import sys
import textwrap
from types import ModuleType

from . import EXIT_USAGE, console

# name -> (module, help shown when the module is absent)
COMMANDS: dict[str, tuple[str, str]] = {
    "test":      ("bwlab.cmd_test",      "build and grade your exercises on this machine's GPU"),
    "benchmark": ("bwlab.cmd_benchmark", "measure bandwidth against a device copy (and library peers)"),
    "score":     ("bwlab.cmd_score",     "estimate your points under the course's policy"),
    "selftest":  ("bwlab.cmd_selftest",  "run the kit's own tests (Check, CTest and Python)"),
    "grade":     ("bwlab.cmd_grade",     "grade submissions (instructors)"),
    "merge":     ("bwlab.cmd_merge",     "merge grading results (instructors)"),
    "report":    ("bwlab.cmd_report",    "the class report of a grading run, as HTML (instructors)"),
    "handout":   ("bwlab.cmd_handout",   "make the student handout (instructors)"),
    "asm":       ("bwlab.cmd_asm",       "show the SASS/PTX of an exercise"),
    "profile":   ("bwlab.cmd_profile",   "profile an exercise with Nsight Compute"),
    "crosscheck": ("bwlab.cmd_crosscheck", "check benchmark figures against Nsight Compute"),
}

DESCRIPTION = """\
bwlab: memory-bandwidth exercises in CUDA, graded on your GPU.

  python3 run.py test          build and grade every exercise in exercises/
  python3 run.py selftest      run the kit's own tests
"""


EXIT_CODES = ("exit codes: 0 all passed; 1 something failed (a compile error counts); 2 bad "
              "command line or unusable submission; 3 nothing could run (no CUDA device); 4 the "
              "kit did not build; 5 a tool this command needs is missing (cuobjdump, ncu, "
              "compute-sanitizer, matplotlib): the message says how to get it")


class UsageError(Exception):
    """A bad command line; str() is the one line to print."""


class Parser(argparse.ArgumentParser):
    """argparse, but a bad command line is one line (no usage block) and
    main() returns 2 instead of argparse's sys.exit."""

    def error(self, message: str):
        if message.startswith("argument "):
            message = message[len("argument "):]
        # A value checked by user_values already says what is accepted.
        if not any(word in message for word in ("is not", "has an empty", "choose from")):
            message += f" (see python3 {self.prog} --help)"
        raise UsageError(message)


def unavailable_message(name: str) -> str:
    return f"`run.py {name}` is not available in this copy of the kit"


def load_command(name: str) -> ModuleType | None:
    """The command's module, or None if it is not in this copy of the kit.
    Any other import problem (a bug in the module) is raised."""
    module = COMMANDS[name][0]
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name == module:
            return None
        raise


def _unavailable(name: str):
    def run(_args: argparse.Namespace) -> int:
        console.error(unavailable_message(name))
        return EXIT_USAGE
    return run


def build_parser(selected: str | None = None) -> argparse.ArgumentParser:
    """The full parser. Only the selected command's module is imported; with
    none selected (help), every module is tried, for its help line."""
    parser = Parser(
        prog="run.py", description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=("Run `python3 run.py COMMAND --help` for a command's options.\n\n"
                + textwrap.fill(EXIT_CODES, 79)))
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (_module, fallback) in COMMANDS.items():
        mod: ModuleType | None = None
        tried = selected is None or name == selected
        if tried:
            try:
                mod = load_command(name)
            except Exception:  # noqa: BLE001 - a broken module must not hide the others' help
                if name == selected:
                    raise
                mod = None
        if mod is not None:
            help_line = getattr(mod, "HELP", fallback)
            sp = sub.add_parser(name, help=help_line.replace("%", "%%"), description=help_line)
            mod.add_arguments(sp)
            if not sp.epilog:
                sp.epilog = EXIT_CODES
            sp.set_defaults(_run=mod.run)
        else:
            help_line = fallback if not tried else f"{fallback} (not available in this copy)"
            sp = sub.add_parser(name, help=help_line.replace("%", "%%"), description=help_line,
                                add_help=not tried)
            sp.add_argument("rest", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
            sp.set_defaults(_run=_unavailable(name), _missing=True)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    selected = argv[0] if argv and argv[0] in COMMANDS else None
    parser = build_parser(selected)
    if not argv:
        parser.print_help()
        return 0
    # Unknown options are tolerated only by the stand-in of a missing command.
    try:
        args, extra = parser.parse_known_args(argv)
        if extra and not getattr(args, "_missing", False):
            sub = getattr(args, "command", None)
            prog = f"run.py {sub}" if sub else "run.py"
            Parser(prog=prog).error("unrecognized arguments: " + " ".join(extra))
    except UsageError as e:
        console.error(str(e))
        return EXIT_USAGE
    if not getattr(args, "_run", None):
        parser.print_help()
        return 0
    try:
        return int(args._run(args))
    except KeyboardInterrupt:
        console.error("interrupted")
        return 130
