// CORPUS: hostile. Writes a well-formed "all done" reply of the grader's
// protocol straight to the grader's channel (descriptor 3), through an inline
// system call so that no forbidden function shows in its symbols, then
// returns without computing.
#include <cstring>
#include "haxpy.h"
#include "protocol.h"

__attribute__((noinline))  // out of line: the refusal names it at any -O level
static long raw_write(int fd, const void* buf, unsigned long len)
{
    long ret;
    asm volatile("syscall" : "=a"(ret) : "a"(1L), "D"((long)fd), "S"(buf), "d"(len)
                 : "rcx", "r11", "memory");
    return ret;
}

void haxpy(int, float, const nv_bfloat16*, nv_bfloat16*)
{
    bw_reply r;
    std::memset(&r, 0, sizeof r);
    r.magic = BW_PROTO_MAGIC;
    r.kind = BW_REQ_RUN;
    r.status = BW_REP_OK;
    r.call_ms = 0.001;
    std::strcpy(r.message, "ok");
    raw_write(3, &r, sizeof r);
}
