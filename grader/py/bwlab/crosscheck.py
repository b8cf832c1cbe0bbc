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
    the calls' summed durations. One call alone varies by about 1 %: 21
    calls of one grid-stride kernel at n = 2^28 - 1 on an H100 spanned
    0.8846-0.8956 ms; with 5 calls an earlier run's median was 0.7 % off
    the benchmark's, with 21 that row agreed within 0.1 %.

Why not one run: ncu's hooks slow every launch even outside the profiled
range (measured on the H100: about 45 us per call, 4-50 % of the figures),
so the timed samples of a run under ncu are no measurement.

The rule. The benchmark's figure is the span between two events around the
call less the span two events alone take (measured in each worker, about
1.25 us on an H100; the row's `timer_ms`); ncu times the kernels. That
estimate of the events' own cost is not exact for every kernel (measured:
the subtracted figure sits 0.1-0.9 % under ncu for CUB's kernel on an H200
at 2^26 + 5, 0.1-1 % over it for the solutions), so:
  - the events bracket the call: their raw span (figure + timer_ms) is never
    shorter than the sum of the kernels' durations, within NOISE, how far
    the medians of one row measured in two processes differ. Shorter means
    work ran outside the timed region;
  - for a call that is one kernel the figure agrees with ncu's duration
    within TOLERANCE either way. Several kernels may leave gaps between
    them, so only the first rule applies to them.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from . import ncu

TOLERANCE = 0.02          # one-kernel calls: benchmark within 2 % above ncu's duration
CALLS = 21                # calls profiled per row
NOISE = 0.005             # two processes' medians of one row: seen up to 0.4 % apart

# What the ncu run collects: the duration and the launch configuration.
METRICS = [
    "gpu__time_duration.sum",
    "launch__grid_size",
    "launch__block_size",
    "launch__shared_mem_per_block_dynamic",
    "launch__shared_mem_per_block_static",
    "launch__registers_per_thread",
    "sm__cycles_elapsed.avg.per_second",   # the SM clock the kernel ran at
]
# ncu options: follow the worker processes; profile only inside the
# cudaProfilerStart/Stop range the worker opens; leave the caches alone (the
# worker flushes L2 before the call, as in the measurement) and the clocks too
# (the measurement runs at whatever clock the GPU chooses).
OPTIONS = ["--target-processes", "all", "--profile-from-start", "off",
           "--cache-control", "none", "--clock-control", "none",
           "--csv", "--page", "raw", "--print-units", "base"]


def profiled_target(bench_cmd: list[str], calls: int, json_path: str) -> list[str]:
    """The profiled run's bwgrade command: the measured run's, with `calls`
    bracketed calls and always --no-copy. The copy is not cross-checked, and
    without copies bwgrade starts no baseline worker: under ncu that second
    CUDA process made reduce_sum's kernel 4 % slower (docs/BENCHMARKS.md)."""
    cmd = list(bench_cmd)
    if "--no-copy" not in cmd:
        cmd.append("--no-copy")
    return cmd + ["--profile-calls", str(calls), "--json", json_path]


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
    clock_hz: float | None = None     # SM clock during the kernel

    def launch(self) -> str:
        """'grid 174,763 x 256 threads, 6.53 KB dynamic shared, 32 registers,
        SM at 1,980 MHz'"""
        parts = []
        if self.grid is not None and self.block is not None:
            parts.append(f"grid {self.grid:,} x {self.block} threads")
        if self.smem_dynamic:
            parts.append(f"{self.smem_dynamic / 1000:.2f} KB dynamic shared")
        if self.smem_static:
            parts.append(f"{self.smem_static / 1000:.2f} KB static shared")
        if self.registers is not None:
            parts.append(f"{self.registers} registers")
        if self.clock_hz:
            parts.append(f"SM at {self.clock_hz / 1e6:,.0f} MHz")
        return ", ".join(parts)


def _int(x: float | None) -> int | None:
    return None if x is None else int(round(x))


def short_name(name: str) -> str:
    """A kernel's name without its return type, template arguments and
    parameters: "void <unnamed>::tile<128, 64>(const T *, T *)" ->
    "<unnamed>::tile". An anonymous namespace's own brackets are part of the
    name, not a template's or a parameter list's."""
    marks = {"<unnamed>": "\x01", "(anonymous namespace)": "\x02"}
    s = name
    for text, mark in marks.items():
        s = s.replace(text, mark)
    cut = len(s)
    for ch in "<(":
        i = s.find(ch)
        if i > 0:
            cut = min(cut, i)
    base = s[:cut].strip()
    # "void ns::kernel" -> "ns::kernel"
    base = base.split(" ")[-1] if base else ""
    for text, mark in marks.items():
        base = base.replace(mark, text)
    return base or name


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
            duration_ns=k.get("gpu__time_duration.sum"),
            clock_hz=k.get("sm__cycles_elapsed.avg.per_second")))
    return out


@dataclass
class Row:
    n: int
    offset: int
    bench_ms: float | None          # the measurement's median per call
    bench_status: str
    gbs: float | None
    timer_ms: float = 0.0           # the events' own span, subtracted from bench_ms
    calls: list[list[Kernel]] = field(default_factory=list)   # the profiled calls' kernels
    ok: bool = False
    verdict: str = ""
    shape: str = ""                 # a matrix's "RxC"; "" for a vector

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
        return row
    if not row.kernels:
        row.ok, row.verdict = False, "ncu saw no kernel in the profiled call"
        return row
    if ratio is None or row.ncu_ms is None:
        row.ok, row.verdict = False, "ncu gave no duration"
        return row
    raw = row.bench_ms + row.timer_ms
    one = len(row.kernels) == 1
    row.ok = False
    if raw < row.ncu_ms * (1.0 - NOISE):
        row.verdict = (f"the events around the call span {raw:.4f} ms, less than the kernels' own "
                       f"{row.ncu_ms:.4f} ms: the benchmark cannot have timed the whole call")
    elif one and ratio > 1 + TOLERANCE:
        row.verdict = (f"the benchmark is {100 * (ratio - 1):.1f} % slower than the kernel: more "
                       f"than {100 * TOLERANCE:.0f} % apart")
    elif one and ratio < 1 - TOLERANCE:
        row.verdict = (f"the benchmark is {100 * (1 - ratio):.1f} % faster than the kernel: more "
                       f"than {100 * TOLERANCE:.0f} % apart")
    elif one:
        row.ok = True
        row.verdict = "ok" if ratio >= 1.0 else (
            f"ok ({100 * (1 - ratio):.1f} % under ncu; the events alone span "
            f"{row.timer_ms * 1e3:.2f} us)")
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
    def key(r: dict) -> tuple:
        return r.get("rows"), r.get("cols"), r.get("n"), r.get("offset")

    prof = {key(r): r for r in profile_doc.get("rows", [])}
    rows: list[Row] = []
    used: set[str] = set()
    for r in bench_doc.get("rows", []):
        row = Row(n=int(r.get("n", 0)), offset=int(r.get("offset", 0)),
                  bench_ms=r.get("ms_median") if r.get("status") == "ok" else None,
                  bench_status=str(r.get("status")), gbs=r.get("gbs"),
                  timer_ms=float(r.get("timer_ms") or 0.0),
                  shape=f"{r['rows']}x{r['cols']}" if r.get("rows") else "")
        p = prof.get(key(r))
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
