"""The benchmark against Nsight Compute: which kernels each timed row ran,
how long ncu says they took, and whether the benchmark's figure agrees.

Two runs of `bwgrade bench` over the same rows feed it, each row in a fresh
worker process in both:

  - the measurement, as `run.py benchmark` makes it: each row's median time
    per call;
  - a run under ncu with `--profile-calls CALLS`: after the same validated
    call and warmup, the worker makes CALLS calls timed exactly as the
    samples are, each bracketed alone with cudaProfilerStart/Stop (ncu
    profiles nothing else). Its JSON names each row's worker process id;
    ncu's CSV names the process of every kernel. A row's kernels are cut
    into CALLS equal runs, one per call, and ncu's figure is the median of
    the calls' summed durations (one call alone varies by about 1 % on an
    H100).

Why not one run: ncu's hooks slow every launch even outside the profiled
range (measured on the H100: about 45 us per call, 4-50 % of the figures),
so the timed samples of a run under ncu are no measurement.

The rule: the benchmark times the whole call (launch included) between two
events, ncu the kernels alone, so the benchmark is never faster than the sum
of the kernels' durations, within NOISE, how far the medians of one row
measured in two processes differ on an H100; for a call that is one kernel
the two agree within TOLERANCE. Several kernels may leave gaps between them,
so only the first half of the rule applies to them.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from . import ncu

TOLERANCE = 0.02          # one-kernel calls: benchmark within 2 % above ncu's duration
CALLS = 5                 # calls profiled per row
NOISE = 0.005             # two processes' medians of one row: seen up to 0.4 % apart

# What the ncu run collects: the duration and the launch configuration.
METRICS = [
    "gpu__time_duration.sum",
    "launch__grid_size",
    "launch__block_size",
    "launch__shared_mem_per_block_dynamic",
    "launch__shared_mem_per_block_static",
    "launch__registers_per_thread",
]
# ncu options: follow the worker processes; profile only inside the
# cudaProfilerStart/Stop range the worker opens; leave the caches alone (the
# worker flushes L2 before the call, as in the measurement) and the clocks too
# (the measurement runs at whatever clock the GPU chooses).
OPTIONS = ["--target-processes", "all", "--profile-from-start", "off",
           "--cache-control", "none", "--clock-control", "none",
           "--csv", "--page", "raw", "--print-units", "base"]


def ncu_command(ncu_path: str, target: list[str], log_file: str) -> list[str]:
    return [ncu_path, *OPTIONS, "--metrics", ",".join(METRICS), "--log-file", log_file, *target]


@dataclass
class Kernel:
    name: str
    grid: int | None
    block: int | None
    smem_dynamic: int | None       # bytes
    smem_static: int | None
    registers: int | None
    duration_ns: float | None

    def launch(self) -> str:
        """'grid 174,763 x 256 threads, 6.53 KB dynamic shared, 32 registers'"""
        parts = []
        if self.grid is not None and self.block is not None:
            parts.append(f"grid {self.grid:,} x {self.block} threads")
        if self.smem_dynamic:
            parts.append(f"{self.smem_dynamic / 1000:.2f} KB dynamic shared")
        if self.smem_static:
            parts.append(f"{self.smem_static / 1000:.2f} KB static shared")
        if self.registers is not None:
            parts.append(f"{self.registers} registers")
        return ", ".join(parts)


def _int(x: float | None) -> int | None:
    return None if x is None else int(round(x))


def short_name(name: str) -> str:
    """A kernel's name without its template arguments and parameters."""
    cut = len(name)
    for ch in "<(":
        i = name.find(ch)
        if i > 0:
            cut = min(cut, i)
    base = name[:cut].strip()
    # "void ns::kernel" -> "ns::kernel"
    return base.split(" ")[-1] if base else name


def kernels_by_process(csv_text: str) -> dict[str, list[Kernel]]:
    """ncu's CSV: the kernels it profiled, grouped by process id, in order."""
    out: dict[str, list[Kernel]] = {}
    for k in ncu.parse_csv(csv_text):
        out.setdefault(k.pid, []).append(Kernel(
            name=short_name(k.name),
            grid=_int(k.get("launch__grid_size")),
            block=_int(k.get("launch__block_size")),
            smem_dynamic=_int(k.get("launch__shared_mem_per_block_dynamic")),
            smem_static=_int(k.get("launch__shared_mem_per_block_static")),
            registers=_int(k.get("launch__registers_per_thread")),
            duration_ns=k.get("gpu__time_duration.sum")))
    return out


@dataclass
class Row:
    n: int
    offset: int
    bench_ms: float | None          # the measurement's median per call
    bench_status: str
    gbs: float | None
    calls: list[list[Kernel]] = field(default_factory=list)   # the profiled calls' kernels
    ok: bool = False
    verdict: str = ""

    @property
    def kernels(self) -> list[Kernel]:
        """The kernels of one call (the first profiled)."""
        return self.calls[0] if self.calls else []

    @property
    def call_ms(self) -> list[float]:
        """Each profiled call's summed kernel durations, ms."""
        return [sum(k.duration_ns for k in c) / 1e6 for c in self.calls   # type: ignore[misc]
                if c and all(k.duration_ns is not None for k in c)]

    @property
    def ncu_ms(self) -> float | None:
        """The median over the profiled calls."""
        ms = sorted(self.call_ms)
        if not ms:
            return None
        mid = len(ms) // 2
        return ms[mid] if len(ms) % 2 else (ms[mid - 1] + ms[mid]) / 2

    @property
    def ratio(self) -> float | None:
        if self.bench_ms is None or not self.ncu_ms:
            return None
        return self.bench_ms / self.ncu_ms


def judge(row: Row) -> Row:
    """Sets row.ok and row.verdict."""
    ratio = row.ratio
    if row.bench_status != "ok" or row.bench_ms is None:
        row.ok, row.verdict = False, f"no benchmark figure ({row.bench_status})"
    elif not row.kernels:
        row.ok, row.verdict = False, "ncu saw no kernel in the profiled call"
    elif ratio is None:
        row.ok, row.verdict = False, "ncu gave no duration"
    elif ratio < 1.0 - NOISE:
        row.ok = False
        row.verdict = (f"the benchmark is {100 * (1 - ratio):.1f} % faster than the kernels' own "
                       "duration: it cannot have timed the whole call")
    elif len(row.kernels) == 1 and ratio > 1 + TOLERANCE:
        row.ok = False
        row.verdict = (f"the benchmark is {100 * (ratio - 1):.1f} % slower than the kernel: more "
                       f"than {100 * TOLERANCE:.0f} % apart")
    elif len(row.kernels) == 1:
        row.ok = True
        row.verdict = "ok" if ratio >= 1.0 else (
            f"ok ({100 * (1 - ratio):.1f} % under ncu: within the {100 * NOISE:.1f} % two "
            "processes differ by)")
    else:
        row.ok = True
        row.verdict = (f"ok ({len(row.kernels)} kernels; the {100 * (ratio - 1):.1f} % over their "
                       "sum is launch gaps and host work between them)")
    return row


def split_calls(kernels: list[Kernel], calls: int) -> list[list[Kernel]] | None:
    """A worker's kernels as `calls` equal runs in order (every timed call
    of a row does the same work); None when they do not divide evenly."""
    if calls < 1 or len(kernels) % calls:
        return None
    per = len(kernels) // calls
    return [kernels[i * per:(i + 1) * per] for i in range(calls)]


def rows_of(bench_doc: dict, profile_doc: dict, csv_text: str,
            calls: int = CALLS) -> tuple[list[Row], list[str]]:
    """Pairs the measurement's rows with the profiled ones (same n and
    offset) and with the kernels of each profiled row's worker process.
    Returns the judged rows and notes about anything that did not pair."""
    notes: list[str] = []
    by_pid = kernels_by_process(csv_text)
    prof = {(r.get("n"), r.get("offset")): r for r in profile_doc.get("rows", [])}
    rows: list[Row] = []
    used: set[str] = set()
    for r in bench_doc.get("rows", []):
        row = Row(n=int(r.get("n", 0)), offset=int(r.get("offset", 0)),
                  bench_ms=r.get("ms_median") if r.get("status") == "ok" else None,
                  bench_status=str(r.get("status")), gbs=r.get("gbs"))
        p = prof.get((r.get("n"), r.get("offset")))
        pid = p.get("worker_pid") if p else None
        if p is None:
            notes.append(f"n = {row.n:,}, offset {row.offset}: not in the profiled run")
        elif pid is not None:
            pid_key = str(int(pid))
            used.add(pid_key)
            seen = by_pid.get(pid_key, [])
            split = split_calls(seen, calls)
            if split is None:
                notes.append(f"n = {row.n:,}, offset {row.offset}: {len(seen)} kernels do not "
                             f"divide into {calls} calls; taken as one call")
                split = [seen] if seen else []
            row.calls = split
        rows.append(judge(row))
    extra = [pid for pid in by_pid if pid not in used]
    if extra:
        notes.append(f"kernels of {len(extra)} process(es) matched no row: "
                     + ", ".join(extra))
    return rows, notes
