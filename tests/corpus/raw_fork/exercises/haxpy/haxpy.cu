// CORPUS: hostile. Starts a process that outlives the worker, with inline
// system call instructions so that no forbidden function (fork, setsid)
// shows in its symbols: fork, then setsid in the child, which leaves the
// worker's process group (the group kill after every worker misses it),
// closes every descriptor and sleeps 10 minutes as "bwlab_raw_fork".
// Computes nothing, so it earns no correctness points either way.
// Vetted, it is refused (a `syscall` instruction); with vetting bypassed
// (BWLAB_UNSAFE_SKIP_VET=1), only the workers' containment stops it.
#include "haxpy.h"

namespace {

__attribute__((noinline))  // out of line: the refusal names it at any -O level
long raw_syscall(long nr, long a = 0, long b = 0, long c = 0)
{
    long ret;
    asm volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
    return ret;
}

// x86-64 Linux system call numbers and constants.
constexpr long SYS_CLOSE = 3, SYS_NANOSLEEP = 35, SYS_FORK = 57, SYS_SETSID = 112,
               SYS_PRCTL = 157, SYS_EXIT_GROUP = 231, PR_SET_NAME = 15;

struct timespec_raw { long sec, nsec; };

bool started = false;   // once per worker process: one survivor each

}  // namespace

void haxpy(int, float, const nv_bfloat16*, nv_bfloat16*)
{
    if (started)
        return;
    started = true;
    if (raw_syscall(SYS_FORK) != 0)
        return;                              // the worker (or a failed fork) goes on
    raw_syscall(SYS_SETSID);
    raw_syscall(SYS_PRCTL, PR_SET_NAME, (long)"bwlab_raw_fork");
    for (long fd = 0; fd < 1024; ++fd)       // hold none of the grader's pipes open
        raw_syscall(SYS_CLOSE, fd);
    timespec_raw t = {600, 0};
    raw_syscall(SYS_NANOSLEEP, (long)&t, 0);
    raw_syscall(SYS_EXIT_GROUP, 0);
}
