"""run.py merge: join the output folders of `run.py grade --shard K/N` runs.

    python3 run.py merge grades-1 grades-2 ... --out grades

Reads each folder's manifest.json and <id>.json records, copies the records
(and logs/<id>/) into --out, and writes gradebook.csv, junit.xml and
gradescope/<id>/results.json from them with the same code an unsharded run
uses: the merged gradebook is byte for byte the one a single run writes.

Checks: every folder was graded with the same exercises, policy and seed;
no id appears twice; when the folders are shards of one batch, all N shards
are there.

Exit codes: 0 merged, every submission graded without a problem; 1 merged,
but a shard is missing or some submission has a PROBLEM note; 2 usage (no
folder, an unreadable folder, an id in two folders, mixed policies or seeds).
"""
from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from . import EXIT_FAIL, EXIT_OK, EXIT_USAGE, __version__, console
from . import gradebook
from .submission_ids import ids_digest


HELP = "merge the folders of sharded grading runs into one gradebook (instructors)"


class MergeError(ValueError):
    pass


def read_folder(folder: Path) -> tuple[dict, list[dict]]:
    try:
        manifest = gradebook.load_manifest(folder)
    except (OSError, ValueError) as e:
        raise MergeError(f"{folder}: no readable {gradebook.MANIFEST} ({e})") from None
    if not isinstance(manifest, dict) or manifest.get("kind") != "bwlab-grade-run":
        raise MergeError(f"{folder}/{gradebook.MANIFEST}: not written by run.py grade")
    records = []
    for sid in manifest.get("ids", []):
        path = gradebook.record_path(folder, sid)
        if not path.is_file():
            # Listed but not graded (an interrupted run): merge what is there.
            continue
        try:
            records.append(gradebook.load_record(path))
        except (OSError, ValueError) as e:
            raise MergeError(f"{path}: {e}") from None
    return manifest, records


def merge(folders: list[Path], out: Path) -> tuple[list[dict], dict, list[str]]:
    """Merge; returns (records, manifest written, warnings). MergeError on a conflict."""
    warnings: list[str] = []
    manifests = []
    records: dict[str, dict] = {}
    where: dict[str, Path] = {}
    for folder in folders:
        manifest, recs = read_folder(folder)
        manifests.append((folder, manifest))
        missing = set(manifest.get("ids", [])) - {r["id"] for r in recs}
        if missing:
            warnings.append(f"{folder}: {len(missing)} listed submissions have no record "
                            f"(an interrupted run?): {', '.join(sorted(missing)[:5])}")
        for rec in recs:
            sid = rec["id"]
            if sid in records:
                raise MergeError(f"submission '{sid}' is in both {where[sid]} and {folder}")
            records[sid] = rec
            where[sid] = folder
    first_folder, first = manifests[0]
    for key, what in (("exercises", "exercises"), ("policy", "scoring policy"), ("seed", "seed")):
        for folder, m in manifests[1:]:
            a, b = first.get(key), m.get(key)
            if key == "policy":
                a, b = (a or {}).get("sha256"), (b or {}).get("sha256")
            if key == "seed":
                a = {k: (a or {}).get(k) for k in ("kind", "fingerprint", "hidden")}
                b = {k: (b or {}).get(k) for k in ("kind", "fingerprint", "hidden")}
            if a != b:
                raise MergeError(f"{folder} was graded with another {what} than {first_folder}")
    # Shards of one batch: the same N and the same full id list; every K once.
    shards = [(f, m["shard"]) for f, m in manifests if m.get("shard")]
    if shards:
        ns = {s["n"] for _, s in shards}
        digests = {m.get("all_ids_sha256") for _, m in manifests}
        if len(ns) == 1 and len(digests) == 1 and len(shards) == len(manifests):
            n = ns.pop()
            ks = sorted(s["k"] for _, s in shards)
            dup = sorted({k for k in ks if ks.count(k) > 1})
            if dup:
                raise MergeError(f"shard {dup[0]}/{n} is given twice")
            absent = [k for k in range(1, n + 1) if k not in ks]
            if absent:
                warnings.append("missing shards: " + ", ".join(f"{k}/{n}" for k in absent))
            expected = first.get("all_ids_count")
            if not absent and expected is not None and len(records) != expected:
                warnings.append(f"{len(records)} records for a batch of {expected} submissions")
        else:
            warnings.append("the folders are not the shards of one batch (different N or "
                            "submission lists); merged as they are")
    ids = sorted(records)
    manifest = {"kind": "bwlab-grade-run", "format": 1, "kit_version": __version__,
                "exercises": first.get("exercises", []), "ids": ids, "shard": None,
                "all_ids_count": len(ids), "all_ids_sha256": ids_digest(ids),
                "policy": first.get("policy"), "seed": first.get("seed"),
                "merged_from": [str(f) for f in folders]}

    out.mkdir(parents=True, exist_ok=True)
    for sid in ids:
        src_folder = where[sid]
        shutil.copyfile(gradebook.record_path(src_folder, sid), gradebook.record_path(out, sid))
        logs = src_folder / gradebook.LOGS_DIR / sid
        if logs.is_dir():
            dest = out / gradebook.LOGS_DIR / sid
            if dest.exists():
                shutil.rmtree(dest)
            shutil.copytree(logs, dest)
    merged = [gradebook.load_record(gradebook.record_path(out, sid)) for sid in ids]
    gradebook.write_outputs(out, merged, manifest["exercises"] or gradebook.exercise_names(merged))
    gradebook.write_manifest(out, manifest)
    return merged, manifest, warnings


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = ("exit codes: 0 merged; 1 merged, but a shard is missing or a submission has a "
                     "PROBLEM; 2 usage (an id in two folders, mixed policies or seeds)")
    parser.add_argument("folders", nargs="+", metavar="DIR", help="output folders of run.py grade")
    parser.add_argument("--out", required=True, metavar="DIR", help="where the merged results go")


def run(args: argparse.Namespace) -> int:
    folders = [Path(f) for f in args.folders]
    out = Path(args.out)
    for f in folders:
        if not f.is_dir():
            console.error(f"{f}: not a folder")
            return EXIT_USAGE
        if f.resolve() == out.resolve():
            console.error(f"--out {out} is one of the folders being merged; pick a new folder")
            return EXIT_USAGE
    if len({f.resolve() for f in folders}) != len(folders):
        console.error("a folder is given twice")
        return EXIT_USAGE
    try:
        records, manifest, warnings = merge(folders, out)
    except MergeError as e:
        console.error(str(e))
        return EXIT_USAGE
    for w in warnings:
        console.warn(w)
    exercises = manifest["exercises"]
    for line in gradebook.summary_lines(records, exercises):
        console.say(line)
    troubled = [r for r in records if r.get("problems")]
    for r in troubled:
        for p in r["problems"]:
            console.say(f"PROBLEM {r['id']}: {p}")
    console.say(f"merged {console.plural(len(records), 'submission')} from "
                f"{console.plural(len(folders), 'folder')} into {out}/")
    return EXIT_FAIL if (warnings or troubled) else EXIT_OK
