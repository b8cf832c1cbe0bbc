"""Every relative link in the kit's Markdown leads somewhere: in the full kit
(README.md, docs/, handout/, every other .md git lists) and in the student
handout as `run.py handout` packs it, where the instructors' files are gone.
A link to a file the handout leaves out is dead there, though it works in
the full kit; so is a link to a #heading that no longer exists.

A dead link fails with FILE:LINE: TARGET and why. Links inside code (fenced
blocks, `code spans`) are not links; http:, https: and mailto: ones are not
followed (no network in CI).
"""
import contextlib
import io
import re
import sys
import tarfile
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "grader" / "py"))

from bwlab import cmd_handout, handout_files  # noqa: E402

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
# [text](target) or ![alt](target), the text possibly on an earlier line;
# an optional "title" after the target.
INLINE = re.compile(r"\]\(\s*(<[^>\n]*>|[^)\s]+)(?:\s+\"[^\"\n]*\")?\s*\)")
# [label]: target
REFERENCE = re.compile(r"^ {0,3}\[[^\]\n]+\]:\s*(<[^>\n]*>|\S+)", re.M)
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
HEADING = re.compile(r"^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$")


def without_code(text: str, spans: bool = True) -> str:
    """text with fenced code blocks and (spans) code spans blanked out, line
    numbers kept."""
    out, fence = [], None
    for line in text.split("\n"):
        m = FENCE.match(line)
        if fence is None and m:
            fence = m.group(1)[0] * len(m.group(1))
            out.append("")
        elif fence is not None:
            if line.strip().startswith(fence) and set(line.strip()) <= {fence[0]}:
                fence = None
            out.append("")
        else:
            out.append(CODE_SPAN.sub(lambda s: " " * len(s.group(0)), line) if spans else line)
    return "\n".join(out)


def links(text: str) -> list[tuple[int, str]]:
    """(line, target) for every link in a Markdown text."""
    body = without_code(text)
    found = []
    for rx in (INLINE, REFERENCE):
        for m in rx.finditer(body):
            target = m.group(1)
            if target.startswith("<"):
                target = target[1:-1]
            found.append((body.count("\n", 0, m.start(1)) + 1, target))
    return sorted(found)


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: its text lowercased, markup and
    punctuation dropped, spaces made hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)   # a link: its text
    text = text.lower().replace("`", "")
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(text: str) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for line in without_code(text, spans=False).split("\n"):
        m = HEADING.match(line)
        if not m:
            continue
        base = slug(m.group(1))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def dead_links(root: Path, md_files: list[str]) -> list[str]:
    """'FILE:LINE: TARGET (why)' for every relative link in md_files (paths
    relative to root) that leads to nothing there."""
    root = Path(root)
    dead = []
    for rel in md_files:
        src = root / rel
        text = src.read_text(encoding="utf-8")
        for line, target in links(text):
            if SCHEME.match(target) or target.startswith("//"):
                continue
            path, _, frag = target.partition("#")
            dest = (src.parent / path) if path else src
            where = f"{rel}:{line}: {target}"
            try:
                dest.resolve().relative_to(root.resolve())
            except ValueError:
                dead.append(f"{where} (outside the kit)")
                continue
            if not dest.exists():
                dead.append(f"{where} (no such file)")
            elif frag and dest.suffix == ".md" and dest.is_file():
                if frag.lower() not in anchors(dest.read_text(encoding="utf-8")):
                    shown = dest.resolve().relative_to(root.resolve()).as_posix()
                    dead.append(f"{where} (no heading #{frag} in {shown})")
    return dead


def markdown_in(root: Path) -> list[str]:
    files, _ = handout_files.list_files(root)
    return [f for f in files if f.endswith(".md")]


class CheckerTests(unittest.TestCase):
    """The checker itself: a planted dead link of each kind is found."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.root = Path(self.tmp.name)
        (self.root / "docs").mkdir()
        (self.root / "docs" / "A.md").write_text("# A page\n\n## The `run.py test` command\n\nText.\n")

    def check(self, text: str) -> list[str]:
        (self.root / "README.md").write_text(text)
        return dead_links(self.root, ["README.md"])

    def test_live_links_pass(self):
        self.assertEqual(self.check(
            "See [A](docs/A.md), [the command](docs/A.md#the-runpy-test-command),\n"
            "[top](#intro), [ref] and <https://example.org>, [web](https://example.org/x.md).\n\n"
            "# Intro\n\n[ref]: docs/A.md\n"), [])

    def test_a_missing_file_is_dead(self):
        self.assertEqual(self.check("one\n\nsee [it](docs/INSTRUCTORS.md) there\n"),
                         ["README.md:3: docs/INSTRUCTORS.md (no such file)"])

    def test_a_link_split_over_lines_and_a_reference_are_followed(self):
        self.assertEqual(self.check("see [the\nbenchmarks](docs/B.md)\n\n[b]: docs/C.md\n"),
                         ["README.md:2: docs/B.md (no such file)", "README.md:4: docs/C.md (no such file)"])

    def test_a_missing_heading_is_dead(self):
        self.assertEqual(self.check("[x](docs/A.md#hints)\n"),
                         ["README.md:1: docs/A.md#hints (no heading #hints in docs/A.md)"])

    def test_links_outside_the_kit_are_dead(self):
        self.assertEqual(self.check("[up](../elsewhere.md)\n"),
                         ["README.md:1: ../elsewhere.md (outside the kit)"])

    def test_code_is_not_a_link(self):
        self.assertEqual(self.check("`[a](nope.md)`\n\n```\n[b](nope.md)\n```\n"), [])


class KitTests(unittest.TestCase):
    def test_the_kits_markdown_has_no_dead_link(self):
        files = markdown_in(ROOT)
        self.assertIn("README.md", files)
        dead = dead_links(ROOT, files)
        self.assertEqual(dead, [], "dead links in the kit:\n" + "\n".join(dead))

    def test_the_handouts_markdown_has_no_dead_link(self):
        # Only the full kit packs a handout that differs from itself (in the
        # handout, the test above already checks what a student has).
        if not (ROOT / "docs" / "INSTRUCTORS.md").is_file():
            self.skipTest("this copy is the student handout: the kit check covers it")
        with tempfile.TemporaryDirectory() as tmp:
            tarball = Path(tmp) / "handout.tar.gz"
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as err:
                code, _, _ = cmd_handout.make_handout(ROOT, tarball, "bwlab", {}, quiet=True)
            self.assertEqual(code, 0, err.getvalue())
            with tarfile.open(tarball, "r:gz") as tf:
                for m in tf.getmembers():
                    self.assertTrue(m.isfile() or m.isdir(), m.name)
                    self.assertFalse(m.name.startswith("/") or ".." in m.name.split("/"), m.name)
                tf.extractall(tmp)
            kit = Path(tmp) / "bwlab"
            files = sorted(p.relative_to(kit).as_posix() for p in kit.rglob("*.md"))
            self.assertIn("handout/README.md", files)
            dead = dead_links(kit, files)
            self.assertEqual(dead, [], "dead links in the packed handout:\n" + "\n".join(dead))


if __name__ == "__main__":
    unittest.main()
