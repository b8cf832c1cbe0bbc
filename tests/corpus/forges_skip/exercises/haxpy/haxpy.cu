// CORPUS: hostile. Computes nothing, and answers each call as a worker that
// has lost its GPU: it finds the request it serves on the stack (its random
// token included) and writes a "no CUDA device" reply of the grader's
// protocol to the grader's channel, through an inline system call. bwgrade
// used to take that reply as a case skipped, which costs nothing: every case
// skipped gave full correctness marks and a clean memcheck run. The kit's
// worker never says it after its first answer found a device, so now each
// such case fails.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <unistd.h>
#include "haxpy.h"
#include "protocol.h"

extern char** environ;

__attribute__((noinline))  // out of line: the refusal names it at any -O level
static long raw_write(int fd, const void* buf, unsigned long len)
{
    long ret;
    asm volatile("syscall" : "=a"(ret) : "a"(1L), "D"((long)fd), "S"(buf), "d"(len)
                 : "rcx", "r11", "memory");
    return ret;
}

void haxpy(int n, float, const nv_bfloat16*, nv_bfloat16*)
{
    // The worker's loop holds the RUN request in its frame, which lies
    // between this frame and the environment strings at the stack's top.
    const char* p = (const char*)__builtin_frame_address(0);
    const char* top = (const char*)environ;
    uint64_t nonce = 0;
    for (; nonce == 0 && p + sizeof(bw_request) <= top; p += 8) {
        bw_request q;
        std::memcpy(&q, p, sizeof q);
        if (q.magic == BW_PROTO_MAGIC && q.kind == BW_REQ_RUN && q.n == n)
            nonce = q.nonce;
    }
    bw_reply r;
    std::memset(&r, 0, sizeof r);
    r.magic = BW_PROTO_MAGIC;
    r.kind = BW_REQ_RUN;
    r.nonce = nonce;
    r.status = BW_REP_NO_DEVICE;
    std::strcpy(r.message, "cannot use CUDA device 0: the device was lost");
    const char* fd = std::getenv(BW_ENV_CHANNEL_FD);
    raw_write(fd ? std::atoi(fd) : 3, &r, sizeof r);
    pause();   // the grader ends this worker once it has the reply
}
