"""Which copy a policy's thresholds are percentages of (scoring.py): the
faster of cudaMemcpy and the kit's copy kernel by default, cudaMemcpy alone
for a policy file written before there were two."""
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "grader" / "py"))

from bwlab import policy_file, scoring  # noqa: E402

BENCH = {"copy": {"method": "kernel", "gbs": 3055.0, "ms_q1": 0.527, "ms_median": 0.527, "ms_q3": 0.527},
         "copies": [{"method": "memcpy", "gbs": 3030.0, "ms_q1": 0.531, "ms_median": 0.531, "ms_q3": 0.531},
                    {"method": "kernel", "gbs": 3055.0, "ms_q1": 0.527, "ms_median": 0.527, "ms_q3": 0.527}],
         "rows": [{"n": 268435455, "offset": 0, "bytes": 1610612730, "status": "ok",
                   "pct_copy": 60.0, "pct_memcpy": 80.0,
                   "ms_q1": 0.8, "ms_median": 0.8, "ms_q3": 0.8}]}
PASSED = {"passed": True}


def perf(policy_text: str) -> dict:
    pol = policy_file.parse_policy(policy_text).for_exercise("haxpy")
    return scoring.score_performance(pol, {"bench": BENCH}, PASSED)


class BaselineTests(unittest.TestCase):
    def test_the_default_is_the_fastest_copy(self):
        # Catches scoring that reads pct_memcpy, or a default of memcpy.
        out = perf("")
        self.assertEqual(out["baseline"], "fastest_copy")
        self.assertEqual(out["pct_copy"], 60.0)
        self.assertEqual(out["copy_gbs"], 3055.0)

    def test_thresholds_without_a_baseline_meant_memcpy(self):
        # A file from before the two copies: its thresholds were of cudaMemcpy.
        # Catches the legacy file being scored against the faster copy.
        out = perf("[all]\nthresholds = 90:1.0, 50:0.5\n")
        self.assertEqual(out["baseline"], "memcpy")
        self.assertEqual(out["pct_copy"], 80.0)
        self.assertEqual(out["copy_gbs"], 3030.0)

    def test_a_named_baseline_is_kept(self):
        out = perf("[all]\nbaseline = fastest_copy\nthresholds = 90:1.0, 50:0.5\n")
        self.assertEqual(out["baseline"], "fastest_copy")
        out = perf("[exercise haxpy]\nbaseline = memcpy\n")
        self.assertEqual(out["pct_copy"], 80.0)

    def test_an_unknown_baseline_is_refused(self):
        with self.assertRaises(policy_file.PolicyError):
            policy_file.parse_policy("[all]\nbaseline = fastest\n")

    def test_a_report_from_before_two_copies_scores_its_pct_copy(self):
        # No `copies`: pct_copy was of cudaMemcpy, whatever the policy says.
        old = {"copy": BENCH["copies"][0], "rows": [dict(BENCH["rows"][0], pct_memcpy=None)]}
        pol = policy_file.parse_policy("[all]\nthresholds = 90:1.0\n").for_exercise("haxpy")
        out = scoring.score_performance(pol, {"bench": old}, PASSED)
        self.assertEqual(out["pct_copy"], 60.0)


if __name__ == "__main__":
    unittest.main()
