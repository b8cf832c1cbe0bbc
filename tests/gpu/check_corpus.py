"""Compare `run.py test --json` results of the corpus with each entry's expect.json.

    python3 tests/gpu/check_corpus.py RESULTS_DIR [ENTRY...]

RESULTS_DIR holds <entry>.json for each tests/corpus/<entry>/ (or for the
entries named). Prints one line
per entry (OK or BAD, with what was expected and what came) and a closing
count; exits 1 if any entry is BAD or missing."""
import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def verdict(entry: pathlib.Path, results: pathlib.Path) -> tuple[bool, str]:
    exp = json.loads((entry / "expect.json").read_text())
    got_file = results / f"{entry.name}.json"
    if not got_file.exists():
        return False, "no result"
    r = json.loads(got_file.read_text())["exercises"][exp["exercise"]]
    codes = [d["code"] for d in r.get("diagnoses", [])]
    outcomes = sorted({c["outcome"] for c in r.get("cases", [])})
    ok = (r.get("status") == exp["status"]
          and all(c in codes for c in exp.get("diagnoses", []))
          and all(o in outcomes for o in exp.get("outcomes", [])))
    first = codes[0] if codes else "-"
    return ok, (f"{exp['exercise']:10} status {r.get('status')} (want {exp['status']}), "
                f"first diagnosis {first}, diagnoses {codes} (want {exp.get('diagnoses', [])}), "
                f"passed {r.get('passed')}/{r.get('total')}")


def main() -> int:
    results = pathlib.Path(sys.argv[1])
    only = set(sys.argv[2:])
    good = bad = 0
    for entry in sorted((ROOT / "tests" / "corpus").iterdir()):
        if not (entry / "expect.json").exists() or (only and entry.name not in only):
            continue
        ok, text = verdict(entry, results)
        good += ok
        bad += not ok
        print(f"{'OK ' if ok else 'BAD'} {entry.name:22} {text}")
    print(f"corpus: {good} passed, {bad} failed")
    return 0 if bad == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
