"""Compare the corpus's results with each entry's expect.json.

    python3 tests/gpu/check_corpus.py [--tests-only] [--unvetted] RESULTS_DIR [ENTRY...]
    python3 tests/gpu/check_corpus.py --sanitize RESULTS_DIR [ENTRY...]

RESULTS_DIR holds <entry>.json (`run.py test --json`) for each
tests/corpus/<entry>/ (or for the entries named), and <entry>.bench.json
(`run.py benchmark --quick --json`) for entries whose expect.json has a
"bench" part (unless --tests-only, which checks the test verdicts alone).
expect.json keys:

  status, diagnoses, outcomes     the test verdict (diagnoses and outcomes: all
                                  of these must appear)
  detail_contains                 a text some failing case's detail must hold
  groups_passed                   the case groups in which no case failed, as
                                  the scorer counts them (scoring.group_stats);
                                  [] = no correctness point in any policy, and
                                  only such entries go into the student handout
                                  (handout_files.corpus_zero_reason). A run that
                                  stopped early may show fewer, never others
  refused_rule, refused_symbol    status "refused": the vet rule, and a part of
                                  the symbol it named
  bench: {status, rule,           the largest benchmark row: its status and
          max_pct_peak,           rule, a ceiling on its % of the datasheet,
          min_pct_peak}           and a floor (a correct kernel timed as it runs)
  crosscheck                      also checked against ncu (acceptance.sh crosscheck)
  hostile                         part of the hostile corpus (acceptance.sh
                                  grade_mix grades these together)
  alone                           run by itself: it disturbs others on the GPU
  about                           what the entry does, for the table
  fail_fast                       keys that replace the ones above when the run
                                  stopped early (run.py test's default): e.g. a
                                  kernel that hangs at once never shows "pass"
  sanitize, sanitizer,            with --sanitize: RESULTS_DIR holds <entry>.json
  sanitize_status,                of `run.py test --sanitizer TOOL --json` for the
  sanitize_note_contains          entries with "sanitize": true; its status, and a
                                  text some case's sanitizer_note must hold (what
                                  the sanitizer noted without cost: an API error)
  grade                           what run.py grade must make of it
                                  (tests/python/test_e2e_grade_gpu.py)
  when_unvetted                   with --unvetted (results of runs made with
                                  BWLAB_UNSAFE_SKIP_VET=1): the test verdict
                                  expected when vetting is bypassed and only the
                                  containment stands, replacing the keys above
                                  (the refused_* keys are dropped); its
                                  "must_show" says what to check outside the
                                  result (processes, files), and is printed.
                                  Only entries with this key are checked then.

Prints one line per entry (OK or BAD, with what was expected and what came),
then a table of every entry's verdict, and a closing count; exits 1 if any
entry is BAD or missing."""
import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "grader" / "py"))

from bwlab.scoring import group_stats  # noqa: E402


def _details(r: dict) -> str:
    parts = [r.get("detail") or ""]
    parts += [c.get("detail") or "" for c in r.get("cases", [])]
    return "\n".join(parts)


def unvetted(exp: dict) -> dict:
    """The expectations for a run with vetting bypassed (when_unvetted's)."""
    base = {k: v for k, v in exp.items()
            if k not in ("refused_rule", "refused_symbol", "fail_fast", "bench")}
    return {**base, **exp["when_unvetted"]}


def expected_for(exp: dict, r: dict) -> dict:
    """The expectations for this run: fail_fast's replace the others when
    the run stopped early (cases not run)."""
    if r.get("not_run") and isinstance(exp.get("fail_fast"), dict):
        return {**exp, **exp["fail_fast"]}
    return exp


def groups_passed(r: dict) -> list[str]:
    """The case groups that would earn their points: at least one case
    passed and none failed (a case not run after an early stop counts as
    failed, as in grading)."""
    return sorted(g for g, s in group_stats(r).items() if s["passed"] and not s["failed"])


def check_test(exp: dict, r: dict) -> list[str]:
    """What differs between the test verdict expected and got (empty: none)."""
    exp = expected_for(exp, r)
    bad = []
    if r.get("status") != exp["status"]:
        bad.append(f"status {r.get('status')} (want {exp['status']})")
    codes = [d["code"] for d in r.get("diagnoses", [])]
    missing = [c for c in exp.get("diagnoses", []) if c not in codes]
    if missing:
        bad.append(f"diagnoses {codes} lack {missing}")
    outcomes = sorted({c["outcome"] for c in r.get("cases", [])})
    missing = [o for o in exp.get("outcomes", []) if o not in outcomes]
    if missing:
        bad.append(f"outcomes {outcomes} lack {missing}")
    if "detail_contains" in exp and exp["detail_contains"] not in _details(r):
        bad.append(f"no detail mentions '{exp['detail_contains']}'")
    if "groups_passed" in exp:
        got, want = groups_passed(r), sorted(exp["groups_passed"])
        # Stopped early, the groups after the stop count as failed: fewer is
        # fine, but a group that passed must be one expected to.
        wrong = [g for g in got if g not in want] if r.get("not_run") else (got if got != want else [])
        if wrong:
            bad.append(f"groups passed {got} (want {want})")
    if "refused_rule" in exp and r.get("rule") != exp["refused_rule"]:
        bad.append(f"rule {r.get('rule')} (want {exp['refused_rule']})")
    if "refused_symbol" in exp and exp["refused_symbol"] not in (r.get("symbol") or ""):
        bad.append(f"symbol {r.get('symbol')} (want one with '{exp['refused_symbol']}')")
    return bad


def check_sanitize(exp: dict, r: dict) -> list[str]:
    """What differs between the sanitizer run expected and got."""
    bad = []
    if r.get("status") != exp["sanitize_status"]:
        bad.append(f"status under {exp.get('sanitizer', 'the sanitizer')} {r.get('status')} "
                   f"(want {exp['sanitize_status']})")
    want = exp.get("sanitize_note_contains")
    notes = "\n".join(c.get("sanitizer_note") or "" for c in r.get("cases", []))
    if want and want not in notes:
        bad.append(f"no case's sanitizer_note mentions '{want}'")
    return bad


def largest_row(doc: dict, exercise: str) -> dict | None:
    try:
        labels = doc["exercises"][exercise]
    except (KeyError, TypeError):
        return None
    rows = [row for d in labels.values() for row in d.get("rows", [])]
    return max(rows, key=lambda row: row["n"]) if rows else None


def check_bench(exp: dict, row: dict | None) -> list[str]:
    if row is None:
        return ["no benchmark row"]
    bad = []
    if row.get("status") != exp["status"]:
        bad.append(f"bench status {row.get('status')} (want {exp['status']})")
    if "rule" in exp and row.get("rule") != exp["rule"]:
        bad.append(f"bench rule {row.get('rule')!r}")
    pct = row.get("pct_peak")
    if "max_pct_peak" in exp and (pct is None or pct > exp["max_pct_peak"]):
        bad.append(f"bench {pct}% of peak (want at most {exp['max_pct_peak']}%)")
    if "min_pct_peak" in exp and (pct is None or pct < exp["min_pct_peak"]):
        bad.append(f"bench {pct}% of peak (want at least {exp['min_pct_peak']}%)")
    return bad


def verdict(entry: pathlib.Path, results: pathlib.Path, bench: bool = True,
            unvetted_run: bool = False, sanitize: bool = False) -> tuple[bool, str, str]:
    """(ok, the line to print, the verdict in a few words for the table)."""
    exp = json.loads((entry / "expect.json").read_text())
    if unvetted_run:
        exp = unvetted(exp)
    ex = exp["exercise"]
    got_file = results / f"{entry.name}.json"
    if not got_file.exists():
        return False, "no result", "-"
    r = json.loads(got_file.read_text())["exercises"][ex]
    if sanitize:
        bad = check_sanitize(exp, r)
        got = f"{r.get('status', '?')} {r.get('passed')}/{r.get('total')} under {exp.get('sanitizer')}"
        noted = sum(1 for c in r.get("cases", []) if c.get("sanitizer_note"))
        got += f", {noted} noted" if noted else ""
        return not bad, f"{ex:10} {got}" + (f"  <- {'; '.join(bad)}" if bad else ""), got
    bad = check_test(exp, r)
    got = r.get("status", "?")
    if r.get("status") == "refused":
        got += f" ({r.get('rule')}: {r.get('symbol')})"
    else:
        codes = [d["code"] for d in r.get("diagnoses", [])]
        got += f" {r.get('passed')}/{r.get('total')}" + (f" [{', '.join(codes)}]" if codes else "")
    if "bench" in exp and bench:
        bf = results / f"{entry.name}.bench.json"
        row = largest_row(json.loads(bf.read_text()), ex) if bf.exists() else None
        bad += check_bench(exp["bench"], row)
        if row is not None:
            pct = row.get("pct_peak")
            got += f"; bench {row.get('status')}" + (f" {pct}% of peak" if pct is not None else "")
    text = f"{ex:10} {got}" + (f"  <- {'; '.join(bad)}" if bad else "")
    if unvetted_run and exp.get("must_show"):
        text += f"\n    and check by hand: {exp['must_show']}"
    return not bad, text, got


def main() -> int:
    argv = sys.argv[1:]
    bench = "--tests-only" not in argv
    sanitize = "--sanitize" in argv
    unvetted_run = "--unvetted" in argv
    bench = bench and not unvetted_run
    argv = [a for a in argv if a not in ("--tests-only", "--sanitize", "--unvetted")]
    results = pathlib.Path(argv[0])
    only = set(argv[1:])
    good = bad = 0
    table = []
    for entry in sorted((ROOT / "tests" / "corpus").iterdir()):
        if not (entry / "expect.json").exists() or (only and entry.name not in only):
            continue
        if sanitize and not json.loads((entry / "expect.json").read_text()).get("sanitize"):
            continue
        if unvetted_run and "when_unvetted" not in (entry / "expect.json").read_text():
            continue
        ok, text, got = verdict(entry, results, bench, unvetted_run=unvetted_run, sanitize=sanitize)
        good += ok
        bad += not ok
        print(f"{'OK ' if ok else 'BAD'} {entry.name:22} {text}")
        about = json.loads((entry / "expect.json").read_text()).get("about", "")
        table.append(f"| {entry.name} | {got} | {'yes' if ok else 'NO'} | {about} |")
    print("\n| entry | verdict | as intended | what it does |\n|---|---|---|---|")
    print("\n".join(table))
    print(f"corpus: {good} passed, {bad} failed")
    return 0 if bad == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
