"""The recorded grading run (tests/data/grades_h100) agrees with itself and
with the class report made from it: every count the report prints is the
records' count, and each record's counts agree with its own summary lines."""
import json
import re
import sys
import unittest
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "grader" / "py"))

from bwlab import class_report  # noqa: E402

DATA = ROOT / "tests" / "data" / "grades_h100"
FAILING = ("fail", "crash", "timeout", "cuda_error")


def records() -> list[dict]:
    out = []
    for f in sorted(DATA.glob("*.json")):
        doc = json.loads(f.read_text())
        if doc.get("kind") == "bwlab-grade":
            out.append(doc)
    return out


def parts():
    for rec in records():
        for e in rec["exercises"]:
            for part in ("test", "memcheck"):
                t = e.get(part)
                if isinstance(t, dict) and "cases" in t:
                    yield rec["id"], e["exercise"], part, t


class RecordsAgree(unittest.TestCase):
    def test_outcome_counts_add_up(self):
        # Catches a trim that dropped failing cases from the counts (the old
        # data said 32 crashed where its cases showed 20).
        for sid, ex, part, t in parts():
            with self.subTest(sid=sid, exercise=ex, part=part):
                counts = t.get("outcome_counts")
                self.assertIsNotNone(counts, "no outcome_counts: regenerate with tests/data/trim_grades.py")
                self.assertEqual(sum(counts.values()), t["total"])
                self.assertEqual(sum(counts.get(k, 0) for k in FAILING), t["failed"])
                kept = Counter(c["outcome"] for c in t["cases"])
                for k, n in kept.items():
                    self.assertLessEqual(n, counts.get(k, 0))

    def test_the_crash_diagnosis_counts_what_crashed(self):
        for sid, ex, part, t in parts():
            for d in t.get("diagnoses") or []:
                if d.get("code") != "crash":
                    continue
                with self.subTest(sid=sid, exercise=ex, part=part):
                    m = re.match(r"(\d+) cases? crashed", d["text"])
                    self.assertIsNotNone(m, d["text"])
                    c = t["outcome_counts"]
                    self.assertEqual(int(m.group(1)), c.get("crash", 0) + c.get("cuda_error", 0))


class ReportAgrees(unittest.TestCase):
    def test_the_reports_event_counts_are_the_records(self):
        # Catches the report counting the kept cases instead of all of them.
        recs = records()
        exercises = json.loads((DATA / "manifest.json").read_text())["exercises"]
        events = class_report.events(recs, exercises)
        want = {}
        for sid, ex, part, t in parts():
            if part != "test":
                continue
            for kind, label in (("crash", "cases that crashed"), ("timeout", "cases that timeout"),
                                ("cuda_error", "cases that cuda error")):
                n = t["outcome_counts"].get(kind, 0)
                if n:
                    want.setdefault(label, []).append(f"{sid} ({ex}): {n}")
        for label, tags in want.items():
            self.assertEqual(sorted(events.get(label, [])), sorted(tags), label)


if __name__ == "__main__":
    unittest.main()
