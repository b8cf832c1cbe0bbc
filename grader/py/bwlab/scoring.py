"""The instructor's scoring policy applied: points from what bwgrade reported.

bwgrade decides whether each case passed and measures the bandwidth; this
module only turns those facts into points, following the policy file
(policy_file.py reads it; grader/instructor/policy.ini by default), and says
why each score is what it is.

Correctness, mode all_or_nothing: correctness_points when bwgrade's status is
"pass" (every case passed), else 0. Mode per_group: `groups` are weights; a
group earns correctness_points * weight / (sum of the weights of the groups
that ran) when none of its cases failed. A case bwgrade skipped (one the
machine has not the memory for) neither passes nor fails its group; a case it
did not run because earlier ones kept crashing or hanging (GAVE_UP_DETAIL)
counts as failed; a group none of whose cases ran shares its weight out.
Memcheck: grade also runs the `memcheck` groups that passed the plain test
under compute-sanitizer memcheck; a case that fails there (a memory error)
fails its group as a failed plain case would. A CUDA API error the code got
back is only noted (bwgrade's sanitizer_note) and costs nothing.

Performance: only when correctness passed in full. The scored row's pct_copy
(the kernel's bandwidth as a percentage of the device-to-device copy measured
in the same run) gives a fraction of performance_points. Scale `linear`:
straight lines join (0 %, 0) and the thresholds, flat above the highest (a
threshold with fraction 0 makes a floor below which nothing is earned).
Scale `steps`: the fraction of the highest threshold reached, 0 below all.

Noise: the band that pct_copy spans when the kernel's and the copy's times
move within their quartiles. A score whose band holds a threshold is flagged
(near_threshold), with the points the band spans.
"""
from __future__ import annotations

# The policy file's names, importable from here as before the split.
from .policy_file import (  # noqa: F401
    BASELINES, BENCH_ROWS, DEFAULTS, GROUPS, HANDOUT_POLICY, INSTRUCTOR_POLICY, LEGACY_BASELINE,
    LIMIT_DEFAULTS, MODES, POLICY_FILES, SCALES, ExercisePolicy, Policy, PolicyError,
    default_policy, find_policy, load_policy, parse_policy, shown_source)

# Case outcomes that neither pass nor fail a group.
NEUTRAL_OUTCOMES = ("skipped",)
# ... except cases bwgrade did not run because earlier ones kept crashing or
# hanging (grader/modes/test_mode.c words their detail so): those count as failed,
# or a kernel that crashes on every large n would pass its later groups free.
GAVE_UP_DETAIL = "not run:"


# --------------------------------------------------------------------------
# Scoring


def pts(x: float) -> float:
    """Points are kept to two decimals, so every report shows the same numbers."""
    return round(float(x) + 0.0, 2) + 0.0


def fmt_points(x: float) -> str:
    """22.5 -> '22.5', 70.0 -> '70', 33.333 -> '33.33'."""
    text = f"{pts(x):.2f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def fmt_pct(x: float) -> str:
    return f"{x:g}%"


def _case_brief(case: dict) -> str:
    bits = [f"case {case.get('index', '?')}"]
    if case.get("n") is not None:
        bits.append(f"n={case.get('n')}")
    if case.get("offset"):
        bits.append(f"offset {case.get('offset')}")
    bits.append(str(case.get("outcome", "?")))
    return " ".join(str(b) for b in bits)


SANITIZER_MARK = "========="
SANITIZER_DULL = ("COMPUTE-SANITIZER", "ERROR SUMMARY", "LEAK SUMMARY", "Saved host backtrace",
                  "Host Frame", "Target application returned",
                  "Error: process didn't terminate successfully")   # the worker died: not a finding


def sanitizer_line(detail: str | None, limit: int = 300) -> str | None:
    """compute-sanitizer's first finding in a case's detail, on one line: its
    message and where ("Invalid __global__ read of size 2 bytes at
    kernel(...)+0x160 in file.cu:19"); None when the detail holds none."""
    found: list[str] = []
    for line in str(detail or "").splitlines():
        text = line.strip()
        if not text.startswith(SANITIZER_MARK):
            if found:
                break
            continue
        text = text[len(SANITIZER_MARK):].strip()
        if not text or any(text.startswith(d) for d in SANITIZER_DULL):
            if found:
                break
            continue
        if not found:
            found.append(text)
        elif text.startswith("at "):
            found.append(text)
            break
        else:
            break
    if not found:
        return None
    line = " ".join(found)
    return line if len(line) <= limit else line[:limit - 3] + "..."


def _empty_stats() -> dict:
    return {"passed": 0, "failed": 0, "skipped": 0, "first_failure": None,
            "memcheck_failed": 0, "memcheck_not_run": 0, "memcheck_first": None}


def group_stats(test: dict, memcheck: dict | None = None) -> dict[str, dict]:
    """Per case group: cases passed/failed/skipped and the first failing
    case; with memcheck (bwgrade's report of the memcheck run), also the
    cases that failed there and the first of them with the sanitizer's line."""
    stats: dict[str, dict] = {}
    for case in (memcheck or {}).get("cases") or []:
        if case.get("outcome") == "pass":
            continue
        gave_up = str(case.get("detail") or "").startswith(GAVE_UP_DETAIL)
        if case.get("outcome") in NEUTRAL_OUTCOMES and not gave_up:
            continue
        s = stats.setdefault(str(case.get("group", "?")), _empty_stats())
        if gave_up:
            # not run: after the group's first failure (run.py grade asks
            # for that), or after repeated crashes; either way not passed.
            s["memcheck_not_run"] += 1
            continue
        s["memcheck_failed"] += 1
        if s["memcheck_first"] is None or (not s["memcheck_first"]["line"]
                                           and sanitizer_line(case.get("detail"))):
            s["memcheck_first"] = {"case": _case_brief(case),
                                   "line": sanitizer_line(case.get("detail"))}
    for case in test.get("cases") or []:
        g = str(case.get("group", "?"))
        s = stats.setdefault(g, _empty_stats())
        outcome = case.get("outcome")
        gave_up = str(case.get("detail") or "").startswith(GAVE_UP_DETAIL)
        if outcome == "pass":
            s["passed"] += 1
        elif outcome in NEUTRAL_OUTCOMES and not gave_up:
            s["skipped"] += 1
        else:
            s["failed"] += 1
            if s["first_failure"] is None:
                s["first_failure"] = _case_brief(case)
    return stats


def _unrunnable_reason(result: dict) -> str | None:
    """Why no correctness points can be given at all, or None if bwgrade reported."""
    state = result.get("state")
    if state == "missing":
        return f"missing: {result.get('student_file', 'the file')} is not in the submission"
    if state == "build_failed":
        return "compile error (the build log is in the report)"
    if state == "build_timeout":
        return f"the build took longer than {fmt_points(result.get('build_timeout', 0))} s"
    if state == "not_built":
        return result.get("reason") or "not built"
    if state == "refused":
        return result.get("reason") or "refused: the compiled file broke the submission rules"
    if state == "test_timeout":
        return f"the test run took longer than {fmt_points(result.get('test_timeout', 0))} s"
    if state == "test_error":
        return result.get("reason") or "the grader could not run this exercise"
    if not isinstance(result.get("test"), dict):
        return result.get("reason") or "no test report"
    return None


def memcheck_summary(pol: ExercisePolicy, result: dict) -> dict | None:
    """What the memcheck run of grade found, for the report; None when the
    policy runs none. state: ok, timeout, error or not_run."""
    if not pol.memcheck:
        return None
    state = result.get("memcheck_state", "not_run")
    out = {"state": state, "groups": list(result.get("memcheck_groups", pol.memcheck)),
           "cases": 0, "failed": 0, "errors": 0,
           "first": None, "line": None, "seconds": result.get("memcheck_seconds")}
    if result.get("memcheck_skipped"):
        # groups not re-run because the plain test already failed them
        out["skipped"] = dict(result["memcheck_skipped"])
    doc = result.get("memcheck")
    if state == "ok" and isinstance(doc, dict):
        # CUDA API errors the code got back: bwgrade keeps them apart as a
        # case's sanitizer_note, and they cost nothing
        noted = [c for c in doc.get("cases") or [] if c.get("sanitizer_note")]
        if noted:
            out["api_errors"] = len(noted)
            out["note"] = f"{_case_brief(noted[0])}: {sanitizer_line(noted[0]['sanitizer_note'])}"
        stats = group_stats({}, doc)
        out["cases"] = len(doc.get("cases") or [])
        out["failed"] = sum(s["memcheck_failed"] for s in stats.values())
        # failed with a finding of the sanitizer's (not just a wrong answer, which the plain run has)
        out["errors"] = sum(1 for c in doc.get("cases") or []
                            if c.get("outcome") != "pass" and sanitizer_line(c.get("detail")))
        for s in stats.values():
            if s["memcheck_first"]:
                out["first"] = s["memcheck_first"]["case"]
                out["line"] = s["memcheck_first"]["line"]
                break
    elif state == "timeout":
        out["reason"] = (f"memcheck did not finish within "
                         f"{fmt_points(result.get('memcheck_timeout', 0))} s")
    elif result.get("memcheck_reason"):
        out["reason"] = result["memcheck_reason"]
    return out


def _memcheck_timeout_stats(stats: dict[str, dict], groups: list[str], why: str) -> None:
    """A memcheck run that never finished fails every group it was to check
    (as a plain test run past its limit earns nothing)."""
    for g in groups:
        s = stats.get(g)
        if s and s["passed"] + s["failed"] > 0:
            s["memcheck_failed"] = max(1, s["memcheck_failed"])
            s["memcheck_first"] = {"case": why, "line": None}


def score_correctness(pol: ExercisePolicy, result: dict) -> dict:
    out = {"score": 0.0, "max": pts(pol.correctness_points), "passed": False,
           "mode": pol.correctness_mode, "reason": "", "groups": {}}
    why = _unrunnable_reason(result)
    if why:
        out["reason"] = why
        return out
    test = result["test"]
    status = test.get("status")
    mc = memcheck_summary(pol, result)
    if mc is not None:
        out["memcheck"] = mc
    mc_doc = result.get("memcheck") if mc and mc["state"] == "ok" else None
    stats = group_stats(test, mc_doc if isinstance(mc_doc, dict) else None)
    if mc and mc["state"] == "timeout":
        _memcheck_timeout_stats(stats, mc["groups"], mc["reason"])
    total = test.get("total", sum(s["passed"] + s["failed"] + s["skipped"] for s in stats.values()))
    # group_stats also counts the cases not run after repeated crashes.
    failed_cases = max(test.get("failed", 0), sum(s["failed"] for s in stats.values()))
    memcheck_failed = sum(s["memcheck_failed"] + s["memcheck_not_run"] for s in stats.values())
    all_pass = status == "pass" and not failed_cases and not memcheck_failed
    out["passed"] = all_pass
    skipped = _skipped(test, stats)
    if skipped:
        out["skipped"] = skipped
    if status == "not_implemented":
        out["reason"] = "not implemented (the function still is the stub)"
        _fill_groups(out, pol, stats, award=False)
        return out
    if status == "error":
        diag = "; ".join(d.get("text", "") for d in test.get("diagnoses") or [] if d.get("text"))
        out["reason"] = "the grader reported an error" + (f": {diag}" if diag else "")
        _fill_groups(out, pol, stats, award=False)
        return out
    if pol.correctness_mode == "all_or_nothing":
        _fill_groups(out, pol, stats, award=False)
        if all_pass:
            out["score"] = pts(pol.correctness_points)
            out["reason"] = _all_passed(total, mc, skipped)
        elif failed_cases:
            failed_groups = [g for g, s in stats.items() if s["failed"]]
            out["reason"] = (f"{failed_cases} of {total} cases failed (groups: "
                             f"{', '.join(failed_groups) or '?'}; first: "
                             f"{_first_failure(stats) or '?'}); all must pass")
        else:
            out["reason"] = ("every case passed, but memcheck found memory errors: "
                             + "; ".join(_memcheck_failing(out["groups"])) + "; all must pass")
        return out
    # per_group
    _fill_groups(out, pol, stats, award=True)
    failing = [f"{g} ({s['failed']} of {s['cases']} failed, first: {s['first_failure']})"
               for g, s in out["groups"].items() if s["failed"]]
    failing += _memcheck_failing({g: s for g, s in out["groups"].items() if not s["failed"]})
    out["score"] = pts(sum(s["points"] for s in out["groups"].values()))
    if all_pass:
        out["score"] = pts(pol.correctness_points)   # no rounding loss on a full pass
        out["reason"] = _all_passed(total, mc, skipped)
    elif failing:
        out["reason"] = "failed groups: " + "; ".join(failing)
    else:
        # bwgrade said fail, but no scored group has a failing case (say, a
        # group the policy gives no points to).
        other = [g for g, s in stats.items() if s["failed"]]
        out["reason"] = ("cases failed outside the scored groups: " + ", ".join(other)
                         if other else f"bwgrade status '{status}'")
    return out


def _skipped(test: dict, stats: dict) -> dict | None:
    """The cases bwgrade skipped (the machine had not the memory for them),
    with the first one's reason: their groups' weight went to the others."""
    count = sum(s["skipped"] for s in stats.values())
    if not count:
        return None
    first = next((c for c in test.get("cases") or [] if c.get("outcome") in NEUTRAL_OUTCOMES
                  and not str(c.get("detail") or "").startswith(GAVE_UP_DETAIL)), {})
    return {"cases": count, "first": _case_brief(first) if first else None,
            "detail": first.get("detail") or ""}


def _all_passed(total: int, memcheck: dict | None = None, skipped: dict | None = None) -> str:
    if skipped:
        ran = total - skipped["cases"]
        text = (f"all {ran} cases that ran passed; {skipped['cases']} skipped"
                + (f" ({skipped['detail']})" if skipped["detail"] else ""))
    else:
        text = "the only case passed" if total == 1 else f"all {total} cases passed"
    if memcheck and memcheck["state"] == "ok":
        text += f", memcheck clean on {memcheck['cases']} of them"
        if memcheck.get("api_errors"):
            text += (f" (it noted {memcheck['api_errors']} CUDA API error(s) your code got "
                     f"back, which cost nothing; first: {memcheck['note']})")
    return text


def _memcheck_failing(groups: dict[str, dict]) -> list[str]:
    """'small (memcheck: 12 cases, first: case 0 n=1 cuda_error: Invalid ... at ...)'."""
    out = []
    for g, s in groups.items():
        failed, not_run = s.get("memcheck_failed", 0), s.get("memcheck_not_run", 0)
        if not failed and not not_run:
            continue
        first = s.get("memcheck_first") or {}
        what = first.get("case", "?")
        if first.get("line"):
            what += f": {first['line']}"
        count = f"{failed} failed" + (f", {not_run} not run" if not_run else "")
        out.append(f"{g} (memcheck: {count}" + (f"; first: {what}" if failed else "") + ")")
    return out


def _first_failure(stats: dict[str, dict]) -> str | None:
    for s in stats.values():
        if s["first_failure"]:
            return s["first_failure"]
    return None


def _fill_groups(out: dict, pol: ExercisePolicy, stats: dict[str, dict], award: bool) -> None:
    """Per-group table. In per_group mode the weights are shared out among the
    policy's groups that ran (at least one case not skipped), so a group the
    exercise does not have neither gives nor costs points."""
    weights = dict(pol.groups)
    ran = [g for g in weights if stats.get(g) and stats[g]["passed"] + stats[g]["failed"] > 0]
    wsum = sum(weights[g] for g in ran)
    names = [g for g, _ in pol.groups] + [g for g in stats if g not in weights]
    for g in names:
        s = stats.get(g, _empty_stats())
        cases = s["passed"] + s["failed"] + s["skipped"]
        ok = s["failed"] == 0 and s["memcheck_failed"] + s["memcheck_not_run"] == 0
        entry = {"cases": cases, "passed": s["passed"], "failed": s["failed"],
                 "skipped": s["skipped"], "first_failure": s["first_failure"], "ok": ok}
        if s["memcheck_failed"] or s["memcheck_not_run"]:
            entry["memcheck_failed"] = s["memcheck_failed"]
            entry["memcheck_not_run"] = s["memcheck_not_run"]
            entry["memcheck_first"] = s["memcheck_first"]
        if pol.correctness_mode == "per_group":
            maxp = pol.correctness_points * weights[g] / wsum if (g in ran and wsum > 0) else 0.0
            entry["max"] = pts(maxp)
            entry["points"] = pts(maxp if (ok and award) else 0.0)
            if g in weights and g not in ran:
                entry["note"] = "did not run: its weight goes to the other groups"
        out["groups"][g] = entry


def pick_bench_row(bench: dict, how: str) -> dict | None:
    rows = [r for r in (bench.get("rows") or []) if isinstance(r, dict)]
    if not rows:
        return None
    aligned = [r for r in rows if not r.get("offset")]
    pool = aligned or rows
    if how == "first":
        return pool[0]
    if how == "last":
        return pool[-1]
    key = lambda r: (r.get("bytes") or 0, r.get("n") or 0)  # noqa: E731
    return min(pool, key=key) if how == "smallest" else max(pool, key=key)


def performance_fraction(pol: ExercisePolicy, pct: float) -> tuple[float, float | None]:
    """(fraction of performance_points, the highest threshold reached or None)
    for pct_copy under the policy's scale."""
    reached = next(((t, f) for t, f in pol.thresholds if pct >= t), None)
    if pol.performance_scale == "steps" or not pol.thresholds:
        return (reached[1] if reached else 0.0), (reached[0] if reached else None)
    points = sorted(pol.thresholds)
    if points[0][0] > 0:
        points.insert(0, (0.0, 0.0))
    if pct >= points[-1][0]:
        return points[-1][1], points[-1][0]
    if pct <= points[0][0]:
        return points[0][1] if pct == points[0][0] else 0.0, (reached[0] if reached else None)
    for (p0, f0), (p1, f1) in zip(points, points[1:]):
        if p0 <= pct < p1:
            return f0 + (f1 - f0) * (pct - p0) / (p1 - p0), (reached[0] if reached else None)
    return 0.0, None   # not reached: the points cover every pct above the first


def baseline_of(bench: dict, baseline: str) -> tuple[dict | None, str]:
    """The copy a policy's percentages are of, and the row key that holds
    them. A report from before the kit timed two copies has only `copy`,
    cudaMemcpy, and its pct_copy is of that."""
    copy = bench.get("copy") if isinstance(bench.get("copy"), dict) else None
    copies = bench.get("copies")
    if baseline == "memcpy" and isinstance(copies, list):
        memcpy = next((c for c in copies if isinstance(c, dict) and c.get("method") == "memcpy"), None)
        return memcpy, "pct_memcpy"
    return copy, "pct_copy"


def noise_band(row: dict, copy: dict | None, pct: float | None = None) -> tuple[float, float] | None:
    """The pct band spanned when the kernel's and the copy's times move
    within their quartiles (q1..q3 of each one's samples); None when the
    report has no quartiles. The percentage goes as copy time / kernel time."""
    pct = row.get("pct_copy") if pct is None else pct
    k = [row.get(key) for key in ("ms_q1", "ms_median", "ms_q3")]
    c = [(copy or {}).get(key) for key in ("ms_q1", "ms_median", "ms_q3")]
    nums = [pct, *k, *c]
    if not all(isinstance(x, (int, float)) and x > 0 for x in nums):
        return None
    lo = pct * (c[0] / c[1]) * (k[1] / k[2])
    hi = pct * (c[2] / c[1]) * (k[1] / k[0])
    return min(lo, pct), max(hi, pct)


def score_performance(pol: ExercisePolicy, result: dict, correctness: dict) -> dict:
    out = {"score": 0.0, "max": pts(pol.performance_points), "scored": False,
           "pct_copy": None, "threshold": None, "fraction": 0.0, "reason": "",
           "scale": pol.performance_scale}
    if pol.performance_points <= 0:
        out["reason"] = "no performance points in the policy"
        return out
    if not correctness.get("passed"):
        out["reason"] = "not measured: performance counts only once correctness passes in full"
        return out
    if result.get("bench_state") == "bench_timeout":
        out["reason"] = f"the benchmark took longer than {fmt_points(result.get('bench_timeout', 0))} s"
        return out
    bench = result.get("bench")
    if not isinstance(bench, dict):
        out["reason"] = result.get("bench_reason") or "no benchmark report"
        return out
    copy, pct_key = baseline_of(bench, pol.baseline)
    out["baseline"] = pol.baseline
    if copy and isinstance(copy.get("gbs"), (int, float)):
        out["copy_gbs"] = copy["gbs"]
    row = pick_bench_row(bench, pol.bench_row)
    if row is None:
        out["reason"] = "the benchmark report has no rows"
        return out
    out["n"] = row.get("n")
    status = row.get("status", "ok")
    if status != "ok":
        detail = f" ({row['detail']})" if row.get("detail") else ""
        out["reason"] = f"benchmark row n={row.get('n')} is '{status}'{detail}"
        return out
    pct = row.get(pct_key)
    if not isinstance(pct, (int, float)):
        out["reason"] = f"benchmark row n={row.get('n')} has no {pct_key}"
        return out
    pct = float(pct)
    out["pct_copy"] = round(pct, 2)
    out["scored"] = True
    fraction, threshold = performance_fraction(pol, pct)
    out["fraction"] = round(fraction, 4)
    out["threshold"] = threshold
    out["score"] = pts(pol.performance_points * fraction)
    band = noise_band(row, copy, pct)
    if band is not None:
        lo, hi = band
        out["noise"] = round((hi - lo) / 2, 2)
        out["band"] = [round(lo, 2), round(hi, 2)]
        near = [t for t, _ in pol.thresholds if lo <= t <= hi]
        if near:
            stake = pol.performance_points * (performance_fraction(pol, hi)[0]
                                              - performance_fraction(pol, lo)[0])
            out["near_threshold"] = near[0]
            out["points_at_stake"] = pts(stake)
    of_what = "copy" if pol.baseline == "fastest_copy" else "cudaMemcpy"
    where = f"{pct:.1f}% of {of_what} bandwidth at n={row.get('n')}"
    of = f"{fmt_points(out['score'])} of {fmt_points(pol.performance_points)} points"
    if pol.performance_scale == "steps":
        if threshold is not None:
            out["reason"] = f"{where}: reached >= {fmt_pct(threshold)}, {fraction:g} of " \
                            f"{fmt_points(pol.performance_points)} points"
        elif pol.thresholds:
            out["reason"] = f"{where}: below the lowest threshold ({fmt_pct(pol.thresholds[-1][0])})"
        else:
            out["reason"] = f"{where}: the policy has no thresholds"
    elif not pol.thresholds:
        out["reason"] = f"{where}: the policy has no thresholds"
    elif threshold is not None and threshold == pol.thresholds[0][0]:
        out["reason"] = f"{where}: at or above the top threshold ({fmt_pct(threshold)}), {of}"
    else:
        above = min((t for t, _ in pol.thresholds if t > pct), default=None)
        between = (f"between {fmt_pct(threshold)} and {fmt_pct(above)}" if threshold is not None
                   else f"below {fmt_pct(above)}")
        out["reason"] = f"{where}: {between}, on the linear scale {of}"
    if out.get("near_threshold") is not None:
        out["reason"] += (f"; within the noise of the {fmt_pct(out['near_threshold'])} threshold "
                          f"({out['band'][0]:g}-{out['band'][1]:g}%, "
                          f"{fmt_points(out['points_at_stake'])} points at stake)")
    return out


def score_exercise(pol: ExercisePolicy, result: dict) -> dict:
    """Points for one exercise from its grading result (see cmd_grade for the
    keys: state, test, bench, ...). Returns correctness, performance, total, max."""
    corr = score_correctness(pol, result)
    perf = score_performance(pol, result, corr)
    return {"correctness": corr, "performance": perf,
            "total": pts(corr["score"] + perf["score"]), "max": pts(pol.max_points)}
