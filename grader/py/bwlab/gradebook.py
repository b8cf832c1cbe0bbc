"""What `run.py grade` and `run.py merge` write: the per-submission record
(<id>.json), the gradebook (gradebook.csv), Gradescope results
(gradescope/<id>/results.json) and a JUnit report (junit.xml).

Every file here is derived from the per-submission records alone, so a
merge of shards (which reads the records back) writes exactly what one
unsharded run writes: same rows, same order (ids sorted by code point).

A record (the dict saved as <id>.json):

    {"kind": "bwlab-grade", "format": 1, "id": "alice", "source": "alice.tar.gz",
     "seed": {"kind": "secret" | "public", "fingerprint": "...", "hidden": true},
     "policy": {"source": "...", "sha256": "..."},
     "exercises": [{"exercise": "NAME", "state": "ok" | "missing" | ...,
                    "build": {...}, "test_exit": 0, "test": {bwgrade JSON},
                    "bench_exit": 0, "bench": {bwgrade JSON},
                    "score": {"correctness": {...}, "performance": {...},
                              "total": 92.5, "max": 100.0},
                    "seconds": 12.3}],
     "total": 92.5, "max_total": 200.0,
     "notes": ["..."], "problems": ["..."], "seconds": 40.1}
"""
from __future__ import annotations

import csv
import io
import json
import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path

from .scoring import fmt_points, pts

RECORD_KIND = "bwlab-grade"
RECORD_FORMAT = 1
MANIFEST = "manifest.json"
GRADEBOOK = "gradebook.csv"
JUNIT = "junit.xml"
GRADESCOPE_DIR = "gradescope"
LOGS_DIR = "logs"
# Names an id may not take: they would collide with the files above.
RESERVED_IDS = {"manifest", "gradebook", "junit", GRADESCOPE_DIR, LOGS_DIR}

BUILD_LOG_TAIL = 4000   # characters of a failed build's log shown in reports


# --------------------------------------------------------------------------
# Small helpers

_XML_BAD = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def clean_text(text: object) -> str:
    """Text safe for XML 1.0 and CSV: no terminal colour codes, no control characters."""
    s = "" if text is None else str(text)
    s = _ANSI.sub("", s)
    # Surrogates (from undecodable bytes) are not allowed in XML either.
    s = s.encode("utf-8", "replace").decode("utf-8")
    return _XML_BAD.sub("?", s)


def tail(text: str, limit: int = BUILD_LOG_TAIL) -> str:
    if len(text) <= limit:
        return text
    return "[... " + str(len(text) - limit) + " characters cut ...]\n" + text[-limit:]


def exercise_names(records: list[dict], fallback: list[str] | None = None) -> list[str]:
    """The exercise columns: from the first record (every record of one run
    has the same list), else the fallback."""
    for rec in records:
        return [e["exercise"] for e in rec.get("exercises", [])]
    return list(fallback or [])


def sort_records(records: list[dict]) -> list[dict]:
    return sorted(records, key=lambda r: r["id"])


# --------------------------------------------------------------------------
# Notes: the short "why" that goes into the CSV


def exercise_notes(ex: dict) -> list[str]:
    name = ex["exercise"]
    sc = ex.get("score") or {}
    corr = sc.get("correctness") or {}
    perf = sc.get("performance") or {}
    notes = []
    if corr.get("score", 0) < corr.get("max", 0):
        notes.append(f"{name}: {corr.get('reason', '')}")
    if perf.get("max", 0) > 0 and corr.get("passed"):
        if perf.get("scored"):
            noise = f" +-{perf['noise']:g}" if perf.get("noise") is not None else ""
            notes.append(f"{name} performance: {perf.get('pct_copy')}%{noise} of copy, "
                         f"{fmt_points(perf.get('score', 0))}/{fmt_points(perf.get('max', 0))}"
                         + (f" ({perf.get('scale')} scale)" if perf.get("scale") else ""))
        else:
            notes.append(f"{name} performance: {perf.get('reason', '')}")
    mc = corr.get("memcheck") or {}
    if mc.get("state") in ("timeout", "error"):
        notes.append(f"{name} memcheck: {mc.get('reason', mc['state'])}")
    if mc.get("api_errors"):
        notes.append(f"{name} memcheck noted a CUDA API error the code got back (costs nothing): "
                     f"{mc.get('note')}")
    return notes


def exercise_flags(ex: dict) -> list[str]:
    """What an instructor should look at twice: a memory error memcheck
    found, cases skipped for want of memory (their groups' weight went to
    the others), a performance score within the noise of a threshold."""
    name = ex["exercise"]
    sc = ex.get("score") or {}
    corr = sc.get("correctness") or {}
    perf = sc.get("performance") or {}
    flags = []
    mc = corr.get("memcheck") or {}
    if mc.get("errors"):
        flags.append(f"{name}: memcheck error" + (f" ({mc['line']})" if mc.get("line") else ""))
    elif mc.get("state") == "timeout":
        flags.append(f"{name}: memcheck timed out")
    sk = corr.get("skipped") or {}
    if sk.get("cases"):
        flags.append(f"{name}: {sk['cases']} case(s) skipped, not scored"
                     + (f" ({sk['detail']})" if sk.get("detail") else ""))
    if perf.get("near_threshold") is not None:
        flags.append(f"{name}: {perf.get('pct_copy')}% is within noise of the "
                     f"{perf['near_threshold']:g}% threshold ({fmt_points(perf.get('points_at_stake', 0))} "
                     "points at stake)")
    return flags


def record_flags(rec: dict) -> list[str]:
    return [f for ex in rec.get("exercises", []) for f in exercise_flags(ex)]


def record_device(rec: dict) -> str:
    """The GPU's name, as bwgrade reported it."""
    if rec.get("device"):
        return str(rec["device"])
    for ex in rec.get("exercises", []):
        for part in ("test", "bench"):
            dev = (ex.get(part) or {}).get("device") if isinstance(ex.get(part), dict) else None
            if isinstance(dev, dict) and dev.get("name"):
                return str(dev["name"])
    return ""


def record_notes(rec: dict) -> str:
    parts = [f"PROBLEM: {p}" for p in rec.get("problems", [])]
    for ex in rec.get("exercises", []):
        parts.extend(exercise_notes(ex))
    parts.extend(rec.get("notes", []))
    return clean_text("; ".join(parts))


# --------------------------------------------------------------------------
# gradebook.csv


def csv_header(exercises: list[str]) -> list[str]:
    head = ["id"]
    for ex in exercises:
        head += [f"{ex}_correctness", f"{ex}_performance", f"{ex}_total",
                 f"{ex}_pct_copy", f"{ex}_noise", f"{ex}_copy_gbs"]
    return head + ["total", "gpu", "sandbox", "containment", "flags", "notes"]


def _number(x) -> str:
    return f"{x:g}" if isinstance(x, (int, float)) and not isinstance(x, bool) else ""


def inert_cell(text: str) -> str:
    """A cell a spreadsheet shows as text: one that starts with = + - @ (or a
    tab or carriage return) is a formula there, and a submission's name is
    the student's to choose (=HYPERLINK(...) reads other cells out)."""
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def csv_row(rec: dict, exercises: list[str]) -> list[str]:
    by_name = {e["exercise"]: e for e in rec.get("exercises", [])}
    row = [inert_cell(clean_text(str(rec["id"])))]
    for ex in exercises:
        sc = (by_name.get(ex) or {}).get("score") or {}
        perf = sc.get("performance") or {}
        # pct_copy: the scored row's % of the same-run copy; noise: half the
        # band it spans (scoring.noise_band), in the same percentage points.
        row += [fmt_points((sc.get("correctness") or {}).get("score", 0)),
                fmt_points(perf.get("score", 0)),
                fmt_points(sc.get("total", 0)),
                _number(perf.get("pct_copy")), _number(perf.get("noise")),
                _number(perf.get("copy_gbs"))]
    # sandbox: what the workers ran in (run.py grade --sandbox); "" in
    # records from before it was recorded. containment: bwgrade's word on
    # the defences in force (record_containment).
    return row + [fmt_points(rec.get("total", 0)), inert_cell(clean_text(record_device(rec))),
                  rec.get("sandbox", ""), record_containment(rec),
                  inert_cell(clean_text("; ".join(record_flags(rec)))), inert_cell(record_notes(rec))]


def containment_text(c) -> str:
    """bwgrade's "containment" in a few words: "nobody, pid namespace",
    "same user, subreaper"; runs that differed are joined with " | "."""
    if isinstance(c, list):
        return " | ".join(containment_text(x) for x in c)
    if not isinstance(c, dict):
        return ""
    user = c.get("user")
    parts = ["same user" if user in (None, "same") else str(user)]
    if c.get("pid_namespace"):
        parts.append("pid namespace")
    if c.get("subreaper"):
        parts.append("subreaper")
    if c.get("sandbox") == "bwrap":
        parts.append("bwrap")
    if c.get("gpu_node"):
        parts.append(f"only {c['gpu_node']}")
    return ", ".join(parts)


def record_containment(rec: dict) -> str:
    """"" in records from before bwgrade said."""
    return clean_text(containment_text(rec.get("containment")))


def gradebook_csv(records: list[dict], exercises: list[str]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(csv_header(exercises))
    for rec in sort_records(records):
        w.writerow(csv_row(rec, exercises))
    return buf.getvalue()


# --------------------------------------------------------------------------
# Gradescope results.json


def _part_output(ex: dict, part: str) -> str:
    sc = ex.get("score") or {}
    p = sc.get(part) or {}
    lines = [p.get("reason", "")]
    if part == "correctness":
        for g, s in (p.get("groups") or {}).items():
            if not s.get("cases"):
                continue
            line = f"  {g}: {s['passed']}/{s['cases']} passed"
            if s.get("skipped"):
                line += f", {s['skipped']} skipped"
            if "points" in s:
                line += f" -> {fmt_points(s['points'])}/{fmt_points(s['max'])} points"
            if s.get("first_failure"):
                line += f" (first failure: {s['first_failure']})"
            lines.append(line)
            if s.get("memcheck_failed"):
                first = s.get("memcheck_first") or {}
                lines.append(f"    memcheck: {s['memcheck_failed']} failed"
                             + (f" ({s['memcheck_not_run']} more not run)" if s.get("memcheck_not_run") else "")
                             + f", first {first.get('case', '?')}"
                             + (f": {first['line']}" if first.get("line") else ""))
        build = ex.get("build") or {}
        if ex.get("state") in ("build_failed", "build_timeout") and build.get("log_tail"):
            lines += ["", "build log (end):", build["log_tail"]]
    return clean_text("\n".join(lines).strip())


def gradescope_results(rec: dict) -> dict:
    tests = []
    for ex in rec.get("exercises", []):
        sc = ex.get("score") or {}
        for part in ("correctness", "performance"):
            p = sc.get(part) or {}
            if p.get("max", 0) <= 0:
                continue
            score, mx = pts(p.get("score", 0)), pts(p.get("max", 0))
            tests.append({"name": f"{ex['exercise']}: {part}", "score": score, "max_score": mx,
                          "output": _part_output(ex, part),
                          "status": "passed" if score >= mx else "failed"})
    summary = [f"{rec['id']}: {fmt_points(rec.get('total', 0))} / "
               f"{fmt_points(rec.get('max_total', 0))} points"]
    summary += [f"problem: {p}" for p in rec.get("problems", [])]
    return {"score": pts(rec.get("total", 0)),
            "output": clean_text("\n".join(summary)),
            "tests": tests}


# --------------------------------------------------------------------------
# junit.xml


def junit_tree(records: list[dict]) -> ET.ElementTree:
    root = ET.Element("testsuites", name="bwlab grades")
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for rec in sort_records(records):
        suite = ET.SubElement(root, "testsuite", name=clean_text(rec["id"]))
        props = ET.SubElement(suite, "properties")
        ET.SubElement(props, "property", name="score", value=fmt_points(rec.get("total", 0)))
        ET.SubElement(props, "property", name="max_score", value=fmt_points(rec.get("max_total", 0)))
        counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        for ex in rec.get("exercises", []):
            sc = ex.get("score") or {}
            for part in ("correctness", "performance"):
                p = sc.get(part) or {}
                if p.get("max", 0) <= 0:
                    continue
                counts["tests"] += 1
                score, mx = pts(p.get("score", 0)), pts(p.get("max", 0))
                case = ET.SubElement(suite, "testcase", classname=clean_text(f"bwlab.{rec['id']}"),
                                     name=f"{ex['exercise']}.{part}",
                                     time=f"{float(ex.get('seconds') or 0):.3f}")
                message = clean_text(f"{fmt_points(score)}/{fmt_points(mx)} points: {p.get('reason', '')}")
                if part == "performance" and not (sc.get("correctness") or {}).get("passed"):
                    ET.SubElement(case, "skipped", message=message)
                    counts["skipped"] += 1
                elif (part == "correctness" and ex.get("state") in ("test_error", "not_built")) or \
                        (part == "performance" and ex.get("bench_state") == "bench_error"):
                    el = ET.SubElement(case, "error", message=message, type="grader")
                    el.text = _part_output(ex, part)
                    counts["errors"] += 1
                elif score < mx:
                    el = ET.SubElement(case, "failure", message=message, type=part)
                    el.text = _part_output(ex, part)
                    counts["failures"] += 1
                else:
                    out = ET.SubElement(case, "system-out")
                    out.text = message
        if rec.get("problems"):
            err = ET.SubElement(suite, "system-err")
            err.text = clean_text("\n".join(rec["problems"]))
        for k, v in counts.items():
            suite.set(k, str(v))
            totals[k] += v
        suite.set("time", f"{float(rec.get('seconds') or 0):.3f}")
    for k, v in totals.items():
        root.set(k, str(v))
    ET.indent(root)
    return ET.ElementTree(root)


def junit_xml(records: list[dict]) -> bytes:
    buf = io.BytesIO()
    junit_tree(records).write(buf, encoding="utf-8", xml_declaration=True)
    return buf.getvalue() + b"\n"


# --------------------------------------------------------------------------
# Files


def _write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def dump_json(obj: object) -> bytes:
    # A path that is not UTF-8 holds lone surrogates: written as JSON's \\uDCxx
    # escapes, they read back as the same path.
    return (json.dumps(obj, indent=2, sort_keys=False, ensure_ascii=False) + "\n").encode(
        "utf-8", "backslashreplace")


def record_path(out_dir: Path, sub_id: str) -> Path:
    return Path(out_dir) / f"{sub_id}.json"


def write_record(out_dir: Path, rec: dict) -> Path:
    path = record_path(out_dir, rec["id"])
    _write_atomic(path, dump_json(rec))
    return path


def load_record(path: Path) -> dict:
    rec = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(rec, dict) or rec.get("kind") != RECORD_KIND:
        raise ValueError(f"{path}: not a bwlab grade record")
    return rec


def write_manifest(out_dir: Path, manifest: dict) -> None:
    _write_atomic(Path(out_dir) / MANIFEST, dump_json(manifest))


def load_manifest(out_dir: Path) -> dict:
    return json.loads((Path(out_dir) / MANIFEST).read_text(encoding="utf-8"))


def write_outputs(out_dir: Path, records: list[dict], exercises: list[str]) -> None:
    """gradebook.csv, junit.xml and gradescope/<id>/results.json for these records."""
    out_dir = Path(out_dir)
    records = sort_records(records)
    _write_atomic(out_dir / GRADEBOOK, gradebook_csv(records, exercises).encode("utf-8"))
    _write_atomic(out_dir / JUNIT, junit_xml(records))
    for rec in records:
        _write_atomic(out_dir / GRADESCOPE_DIR / rec["id"] / "results.json",
                      dump_json(gradescope_results(rec)))


def time_lines(records: list[dict]) -> list[str]:
    """Where the GPU time went: tests, the memcheck runs (apart, as the
    policy adds them), benchmarks."""
    parts: dict[str, list[float]] = {"test": [], "memcheck": [], "bench": []}
    for rec in records:
        for ex in rec.get("exercises", []):
            for key in parts:
                v = ex.get(f"{key}_seconds")
                if isinstance(v, (int, float)):
                    parts[key].append(float(v))
    if not any(parts.values()):
        return []
    def part(name: str, key: str) -> str:
        xs = parts[key]
        if not xs:
            return f"{name}: none"
        return (f"{name} {sum(xs):.1f} s ({len(xs)} runs, {sum(xs) / len(xs):.1f} s on average, "
                f"at most {max(xs):.1f} s)")
    return ["time: " + "; ".join((part("tests", "test"), part("memcheck", "memcheck"),
                                   part("benchmarks", "bench")))]


def summary_lines(records: list[dict], exercises: list[str]) -> list[str]:
    """A plain-text table for the terminal: one line per submission."""
    from .console import table
    rows = []
    for rec in sort_records(records):
        by_name = {e["exercise"]: e for e in rec.get("exercises", [])}
        row = [rec["id"]]
        for ex in exercises:
            sc = (by_name.get(ex) or {}).get("score") or {}
            row.append(f"{fmt_points(sc.get('total', 0))}/{fmt_points(sc.get('max', 0))}")
        row.append(f"{fmt_points(rec.get('total', 0))}/{fmt_points(rec.get('max_total', 0))}")
        row.append("PROBLEM" if rec.get("problems") else "")
        rows.append(row)
    headers = ["id", *exercises, "total", ""]
    if not any(r[-1] for r in rows):
        headers.pop()
        rows = [r[:-1] for r in rows]
    return table(headers, rows).splitlines()
