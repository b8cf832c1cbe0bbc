"""The CI recipes in docs/ci/ run as they are: each shell step is taken out
of its YAML and run by bash in a scratch git repository, with names a
student can choose (non-ASCII, spaces, '|', HTML).

Before, the pick steps read `git diff --name-only`, which quotes a non-ASCII
name ("submissions/zo\\303\\253"), so that submission matched no file and was
skipped; and a '|' in a name forged the job summary's score table."""
import csv
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GITHUB = ROOT / "docs" / "ci" / "github-actions-grade.yml"
GITLAB = ROOT / "docs" / "ci" / "gitlab-ci-grade.yml"
NAMES = ["zoë", "x y", "a|b.tar.gz", "<b>bold"]


def block_after(text: str, anchor: str, opener: str) -> str:
    """The YAML block scalar that `opener` (`run: |` or `- |`) starts first
    after the line holding anchor, dedented."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if anchor in line)
    at = next(i for i in range(start, len(lines)) if lines[i].strip() == opener)
    indent = len(lines[at]) - len(lines[at].lstrip())
    body = []
    for line in lines[at + 1:]:
        if line.strip() and len(line) - len(line.lstrip()) <= indent:
            break
        body.append(line)
    return textwrap.dedent("\n".join(body)) + "\n"


def github_step(name: str) -> str:
    return block_after(GITHUB.read_text(), f"- name: {name}", "run: |").replace(
        "${{ github.event_name }}", "push")


def gitlab_block_with(needle: str) -> str:
    text = GITLAB.read_text()
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.strip() == "- |":
            block = block_after("\n".join(lines[i:]), "- |", "- |")
            if needle in block:
                return block
    raise AssertionError(f"no script block with {needle!r} in {GITLAB}")


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True, env=dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t",
                                              GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t")).stdout


@unittest.skipUnless(shutil.which("bash") and shutil.which("git"), "bash and git are needed")
class Recipes(unittest.TestCase):
    def setUp(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.tmp = Path(tmp.name)
        self.repo = self.tmp / "kit"
        (self.repo / "submissions" / "old").mkdir(parents=True)
        (self.repo / "submissions" / "old" / "haxpy.cu").write_text("// old\n")
        git(self.repo, "init", "-q")
        git(self.repo, "add", "-A")
        git(self.repo, "commit", "-qm", "first")
        self.before = git(self.repo, "rev-parse", "HEAD").strip()
        for name in NAMES:
            p = self.repo / "submissions" / name
            if name.endswith(".tar.gz"):
                p.write_bytes(b"not really")
            else:
                p.mkdir()
                (p / "haxpy.cu").write_text("// new\n")
        # A dot-entry the same push adds is no submission (the find of a new
        # branch skipped it; the diff did not).
        (self.repo / "submissions" / ".gitkeep").write_text("")
        git(self.repo, "add", "-A")
        git(self.repo, "commit", "-qm", "second")
        self.after = git(self.repo, "rev-parse", "HEAD").strip()

    def run_script(self, script: str, env: dict[str, str]) -> subprocess.CompletedProcess:
        return subprocess.run(["bash", "-e", "-o", "pipefail", "-c", script], cwd=self.repo,
                              capture_output=True, text=True, env={**os.environ, **env}, timeout=60)

    def picked(self) -> list[str]:
        data = (self.repo / "submissions.txt").read_bytes()
        return sorted(os.fsdecode(x) for x in data.split(b"\0") if x)

    def test_github_pick_takes_every_changed_name_as_it_is(self):
        out = self.tmp / "github_output"
        p = self.run_script(github_step("Pick the submissions"),
                            {"BEFORE": self.before, "GITHUB_SHA": self.after,
                             "GITHUB_OUTPUT": str(out), "STUDENT_REPO": ""})
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(self.picked(), sorted(f"submissions/{n}" for n in NAMES))
        self.assertIn("count=4", out.read_text())
        for name in NAMES:
            self.assertNotIn(name, p.stdout)   # no student's name raw in the log

    def test_github_pick_on_a_new_branch_takes_them_all(self):
        out = self.tmp / "github_output"
        p = self.run_script(github_step("Pick the submissions"),
                            {"BEFORE": "", "GITHUB_SHA": self.after, "GITHUB_OUTPUT": str(out),
                             "STUDENT_REPO": ""})
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(self.picked(), sorted(f"submissions/{n}" for n in NAMES + ["old"]))

    def test_gitlab_pick_takes_every_changed_name_as_it_is(self):
        p = self.run_script(gitlab_block_with(": > submissions.txt"),
                            {"CI_PIPELINE_SOURCE": "push", "CI_COMMIT_BEFORE_SHA": self.before,
                             "CI_COMMIT_SHA": self.after})
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(self.picked(), sorted(f"submissions/{n}" for n in NAMES))

    def test_the_score_table_keeps_names_as_text(self):
        grades = self.repo / "grades"
        grades.mkdir()
        with open(grades / "gradebook.csv", "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["id", "haxpy_total", "total", "notes"])
            for name in NAMES + ["_em_", "[x](http://e.x)"]:
                w.writerow([name, "10", "10", "n"])
        summary = self.tmp / "summary.md"
        p = self.run_script(github_step("Score table"), {"GITHUB_STEP_SUMMARY": str(summary)})
        self.assertEqual(p.returncode, 0, p.stderr)
        rows = [line for line in summary.read_text().splitlines() if line.startswith("|")]
        self.assertEqual(rows[0], "| id | haxpy_total | total |")
        for row in rows[2:]:
            # Three cells: an unescaped | would make more.
            self.assertEqual(len(re.findall(r"(?<!\\)\|", row)), 4, row)
            self.assertNotIn("<b>", row)
            self.assertNotRegex(row, r"(?<!\\)[_\[\]]")

    def test_the_grade_step_keeps_workflow_commands_off(self):
        # A stand-in python3 plays run.py grade printing a workflow command,
        # and failing; the step must stop command processing around it and
        # keep the exit code.
        bin_dir = self.tmp / "bin"
        bin_dir.mkdir()
        shim = bin_dir / "python3"
        shim.write_text(f"#!/bin/sh\nif [ \"$1\" = run.py ]; then echo '::add-mask::secret'; exit 4; fi\n"
                        f"exec {sys.executable} \"$@\"\n")
        shim.chmod(0o755)
        (self.repo / "submissions.txt").write_bytes(b"submissions/old\0")
        p = self.run_script(github_step("Grade"),
                            {"PATH": f"{bin_dir}:{os.environ['PATH']}", "RUNNER_TEMP": str(self.tmp)})
        self.assertEqual(p.returncode, 4, p.stderr)
        lines = p.stdout.splitlines()
        self.assertEqual(len(lines), 3, p.stdout)
        m = re.fullmatch(r"::stop-commands::(bwlab-[0-9a-f]{32})", lines[0])
        self.assertTrue(m, lines[0])
        self.assertEqual(lines[1], "::add-mask::secret")
        self.assertEqual(lines[2], f"::{m.group(1)}::")


if __name__ == "__main__":
    unittest.main()
