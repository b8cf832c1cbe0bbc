"""Bandwidth against size, from bwgrade's bench JSON documents.

plot_benchmark(docs, path) draws, per exercise, each label's offset-0 rows
(GB/s against n, n on a log2 axis), with a horizontal line for the
device-to-device copy measured in the same run and one for the datasheet
peak. The file type follows the suffix (.png, .svg, .pdf). matplotlib is
optional: without it, nothing is written and a text chart comes back
instead, so the kit never depends on it.
"""
from __future__ import annotations

import math
from pathlib import Path

NO_MATPLOTLIB = "matplotlib is not installed: no image written; text chart below"
SUFFIXES = (".png", ".svg", ".pdf")


# ---------------------------------------------------------------------------
# Data


def _num(x) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) else None


class Series:
    def __init__(self, label: str):
        self.label = label
        self.points: list[tuple[int, float]] = []


class Panel:
    """One exercise: its series, the copy and the peak."""

    def __init__(self, exercise: str):
        self.exercise = exercise
        self.series: list[Series] = []
        self.copy_gbs: float | None = None
        self.peak_gbs: float | None = None
        self.device = ""


def panels(docs: list[dict]) -> list[Panel]:
    """Group the documents by exercise, keeping the order they came in."""
    out: dict[str, Panel] = {}
    for doc in docs:
        if not isinstance(doc, dict) or not isinstance(doc.get("rows"), list):
            continue
        ex = str(doc.get("exercise") or "")
        panel = out.setdefault(ex, Panel(ex))
        dev = doc.get("device") if isinstance(doc.get("device"), dict) else {}
        if panel.peak_gbs is None:
            panel.peak_gbs = _num(dev.get("peak_gbs"))
        if not panel.device and dev.get("name"):
            panel.device = str(dev["name"])
        copy = doc.get("copy") if isinstance(doc.get("copy"), dict) else {}
        cg = _num(copy.get("gbs"))
        if panel.copy_gbs is None and cg and cg > 0:
            panel.copy_gbs = cg
        label = str(doc.get("label") or "?")
        series = next((s for s in panel.series if s.label == label), None)
        if series is None:
            series = Series(label)
            panel.series.append(series)
        for row in doc["rows"]:
            if not isinstance(row, dict):
                continue
            if row.get("offset", 0) != 0 or row.get("status", "ok") != "ok":
                continue
            n, gbs = _num(row.get("n")), _num(row.get("gbs"))
            if n is None or gbs is None or n <= 0 or gbs <= 0:
                continue
            series.points.append((int(n), gbs))
        series.points.sort()
    return [p for p in out.values() if any(s.points for s in p.series)]


# ---------------------------------------------------------------------------
# Text chart


def _pow2(n: int) -> str:
    k = math.log2(n)
    if abs(k - round(k)) < 1e-9:
        return f"2^{int(round(k))}"
    if abs(math.log2(n + 1) - round(math.log2(n + 1))) < 1e-9:
        return f"2^{int(round(math.log2(n + 1)))}-1"
    return f"~2^{k:.1f}"


def text_chart(docs: list[dict], width: int = 48) -> str:
    """The same data as bars of '#', one line per size and label; '|' marks
    the copy's bandwidth. Full width is the largest of peak, copy and data."""
    out: list[str] = []
    for panel in panels(docs):
        top = max([panel.peak_gbs or 0, panel.copy_gbs or 0] +
                  [g for s in panel.series for _, g in s.points])
        if top <= 0:
            continue
        title = f"{panel.exercise or 'benchmark'}: GB/s against n (offset 0)"
        if panel.device:
            title += f", {panel.device}"
        out.append(title)
        marks = []
        if panel.copy_gbs:
            marks.append(f"'|' = device copy {panel.copy_gbs:,.1f} GB/s")
        if panel.peak_gbs:
            marks.append(f"full width = {top:,.1f} GB/s"
                         + (" (datasheet peak)" if top == panel.peak_gbs else ""))
        if marks:
            out.append("  " + "; ".join(marks))
        copy_col = int(round(panel.copy_gbs / top * width)) if panel.copy_gbs else None
        lw = max(len(s.label) for s in panel.series)
        sizes = sorted({n for s in panel.series for n, _ in s.points})
        nw = max(len(f"{n:,}") for n in sizes)
        pw = max(len(_pow2(n)) for n in sizes)
        for n in sizes:
            first = True
            for s in panel.series:
                g = dict(s.points).get(n)
                if g is None:
                    continue
                fill = int(round(g / top * width))
                bar = list("#" * fill + " " * (width - fill))
                if copy_col is not None and 0 < copy_col <= width:
                    bar[copy_col - 1] = "|"
                head = f"{n:>{nw},} {_pow2(n):<{pw}}" if first else " " * (nw + pw + 1)
                out.append(f"  {head}  {s.label:<{lw}}  {''.join(bar)}  {g:>9,.1f}")
                first = False
        out.append("")
    if not out:
        return "(no offset-0 measurements to chart)"
    return "\n".join(out).rstrip()


# ---------------------------------------------------------------------------
# Image


def _matplotlib():
    """pyplot with the Agg backend, or None when matplotlib cannot be used."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.ticker import FuncFormatter
    except Exception:  # noqa: BLE001 - absent or broken: either way, no image
        return None
    return plt, FuncFormatter


def plot_benchmark(docs: list[dict], path: str) -> str:
    """Draw the documents into path (.png, .svg or .pdf). Returns a line to
    show the user: where the image went, or why none was written (followed
    by a text chart when matplotlib is missing)."""
    data = panels(docs)
    if not data:
        return "nothing to plot: no valid offset-0 measurements"
    suffix = Path(path).suffix.lower()
    if suffix not in SUFFIXES:
        return (f"cannot plot to {path}: use a file name ending in "
                + ", ".join(SUFFIXES) + "\n" + text_chart(docs))
    mpl = _matplotlib()
    if mpl is None:
        return NO_MATPLOTLIB + "\n" + text_chart(docs)
    plt, FuncFormatter = mpl

    def pow2(v, _pos=None):
        if v <= 0:
            return ""
        k = math.log2(v)
        return f"$2^{{{int(round(k))}}}$" if abs(k - round(k)) < 1e-6 else ""

    fig, axes = plt.subplots(len(data), 1, figsize=(8.5, 4.2 * len(data)), squeeze=False)
    try:
        for ax, panel in zip(axes[:, 0], data):
            for s in panel.series:
                if not s.points:
                    continue
                xs, ys = zip(*s.points)
                ax.plot(xs, ys, marker="o", markersize=3.5, linewidth=1.5, label=s.label)
            if panel.copy_gbs:
                ax.axhline(panel.copy_gbs, color="0.35", linestyle="--", linewidth=1.2,
                           label=f"device copy ({panel.copy_gbs:,.0f} GB/s)")
            if panel.peak_gbs:
                ax.axhline(panel.peak_gbs, color="tab:red", linestyle=":", linewidth=1.2,
                           label=f"datasheet peak ({panel.peak_gbs:,.0f} GB/s)")
            ax.set_xscale("log", base=2)
            ax.xaxis.set_major_formatter(FuncFormatter(pow2))
            ax.set_ylim(bottom=0)
            ax.set_xlabel("n (elements)")
            ax.set_ylabel("GB/s")
            title = f"{panel.exercise}: bandwidth against size (offset 0)" if panel.exercise \
                else "bandwidth against size (offset 0)"
            if panel.device:
                title += f"\n{panel.device}"
            ax.set_title(title, fontsize=11)
            ax.grid(True, which="major", alpha=0.3)
            ax.legend(loc="best", fontsize=9)
        fig.tight_layout()
        fig.savefig(path, format=suffix.lstrip("."), dpi=120)
    except OSError as e:
        return f"cannot write {path}: {e.strerror or e}"
    finally:
        plt.close(fig)
    return f"wrote {path}"
