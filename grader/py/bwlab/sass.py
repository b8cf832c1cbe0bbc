"""Reading compiler output: SASS listings (cuobjdump -sass, nvdisasm), PTX,
and the resource lines of ptxas (-Xptxas -v / --resource-usage) and
cuobjdump -res-usage.

Everything here works on text, so it is tested without a GPU. What it
extracts per function:

  - the memory instructions, each with its state space (global, generic,
    local, shared), direction (load or store) and width in bits;
  - the loops: a branch to an earlier address (a back edge) closes a loop
    that spans from the target to the branch;
  - a verdict on vectorized access (see `verdict`).

The counts are static: instructions as they appear in the code, not how
often they run. `run.py profile` (ncu) gives the executed counts.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from collections import Counter
from dataclasses import dataclass, field

# ---------------------------------------------------------------------------
# Data


@dataclass
class Access:
    """One memory instruction in the code."""
    op: str            # as written, less predicate and operands: LDG.E.128, ld.global.v4.u32
    kind: str          # "load" | "store" | "atomic"
    space: str         # "global" | "generic" | "local" | "shared" | "bulk"
    width: int         # bits moved per thread by this instruction (0: unknown, e.g. bulk copies)
    where: int         # SASS byte address, or PTX line number within the function
    in_loop: bool = False


@dataclass
class Resources:
    """What ptxas (or cuobjdump -res-usage) says about one function."""
    registers: int | None = None
    stack: int | None = None          # bytes of stack frame
    spill_stores: int | None = None   # bytes
    spill_loads: int | None = None    # bytes
    shared: int | None = None         # bytes of static shared memory
    local: int | None = None          # bytes of local memory (cuobjdump's LOCAL)
    entry: bool | None = None         # True: a kernel (__global__); False: a device function

    def merge(self, other: "Resources") -> "Resources":
        """Fields of self, filled in from other where self has none."""
        out = Resources()
        for name in out.__dataclass_fields__:
            mine = getattr(self, name)
            setattr(out, name, mine if mine is not None else getattr(other, name))
        return out


@dataclass
class Function:
    name: str                       # as the tool printed it (mangled for C++)
    lines: list[str] = field(default_factory=list)   # the listing, cleaned
    accesses: list[Access] = field(default_factory=list)
    loops: list[tuple[int, int]] = field(default_factory=list)  # (first, last) where
    entry: bool | None = None
    display: str = ""               # demangled name, when known

    @property
    def shown_name(self) -> str:
        return self.display or self.name


@dataclass
class Verdict:
    state: str      # "yes" | "partly" | "no" | "none"
    text: str       # one line for the user
    basis: str      # "loops" | "whole function"
    load_width: int = 0
    store_width: int = 0


HEURISTIC = ("heuristic: the hot path is the code inside loops (a branch back to an earlier "
             "instruction) if a loop holds global accesses, else the whole kernel; it is "
             "vectorized when its widest global load and store are 64 or 128 bits. Counts are "
             "static (in the code), not executed: run.py profile counts executed instructions.")

# ---------------------------------------------------------------------------
# SASS

# /*0150*/  @!P0 LDG.E.128 R4, desc[UR6][R8.64] ;  /* 0x... */
_SASS_INSN = re.compile(
    r"^\s*/\*(?P<addr>[0-9a-fA-F]{4,})\*/\s+"
    r"(?:\{\s*)?"
    r"(?P<pred>@!?U?P[T0-9]+\s+)?"
    r"(?P<op>[A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)"
    r"(?P<args>[^;]*);")
_SASS_ENCODING = re.compile(r"\s*/\*\s*0x[0-9a-fA-F]{16}\s*\*/\s*$")
_CUOBJDUMP_FUNC = re.compile(r"^\s*Function\s*:\s*(\S+)\s*$")
_NVDISASM_FUNC = re.compile(r"^\.text\.(\S+):\s*$")
_NVDISASM_ENTRY = re.compile(r"^\s*\.other\s+(\S+?),.*STO_CUDA_ENTRY")
_LABEL = re.compile(r"^\s*(\.L[\w.$]*|[A-Za-z_$][\w.$]*):\s*$")
_HEX_TARGET = re.compile(r"\b0x([0-9a-fA-F]+)\b")
_LABEL_TARGET = re.compile(r"`\(([^)]+)\)")

_SASS_BRANCHES = {"BRA", "BRX", "JMP", "JMX"}


def _sass_width(mods: list[str]) -> int:
    width = 32
    for m in mods:
        if m in ("U8", "S8"):
            width = 8
        elif m in ("U16", "S16"):
            width = 16
        elif m in ("64", "128", "256"):
            width = int(m)
    return width


def classify_sass(op: str) -> tuple[str, str, int] | None:
    """(kind, space, width) of a SASS memory opcode, or None for anything else.

    LDG/STG: global. LD/ST: generic (the address may be global; the compiler
    could not prove it). LDL/STL: local (spills, or arrays indexed at run
    time). LDS/STS: shared. LDGSTS: an asynchronous global-to-shared copy,
    counted as a global load. ATOMG/RED: global atomics. UTMALDG/UTMASTG/
    UBLKCP: bulk (TMA) copies, width unknown (UBLKCP.G.S writes global
    memory, other UBLKCP forms read it).
    """
    parts = op.split(".")
    base, mods = parts[0], parts[1:]
    table = {
        "LDG": ("load", "global"), "STG": ("store", "global"),
        "LD": ("load", "generic"), "ST": ("store", "generic"),
        "LDL": ("load", "local"), "STL": ("store", "local"),
        "LDS": ("load", "shared"), "STS": ("store", "shared"),
        "LDGSTS": ("load", "global"),
        "ATOMG": ("atomic", "global"), "RED": ("atomic", "global"),
        "ATOM": ("atomic", "generic"),
    }
    if base in table:
        kind, space = table[base]
        return kind, space, _sass_width(mods)
    if base == "UBLKCP":     # UBLKCP.S.G: into shared memory; UBLKCP.G.S: out of it
        return ("store" if mods[:1] == ["G"] else "load"), "bulk", 0
    if base in ("UTMALDG", "UTMAPF"):
        return "load", "bulk", 0
    if base in ("UTMASTG", "UTMAREDG"):
        return "store", "bulk", 0
    return None


def clean_sass_line(line: str) -> str | None:
    """A listing line without its binary encoding; None for encoding-only lines."""
    if re.match(r"^\s*/\*\s*0x[0-9a-fA-F]{16}\s*\*/\s*$", line):
        return None
    return _SASS_ENCODING.sub("", line).rstrip()


def parse_sass(text: str) -> list[Function]:
    """Functions of a cuobjdump -sass or nvdisasm listing."""
    funcs: list[Function] = []
    cur: Function | None = None
    entries: set[str] = set()
    branches: list[tuple[Function, int, str]] = []   # (function, address, target text)
    labels: dict[tuple[int, str], int] = {}          # (function index, label) -> address
    pending_labels: list[str] = []

    for raw in text.splitlines():
        m = _CUOBJDUMP_FUNC.match(raw) or _NVDISASM_FUNC.match(raw)
        if m:
            cur = Function(name=m.group(1))
            funcs.append(cur)
            pending_labels = []
            continue
        m = _NVDISASM_ENTRY.match(raw)
        if m:
            entries.add(m.group(1))
        if cur is None:
            continue
        line = clean_sass_line(raw)
        if line is None:
            continue
        if line.strip() in ("", ".........."):
            continue
        insn = _SASS_INSN.match(line)
        if not insn:
            lab = _LABEL.match(line)
            if lab:
                pending_labels.append(lab.group(1))
            # Section directives of nvdisasm and the .headerflags line are kept
            # out of the listing; labels stay (branches name them).
            if lab or not line.lstrip().startswith("."):
                cur.lines.append(line)
            continue
        addr = int(insn.group("addr"), 16)
        for lab in pending_labels:
            labels[(len(funcs) - 1, lab)] = addr
        pending_labels = []
        op = insn.group("op")
        cur.lines.append(line)
        cls = classify_sass(op)
        if cls:
            kind, space, width = cls
            cur.accesses.append(Access(op, kind, space, width, addr))
        elif op.split(".")[0] in _SASS_BRANCHES:
            branches.append((cur, addr, insn.group("args")))

    index = {id(f): i for i, f in enumerate(funcs)}
    for fn, addr, args in branches:
        target = None
        m = _LABEL_TARGET.search(args)
        if m:
            target = labels.get((index[id(fn)], m.group(1)))
        else:
            m = _HEX_TARGET.search(args)
            if m:
                target = int(m.group(1), 16)
        # A branch to itself is the trap loop after the last EXIT, not a loop.
        if target is not None and target < addr:
            fn.loops.append((target, addr))

    for fn in funcs:
        _trim_padding(fn)
        _mark_loops(fn)
        if fn.name in entries:
            fn.entry = True
    return funcs


def _trim_padding(fn: Function) -> None:
    """Drop the NOP padding at the end of a function's listing."""
    while fn.lines and re.search(r"\bNOP\s*;", fn.lines[-1]):
        fn.lines.pop()


def _mark_loops(fn: Function) -> None:
    for a in fn.accesses:
        a.in_loop = any(lo <= a.where <= hi for lo, hi in fn.loops)


# ---------------------------------------------------------------------------
# PTX

_PTX_FUNC = re.compile(
    r"^\s*(?:\.(?:visible|weak|extern)\s+)*\.(?P<kind>entry|func)\s+"
    r"(?:\([^)]*\)\s*)?(?P<name>[\w$.]+)")
_PTX_LABEL = re.compile(r"^\s*(\$?[\w$]+):\s*$")
_PTX_INSN = re.compile(r"^\s*(?:@!?%\w+\s+)?(?P<op>[a-z][a-z0-9_]*(?:\.[\w:]+)*)\b(?P<args>[^;]*);")
_PTX_TYPE = re.compile(r"^(?:[usbf](8|16|32|64|128)|bf16|f16x2|bf16x2|e4m3x2|e5m2x2)$")
_PTX_SPACES = {"global", "shared", "local", "param", "const", "tex"}


def _ptx_type_bits(t: str) -> int:
    if t in ("bf16", "f16"):
        return 16
    if t in ("bf16x2", "f16x2", "e4m3x2", "e5m2x2"):
        return 32
    m = re.match(r"^[usbf](\d+)$", t)
    return int(m.group(1)) if m else 0


def _classify_ptx_bulk(rest: list[str]) -> tuple[str, str, int] | None:
    """cp.async.bulk[.tensor.Nd].DST.SRC...: the destination's space says the
    direction (global: a store from shared memory; shared: a load).
    commit_group and wait_group only order earlier copies: no traffic."""
    rest = [p for p in rest if p != "tensor" and not re.fullmatch(r"\dd", p)]
    if not rest or rest[0] in ("commit_group", "wait_group"):
        return None
    return ("store" if rest[0].startswith("global") else "load", "bulk", 0)


def classify_ptx(op: str, args: str = "") -> tuple[str, str, int] | None:
    """(kind, space, width) of a PTX memory instruction, or None.

    ld/st/ldu with their state space (none written: generic); vector forms
    .v2/.v4/.v8 multiply the element width. cp.async ... 16 is a 16-byte
    global load; cp.async.bulk is a bulk copy (width unknown). Loads of
    kernel parameters and constants are not memory traffic and return None.
    """
    parts = op.split(".")
    base = parts[0]
    if base == "cp" and len(parts) > 1 and parts[1] == "async":
        if "bulk" in parts:
            return _classify_ptx_bulk(parts[parts.index("bulk") + 1:])
        m = re.search(r",\s*(\d+)\s*(?:,|$)", args)
        size = int(m.group(1)) if m else 0
        return ("load", "global", size * 8)
    if base in ("atom", "red"):
        space = "global" if "global" in parts else ("shared" if "shared" in parts else "generic")
        return ("atomic", space, 0)
    if base not in ("ld", "st", "ldu"):
        return None
    space = "generic"
    vec = 1
    bits = 0
    for p in parts[1:]:
        if p in _PTX_SPACES:
            space = p
        elif p in ("v2", "v4", "v8"):
            vec = int(p[1:])
        elif _PTX_TYPE.match(p):
            bits = _ptx_type_bits(p)
    if space in ("param", "const", "tex"):
        return None
    return ("store" if base == "st" else "load", space, vec * bits)


def parse_ptx(text: str) -> list[Function]:
    """Functions (.entry kernels and .func device functions) of a PTX file.
    Declarations without a body (extern prototypes) are left out."""
    funcs: list[Function] = []
    cur: Function | None = None
    depth = 0
    has_body = False
    labels: dict[str, int] = {}
    branches: list[tuple[int, str]] = []
    lineno = 0

    def finish(fn: Function | None) -> None:
        if fn is None:
            return
        for where, target in branches:
            t = labels.get(target)
            if t is not None and t < where:
                fn.loops.append((t, where))
        _mark_loops(fn)
        if has_body:
            funcs.append(fn)

    for raw in text.splitlines():
        line = raw.rstrip()
        code = line.split("//", 1)[0]
        if depth == 0:
            m = _PTX_FUNC.match(code)
            if m:
                finish(cur)
                cur = Function(name=m.group("name"), entry=(m.group("kind") == "entry"))
                labels, branches, lineno, has_body = {}, [], 0, False
                cur.lines.append(line)
                continue
            if cur is None:
                continue
            if code.strip() == ";" or (not has_body and code.rstrip().endswith(";")):
                # The end of a prototype: no body follows.
                cur.lines.append(line)
                finish(cur)
                cur = None
                continue
        if cur is None:
            continue
        cur.lines.append(line)
        lineno += 1
        opens, closes = code.count("{"), code.count("}")
        if opens:
            has_body = True
        depth += opens - closes
        if has_body and depth <= 0 and closes:
            depth = 0
            finish(cur)
            cur = None
            continue
        lab = _PTX_LABEL.match(code)
        if lab:
            labels[lab.group(1)] = lineno
            continue
        insn = _PTX_INSN.match(code.replace("{", " ").replace("}", " ")
                               if code.lstrip().startswith("{") else code)
        if not insn:
            continue
        op = insn.group("op")
        if op.split(".")[0] == "bra":
            branches.append((lineno, insn.group("args").strip()))
            continue
        cls = classify_ptx(op, insn.group("args"))
        if cls:
            kind, space, width = cls
            cur.accesses.append(Access(op, kind, space, width, lineno))
    finish(cur)
    return funcs


# ---------------------------------------------------------------------------
# Resource usage

_PTXAS_COMPILING = re.compile(r"Compiling entry function '([^']+)'")
_PTXAS_PROPERTIES = re.compile(r"Function properties for (\S+)")
_PTXAS_FRAME = re.compile(
    r"(\d+) bytes stack frame,\s*(\d+) bytes spill stores,\s*(\d+) bytes spill loads")
_PTXAS_USED = re.compile(r"Used (\d+) registers")
_PTXAS_SMEM = re.compile(r"(\d+) bytes smem")
_RES_FUNC = re.compile(r"^\s*Function\s+(\S+?):\s*$")
_RES_FIELDS = re.compile(r"\b(REG|STACK|SHARED|LOCAL):(\d+)")


def parse_ptxas_info(text: str) -> dict[str, Resources]:
    """Per function, from ptxas's verbose lines (nvcc --resource-usage or -Xptxas -v)."""
    out: dict[str, Resources] = {}
    compiling: str | None = None
    properties: str | None = None
    for line in text.splitlines():
        m = _PTXAS_COMPILING.search(line)
        if m:
            compiling = m.group(1)
            out.setdefault(compiling, Resources()).entry = True
            continue
        m = _PTXAS_PROPERTIES.search(line)
        if m:
            properties = m.group(1)
            out.setdefault(properties, Resources())
            continue
        m = _PTXAS_FRAME.search(line)
        if m and properties:
            r = out[properties]
            r.stack, r.spill_stores, r.spill_loads = (int(g) for g in m.groups())
            continue
        m = _PTXAS_USED.search(line)
        if m and compiling:
            r = out[compiling]
            r.registers = int(m.group(1))
            s = _PTXAS_SMEM.search(line)
            r.shared = int(s.group(1)) if s else (r.shared or 0)
    for r in out.values():
        if r.entry is None:
            r.entry = False
    return out


def parse_res_usage(text: str) -> dict[str, Resources]:
    """Per function, from cuobjdump -res-usage."""
    out: dict[str, Resources] = {}
    cur: str | None = None
    for line in text.splitlines():
        m = _RES_FUNC.match(line)
        if m:
            cur = m.group(1)
            out[cur] = Resources()
            continue
        if cur is None:
            continue
        fields = dict(_RES_FIELDS.findall(line))
        if fields:
            r = out[cur]
            r.registers = int(fields["REG"]) if "REG" in fields else r.registers
            r.stack = int(fields["STACK"]) if "STACK" in fields else r.stack
            r.shared = int(fields["SHARED"]) if "SHARED" in fields else r.shared
            r.local = int(fields["LOCAL"]) if "LOCAL" in fields else r.local
    return out


# ---------------------------------------------------------------------------
# Summaries


def access_counts(fn: Function, spaces: tuple[str, ...] = ("global", "generic")) -> list[tuple[str, int]]:
    """(opcode, count) of the function's memory instructions in the given
    spaces, loads first, widest first."""
    counts = Counter(a.op for a in fn.accesses if a.space in spaces)
    first = {}
    for a in fn.accesses:
        first.setdefault(a.op, a)
    order = {"load": 0, "store": 1, "atomic": 2}
    return sorted(counts.items(),
                  key=lambda kv: (order[first[kv[0]].kind], -first[kv[0]].width, kv[0]))


def verdict(fn: Function, guide: str = "") -> Verdict:
    """Is the hot path of this function vectorized? (See HEURISTIC.) guide:
    where the handout explains vectorized access ('handout/PAGE.md, 'TITLE'',
    cmd_asm.guide_for), named in a verdict of no or partly; "" names none."""
    glob = [a for a in fn.accesses
            if a.space in ("global", "generic", "bulk") and a.kind in ("load", "store")]
    if not glob:
        return Verdict("none", "no global loads or stores in this function", "whole function")
    looped = [a for a in glob if a.in_loop]
    hot, basis = (looped, "loops") if looped else (glob, "whole function")
    loads = [a for a in hot if a.kind == "load"]
    stores = [a for a in hot if a.kind == "store"]

    def widest(xs: list[Access]) -> int:
        if any(a.width == 0 for a in xs):    # bulk copies move whole tiles
            return 1 << 20
        return max((a.width for a in xs), default=0)

    wl, ws = widest(loads), widest(stores)
    where = "in its loops" if basis == "loops" else "in the kernel"
    see = f" -- see {guide}" if guide else ""

    def name(w: int) -> str:
        return "bulk (TMA)" if w >= (1 << 20) else f"{w}-bit"

    wide = [w for w in (wl, ws) if w]      # a kernel may only load, or only store
    if wide and all(w >= 64 for w in wide):
        if wl and ws and wl != ws:
            what = f"{name(wl)} loads, {name(ws)} stores"
        elif wl and ws:
            what = f"{name(wl)} loads and stores"
        else:
            what = f"{name(wl or ws)} {'loads' if wl else 'stores'}"
        return Verdict("yes", f"yes ({what} {where})", basis, wl, ws)
    if any(w >= 64 for w in wide):
        narrow = "stores" if wl >= 64 else "loads"
        return Verdict("partly",
                       f"partly: {name(wl)} loads but {name(ws)} stores {where}; "
                       f"widen the {narrow} too{see}", basis, wl, ws)
    if wl and ws and wl == ws:
        what = f"only {name(wl)} loads and stores"
    else:
        what = f"only {name(wl)} loads" if wl else ""
        if ws:
            what = (what + " and " if what else "only ") + f"{name(ws)} stores"
    return Verdict("no", f"no: {what} {where}{see}", basis, wl, ws)


# ---------------------------------------------------------------------------
# Names


def demangle(names: list[str]) -> dict[str, str]:
    """Mangled -> readable C++ names, through cu++filt or c++filt when one is
    installed (otherwise the names map to themselves)."""
    out = {n: n for n in names}
    mangled = [n for n in names if n.startswith("_Z")]
    if not mangled:
        return out
    tool = shutil.which("cu++filt") or shutil.which("c++filt")
    if not tool:
        return out
    try:
        proc = subprocess.run([tool], input="\n".join(mangled) + "\n", capture_output=True,
                              text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return out
    lines = proc.stdout.splitlines()
    if proc.returncode == 0 and len(lines) == len(mangled):
        for m, d in zip(mangled, lines):
            out[m] = d.strip() or m
    return out
