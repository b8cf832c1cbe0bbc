"""Makes a grading run's output folder small enough to keep as test data
(tests/data/grades_h100): every passing case is dropped from each bwgrade
test and memcheck report, and of each other outcome the first KEEP cases
stay; `outcome_counts` keeps how many cases had each outcome before, and
`cases_kept` says how many were kept. The scores and the gradebook stay as
graded.

    python3 tests/data/trim_grades.py GRADES_DIR OUT_DIR
"""
import json
import shutil
import sys
from collections import Counter
from pathlib import Path

KEEP = 20


def trim(doc: dict) -> None:
    for e in doc.get("exercises") or []:
        for part in ("test", "memcheck"):
            t = e.get(part)
            if not isinstance(t, dict) or not isinstance(t.get("cases"), list):
                continue
            total = len(t["cases"])
            t["outcome_counts"] = dict(Counter(c.get("outcome") for c in t["cases"]))
            seen: Counter = Counter()
            kept = []
            for c in t["cases"]:
                seen[c.get("outcome")] += 1
                if c.get("outcome") != "pass" and seen[c.get("outcome")] <= KEEP:
                    kept.append(c)
            t["cases"] = kept
            t["cases_kept"] = (f"{len(kept)} of {total} (passing cases dropped, at most {KEEP} "
                               "of each other outcome)")


def main() -> int:
    src, dst = Path(sys.argv[1]), Path(sys.argv[2])
    dst.mkdir(parents=True, exist_ok=True)
    for f in sorted(src.glob("*.json")):
        doc = json.loads(f.read_text())
        if doc.get("kind") == "bwlab-grade":
            trim(doc)
        (dst / f.name).write_text(json.dumps(doc, indent=1) + "\n")
    shutil.copy(src / "gradebook.csv", dst / "gradebook.csv")
    return 0


if __name__ == "__main__":
    sys.exit(main())
