"""The class report: one self-contained HTML page from a grading run's
records (run.py grade's <id>.json and manifest.json, or run.py merge's).

Standard library only, charts as inline SVG, no script and nothing fetched:
the file opens offline and can be mailed. Everything on it is read from the
records; nothing is measured or decided here (the flags are gradebook.py's).
"""
from __future__ import annotations

import html
import statistics
from collections import Counter
from pathlib import Path

from . import gradebook, policy_file
from .scoring import fmt_points

BAR = "#3b6ea8"          # bars (the browser test looks for these two colours)
THRESHOLD = "#c0392b"    # threshold lines
# Above this % of the same-run copy a figure is not plausible for a kernel
# that moves the bytes the exercise needs (the kit's solutions reach ~103 %).
PLAUSIBLE_PCT = 110.0
PCT_AXIS_MAX = 120.0
BINS = 10

CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }
h1 { font-size: 1.6em; margin-bottom: .2em; } h2 { margin-top: 1.6em; border-bottom: 1px solid #ddd; }
.meta { color: #555; } table { border-collapse: collapse; margin: .5em 0; }
td, th { border: 1px solid #ddd; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f4f4f4; } .charts { display: flex; flex-wrap: wrap; gap: 24px; }
figure { margin: 0; } figcaption { color: #555; font-size: 12px; max-width: 520px; }
.none { color: #777; font-style: italic; }
"""


def esc(x: object) -> str:
    return html.escape(str(x), quote=True)


# --------------------------------------------------------------------------
# Charts


def bar_chart(counts: list[int], labels: list[str], title: str,
              lines: list[tuple[float, str]] = (), x_max: float | None = None,
              end_label: str | None = None) -> str:
    """Vertical bars, one per bin, each bin's lower edge labelled under it
    (end_label at the right end), with optional vertical lines at x positions
    (0..x_max across the plot), as an <svg>."""
    w, h, left, bottom, top = 520, 220, 36, 34, 24
    plot_w, plot_h = w - left - 10, h - bottom - top
    peak = max(counts) if counts and max(counts) > 0 else 1
    bw = plot_w / max(1, len(counts))
    parts = [f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
             f'viewBox="0 0 {w} {h}" role="img" aria-label="{esc(title)}">',
             f'<text x="{left}" y="15" font-size="13" font-weight="bold">{esc(title)}</text>',
             f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" stroke="#888"/>',
             f'<text x="{left - 6}" y="{top + 4}" font-size="10" text-anchor="end">{peak}</text>',
             f'<text x="{left - 6}" y="{top + plot_h}" font-size="10" text-anchor="end">0</text>']
    for i, (c, label) in enumerate(zip(counts, labels)):
        bh = plot_h * c / peak
        x = left + i * bw
        if c:
            parts.append(f'<rect x="{x + 2:.1f}" y="{top + plot_h - bh:.1f}" width="{bw - 4:.1f}" '
                         f'height="{bh:.1f}" fill="{BAR}"><title>{esc(label)}: {c}</title></rect>')
            parts.append(f'<text x="{x + bw / 2:.1f}" y="{top + plot_h - bh - 3:.1f}" font-size="10" '
                         f'text-anchor="middle">{c}</text>')
        parts.append(f'<text x="{x:.1f}" y="{top + plot_h + 13}" font-size="9" '
                     f'text-anchor="middle">{esc(label)}</text>')
    if end_label is not None:
        parts.append(f'<text x="{left + plot_w:.1f}" y="{top + plot_h + 13}" font-size="9" '
                     f'text-anchor="middle">{esc(end_label)}</text>')
    for xv, label in lines:
        if x_max:
            x = left + plot_w * min(xv, x_max) / x_max
            parts.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{top + plot_h}" '
                         f'stroke="{THRESHOLD}" stroke-width="2" stroke-dasharray="5,3"/>')
            parts.append(f'<text x="{x + 3:.1f}" y="{top + 10}" font-size="10" fill="{THRESHOLD}">'
                         f'{esc(label)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def histogram(values: list[float], lo: float, hi: float, bins: int = BINS) -> tuple[list[int], list[str]]:
    """Counts per bin of [lo, hi] (the top bin holds hi; values outside are
    clamped) and each bin's lower edge."""
    width = (hi - lo) / bins
    counts = [0] * bins
    for v in values:
        i = int((min(max(v, lo), hi) - lo) / width) if width > 0 else 0
        counts[min(i, bins - 1)] += 1
    labels = [f"{lo + i * width:g}" for i in range(bins)]
    return counts, labels


# --------------------------------------------------------------------------
# Reading the facts


def _exercise(rec: dict, ex: str) -> dict:
    return next((e for e in rec.get("exercises", []) if e.get("exercise") == ex), {})


def thresholds_for(manifest: dict, root: Path) -> tuple[dict[str, list[float]], str]:
    """Per exercise, the policy's thresholds (% of copy): from the manifest
    (run.py grade records them), else from the policy file of this kit when
    its hash is the run's; else none, and why."""
    pol = manifest.get("policy") or {}
    if isinstance(pol.get("exercises"), dict):
        return ({ex: [t for t, _ in d.get("thresholds", [])] for ex, d in pol["exercises"].items()},
                "from the run's manifest")
    try:
        found = policy_file.find_policy(root, None)
    except policy_file.PolicyError as e:
        return {}, f"not drawn: {e}"
    if pol.get("sha256") and found.sha256 != pol["sha256"]:
        return {}, f"not drawn: the run's policy (sha256 {pol['sha256'][:12]}) is not {found.source}"
    exs = manifest.get("exercises") or []
    return ({ex: [t for t, _ in found.for_exercise(ex).thresholds] for ex in exs},
            f"from {Path(found.source).name} (the run's policy, by its hash)")


def events(records: list[dict], exercises: list[str]) -> dict[str, list[str]]:
    """Refusals, build failures, timeouts, grader errors and crashes: kind -> ids."""
    out: dict[str, list[str]] = {}
    for rec in records:
        for ex in exercises:
            e = _exercise(rec, ex)
            state = e.get("state")
            tag = f"{rec['id']} ({ex})"
            if state in ("refused", "build_failed", "build_timeout", "test_timeout", "test_error"):
                out.setdefault(state.replace("_", " "), []).append(tag)
            if e.get("bench_state") in ("bench_timeout", "bench_error"):
                out.setdefault(e["bench_state"].replace("_", " "), []).append(tag)
            # not_run: every group it checks failed the plain test (no trouble)
            if (e.get("memcheck_state") or "ok") not in ("ok", "not_run"):
                out.setdefault(f"memcheck {e['memcheck_state']}", []).append(tag)
            test = e.get("test") or {}
            # A record trimmed to some of its cases keeps the full counts.
            outcomes = Counter(test.get("outcome_counts") or
                               Counter(c.get("outcome") for c in test.get("cases") or []))
            for kind in ("crash", "timeout", "cuda_error"):
                if outcomes.get(kind):
                    out.setdefault(f"cases that {'crashed' if kind == 'crash' else kind.replace('_', ' ')}",
                                   []).append(f"{tag}: {outcomes[kind]}")
    return out


def diagnoses(records: list[dict], exercises: list[str]) -> list[tuple[str, int, str]]:
    """(code, how many exercise runs, an example text), most frequent first."""
    seen: Counter = Counter()
    example: dict[str, str] = {}
    for rec in records:
        for ex in exercises:
            for d in (_exercise(rec, ex).get("test") or {}).get("diagnoses") or []:
                code = d.get("code")
                if not code or code == "replay":
                    continue
                seen[code] += 1
                example.setdefault(code, f"{rec['id']} ({ex}): {d.get('text', '')}")
    return [(c, n, example[c]) for c, n in seen.most_common()]


def flagged(records: list[dict], exercises: list[str]) -> list[tuple[str, str]]:
    out = []
    for rec in records:
        for f in gradebook.record_flags(rec):
            out.append((rec["id"], f))
        for ex in exercises:
            pct = ((_exercise(rec, ex).get("score") or {}).get("performance") or {}).get("pct_copy")
            if isinstance(pct, (int, float)) and pct > PLAUSIBLE_PCT:
                out.append((rec["id"], f"{ex}: {pct:g}% of the same-run copy is more than a kernel "
                                       f"moving the exercise's bytes can reach (> {PLAUSIBLE_PCT:g}%)"))
    return out


# --------------------------------------------------------------------------
# The page


def _table(head: list[str], rows: list[list[str]]) -> str:
    if not rows:
        return '<p class="none">none</p>'
    return ("<table><tr>" + "".join(f"<th>{esc(h)}</th>" for h in head) + "</tr>"
            + "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in r) + "</tr>" for r in rows)
            + "</table>")


def render(records: list[dict], manifest: dict, root: Path) -> str:
    records = gradebook.sort_records(records)
    exercises = list(manifest.get("exercises") or gradebook.exercise_names(records))
    gpus = Counter(gradebook.record_device(r) or "nothing ran" for r in records)
    sandboxes = Counter(r.get("sandbox") or "not recorded" for r in records)
    seed = manifest.get("seed") or (records[0].get("seed") if records else {}) or {}
    pol = manifest.get("policy") or {}
    thresholds, thr_note = thresholds_for(manifest, root)
    meta = [f"{len(records)} submissions",
            "GPU: " + ", ".join(f"{g} ({n})" for g, n in gpus.most_common()),
            f"seed: {seed.get('kind', '?')}" + (f", fingerprint {seed['fingerprint']}" if seed.get("fingerprint") else "")
            + (", hidden cases" if seed.get("hidden") else ""),
            f"policy: {Path(str(pol.get('source', '?'))).name} (sha256 {str(pol.get('sha256', ''))[:12]})",
            "sandbox: " + ", ".join(f"{s} ({n})" for s, n in sandboxes.most_common()),
            f"kit {manifest.get('kit_version', '?')}"]
    if manifest.get("shard"):
        meta.append(f"shard {manifest['shard'].get('k')}/{manifest['shard'].get('n')}")
    body = [f"<h1>bwlab class report</h1><p class=\"meta\">{' · '.join(esc(m) for m in meta)}</p>"]

    # Scores
    body.append("<h2>Scores</h2><div class=\"charts\">")
    totals = [r.get("total", 0) for r in records]
    most = max((r.get("max_total", 0) for r in records), default=0) or 1
    for ex in exercises:
        scores = [(_exercise(r, ex).get("score") or {}) for r in records]
        vals = [s.get("total", 0) for s in scores]
        top = max((s.get("max", 0) for s in scores), default=0) or 1
        counts, labels = histogram(vals, 0, top)
        cap = (f"median {fmt_points(statistics.median(vals))}, mean {fmt_points(statistics.mean(vals))} "
               f"of {fmt_points(top)}; full marks: {sum(1 for v in vals if v >= top)}") if vals else ""
        body.append(f"<figure>{bar_chart(counts, labels, f'{ex}: points', end_label=fmt_points(top))}"
                    f"<figcaption>{esc(cap)}</figcaption></figure>")
    counts, labels = histogram(totals, 0, most)
    cap = f"median {fmt_points(statistics.median(totals))} of {fmt_points(most)}" if totals else ""
    body.append(f"<figure>{bar_chart(counts, labels, 'total points', end_label=fmt_points(most))}"
                f"<figcaption>{esc(cap)}</figcaption>"
                "</figure></div>")

    # Bandwidth
    body.append("<h2>Bandwidth: % of the same-run device copy</h2><div class=\"charts\">")
    for ex in exercises:
        pcts = [p for p in (((_exercise(r, ex).get("score") or {}).get("performance") or {}).get("pct_copy")
                            for r in records) if isinstance(p, (int, float))]
        counts, labels = histogram(pcts, 0, PCT_AXIS_MAX, 12)
        lines = [(t, f"{t:g}%") for t in thresholds.get(ex, [])]
        cap = (f"{len(pcts)} measured (only submissions that passed every case are benchmarked); "
               f"threshold lines {thr_note}")
        body.append(f"<figure>{bar_chart(counts, labels, f'{ex}: % of copy', lines, PCT_AXIS_MAX, f'{PCT_AXIS_MAX:g}+')}"
                    f"<figcaption>{esc(cap)}</figcaption></figure>")
    body.append("</div>")

    body.append("<h2>Most frequent diagnoses</h2>")
    body.append(_table(["diagnosis", "exercise runs", "example"],
                       [[c, str(n), ex] for c, n, ex in diagnoses(records, exercises)]))
    body.append("<h2>Refusals, timeouts and crashes</h2>")
    body.append(_table(["what", "count", "where"],
                       [[k, str(len(v)), "; ".join(v)] for k, v in sorted(events(records, exercises).items())]))
    body.append("<h2>Flagged</h2>")
    body.append(_table(["id", "why"], [[i, f] for i, f in flagged(records, exercises)]))
    problems = [[r["id"], p] for r in records for p in r.get("problems", [])]
    body.append("<h2>Problems for the instructor</h2>")
    body.append(_table(["id", "problem"], problems))
    body.append("<h2>Gradebook</h2>")
    head = ["id", *exercises, "total", "notes"]
    rows = []
    for r in records:
        rows.append([r["id"], *[fmt_points(((_exercise(r, ex).get("score") or {}).get("total", 0)))
                                for ex in exercises],
                     fmt_points(r.get("total", 0)), gradebook.record_notes(r)])
    body.append(_table(head, rows))
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<title>bwlab class report</title>"
            f"<style>{CSS}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")


def load(grades_dir: Path) -> tuple[list[dict], dict]:
    """The records and manifest of a grading run's folder. Raises ValueError
    (no manifest, an unreadable record) or OSError."""
    grades_dir = Path(grades_dir)
    if not grades_dir.is_dir():
        raise ValueError(f"{grades_dir}: not a folder (give run.py grade's --out folder)")
    where = grades_dir / gradebook.MANIFEST
    try:
        manifest = gradebook.load_manifest(grades_dir)
    except FileNotFoundError:
        raise ValueError(f"{grades_dir}: no {gradebook.MANIFEST} (is it run.py grade's --out folder?)") from None
    except (OSError, ValueError) as e:
        # Every message names the file: a corrupt one is otherwise a riddle.
        raise ValueError(f"{where}: not readable JSON ({e})") from None
    if not isinstance(manifest, dict) or manifest.get("kind") != "bwlab-grade-run":
        raise ValueError(f"{where}: not written by run.py grade")
    records = []
    for sid in manifest.get("ids") or []:
        path = gradebook.record_path(grades_dir, sid)
        if path.is_file():
            try:
                records.append(gradebook.load_record(path))
            except OSError as e:
                raise ValueError(f"{path}: cannot read it ({e.strerror or e})") from None
            except ValueError as e:
                raise ValueError(str(e) if str(e).startswith(str(path)) else
                                 f"{path}: not readable JSON ({e})") from None
    return records, manifest
