"""Nsight Compute (ncu): the command line that profiles one call of an
exercise, and a parser for the CSV it writes.

The command (see `command`):

    ncu --target-processes all --csv --page raw --print-units base
        --print-metric-instances details --metrics M1,M2,...
        --log-file OUT.csv
        bwgrade once EXERCISE --worker WORKER --n N     (--rows R --cols C for a matrix)

--target-processes all: bwgrade never runs student code itself; its worker
child process does, so ncu must follow children. `bwgrade once` makes one
validated call, so only the student's kernels of that call are profiled.

--print-metric-instances details: an instanced metric's cell then holds the
aggregate followed by every instance with its name, e.g. for
sass__inst_executed_per_opcode

    60,293,271 (IMAD: 11,010,069; FFMA: 8,388,617; ...; LDG: 2,097,156; ...)

With `values` (what older kits asked for) the names are left out,
"60,293,271 (11,010,069; 8,388,617; ...)", and the opcodes cannot be named.
Non-instanced metrics print the same either way; a few single-instance
launch metrics print as "32 (0: 32)" (details) or "32 (32)" (values): the
first number is the value.

The parser reads both CSV layouts of ncu:

  - raw page (wide): one header row of column names, usually a second row of
    units (empty for the launch columns), then one row per kernel launch;
  - details page (long): one row per (launch, metric), with "Metric Name",
    "Metric Unit" and "Metric Value" columns.

Values may carry thousands separators ("1,073,741,824"), units may be
scaled ("Mbyte", "usecond"): everything is converted to base units (bytes,
nanoseconds, cycles, instructions, Hz). Lines that are not CSV (==PROF==,
==WARNING==, the program's own output) are skipped.
"""
from __future__ import annotations

import csv
import glob
import io
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

# ---------------------------------------------------------------------------
# What to collect

# The course's table. These are collected on every GPU ncu supports (sm_70+).
CORE_METRICS = [
    "gpu__time_duration.sum",                               # duration (ns)
    "gpc__cycles_elapsed.max",                              # elapsed cycles
    "dram__bytes_read.sum",                                 # DRAM bytes read
    "dram__bytes_write.sum",                                # DRAM bytes written
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",   # DRAM throughput, % of peak
    "smsp__inst_executed.sum",                              # warp instructions executed
    "launch__registers_per_thread",
    "sm__warps_active.avg.pct_of_peak_sustained_active",    # achieved occupancy
]
# Nice to have: dropped (with a note) if this ncu does not know them.
EXTRA_METRICS = [
    "sm__cycles_elapsed.avg.per_second",                    # SM clock during the run
    "sm__maximum_warps_per_active_cycle_pct",               # theoretical occupancy
    "smsp__sass_inst_executed_op_global_ld.sum",            # global load instructions (warp)
    "smsp__sass_inst_executed_op_global_st.sum",            # global store instructions (warp)
    "sass__inst_executed_per_opcode",                       # per opcode (instanced)
]
METRICS = CORE_METRICS + EXTRA_METRICS
OPCODE_METRIC = "sass__inst_executed_per_opcode"

BASE_OPTIONS = ["--target-processes", "all", "--csv", "--page", "raw", "--print-units", "base"]
# How instanced metrics are printed, best first: "details" names every
# instance (the opcodes); "values" (for an ncu that lacks "details") gives
# the counts alone; "none" leaves the option out.
INSTANCE_MODES = ["details", "values", "none"]
INSTANCE_OPTIONS = ["--print-metric-instances", "details"]

# Columns of the raw page that describe the launch, not a metric.
LAUNCH_COLUMNS = {"ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Kernel Time",
                  "Context", "Stream", "Block Size", "Grid Size", "Device", "CC",
                  "Section Name", "Metric Name", "Metric Unit", "Metric Value",
                  "Rule Name", "Rule Type", "Rule Description", "Estimated Speedup Type",
                  "Estimated Speedup", "Function Name", "Demangled Name", "Kernel Demangled Name"}

NCU_TIMEOUT = 900          # seconds for one profiling run

PERMISSION_MESSAGE = (
    "ncu may not read the GPU's performance counters here (ERR_NVGPUCTRPERM).\n"
    "By default the NVIDIA driver lets only administrators profile. Either:\n"
    "  - run the profile as root: sudo python3 run.py profile ...  (sudo -E keeps your PATH), or\n"
    "  - allow every user, once, as root: put the line\n"
    "        options nvidia NVreg_RestrictProfilingToAdminUsers=0\n"
    "    in /etc/modprobe.d/nvidia-profiling.conf, then reboot (or reload the nvidia module).\n"
    "In a container, the container also needs the SYS_ADMIN capability (docker run --cap-add SYS_ADMIN).\n"
    "NVIDIA explains this under the name ERR_NVGPUCTRPERM in its developer documentation.")


def find_ncu() -> str | None:
    """ncu on PATH, else in the usual install folders of Nsight Compute."""
    found = shutil.which("ncu")
    if found:
        return found
    cands: list[str] = []
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            cands.append(os.path.join(os.environ[var], "bin", "ncu"))
    cands.append("/usr/local/cuda/bin/ncu")
    cands += sorted(glob.glob("/usr/local/cuda/nsight-compute-*/ncu"), reverse=True)
    cands += sorted(glob.glob("/opt/nvidia/nsight-compute/*/ncu"), reverse=True)
    for c in cands:
        if os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return None


def command(ncu: str, target: list[str], log_file: str, metrics: list[str] | None = None,
            instances: bool | str = True, extra: list[str] | None = None) -> list[str]:
    """The ncu command line profiling `target` (a command) into log_file.
    instances: one of INSTANCE_MODES (True means "details", False "none")."""
    mode = "details" if instances is True else "none" if instances is False else instances
    if mode not in INSTANCE_MODES:
        raise ValueError(f"instances: {instances!r}")
    cmd = [ncu, *BASE_OPTIONS]
    if mode != "none":
        cmd += ["--print-metric-instances", mode]
    cmd += ["--metrics", ",".join(metrics or METRICS), *(extra or []), "--log-file", log_file]
    return cmd + list(target)


# ---------------------------------------------------------------------------
# Diagnosing a failed run


def diagnose(text: str) -> str | None:
    """A known reason why ncu produced nothing useful, as a message; else None."""
    if "ERR_NVGPUCTRPERM" in text:
        return PERMISSION_MESSAGE
    low = text.lower()
    if "no kernels were profiled" in low:
        return ("ncu profiled no kernel: the function launched none (is the exercise still the "
                "stub?), or the call failed before launching")
    if "not supported on this device" in low or "device is not supported" in low:
        return "ncu cannot profile this GPU (not supported by this version of Nsight Compute)"
    return None


def unknown_option(text: str) -> str | None:
    """The option this ncu does not know, if it complained about one."""
    m = re.search(r"unrecogni[sz]ed option '?(--[\w-]+)", text)
    if m:
        return m.group(1)
    m = re.search(r"(?:unknown|invalid) option:?\s*'?(--[\w-]+)", text, re.I)
    return m.group(1) if m else None


def rejects_instance_mode(text: str, mode: str) -> bool:
    """Whether ncu complained about `--print-metric-instances MODE` (an ncu
    that knows the option but not this value, or not the option at all)."""
    if unknown_option(text) == "--print-metric-instances":
        return True
    for line in text.splitlines():
        low = line.lower()
        if "print-metric-instances" not in low and f"'{mode}'" not in low and f'"{mode}"' not in low:
            continue
        if any(w in low for w in ("invalid", "unknown", "unrecogni", "not supported",
                                  "not a valid", "allowed values", "must be one of")):
            return True
    return False


def unknown_metrics(text: str, asked: list[str]) -> list[str]:
    """Metrics of `asked` that ncu's error lines say it does not know."""
    bad = []
    for line in text.splitlines():
        if "==ERROR==" not in line and "error" not in line.lower():
            continue
        if "metric" not in line.lower():
            continue
        for m in asked:
            if re.search(re.escape(m) + r"\b", line):
                bad.append(m)
    return sorted(set(bad), key=asked.index)


# ---------------------------------------------------------------------------
# Values and units

_NUM = re.compile(r"^[+-]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][+-]?\d+)?$")

_PREFIX = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_TIME_NS = {"nsecond": 1.0, "usecond": 1e3, "msecond": 1e6, "second": 1e9,
            "ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}


def parse_number(text: str | None) -> float | None:
    """'1,073,741,824' -> 1073741824.0; '' / 'n/a' / anything else -> None."""
    if text is None:
        return None
    t = text.strip().strip('"').strip()
    if not t:
        return None
    t = t.replace("\u202f", "").replace("\xa0", "")
    if not _NUM.match(t):
        return None
    return float(t.replace(",", ""))


def to_base(value: float, unit: str) -> tuple[float, str]:
    """(value, unit) in base units: byte, nsecond, cycle, inst, hz (per second), %."""
    u = (unit or "").strip()
    if not u or u == "%":
        return value, u
    if u in _TIME_NS:
        return value * _TIME_NS[u], "nsecond"
    # Rates: "byte/second", "Gbyte/second", "cycle/nsecond", "cycle/usecond", "inst/cycle"
    if "/" in u:
        num, den = u.split("/", 1)
        v, nb = to_base(value, num)
        if den in _TIME_NS:
            return v * 1e9 / _TIME_NS[den], f"{nb}/second"
        return v, f"{nb}/{den}"
    m = re.fullmatch(r"([KMGTP]?)(byte|cycle|inst|warp|thread|block|sector|request|hz|Hz)s?", u)
    if m:
        return value * _PREFIX[m.group(1)], m.group(2).lower()
    m = re.fullmatch(r"([KMGTP])hz", u, re.I)
    if m:
        return value * _PREFIX[m.group(1).upper()], "hz"
    return value, u


_INSTANCE = re.compile(
    r"(?P<key>[A-Z_][A-Z0-9_.]*)\s*(?::|=)?\s*"
    r"(?P<val>(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][+-]?\d+)?)")


_NUMTXT = r"(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][+-]?\d+)?"
_AGGREGATE = re.compile(r"^\s*(?P<agg>[+-]?" + _NUMTXT + r")\s*\((?P<inner>.*)\)\s*$", re.S)


@dataclass
class Cell:
    """One cell of an instanced metric, as ncu prints it with
    --print-metric-instances: 'AGGREGATE (INSTANCE; INSTANCE; ...)', each
    instance 'NAME: VALUE' (details) or 'VALUE' (values)."""
    value: float | None                                        # the aggregate
    named: dict[str, float] = field(default_factory=dict)      # name -> value (summed if repeated)
    unnamed: list[float] = field(default_factory=list)         # values printed without a name


def parse_cell(text: str | None) -> Cell | None:
    """'60,293,271 (IMAD: 11,010,069; FFMA: 8,388,617)', '32 (0: 32)' or
    '32 (32)' as a Cell; None if the cell is not in that layout."""
    if not text:
        return None
    m = _AGGREGATE.match(text.strip().strip('"'))
    if not m:
        return None
    cell = Cell(value=parse_number(m.group("agg")))
    for item in m.group("inner").split(";"):
        item = item.strip()
        if not item:
            continue
        name, sep, val = item.rpartition(":")
        v = parse_number(val)
        if v is None:
            return None
        if sep and name.strip():
            key = name.strip()
            cell.named[key] = cell.named.get(key, 0.0) + v
        else:
            cell.unnamed.append(v)
    return cell


def parse_instances(text: str | None) -> dict[str, float]:
    """The named per-instance values of an instanced metric's cell, e.g.
    '60,293,271 (IMAD: 11,010,069; FFMA: 8,388,617)' as ncu prints it with
    details (also 'FFMA: 8,388,608; LDG: 2,097,152', 'FFMA=...' or
    'FFMA 8388608'): {name: count}. A plain number, or counts without names
    ('12 (7; 5)'), give {}."""
    if not text:
        return {}
    cell = parse_cell(text)
    if cell is not None:
        return dict(cell.named)
    out: dict[str, float] = {}
    for m in _INSTANCE.finditer(text):
        key = m.group("key")
        out[key] = out.get(key, 0.0) + float(m.group("val").replace(",", ""))
    return out


# ---------------------------------------------------------------------------
# Parsing


@dataclass
class KernelResult:
    """One profiled kernel launch."""
    id: str
    name: str
    process: str = ""
    pid: str = ""                     # the process id ncu names
    block: str = ""
    grid: str = ""
    device: str = ""
    cc: str = ""
    metrics: dict[str, float | None] = field(default_factory=dict)   # base units
    units: dict[str, str] = field(default_factory=dict)              # base unit names
    raw: dict[str, str] = field(default_factory=dict)                # the cells as written
    instances: dict[str, dict[str, float]] = field(default_factory=dict)   # named instances
    unnamed: dict[str, list[float]] = field(default_factory=dict)          # instances without names

    def get(self, metric: str) -> float | None:
        return self.metrics.get(metric)


def _csv_rows(text: str) -> list[list[str]]:
    """The CSV part of ncu's output: from the first row whose first cell is
    'ID' on, without ==PROF==/==WARNING== lines and other chatter."""
    lines = text.splitlines()
    start = None
    for i, line in enumerate(lines):
        if line.startswith('"ID",') or line.startswith("ID,"):
            start = i
            break
    if start is None:
        return []
    kept = [l for l in lines[start:] if l.strip() and not l.startswith("==")]
    rows = list(csv.reader(io.StringIO("\n".join(kept))))
    return [r for r in rows if r]


def _set_metric(k: KernelResult, name: str, unit: str, cell: str) -> None:
    k.raw[name] = cell
    value = parse_number(cell)
    if value is None:
        parsed = parse_cell(cell)
        if parsed is not None and parsed.value is not None:
            # 'AGGREGATE (instances)': the aggregate is the metric's value.
            # Instances named by their index only ("32 (0: 32)") say nothing more.
            if parsed.named and not all(key.isdigit() for key in parsed.named):
                k.instances[name] = parsed.named
            if parsed.unnamed:
                k.unnamed[name] = parsed.unnamed
            k.metrics[name], k.units[name] = to_base(parsed.value, unit)
            return
        inst = parse_instances(cell)
        if inst:
            k.instances[name] = inst
            # The aggregate, when the cell starts with it: "12,345 (FFMA: ...)".
            lead = re.match(r"\s*((?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?)\b(?!\s*[:=])", cell)
            value = float(lead.group(1).replace(",", "")) if lead else sum(inst.values())
            base, bunit = to_base(value, unit)
            k.metrics[name], k.units[name] = base, bunit
        else:
            k.metrics[name] = None
            k.units[name] = unit
        return
    k.metrics[name], k.units[name] = to_base(value, unit)


def _launch(row: dict[str, str]) -> KernelResult:
    return KernelResult(id=row.get("ID", ""), name=row.get("Kernel Name", ""),
                        process=row.get("Process Name", ""), pid=row.get("Process ID", "").strip(),
                        block=row.get("Block Size", ""),
                        grid=row.get("Grid Size", ""), device=row.get("Device", ""),
                        cc=row.get("CC", ""))


def parse_csv(text: str) -> list[KernelResult]:
    """Every kernel launch in ncu's CSV output (raw or details page), in order."""
    rows = _csv_rows(text)
    if not rows:
        return []
    header = rows[0]
    body = rows[1:]
    if "Metric Name" in header and "Metric Value" in header:
        return _parse_long(header, body)
    units = [""] * len(header)
    if body and (not body[0][0].strip()) and (len(body[0]) > 0):
        # The units row: empty under the launch columns.
        units = body[0] + [""] * (len(header) - len(body[0]))
        body = body[1:]
    out: list[KernelResult] = []
    for r in body:
        if not r or not r[0].strip():
            continue
        row = dict(zip(header, r))
        k = _launch(row)
        for i, col in enumerate(header):
            if col in LAUNCH_COLUMNS or i >= len(r):
                continue
            _set_metric(k, col, units[i] if i < len(units) else "", r[i])
        out.append(k)
    return out


def _parse_long(header: list[str], body: list[list[str]]) -> list[KernelResult]:
    by_id: dict[tuple[str, str], KernelResult] = {}
    order: list[tuple[str, str]] = []
    for r in body:
        row = dict(zip(header, r))
        key = (row.get("ID", ""), row.get("Kernel Name", ""))
        if key not in by_id:
            by_id[key] = _launch(row)
            order.append(key)
        name = row.get("Metric Name", "")
        if name:
            _set_metric(by_id[key], name, row.get("Metric Unit", ""), row.get("Metric Value", ""))
    return [by_id[k] for k in order]


# ---------------------------------------------------------------------------
# The course's view of one kernel


@dataclass
class Summary:
    name: str
    grid: str
    block: str
    n: int
    instructions: float | None            # warp-level instructions executed
    global_loads: float | None            # warp-level global load instructions
    global_stores: float | None
    dram_pct: float | None
    bytes_read: float | None
    bytes_written: float | None
    duration_ns: float | None
    cycles: float | None
    sm_hz: float | None
    registers: float | None
    occupancy: float | None               # achieved, %
    occupancy_max: float | None           # theoretical, %
    opcodes: list[tuple[str, float]]      # (opcode, executed warp instructions), most first
    opcode_raw: str = ""                  # the cell, when it could not be read
    opcode_unnamed: int = 0               # counts printed without opcode names (instances "values")

    @property
    def bandwidth_gbs(self) -> float | None:
        """DRAM bytes moved (read + written) per second of kernel time, GB/s
        (bytes per nanosecond is GB/s)."""
        if self.bytes_read is None or self.bytes_written is None or not self.duration_ns:
            return None
        return (self.bytes_read + self.bytes_written) / self.duration_ns

    def per_element(self, value: float | None) -> float | None:
        return None if value is None or self.n <= 0 else value / self.n


def summarize(k: KernelResult, n: int) -> Summary:
    inst = k.instances.get(OPCODE_METRIC, {})
    opcodes = sorted(inst.items(), key=lambda kv: (-kv[1], kv[0]))
    raw_op = k.raw.get(OPCODE_METRIC, "")
    return Summary(
        name=k.name, grid=k.grid, block=k.block, n=n,
        instructions=k.get("smsp__inst_executed.sum"),
        global_loads=k.get("smsp__sass_inst_executed_op_global_ld.sum"),
        global_stores=k.get("smsp__sass_inst_executed_op_global_st.sum"),
        dram_pct=k.get("dram__throughput.avg.pct_of_peak_sustained_elapsed"),
        bytes_read=k.get("dram__bytes_read.sum"),
        bytes_written=k.get("dram__bytes_write.sum"),
        duration_ns=k.get("gpu__time_duration.sum"),
        cycles=k.get("gpc__cycles_elapsed.max"),
        sm_hz=k.get("sm__cycles_elapsed.avg.per_second"),
        registers=k.get("launch__registers_per_thread"),
        occupancy=k.get("sm__warps_active.avg.pct_of_peak_sustained_active"),
        occupancy_max=k.get("sm__maximum_warps_per_active_cycle_pct"),
        opcodes=opcodes,
        opcode_raw="" if opcodes or OPCODE_METRIC in k.metrics and k.metrics[OPCODE_METRIC] is not None
        else raw_op.strip(),
        opcode_unnamed=0 if opcodes else len(k.unnamed.get(OPCODE_METRIC, [])))


def read_file(path: str | os.PathLike) -> list[KernelResult]:
    return parse_csv(Path(path).read_text(encoding="utf-8", errors="replace"))


# ---------------------------------------------------------------------------
# Running it


def run_profile(ncu_path: str, target: list[str], verbose: bool = False, extra: list[str] | None = None,
                metrics: list[str] | None = None, instances: str | None = None,
                timeout: float = NCU_TIMEOUT) -> tuple[int, str, str, list[str]]:
    """Run ncu on target, retrying without an option or metric this ncu does
    not know. Returns (exit code, CSV log text, program output, notes).
    metrics None: the course's table (METRICS, whose extras may be dropped);
    a list given is asked for as it is. instances None: the best mode this
    ncu knows (INSTANCE_MODES), else that mode."""
    asked = metrics
    metrics = list(METRICS) if asked is None else list(asked)
    instances = instances or INSTANCE_MODES[0]
    notes: list[str] = []
    extra = list(extra or [])
    with tempfile.TemporaryDirectory(prefix="bwlab-ncu-") as tmp:
        log = str(Path(tmp) / "ncu.csv")
        for _attempt in range(5):
            if os.path.exists(log):
                os.remove(log)
            cmd = command(ncu_path, target, log, metrics, instances, extra)
            if verbose:
                print("$ " + " ".join(cmd), flush=True)
            try:
                proc = subprocess.run(cmd, capture_output=True, text=True, errors="replace",
                                      timeout=timeout)
            except subprocess.TimeoutExpired:
                return 124, "", f"ncu did not finish within {timeout:g} s; stopped", notes
            except OSError as e:
                return 127, "", f"cannot start ncu: {e.strerror or e}", notes
            logtext = Path(log).read_text(errors="replace") if os.path.exists(log) else ""
            program = (proc.stdout + proc.stderr).strip()
            everything = logtext + "\n" + program
            opt = unknown_option(everything)
            if instances != "none" and rejects_instance_mode(everything, instances):
                if opt == "--print-metric-instances" or instances == "values":
                    instances = "none"
                    notes.append("this ncu has no --print-metric-instances: no per-opcode counts")
                else:
                    instances = "values"
                    notes.append("this ncu has no --print-metric-instances details: "
                                 "per-opcode counts without names")
                continue
            if opt and opt in extra:
                extra.remove(opt)
                notes.append(f"this ncu does not know {opt}; ran without it")
                continue
            bad = unknown_metrics(everything, metrics)
            if asked is not None:
                return proc.returncode, logtext, program, notes   # the caller's own list: as is
            optional_bad = [m for m in bad if m in EXTRA_METRICS]
            if optional_bad:
                metrics = [m for m in metrics if m not in optional_bad]
                notes.append("this ncu does not know " + ", ".join(optional_bad) + "; left out")
                continue
            if bad:
                # A core metric is missing: try once with the core list alone.
                if metrics != CORE_METRICS:
                    metrics = [m for m in CORE_METRICS if m not in bad]
                    notes.append("this ncu does not know " + ", ".join(bad) + "; left out")
                    continue
            return proc.returncode, logtext, program, notes
        return proc.returncode, logtext, program, notes
