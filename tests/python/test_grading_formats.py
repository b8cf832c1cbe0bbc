"""Instructor-side grading, the outputs: the gradebook CSV, Gradescope's
results and JUnit XML, from hand-made records. CPU only (grading_fixtures.py).
(Not in the student handout: handout_files.DENY leaves it out.)"""
import csv
import io
import json
import tempfile
import unittest
import xml.etree.ElementTree as ET
from pathlib import Path

from grading_fixtures import EXERCISES, bench_doc, read_csv, test_doc
from bwlab import gradebook, policy_file, scoring

# --------------------------------------------------------------------------
# Output formats, from hand-made records


def make_record(sid, scores, problems=(), seconds=1.0):
    """scores: exercise -> (test doc or state string, bench pct or None)."""
    pol = policy_file.default_policy()
    exs = []
    for ex in EXERCISES:
        test, pct = scores[ex]
        res = {"exercise": ex, "seconds": 0.5}
        if isinstance(test, str):
            res.update(state=test, build={"state": test, "log_tail": "a.cu(1): error: \x1b[1mboom\x07"})
        else:
            res.update(state="ok", test=test, bench=bench_doc(ex, pct) if pct is not None else None)
        res["score"] = scoring.score_exercise(pol.for_exercise(ex), res)
        exs.append(res)
    return {"kind": gradebook.RECORD_KIND, "format": 1, "id": sid, "exercises": exs,
            "total": scoring.pts(sum(e["score"]["total"] for e in exs)),
            "max_total": scoring.pts(sum(e["score"]["max"] for e in exs)),
            "notes": [], "problems": list(problems), "seconds": seconds}


class FormatTests(unittest.TestCase):
    def setUp(self):
        self.records = [
            make_record("zed", {"haxpy": (test_doc("haxpy"), 80.0), "vector_sum": ("build_failed", None)}),
            make_record("amy", {"haxpy": (test_doc("haxpy"), 95.0), "vector_sum": (test_doc("vector_sum"), 50.0)}),
            make_record("bob, \"the\" <x>", {"haxpy": (test_doc("haxpy", fail_groups=("large",)), None),
                                            "vector_sum": ("missing", None)}, problems=["archive odd"]),
        ]

    def test_csv_rows_are_sorted_and_carry_the_numbers(self):
        text = gradebook.gradebook_csv(self.records, EXERCISES)
        rows = list(csv.reader(io.StringIO(text)))
        per = ["correctness", "performance", "total", "pct_copy", "noise", "copy_gbs"]
        self.assertEqual(rows[0], ["id", *[f"haxpy_{c}" for c in per], *[f"vector_sum_{c}" for c in per],
                                   "total", "gpu", "sandbox", "containment", "flags", "notes"])
        self.assertEqual([r[0] for r in rows[1:]], ["amy", "bob, \"the\" <x>", "zed"])
        amy, bob, zed = csv.DictReader(io.StringIO(text))
        cols = ["haxpy_correctness", "haxpy_performance", "haxpy_total", "vector_sum_correctness",
                "vector_sum_performance", "vector_sum_total", "total"]
        self.assertEqual([amy[c] for c in cols], ["70", "30", "100", "70", "15", "85", "185"])
        self.assertEqual([bob[c] for c in cols], ["50", "0", "50", "0", "0", "0", "50"])
        self.assertEqual([zed[c] for c in cols], ["70", "25", "95", "0", "0", "0", "95"])
        self.assertEqual((amy["haxpy_pct_copy"], amy["vector_sum_pct_copy"], zed["vector_sum_pct_copy"]),
                         ("95", "50", ""))
        self.assertEqual((amy["haxpy_copy_gbs"], amy["gpu"]), ("3000", "Fake GPU"))
        self.assertIn("PROBLEM: archive odd", bob["notes"])
        self.assertIn("large", bob["notes"])
        self.assertIn("vector_sum: compile error", zed["notes"])
        self.assertNotIn("\x1b", "".join(zed.values()))

    def test_gradescope_results(self):
        doc = gradebook.gradescope_results(self.records[0])
        json.loads(json.dumps(doc))
        self.assertEqual(doc["score"], 95)
        names = [t["name"] for t in doc["tests"]]
        self.assertEqual(names, ["haxpy: correctness", "haxpy: performance",
                                 "vector_sum: correctness", "vector_sum: performance"])
        self.assertAlmostEqual(sum(t["score"] for t in doc["tests"]), doc["score"])
        for t in doc["tests"]:
            self.assertEqual(set(t), {"name", "score", "max_score", "output", "status"})
            self.assertIn(t["status"], ("passed", "failed"))
        self.assertEqual(doc["tests"][0]["status"], "passed")
        self.assertEqual(doc["tests"][1]["status"], "failed")
        self.assertIn("boom", doc["tests"][2]["output"])
        self.assertNotIn("\x1b", doc["tests"][2]["output"])

    def test_junit_is_well_formed_with_the_right_counts(self):
        root = ET.fromstring(gradebook.junit_xml(self.records))
        self.assertEqual(root.tag, "testsuites")
        suites = root.findall("testsuite")
        self.assertEqual([s.get("name") for s in suites], ["amy", "bob, \"the\" <x>", "zed"])
        amy, bob, zed = suites
        self.assertEqual(amy.get("tests"), "4")
        self.assertEqual(amy.get("failures"), "1")        # vector_sum performance 15/30
        props = {p.get("name"): p.get("value") for p in amy.find("properties")}
        self.assertEqual(props, {"score": "185", "max_score": "200"})
        cases = {c.get("name"): c for c in bob.findall("testcase")}
        self.assertEqual(set(cases), {"haxpy.correctness", "haxpy.performance",
                                      "vector_sum.correctness", "vector_sum.performance"})
        fail = cases["haxpy.correctness"].find("failure")
        self.assertIn("50/70 points", fail.get("message"))
        self.assertIn("large", fail.get("message"))
        self.assertIsNotNone(cases["haxpy.performance"].find("skipped"))
        self.assertEqual(bob.get("skipped"), "2")
        self.assertIn("archive odd", bob.find("system-err").text)
        zfail = {c.get("name"): c for c in zed.findall("testcase")}["vector_sum.correctness"].find("failure")
        self.assertIn("boom", zfail.text)
        total = sum(int(s.get("tests")) for s in suites)
        self.assertEqual(root.get("tests"), str(total))
        self.assertEqual(root.get("failures"), str(sum(int(s.get("failures")) for s in suites)))

    def test_files_written_by_write_outputs(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp)
            for r in self.records:
                gradebook.write_record(out, r)
            gradebook.write_outputs(out, self.records, EXERCISES)
            self.assertEqual(len(read_csv(out / "gradebook.csv")), 3)
            ET.parse(out / "junit.xml")
            gs = json.loads((out / "gradescope" / "zed" / "results.json").read_text())
            self.assertEqual(gs["score"], 95)
            again = gradebook.load_record(out / "amy.json")
            self.assertEqual(again["total"], 185)


if __name__ == "__main__":
    unittest.main()
