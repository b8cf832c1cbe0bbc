"""Instructor-side grading, the scoring: the policy's points for the tests,
the benchmark and the memcheck run of one exercise, and the policies refused.
CPU only, on synthetic bwgrade documents (grading_fixtures.py). (Not in the
student handout: handout_files.DENY leaves it out.)"""
import unittest

from grading_fixtures import (API_ERROR_NOTE, EXERCISES, GROUP_SIZES, MEMCHECK_DETAIL, ROOT,
                              bench_doc, policy, test_doc)
from bwlab import policy_file, scoring

# --------------------------------------------------------------------------
# Scoring


class ScoringTests(unittest.TestCase):
    def setUp(self):
        self.pol = policy().for_exercise("haxpy")

    def score(self, test=None, bench=None, pol=None, **extra):
        res = {"state": "ok", "test": test, "bench": bench, **extra}
        return scoring.score_exercise(pol or self.pol, res)

    def test_defaults_match_the_shipped_policy_file(self):
        shipped = policy_file.load_policy(ROOT / "grader" / "instructor" / "policy.ini")
        self.assertEqual(shipped.base, policy_file.default_policy().base)
        self.assertEqual(shipped.limits, policy_file.default_policy().limits)

    def test_full_pass_and_fast_gets_everything(self):
        s = self.score(test_doc("haxpy"), bench_doc("haxpy", 97.0))
        self.assertEqual(s["correctness"]["score"], 70)
        self.assertEqual(s["performance"]["score"], 30)
        self.assertEqual(s["total"], 100)
        self.assertIn("all 11 cases passed", s["correctness"]["reason"])
        self.assertIn("at or above the top threshold (90%)", s["performance"]["reason"])

    def test_steps_are_inclusive_and_pick_the_highest_reached(self):
        steps = policy("[all]\nperformance_scale = steps\n").for_exercise("haxpy")
        for pct, expected in ((90.0, 30), (89.99, 22.5), (75.0, 22.5), (50.0, 15), (49.9, 7.5),
                              (25.0, 7.5), (24.99, 0), (140.0, 30)):
            with self.subTest(pct=pct):
                s = self.score(test_doc("haxpy"), bench_doc("haxpy", pct), pol=steps)
                self.assertEqual(s["performance"]["score"], expected)
                self.assertEqual(s["performance"]["pct_copy"], round(pct, 2))
        s = self.score(test_doc("haxpy"), bench_doc("haxpy", 10.0), pol=steps)
        self.assertIn("below the lowest threshold", s["performance"]["reason"])

    def test_linear_scale_joins_the_origin_and_the_thresholds(self):
        # The default: (0,0), (25,.25), (50,.5), (75,.75), (90,1), flat above.
        # Catches steps (a jump at each threshold) and a missing origin.
        for pct, expected in ((0.0, 0), (10.0, 3), (24.99, 7.5), (25.0, 7.5), (49.9, 14.97),
                              (50.0, 15), (60.0, 18), (80.0, 25), (89.99, 29.99), (90.0, 30),
                              (140.0, 30)):
            with self.subTest(pct=pct):
                s = self.score(test_doc("haxpy"), bench_doc("haxpy", pct))
                self.assertEqual(s["performance"]["score"], expected)
        s = self.score(test_doc("haxpy"), bench_doc("haxpy", 60.0))
        self.assertIn("between 50% and 75%, on the linear scale 18 of 30 points",
                      s["performance"]["reason"])
        # A threshold with fraction 0 is a floor: nothing below it.
        floor = policy("[all]\nthresholds = 90:1, 40:0\n").for_exercise("haxpy")
        for pct, expected in ((39.9, 0), (40.0, 0), (65.0, 15), (90.0, 30)):
            with self.subTest(floor=pct):
                s = self.score(test_doc("haxpy"), bench_doc("haxpy", pct), pol=floor)
                self.assertEqual(s["performance"]["score"], expected)

    def test_a_tenth_of_a_percent_moves_a_linear_score_by_hundredths(self):
        # The measured case: the naive control at 50.23% and 50.35% of copy.
        # Under steps 49.9 vs 50.1 differ by 7.5 points; linear, by 0.06.
        steps = policy("[all]\nperformance_scale = steps\n").for_exercise("haxpy")
        a, b = (self.score(test_doc("haxpy"), bench_doc("haxpy", p))["performance"]["score"]
                for p in (49.9, 50.1))
        self.assertLessEqual(abs(a - b), 0.07)
        a, b = (self.score(test_doc("haxpy"), bench_doc("haxpy", p), pol=steps)["performance"]["score"]
                for p in (49.9, 50.1))
        self.assertEqual(b - a, 7.5)

    def test_the_scored_row_is_the_largest_aligned_one(self):
        # bench_doc's largest offset-0 row is the last one (pct given); the
        # others carry 10 and 5.
        s = self.score(test_doc("haxpy"), bench_doc("haxpy", 80.0))
        self.assertEqual(s["performance"]["pct_copy"], 80.0)
        self.assertEqual(s["performance"]["n"], (1 << 28) - 1)
        small = policy("[all]\nbench_row = smallest\n").for_exercise("haxpy")
        s = self.score(test_doc("haxpy"), bench_doc("haxpy", 80.0), pol=small)
        self.assertEqual(s["performance"]["pct_copy"], 10.0)

    def test_a_bad_benchmark_row_gives_no_performance_points(self):
        s = self.score(test_doc("haxpy"), bench_doc("haxpy", 99.0, status="crash"))
        self.assertEqual(s["performance"]["score"], 0)
        self.assertIn("crash", s["performance"]["reason"])

    def test_per_group_partial_credit_and_no_performance(self):
        s = self.score(test_doc("haxpy", fail_groups=("medium",)), bench_doc("haxpy", 99.0))
        corr = s["correctness"]
        # weights 10/15/20/15/10 of 70 points; medium (15) fails
        self.assertEqual(corr["score"], 55)
        self.assertFalse(corr["passed"])
        self.assertEqual(corr["groups"]["medium"]["points"], 0)
        self.assertEqual(corr["groups"]["large"]["points"], 20)
        self.assertIn("medium (3 of 3 failed", corr["reason"])
        self.assertEqual(s["performance"]["score"], 0)
        self.assertIn("only once correctness passes", s["performance"]["reason"])

    def test_a_group_that_did_not_run_shares_its_weight(self):
        doc = test_doc("haxpy", skipped_groups=("huge",))
        s = self.score(doc)
        self.assertTrue(s["correctness"]["passed"])
        self.assertEqual(s["correctness"]["score"], 70)
        g = s["correctness"]["groups"]
        self.assertEqual(g["huge"]["max"], 0)
        self.assertAlmostEqual(g["small"]["max"], round(70 * 10 / 60, 2))
        doc = test_doc("haxpy", fail_groups=("small",), skipped_groups=("huge",))
        self.assertAlmostEqual(self.score(doc)["correctness"]["score"], round(70 - 70 * 10 / 60, 2),
                               places=1)

    def test_skipped_cases_are_said_in_the_reason_and_flagged(self):
        # A grade on a GPU without the memory for the huge case must not read
        # "all cases passed", and the instructor sees it in the flags.
        doc = test_doc("haxpy", skipped_groups=("huge",))
        for c in doc["cases"]:
            if c["outcome"] == "skipped":
                c["detail"] = "needs 8.6 GiB device memory; 6.0 GiB available"
        corr = self.score(doc)["correctness"]
        skipped = sum(c["outcome"] == "skipped" for c in doc["cases"])
        self.assertEqual(corr["skipped"]["cases"], skipped)
        self.assertIn(f"all {doc['total'] - skipped} cases that ran passed; {skipped} skipped "
                      "(needs 8.6 GiB", corr["reason"])
        from bwlab import gradebook
        flags = gradebook.exercise_flags({"exercise": "haxpy", "score": {"correctness": corr}})
        self.assertEqual(flags, [f"haxpy: {skipped} case(s) skipped, not scored "
                                 "(needs 8.6 GiB device memory; 6.0 GiB available)"])
        full = self.score(test_doc("haxpy"))["correctness"]
        self.assertNotIn("skipped", full)
        self.assertEqual(gradebook.exercise_flags({"exercise": "haxpy", "score": {"correctness": full}}), [])

    def test_cases_not_run_after_crashes_count_as_failed(self):
        # bwgrade stops after repeated crashes and marks the rest "not run";
        # those groups must not pass (nor hand their weight to the others).
        doc = test_doc("haxpy", skipped_groups=("special", "huge"))
        for c in doc["cases"]:
            if c["outcome"] == "skipped":
                c["detail"] = "not run: 32 cases already crashed or hung; fix those first"
        s = self.score(doc)
        g = s["correctness"]["groups"]
        self.assertFalse(s["correctness"]["passed"])
        self.assertEqual(g["huge"]["max"], 10 * 70 / 70)
        self.assertEqual(g["special"]["points"], 0)
        self.assertEqual(g["huge"]["points"], 0)
        self.assertAlmostEqual(s["correctness"]["score"], 70 * 45 / 70, places=1)

    def test_all_or_nothing(self):
        pol = policy("[exercise haxpy]\ncorrectness_mode = all_or_nothing\n").for_exercise("haxpy")
        s = self.score(test_doc("haxpy", fail_groups=("special",)), pol=pol)
        self.assertEqual(s["correctness"]["score"], 0)
        self.assertIn("2 of 11 cases failed", s["correctness"]["reason"])
        self.assertIn("special", s["correctness"]["reason"])
        s = self.score(test_doc("haxpy"), bench_doc("haxpy", 60), pol=pol)
        self.assertEqual((s["correctness"]["score"], s["performance"]["score"]), (70, 18))

    def test_not_implemented_and_build_states(self):
        doc = test_doc("haxpy", fail_groups=tuple(GROUP_SIZES), status="not_implemented")
        s = self.score(doc)
        self.assertEqual(s["total"], 0)
        self.assertIn("not implemented", s["correctness"]["reason"])
        for state, word in (("missing", "missing"), ("build_failed", "compile error"),
                            ("build_timeout", "longer than 600"), ("test_timeout", "longer than 5")):
            s = scoring.score_exercise(self.pol, {"state": state, "build_timeout": 600, "test_timeout": 5,
                                                  "student_file": "exercises/haxpy/haxpy.cu"})
            self.assertEqual(s["total"], 0)
            self.assertIn(word, s["correctness"]["reason"])

    def test_overrides_apply_to_one_exercise(self):
        p = policy("[all]\nperformance_points = 10\n[exercise vector_sum]\nperformance_points = 50\n"
                   "correctness_points = 50\n")
        self.assertEqual(p.for_exercise("haxpy").max_points, 80)
        self.assertEqual(p.for_exercise("vector_sum").max_points, 100)
        p.check_exercises(EXERCISES)
        with self.assertRaises(policy_file.PolicyError):
            policy("[exercise nosuch]\nperformance_points = 1\n").check_exercises(EXERCISES)

    def test_noise_band_and_the_flag_near_a_threshold(self):
        # Quartiles 1% either side for kernel and copy: pct_copy spans about
        # +-2%. 50.5% holds the 50% threshold in its band: flagged, with the
        # points the band spans; 60% is clear of every threshold.
        s = self.score(test_doc("haxpy"), bench_doc("haxpy", 50.5, spread=0.01))["performance"]
        lo, hi = 50.5 * 0.99 / 1.01, 50.5 * 1.01 / 0.99
        self.assertEqual(s["band"], [round(lo, 2), round(hi, 2)])
        self.assertEqual(s["noise"], round((hi - lo) / 2, 2))
        self.assertEqual(s["near_threshold"], 50)
        self.assertAlmostEqual(s["points_at_stake"], 30 * (hi - lo) / 100, places=1)
        self.assertIn("within the noise of the 50% threshold", s["reason"])
        s = self.score(test_doc("haxpy"), bench_doc("haxpy", 60.0, spread=0.01))["performance"]
        self.assertNotIn("near_threshold", s)
        self.assertAlmostEqual(s["noise"], 1.2, places=1)
        # Under steps the same band puts a whole step at stake.
        steps = policy("[all]\nperformance_scale = steps\n").for_exercise("haxpy")
        s = self.score(test_doc("haxpy"), bench_doc("haxpy", 50.5, spread=0.01), pol=steps)["performance"]
        self.assertEqual((s["near_threshold"], s["points_at_stake"]), (50, 7.5))
        # No quartiles in the report: no band, no flag, the score stands.
        s = self.score(test_doc("haxpy"), bench_doc("haxpy", 50.5))["performance"]
        self.assertNotIn("noise", s)
        self.assertNotIn("near_threshold", s)
        self.assertEqual(s["score"], 15.15)

    def test_malformed_policies_are_refused_with_the_place(self):
        bad = {
            "[all]\ncorrectness_mode = most\n": "correctness_mode",
            "[all]\nbogus = 1\n": "unknown key 'bogus'",
            "[everything]\n": "unknown section",
            "[all]\nthresholds = 90:1.5\n": "above 1",
            "[all]\ngroups = tiny:3\n": "unknown group",
            "[all]\nperformance_points = lots\n": "not a number",
            "[limits]\ntest_timeout = 0\n": "above 0",
            "[all]\nperformance_scale = smooth\n": "performance_scale",
            "[all]\nthresholds = 90:0.5, 50:0.75\n": "may not fall",
            "[all]\nthresholds = 50:0.5, 50:0.75\n": "twice",
            "[all]\nmemcheck = small, tiny\n": "unknown group 'tiny'",
            "[all]\nmemcheck = small, small\n": "twice",
            "[all\n": "<test>",
        }
        for text, needle in bad.items():
            with self.subTest(text=text):
                with self.assertRaises(policy_file.PolicyError) as cm:
                    policy(text)
                self.assertIn(needle, str(cm.exception))


def memcheck_doc(exercise, bad=(), groups=("small", "medium", "special")):
    """bwgrade's report of a memcheck run over groups; the cases of bad fail
    with a sanitizer finding in their detail."""
    doc = test_doc(exercise)
    doc["cases"] = [c for c in doc["cases"] if c["group"] in groups]
    for c in doc["cases"]:
        if c["group"] in bad:
            c.update(outcome="cuda_error", detail=MEMCHECK_DETAIL)
    doc["status"] = "fail" if bad else "pass"
    return doc


class MemcheckScoringTests(unittest.TestCase):
    """grade's memcheck run: a memory error fails its group."""

    def setUp(self):
        self.pol = policy().for_exercise("haxpy")

    def score(self, memcheck=None, state="ok", pol=None, test=None, **extra):
        res = {"state": "ok", "test": test or test_doc("haxpy"), "bench": bench_doc("haxpy", 99.0),
               "memcheck_state": state, "memcheck": memcheck, **extra}
        return scoring.score_exercise(pol or self.pol, res)

    def test_the_default_policy_checks_small_medium_and_special(self):
        self.assertEqual(self.pol.memcheck, ("small", "medium", "special"))
        self.assertEqual(policy("[all]\nmemcheck = none\n").for_exercise("haxpy").memcheck, ())

    def test_a_memory_error_fails_its_group_with_the_sanitizer_line(self):
        # What the corpus entry reads_past_end does: every plain case passes,
        # memcheck reports an out-of-bounds read in the small cases.
        s = self.score(memcheck_doc("haxpy", bad=("small",)))
        corr = s["correctness"]
        self.assertFalse(corr["passed"])
        self.assertEqual(corr["score"], 60)                 # small's 10 of 70 lost
        self.assertEqual(corr["groups"]["small"]["points"], 0)
        self.assertEqual(corr["groups"]["medium"]["points"], 15)
        self.assertIn("small (memcheck: 3 failed; first: case 0 n=1000 cuda_error: "
                      "Invalid __global__ read of size 2 bytes at haxpy_kernel(", corr["reason"])
        self.assertIn("in haxpy.cu:19", corr["reason"])
        self.assertEqual(corr["memcheck"]["failed"], 3)
        self.assertEqual(s["performance"]["score"], 0)      # correctness did not pass in full
        # all_or_nothing: nothing
        aon = policy("[all]\ncorrectness_mode = all_or_nothing\n").for_exercise("haxpy")
        s = self.score(memcheck_doc("haxpy", bad=("small",)), pol=aon)
        self.assertEqual(s["correctness"]["score"], 0)
        self.assertIn("memcheck found memory errors", s["correctness"]["reason"])

    def test_cases_not_run_after_the_groups_first_failure_fail_it_too(self):
        # What bwgrade --group-fail-fast reports: the first small case fails,
        # the others are "not run". Counting those as passed would let a
        # group through on one run case.
        doc = memcheck_doc("haxpy", bad=("small",))
        small = [c for c in doc["cases"] if c["group"] == "small"]
        for c in small[1:]:
            c.update(outcome="skipped", detail="not run: an earlier small case failed, which already "
                                              "fails the group (--group-fail-fast)")
        corr = self.score(doc)["correctness"]
        self.assertEqual(corr["groups"]["small"]["points"], 0)
        self.assertEqual(corr["score"], 60)
        self.assertIn("small (memcheck: 1 failed, 2 not run; first: case 0 n=1000", corr["reason"])
        self.assertEqual(corr["memcheck"]["failed"], 1)
        # a group none of whose memcheck cases failed, only "not run" (after
        # crashes elsewhere), fails as well, without a first failure to show
        for c in small:
            c.update(outcome="skipped", detail="not run: the 8 cases before it all crashed or hung")
        corr = self.score(doc)["correctness"]
        self.assertEqual(corr["groups"]["small"]["points"], 0)
        self.assertIn("small (memcheck: 0 failed, 3 not run)", corr["reason"])

    def test_a_clean_memcheck_run_costs_nothing_and_is_said(self):
        s = self.score(memcheck_doc("haxpy"))
        self.assertEqual(s["total"], 100)
        self.assertIn("memcheck clean on 8 of them", s["correctness"]["reason"])

    def test_a_memcheck_run_past_its_limit_fails_the_groups_it_was_to_check(self):
        s = self.score(None, state="timeout", memcheck_timeout=300)
        corr = s["correctness"]
        self.assertEqual(corr["score"], 70 - 10 - 15 - 15)
        self.assertIn("memcheck did not finish within 300 s", corr["reason"])
        self.assertEqual(corr["groups"]["large"]["points"], 20)

    def test_a_cuda_api_error_the_code_got_back_costs_nothing_and_is_noted(self):
        # api_error_ignored: every memcheck case passes, each with a note.
        doc = memcheck_doc("haxpy")
        for c in doc["cases"]:
            c["sanitizer_note"] = API_ERROR_NOTE
        s = self.score(doc)
        self.assertEqual(s["total"], 100)
        corr = s["correctness"]
        self.assertEqual(corr["memcheck"]["api_errors"], 8)
        self.assertIn("it noted 8 CUDA API error(s) your code got back, which cost nothing; "
                      "first: case 0 n=1000 pass: Program hit cudaErrorInvalidValue (error 1) due "
                      "to \"invalid argument\" on CUDA API call to cudaDeviceSetLimit.",
                      corr["reason"])
        self.assertEqual(corr["memcheck"]["errors"], 0)

    def test_a_timeout_fails_only_the_groups_memcheck_ran(self):
        # groups skipped because the plain test failed them are not charged twice
        s = self.score(None, state="timeout", memcheck_timeout=300, memcheck_groups=["medium"],
                       memcheck_skipped={"small": "failed the plain test (3 of 3 cases)"},
                       test=test_doc("haxpy", fail_groups=("small",)))
        corr = s["correctness"]
        self.assertEqual(corr["score"], 70 - 10 - 15)
        self.assertEqual(corr["groups"]["special"]["points"], 15)
        self.assertEqual(corr["memcheck"]["skipped"], {"small": "failed the plain test (3 of 3 cases)"})

    def test_the_graders_own_trouble_costs_the_student_nothing(self):
        s = self.score(None, state="error", memcheck_reason="memcheck could not run (bwgrade exit 3)")
        self.assertEqual(s["total"], 100)
        self.assertEqual(s["correctness"]["memcheck"]["state"], "error")

    def test_sanitizer_line(self):
        self.assertEqual(scoring.sanitizer_line(MEMCHECK_DETAIL),
                         "Invalid __global__ read of size 2 bytes at haxpy_kernel(long long, float, "
                         "const __nv_bfloat16 *, __nv_bfloat16 *)+0x160 in haxpy.cu:19")
        self.assertIsNone(scoring.sanitizer_line("wrong at index 3: expected 0x3f80, got 0x0000"))
        self.assertIsNone(scoring.sanitizer_line(None))
        only = "========= Program hit cudaErrorLaunchFailure on CUDA API call to cudaDeviceSynchronize.\n"
        self.assertEqual(scoring.sanitizer_line(only),
                         "Program hit cudaErrorLaunchFailure on CUDA API call to cudaDeviceSynchronize.")
        self.assertLessEqual(len(scoring.sanitizer_line("========= " + "x" * 1000)), 300)



if __name__ == "__main__":
    unittest.main()
