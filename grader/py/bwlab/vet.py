"""Symbol vetting: look at the compiled student file before anything runs it.

A student's .cu file is linked into the same executable as the worker core
(grader/worker/), the CUDA runtime and the C library. A global C function in it
with the name of one of theirs (cudaEventElapsedTime, cudaMemcpy, exit,
clock_gettime, main, bw_student_call, ...) would replace the real one for the
whole worker, timing code included. The exercises only ask for C++ functions
(the contract headers declare them without extern "C"), so the rule is simple:
every global symbol the file defines must be a C++ (mangled, `_Z...`) name or
one that the compiler itself generates.

Second rule, what the student's code may call: nothing that starts threads
or processes, loads code or reaches the runtime behind the linker's back,
or writes files and descriptors (the grader's channel among them). An
exercise needs none of it, and each is a way to work outside the timed
region or to talk to the grader. stdio to stdout/stderr, exit and abort
stay allowed: the worker captures and survives those.

Third rule, the course policy on libraries: the exercise is to write the
kernel, so calling cuBLAS or using CUB/Thrust device-wide algorithms is refused
unless $BWLAB_ALLOW_LIBRARIES is 1 (yes/on/true).

Fourth rule, no system call made directly: the second rule only sees calls
that go through the linker, so inline assembly (`asm("syscall")`) would reach
the kernel with no symbol to show for it (fork, open, write, kill, mprotect on
the worker's own timing code). `objdump -d` disassembles the executable
sections of the same object (the student's host x86-64 code; the device code
sits in a data section, the fatbin, and is not decoded) and any `syscall`,
`sysenter` or `int $0x80` instruction is refused, named with the function and
offset where it sits. This check reads the instructions as objdump decodes
them from the start of each function: bytes hidden inside other instructions
or in data, or a system call instruction of the C library reached by address,
are not seen (docs/SECURITY.md, "Not defended"); the containment of the
workers is the wall behind it.

Without objdump (binutils, which also ships nm, so this is a broken install
rather than a usual one) the fourth rule cannot run. `run.py grade` refuses to
grade the file (strict: a grade that skipped the check could be bought by
exactly the code it looks for, and the instructor can fix the machine);
`run.py test` and `benchmark` warn and go on (not strict: they run on the
student's own machine, where refusing protects nothing the student could not
run anyway, and the grade applies the check).

$BWLAB_UNSAFE_SKIP_VET=1 turns all vetting off, for the kit's own tests of
the containment behind it only (run.py says so loudly, and a grade records
it in the manifest and in every gradebook row). Never grade with it.

The object file is the one CMake compiled for the worker (find_object); we only
run `nm` and `objdump` on it, so vetting costs no extra compile. vet_source
compiles a file with nvcc itself (used by the tests, and as a fallback).
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .toolchain import cache_values, tool_env

ALLOW_ENV = "BWLAB_ALLOW_LIBRARIES"
# Turns vetting off: for the kit's tests of the containment behind it only.
SKIP_ENV = "BWLAB_UNSAFE_SKIP_VET"
SKIP_WARNING = (f"{SKIP_ENV} is set: student files are NOT vetted (symbols, system call "
                f"instructions, libraries) and run as they are; this is for the kit's own "
                f"containment tests only, never for real grading")
# In the notes (the gradebook's notes column) of every record graded so.
UNSAFE_NOTE = f"UNSAFE: graded without vetting ({SKIP_ENV}=1, for the kit's own tests only)"

# --- rule tables ---------------------------------------------------------------------

# Rule A: global symbols the student's object may define without being C++ names.
# Facts from `nm -g --defined-only` on nvcc 13.0 objects of the stubs, the
# solutions and the CUB peer (no -rdc; CMake builds the workers without
# separable compilation):
#   - the stubs define only their C++ function (_Z<len><name>...);
#   - the solutions add `DW.ref.__gxx_personality_v0`, the C++ exception
#     personality reference that g++ emits in any file with unwinding code;
#   - kernels give `_Z..__device_stub__..` (already mangled) and, with -rdc,
#     nvcc adds `__fatbinwrap_*`, `__cuda*`, `__nv_*` helpers; the module
#     constructor `__sti____cudaRegisterAll` and `_GLOBAL__sub_I_*` static
#     initializers are normally local, but are listed in case a toolchain
#     exports them.
# None of these can be mistaken for a function of the runtime, libc or the grader.
ALLOWED_PREFIXES = (
    "_Z",                          # C++ names (mangled): the contract itself
    "DW.ref.__gxx_personality_v0",  # exception-handling personality reference
    "__cuda",                      # nvcc's registration helpers
    "__fatbinwrap",                # the embedded device code (with -rdc)
    "__nv_",                       # nvcc's internal helpers
    "_GLOBAL__",                   # static constructors of the file
    "__device_stub",               # host stubs of kernels (unmangled variants)
    "__sti____cudaRegisterAll",    # nvcc's module constructor
)

# Symbols that CUB and Thrust headers bring in through NVTX (profiling ranges):
# the CUB peer defines `nvtx*_v3`, `nvtxGlobals_v3` and
# `InitializeInjectionNvtx2_fnptr` as weak symbols. They are allowed only when
# libraries are, and only reported as a library use otherwise.
NVTX_PREFIXES = ("nvtx", "InitializeInjectionNvtx")

# Rule B: libraries the course policy forbids by default. Each entry: a name
# for messages, which symbols to look at ("undefined" or "any"), and a pattern.
#   - cuBLAS is a C API: calling it leaves undefined `cublas...` symbols
#     (the cuBLAS peer references cublasAxpyEx, cublasCreate_v2, ...).
#   - CUB and Thrust are header-only C++: their host code is instantiated in
#     the student's object, with the namespaces mangled as `3cub` and
#     `6thrust` (the CUB peer's DeviceTransform gives `_ZN3cub17CUB_300001_...`
#     and `...N6thrust23THRUST_300001_...`). The length digit must not follow
#     another digit, so that e.g. a 13-letter name `cube_function` is not read
#     as `3cub`.
LIBRARY_RULES = (
    ("cuBLAS", "undefined", re.compile(r"cublas", re.I)),
    ("CUB", "any", re.compile(r"(?<![0-9])3cub")),
    ("Thrust", "any", re.compile(r"(?<![0-9])6thrust")),
)


# Rule C: functions the student's object may not call (undefined symbols).
# Each entry: the category named in the message, why it is refused, and the
# exact names (plain C, so the name is the symbol) or, for C++ library
# functions, a pattern on the mangled name.
FORBIDDEN_CALLS = (
    ("threads", "work on another thread escapes the timed region",
     ("pthread_create", "thrd_create"), re.compile(r"^_ZNSt6thread|^_ZNSt7jthread")),
    ("processes", "a second process escapes the grader's control",
     ("fork", "vfork", "clone", "clone3", "execve", "execv", "execvp", "execvpe", "execl",
      "execlp", "execle", "fexecve", "execveat", "posix_spawn", "posix_spawnp", "system",
      "popen", "daemon", "setsid", "setpgid", "setpgrp", "ptrace", "kill", "killpg", "prctl",
      "tgkill", "tkill", "sigqueue", "pidfd_open", "pidfd_send_signal", "pthread_kill",
      "process_vm_readv", "process_vm_writev"), None),
    # Code that runs later, outside the call: a timer's thread or a signal
    # handler could work while the grader times something else.
    ("timers and signals", "code run by a timer or a signal escapes the timed region",
     ("timer_create", "timer_settime", "setitimer", "alarm", "ualarm", "sigaction", "signal",
      "sigset", "bsd_signal", "sysv_signal", "aio_read", "aio_write", "aio_read64",
      "aio_write64", "lio_listio", "lio_listio64", "mq_notify", "getaddrinfo_a"), None),
    ("raw system access", "it reaches code or memory behind the linker's back",
     ("syscall", "dlopen", "dlmopen", "dlsym", "dlvsym", "mprotect", "pkey_mprotect", "mmap",
      "mmap64", "shmget", "shmat", "cudaGetExportTable",
      "cudaGetDriverEntryPoint", "cudaGetDriverEntryPointByVersion", "cuGetProcAddress",
      "cuGetProcAddress_v2"), None),
    ("files and descriptors", "the grader's channel and files are descriptors too",
     ("open", "open64", "openat", "openat64", "__open_2", "__open64_2", "__openat_2", "creat",
      "creat64", "fopen", "fopen64", "freopen", "freopen64", "fdopen", "write", "pwrite",
      "pwrite64", "writev", "pwritev", "send", "sendto", "sendmsg", "socket", "connect",
      "dup", "dup2", "dup3", "unlink", "unlinkat", "rename", "renameat", "remove",
      "truncate", "ftruncate", "ftruncate64", "mkdir", "symlink", "link", "chmod", "fchmod",
      "memfd_create", "shm_open", "mkstemp", "tmpfile", "fcntl", "fcntl64", "sendfile",
      "sendfile64", "splice", "vmsplice", "tee", "copy_file_range", "pwritev2"),
     re.compile(r"basic_[io]?fstream|basic_filebuf|^_ZNSt10filesystem|^_ZNSt7__cxx1110filesystem")),
)


# The NVTX code that CUB and Thrust headers bring in loads its profiler
# injection with dlopen/dlsym: with NVTX present those two are the library's,
# judged by the library rule (refused by default, allowed with libraries).
NVTX_LOADER_CALLS = ("dlopen", "dlsym", "dlclose")


# Rule D: instructions that enter the kernel without a call through the
# linker. x86-64: `syscall` (0f 05), `sysenter` (0f 34) and `int $0x80` (cd 80,
# the 32-bit entry, which a 64-bit process can still use); aarch64 hosts
# (Grace): `svc`. Each is matched twice: by the mnemonic objdump prints
# (whatever prefixes it shows before it: `data16 syscall`, `rex.W syscall`,
# `addr32 int $0x80`) and by the opcode bytes after any legacy or REX
# prefixes, so that a spelling objdump might choose for a prefixed form is
# still caught.
SYSCALL_MNEMONICS = ("syscall", "sysenter", "svc")
INT_SYSCALL_OPERANDS = ("$0x80", "0x80")
SYSCALL_OPCODES = (("0f", "05"), ("0f", "34"), ("cd", "80"))
X86_PREFIXES = frozenset({"f0", "f2", "f3", "2e", "36", "3e", "26", "64", "65", "66", "67"}
                         | {f"{b:02x}" for b in range(0x40, 0x50)})


def _forbidden_call(name: str) -> tuple[str, str] | None:
    """(category, why) when name is a function the student may not call."""
    # Versioned references (`write@GLIBC_2.2.5`) count as the plain name.
    base = name.split("@", 1)[0]
    for category, why, names, pattern in FORBIDDEN_CALLS:
        if base in names or (pattern is not None and pattern.search(base)):
            return category, why
    return None


# --- results --------------------------------------------------------------------------

@dataclass
class Refusal:
    symbol: str
    rule: str        # "interposition", "forbidden_call" or "library"
    message: str     # one sentence a student understands
    others: int = 0  # further offending symbols not named

    def lines(self) -> list[str]:
        out = [self.message]
        if self.others:
            what = "place" if self.rule == "system_call" else "symbol"
            out.append(f"({self.others} more {what}{'s' if self.others != 1 else ''} broke the same rules)")
        return out


class VetError(Exception):
    """The object could not be inspected (no nm, no nvcc, unreadable file)."""


def _switch_on(name: str, environ: dict[str, str] | None) -> bool:
    env = os.environ if environ is None else environ
    return env.get(name, "").strip().lower() in ("1", "yes", "on", "true", "y")


def libraries_allowed(environ: dict[str, str] | None = None) -> bool:
    return _switch_on(ALLOW_ENV, environ)


def skip_requested(environ: dict[str, str] | None = None) -> bool:
    """Whether $BWLAB_UNSAFE_SKIP_VET asks to run student files unvetted."""
    return _switch_on(SKIP_ENV, environ)


# --- inspecting an object -------------------------------------------------------------------

def _nm(obj: Path, *flags: str) -> list[str]:
    nm = shutil.which("nm")
    if nm is None:
        raise VetError("nm (GNU binutils) was not found; it is needed to check the compiled file")
    r = subprocess.run([nm, *flags, str(obj)], capture_output=True, text=True, errors="replace")
    if r.returncode != 0:
        raise VetError(f"nm could not read {obj.name}: {r.stderr.strip()[:200]}")
    names = []
    for line in r.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 2:
            names.append(parts[-1])
    return names


def symbols(obj: Path) -> tuple[list[str], list[str]]:
    """(global symbols defined, symbols referenced but not defined) by obj."""
    return _nm(obj, "-g", "--defined-only"), _nm(obj, "-u")


def check_symbols(defined: list[str], undefined: list[str], allow_libraries: bool,
                  source: str = "your file") -> Refusal | None:
    """Apply the rules to nm's lists; the first problem found, or None."""
    return _first(_symbol_problems(defined, undefined, allow_libraries, source))


def _symbol_problems(defined: list[str], undefined: list[str], allow_libraries: bool,
                     source: str) -> list[Refusal]:
    found: list[Refusal] = []
    has_nvtx = any(s.startswith(NVTX_PREFIXES) for s in defined)
    for s in undefined:
        if has_nvtx and s.split("@", 1)[0] in NVTX_LOADER_CALLS:
            continue
        hit = _forbidden_call(s)
        if hit:
            category, why = hit
            found.append(Refusal(s, "forbidden_call", (
                f"{source} calls {s} ({category}): submissions may not start threads or "
                f"processes, load code, or open and write files or descriptors ({why}); "
                f"print with printf or std::cout instead of writing to descriptors")))
    if not allow_libraries:
        for lib, where, pat in LIBRARY_RULES:
            pool = undefined if where == "undefined" else defined + undefined
            for s in pool:
                if pat.search(s):
                    found.append(Refusal(s, "library", (
                        f"{source} uses {lib} (symbol {s}): the course policy does not allow "
                        f"library calls here; write the kernel yourself")))
                    break
    for s in defined:
        if s.startswith(ALLOWED_PREFIXES):
            continue
        if s.startswith(NVTX_PREFIXES):
            if not allow_libraries:
                found.append(Refusal(s, "library", (
                    f"{source} defines {s}, which comes with the CUB/Thrust headers (NVTX): "
                    f"the course policy does not allow those libraries here")))
            continue
        found.append(Refusal(s, "interposition", (
            f"{source} defines the global C symbol '{s}': only C++ functions may be defined "
            f"at global scope (it would replace a function of the CUDA runtime, the C library "
            f"or the grader); make it static, put it in an anonymous namespace, or rename it")))
    return found


def _first(found: list[Refusal]) -> Refusal | None:
    """The most telling problem, with the number of the others: replacing a
    function, then a system call made directly, then a forbidden call, then
    a library."""
    if not found:
        return None
    order = {"interposition": 0, "system_call": 1, "forbidden_call": 2, "library": 3}
    found.sort(key=lambda r: order[r.rule])
    first = found[0]
    first.others = len(found) - 1
    return first


# --- disassembling an object ----------------------------------------------------------------

class DisassemblerMissing(VetError):
    """objdump is not installed: the system call rule cannot run."""


@dataclass
class SyscallSite:
    instruction: str   # as objdump prints it, prefixes included: "syscall", "int $0x80"
    where: str         # the function (demangled) and offset, or the section and address
    section: str


def is_system_call(raw: str, text: str) -> bool:
    """Whether one instruction objdump decoded (its bytes in hex, its text)
    enters the kernel directly."""
    # The text without objdump's comment (`# 1a <f+0x4>`) and branch targets
    # (`<syscall_helper>`), which name symbols, not instructions.
    text = re.sub(r"<[^>]*>", " ", text.split("#", 1)[0])
    words = text.replace(",", " ").split()
    for i, w in enumerate(words):
        if w in SYSCALL_MNEMONICS:
            return True
        if w == "int" and i + 1 < len(words) and words[i + 1] in INT_SYSCALL_OPERANDS:
            return True
    octets = raw.split()
    while octets and octets[0] in X86_PREFIXES:
        octets = octets[1:]
    return tuple(octets[:2]) in SYSCALL_OPCODES and len(octets) == 2


_SECTION = re.compile(r"^Disassembly of section (\S+):")
_FUNCTION = re.compile(r"^([0-9a-fA-F]+) <(.*)>:\s*$")
_INSN = re.compile(r"^\s*([0-9a-fA-F]+):\t([0-9a-fA-F ]*)\t?(.*)$")


def parse_disassembly(text: str) -> list[SyscallSite]:
    """The system call instructions in `objdump -d -w -C` output."""
    sites: list[SyscallSite] = []
    section, func, base = "?", None, 0
    for line in text.splitlines():
        m = _SECTION.match(line)
        if m:
            section, func, base = m.group(1), None, 0
            continue
        m = _FUNCTION.match(line)
        if m:
            # g++'s optimized copies (`f(long) [clone .constprop.0]`) are named as f.
            base, func = int(m.group(1), 16), re.sub(r" \[clone [^]]*\]", "", m.group(2))
            continue
        m = _INSN.match(line)
        if not m or not is_system_call(m.group(2), m.group(3)):
            continue
        addr = int(m.group(1), 16)
        where = f"{func}+{addr - base:#x}" if func else f"{section} at {addr:#x}"
        shown = " ".join(m.group(3).split("#", 1)[0].split()) or m.group(2).strip()
        sites.append(SyscallSite(shown, where, section))
    return sites


def system_call_sites(obj: Path) -> list[SyscallSite]:
    """Disassemble obj's executable sections (`objdump -d`; the fatbin, a
    data section, is left alone) and list its system call instructions.
    Raises DisassemblerMissing without objdump, VetError when it fails."""
    objdump = shutil.which("objdump")
    if objdump is None:
        raise DisassemblerMissing(
            "objdump (GNU binutils) was not found; it is needed to check the compiled file "
            "for system call instructions (install binutils)")
    r = subprocess.run([objdump, "-d", "-w", "-C", str(obj)], capture_output=True, text=True,
                       errors="replace")
    if r.returncode != 0:
        raise VetError(f"objdump could not read {obj.name}: {r.stderr.strip()[:200]}")
    return parse_disassembly(r.stdout)


def system_call_problems(sites: list[SyscallSite], source: str = "your file") -> list[Refusal]:
    return [Refusal(s.where, "system_call", (
        f"{source} makes a system call directly (`{s.instruction}` instruction in {s.where}, "
        f"section {s.section}): a submission may reach the operating system only through the "
        f"CUDA runtime and the C library functions the rules allow, and a system call made "
        f"directly bypasses those checks; remove the inline assembly")) for s in sites]


def vet_object(obj: Path, allow_libraries: bool | None = None, source: str = "your file",
               strict: bool = True, warnings: list[str] | None = None) -> Refusal | None:
    """The rules on a compiled object: the first problem, or None. Without
    objdump, strict raises VetError (grade); otherwise a warning is added to
    warnings and the other rules still apply (test, benchmark)."""
    if allow_libraries is None:
        allow_libraries = libraries_allowed()
    defined, undefined = symbols(obj)
    found = _symbol_problems(defined, undefined, allow_libraries, source)
    try:
        found += system_call_problems(system_call_sites(obj), source)
    except DisassemblerMissing as e:
        if strict:
            raise
        if warnings is not None:
            warnings.append(f"{source} was not checked for system call instructions: {e}; "
                            f"run.py grade refuses to grade without this check")
    return _first(found)


def find_object(tree: Path, target: str, exercise: str) -> Path | None:
    """The object CMake compiled from the student's file for this target:
    TREE/CMakeFiles/TARGET.dir/.../EXERCISE.cu.o (Makefile and Ninja alike)."""
    tdir = tree / "CMakeFiles" / f"{target}.dir"
    if not tdir.is_dir():
        return None
    hits = sorted(p for p in tdir.rglob(f"{exercise}.cu.o") if p.is_file())
    return hits[0] if len(hits) == 1 else None


def compile_object(cu: Path, out_dir: Path, include_dirs: list[Path],
                   env: dict[str, str] | None = None, arch: str | None = None) -> Path:
    """Compile cu to an object with nvcc -c, as CMake does for the workers
    (C++17, no separable compilation). Raises VetError when it does not compile."""
    env = env or tool_env()
    nvcc = shutil.which("nvcc", path=env.get("PATH"))
    if nvcc is None:
        raise VetError("nvcc was not found")
    obj = out_dir / (cu.name + ".o")
    cmd = [nvcc, "-c", "-std=c++17", *[f"-I{d}" for d in include_dirs]]
    if arch:
        cmd.append(f"-arch=sm_{arch}")
    cmd += [str(cu), "-o", str(obj)]
    r = subprocess.run(cmd, capture_output=True, text=True, errors="replace", env=env)
    if r.returncode != 0:
        raise VetError(f"nvcc could not compile {cu.name}:\n{(r.stdout + r.stderr).strip()[-2000:]}")
    return obj


def vet_built(tree: Path, target: str, exercise: str, allow_libraries: bool | None = None,
              strict: bool = True, warnings: list[str] | None = None) -> Refusal | None:
    """Vet the student's file of a worker CMake has just built in tree. When
    its object cannot be found, compile the source again (the file and the
    include folders named in the tree's CMakeCache.txt). Raises VetError."""
    source = f"exercises/{exercise}/{exercise}.cu"
    obj = find_object(tree, target, exercise)
    if obj is not None:
        return vet_object(obj, allow_libraries, source, strict, warnings)
    cache = cache_values(tree)
    kit, student = cache.get("CMAKE_HOME_DIRECTORY"), cache.get("BW_STUDENT_DIR")
    if not kit or not student:
        raise VetError(f"the compiled {source} was not found in {tree}")
    cu = Path(student) / exercise / f"{exercise}.cu"
    incs = [Path(kit) / "exercises" / exercise, Path(kit) / "grader" / "protocol"]
    arch = (cache.get("CMAKE_CUDA_ARCHITECTURES") or "").split(";")[0] or None
    if arch and not arch.isdigit():
        arch = None
    with tempfile.TemporaryDirectory(prefix="bwlab-vet-") as tmp:
        return vet_object(compile_object(cu, Path(tmp), incs, arch=arch), allow_libraries, source,
                          strict, warnings)


def vet_source(cu: Path, include_dirs: list[Path], allow_libraries: bool | None = None,
               arch: str | None = None) -> Refusal | None:
    """Compile cu into a temporary folder and vet the object."""
    with tempfile.TemporaryDirectory(prefix="bwlab-vet-") as tmp:
        obj = compile_object(cu, Path(tmp), include_dirs, arch=arch)
        return vet_object(obj, allow_libraries, source=cu.name)
