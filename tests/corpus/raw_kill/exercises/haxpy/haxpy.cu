// CORPUS: hostile. Sends SIGKILL to its parent (the grader, bwgrade) with
// inline system call instructions, so that no forbidden function (kill,
// getppid) shows in its symbols. Computes nothing, so it earns no
// correctness points either way. Vetted, it is refused (a `syscall`
// instruction); with vetting bypassed (BWLAB_UNSAFE_SKIP_VET=1), only the
// workers' containment keeps the grader alive.
#include "haxpy.h"

namespace {

__attribute__((noinline))  // out of line: the refusal names it at any -O level
long raw_syscall(long nr, long a = 0, long b = 0)
{
    long ret;
    asm volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b) : "rcx", "r11", "memory");
    return ret;
}

// x86-64 Linux system call numbers and the signal.
constexpr long SYS_KILL = 62, SYS_GETPPID = 110, SIGNAL_KILL = 9;

bool tried = false;   // once per worker process

}  // namespace

void haxpy(int, float, const nv_bfloat16*, nv_bfloat16*)
{
    if (tried)
        return;
    tried = true;
    raw_syscall(SYS_KILL, raw_syscall(SYS_GETPPID), SIGNAL_KILL);
}
