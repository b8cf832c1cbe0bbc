"""Every case's outcome and every diagnosis of a set of `run.py test --all
--json` reports, in a compact form that can be recorded and compared: the
record that says haxpy's and vector_sum's verdicts are unchanged by a
redesign of the grader's core (issue 26).

    python3 tests/gpu/record_verdicts.py record DIR OUT.json
        DIR holds NAME.json reports (a corpus entry, solutions, stubs)
    python3 tests/gpu/record_verdicts.py compare OLD.json NEW.json
        exit 1 and one line per difference in the reports both hold (a report
        only the new record has, of an exercise added since, is no difference)

A case's verdict is its outcome, the indices of its first mismatches, its
guard and input findings and whether it wrote nothing; a report's are its
status and each diagnosis (code and text). Timings are left out."""
import json
import sys
from pathlib import Path

CASE_KEYS = ("outcome", "mismatches", "unwritten", "guard_bad_bytes", "guard_array",
             "input_changed", "input_array", "nothing_written", "nondeterministic")


def case_verdict(c: dict) -> str:
    parts = [str(c.get(k)) for k in CASE_KEYS]
    firsts = ",".join(str(m.get("index")) + ":" + str(m.get("got")) for m in c.get("first_mismatches") or [])
    return "|".join(parts) + "|" + firsts


def runs(verdicts: list[str]) -> list[list]:
    """Runs of equal verdicts: [[verdict, count], ...] (most cases agree)."""
    out: list[list] = []
    for v in verdicts:
        if out and out[-1][0] == v:
            out[-1][1] += 1
        else:
            out.append([v, 1])
    return out


def record(folder: Path) -> dict:
    doc: dict = {}
    for f in sorted(folder.glob("*.json")):
        rep = json.loads(f.read_text())
        for ex, e in sorted((rep.get("exercises") or {}).items()):
            if not isinstance(e, dict):
                continue
            cases = sorted(e.get("cases") or [], key=lambda c: c.get("index", 0))
            doc[f"{f.stem}/{ex}"] = {
                "status": e.get("status"),
                "rule": e.get("rule"),
                "diagnoses": [[d.get("code"), d.get("text")] for d in e.get("diagnoses") or []],
                "cases": runs([case_verdict(c) for c in cases]),
            }
    return doc


def compare(old: dict, new: dict) -> list[str]:
    diffs = []
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key), new.get(key)
        if a is None:
            continue
        if b is None:
            diffs.append(f"{key}: only in the old record")
            continue
        for part in ("status", "rule", "diagnoses", "cases"):
            if a.get(part) != b.get(part):
                diffs.append(f"{key}: {part} differs")
    return diffs


def main(argv: list[str]) -> int:
    if len(argv) == 3 and argv[0] == "record":
        Path(argv[2]).write_text(json.dumps(record(Path(argv[1])), indent=0, sort_keys=True) + "\n")
        return 0
    if len(argv) == 3 and argv[0] == "compare":
        diffs = compare(json.loads(Path(argv[1]).read_text()), json.loads(Path(argv[2]).read_text()))
        for d in diffs:
            print(d)
        print(f"verdicts: {len(diffs)} differences")
        return 1 if diffs else 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
