"""vet.py's rules on hand-written nm lists and objdump listings (no nvcc,
no objdump): which symbols are refused and under which rule, and where the
system call instructions are.

Each test names the broken vetting it would catch."""
import sys
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "grader" / "py"))

from bwlab import vet  # noqa: E402


class RuleTests(unittest.TestCase):
    """check_symbols on nm lists written by hand (no nvcc)."""

    def test_forbidden_call_matches_versioned_and_mangled_names(self):
        # Catches a rule that misses glibc's versioned references or the
        # mangled C++ library calls (std::thread, std::ofstream).
        for name in ("write@GLIBC_2.2.5", "fork", "_ZNSt6thread15_M_start_threadESt10unique_ptrINS_6_StateESt14default_deleteIS1_EEPFvvE",
                     "_ZNSt14basic_ofstreamIcSt11char_traitsIcEEC1EPKcSt13_Ios_Openmode"):
            r = vet.check_symbols(["_Z5haxpyifPK13__nv_bfloat16PS_"], [name], allow_libraries=True)
            self.assertIsNotNone(r, name)
            self.assertEqual(r.rule, "forbidden_call", name)
        # Names that merely contain a forbidden word are not calls to it.
        for name in ("printf", "fwrite", "_ZSt4cout", "writev_helper_not_libc", "cudaMemcpy"):
            self.assertIsNone(vet.check_symbols([], [name], allow_libraries=True), name)

    def test_ways_to_run_code_later_or_reach_other_processes_are_refused(self):
        # Catches the ways a reviewer found around the first lists: a timer's
        # thread or a signal handler working while the baseline is timed,
        # pkey_mprotect for mprotect, another process's memory, a descriptor
        # copied by fcntl or written by sendfile.
        for name in ("timer_create", "setitimer", "alarm", "sigaction", "signal@GLIBC_2.2.5",
                     "pkey_mprotect", "process_vm_writev", "tgkill", "pthread_kill", "fcntl",
                     "sendfile", "splice", "execveat", "cudaGetExportTable"):
            r = vet.check_symbols(["_Z5haxpyifPK13__nv_bfloat16PS_"], [name], allow_libraries=True)
            self.assertIsNotNone(r, name)
            self.assertEqual(r.rule, "forbidden_call", name)

    def test_nvtx_loader_calls_are_the_library_rule(self):
        # Catches CUB's NVTX dlopen/dlsym being refused when libraries are allowed.
        defined = ["nvtxGlobals_v3"]
        self.assertIsNone(vet.check_symbols(defined, ["dlopen", "dlsym"], allow_libraries=True))
        self.assertIsNotNone(vet.check_symbols([], ["dlopen"], allow_libraries=True))

    def test_mangled_and_helpers_allowed(self):
        defined = ["_Z5haxpyifPK13__nv_bfloat16PS_", "DW.ref.__gxx_personality_v0",
                   "__fatbinwrap_38_tmpxft_0001_haxpy_cu", "__cudaRegisterLinkedBinary_x"]
        self.assertIsNone(vet.check_symbols(defined, ["cudaMemcpy", "fprintf"], False))

    def test_each_interposer_named(self):
        for s in ("cudaMemcpy", "clock_gettime", "main", "cudaEventRecord"):
            r = vet.check_symbols(["_Z5haxpyv", s], [], True)
            self.assertIsNotNone(r, s)
            self.assertEqual(r.symbol, s)

    def test_interposition_named_before_library_and_count(self):
        # Catches losing the other problems, or naming the library first.
        r = vet.check_symbols(["main", "exit"], ["cublasCreate_v2"], False)
        self.assertEqual((r.symbol, r.rule, r.others), ("main", "interposition", 2))
        self.assertIn("2 more symbols", " ".join(r.lines()))

    def test_cub_pattern_not_fooled_by_lengths(self):
        # `_Z13cube_functionv` holds "3cub" after a digit: not CUB.
        self.assertIsNone(vet.check_symbols(["_Z13cube_functionv", "_Z16thrusters_enginev"],
                                            [], False))
        r = vet.check_symbols([], ["_ZN6thrust23THRUST_300001_SM_900_NS6detail3fooEv"], False)
        self.assertEqual(r.rule, "library")
        self.assertIn("Thrust", r.message)

    def test_nvtx_refused_only_without_libraries(self):
        self.assertIsNone(vet.check_symbols(["nvtxGlobals_v3"], [], True))
        r = vet.check_symbols(["nvtxGlobals_v3"], [], False)
        self.assertEqual(r.rule, "library")

    def test_switch_values(self):
        for v in ("1", "yes", "ON", "true"):
            self.assertTrue(vet.libraries_allowed({vet.ALLOW_ENV: v}), v)
        for v in ("", "0", "no", "off"):
            self.assertFalse(vet.libraries_allowed({vet.ALLOW_ENV: v}), v)
        self.assertFalse(vet.libraries_allowed({}))


# `objdump -d -w -C` output as binutils 2.40 prints it, with the traps rule D
# must not fall into: calls to a function named syscall, a demangled name
# with a type named syscall in it, a comment, a constant whose bytes hold
# 0f 05, int3.
LISTING = """
x.o:     file format elf64-x86-64


Disassembly of section .text:

0000000000000000 <helper(long)>:
   0:\t55                   \tpush   %rbp
   4:\t0f 05                \tsyscall
  10:\te8 00 00 00 00       \tcall   15 <syscall>
  15:\te8 00 00 00 00       \tcall   1a <sysenter_fn(int, long)>\t# 1a <syscall+0x4>
  16:\te8 00 00 00 00       \tcall   1a <use(int, syscall const&)>
  1a:\tcd 80                \tint    0x80
  1c:\tcd 03                \tint    $0x3
  1e:\t66 0f 05             \tdata16 syscall
  21:\tb8 0f 05 00 00       \tmov    $0x50f,%eax
  26:\t67 cd 80             \taddr32 int $0x80
  29:\t2e 0f 05             \t(bad)
  2c:\tcc                   \tint3

Disassembly of section .text.startup:

0000000000000000 <_GLOBAL__sub_I_x>:
   0:\t0f 34                \tsysenter

0000000000000010 <(anonymous namespace)::raw(long) [clone .constprop.0] [clone .isra.0]>:
  1a:\t0f 05                \tsyscall
"""


class DisassemblyTests(unittest.TestCase):
    """parse_disassembly on a listing written by hand (no objdump, no nvcc)."""

    def test_sites_found_and_traps_avoided(self):
        # Catches matching symbol names in branch targets or comments (false
        # refusals of honest code), missing the Intel spelling or a prefixed
        # form, or missing what only the bytes show.
        sites = vet.parse_disassembly(LISTING)
        self.assertEqual([(s.instruction, s.where, s.section) for s in sites], [
            ("syscall", "helper(long)+0x4", ".text"),
            ("int 0x80", "helper(long)+0x1a", ".text"),
            ("data16 syscall", "helper(long)+0x1e", ".text"),
            ("addr32 int $0x80", "helper(long)+0x26", ".text"),
            ("(bad)", "helper(long)+0x29", ".text"),
            ("sysenter", "_GLOBAL__sub_I_x+0x0", ".text.startup"),
            ("syscall", "(anonymous namespace)::raw(long)+0xa", ".text.startup"),
        ])

    def test_each_instruction_alone(self):
        for raw, text, want in (("0f 05", "syscall", True), ("0f 34", "sysenter", True),
                                ("cd 80", "int    $0x80", True), ("48 0f 05", "rex.W syscall", True),
                                ("", "svc    #0x0", True),
                                ("cd 81", "int    $0x81", False), ("e8 00 00 00 00", "call 0 <syscall>", False),
                                ("0f 0b", "ud2", False), ("0f 05 90", "nop", False)):
            self.assertEqual(vet.is_system_call(raw, text), want, text)

    def test_system_call_outranks_forbidden_calls(self):
        # The refusal names the direct system call first, and counts the rest.
        found = vet.system_call_problems(vet.parse_disassembly(LISTING), "f.cu")
        found += vet._symbol_problems([], ["fork"], True, "f.cu")
        r = vet._first(found)
        self.assertEqual((r.rule, r.others), ("system_call", 7))
        self.assertIn("f.cu makes a system call directly", r.message)
        self.assertIn("7 more places", " ".join(r.lines()))


if __name__ == "__main__":
    unittest.main()
