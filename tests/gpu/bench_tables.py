"""The tables of docs/BENCHMARKS.md from one `run.py benchmark --solutions
--peers --json FILE` run:

    python3 tests/gpu/bench_tables.py FILE

Prints, per exercise, the Markdown table (solution, % datasheet, % copy, each
peer's GB/s and the solution's speed-up over it) and the same-run copy line."""
import json
import sys


def fmt(x, digits=1):
    return "-" if x is None else f"{x:,.{digits}f}"


def table(ex: str, labels: dict) -> list[str]:
    sol = labels["solution"]
    peers = [k for k in labels if k != "solution"]
    head = ["n", "offset", "solution GB/s", "% datasheet", "% copy"]
    head += [f"{p} GB/s" for p in peers] + [f"solution / {p}" for p in peers]
    out = [f"### {ex}", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for i, row in enumerate(sol["rows"]):
        size = f"{row['rows']}x{row['cols']}" if row.get("rows") else f"{row['n']:,}"
        cells = [size, str(row["offset"]), fmt(row.get("gbs")),
                 fmt(row.get("pct_peak")), fmt(row.get("pct_copy"))]
        peer_gbs = [labels[p]["rows"][i].get("gbs") for p in peers]
        cells += [fmt(g) for g in peer_gbs]
        cells += [f"{row['gbs'] / g:.2f}x" if g and row.get("gbs") else "-" for g in peer_gbs]
        out.append("| " + " | ".join(cells) + " |")
    c = sol["copy"]
    how = {"kernel": " (the kit's copy kernel, faster than cudaMemcpy here)",
           "memcpy": " (cudaMemcpy)"}.get(c.get("method"), "")
    out += ["", f"Same-run device-to-device copy{how}: {fmt(c['gbs'])} GB/s ({fmt(c['pct_peak'])}% of the "
                f"{fmt(sol['device']['peak_gbs'])} GB/s datasheet "
                f"peak), counting bytes read and written.", ""]
    return out


def main() -> int:
    doc = json.load(open(sys.argv[1]))
    for ex, labels in doc["exercises"].items():
        print("\n".join(table(ex, labels)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
