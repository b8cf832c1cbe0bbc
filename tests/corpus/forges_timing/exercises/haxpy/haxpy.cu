// CORPUS: hostile. A correct one-element-per-thread haxpy (about 64% of the
// copy's bandwidth) that reports itself faster by rewriting the worker's own
// timing. No forbidden symbol: the one system call it makes (mprotect, to
// make the slots below writable where the linker made them read-only) is an
// inline `syscall` instruction, which vetting refuses; grading it with
// vetting bypassed (BWLAB_UNSAFE_SKIP_VET=1) shows what the clock does.
//
// The worker calls cudaEventElapsedTime and clock_gettime through its
// procedure linkage table. On its first call this file finds those two
// slots through the executable's dynamic section (_DYNAMIC, __ehdr_start:
// ordinary linker symbols) and points them at its own functions:
//   - every event span that holds one of its calls reads 0.7x the truth;
//   - CLOCK_MONOTONIC falls behind by 0.3x each call's kernel time, so that
//     the host clock around a call agrees with the forged event span (the
//     worker's lag check sees nothing).
// The copy is timed in another worker, truly. Only a clock outside this
// process can tell: bwgrade's (grader/supervisor/bench_witness.h).
#include "haxpy.h"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <elf.h>
#include <link.h>

extern "C" const ElfW(Ehdr) __ehdr_start;

typedef cudaError_t (*elapsed_fn)(float *, cudaEvent_t, cudaEvent_t);
typedef int (*clock_fn)(clockid_t, struct timespec *);

static elapsed_fn real_elapsed;
static clock_fn real_clock;
static int owed;                  // an event span holding a call is due
static long long behind_ns;       // how far CLOCK_MONOTONIC is set back
static cudaEvent_t own0, own1;

static cudaError_t forged_elapsed(float *ms, cudaEvent_t a, cudaEvent_t b)
{
    cudaError_t e = real_elapsed(ms, a, b);
    if (e == cudaSuccess && owed) {
        *ms *= 0.7f;
        owed = 0;
    }
    return e;
}

static int forged_clock(clockid_t id, struct timespec *ts)
{
    int r = real_clock(id, ts);
    if (r == 0 && id == CLOCK_MONOTONIC && behind_ns > 0) {
        long long t = (long long)ts->tv_sec * 1000000000LL + ts->tv_nsec - behind_ns;
        ts->tv_sec = (time_t)(t / 1000000000LL);
        ts->tv_nsec = (long)(t % 1000000000LL);
    }
    return r;
}

// mprotect(page, 4096, PROT_READ | PROT_WRITE) without the libc symbol
// (not inlined: vetting names it at any optimization level).
__attribute__((noinline)) static long make_writable(void *p)
{
    long ret;
    unsigned long page = (unsigned long)p & ~4095UL;
    __asm__ volatile("syscall" : "=a"(ret) : "a"(10L), "D"(page), "S"(4096L), "d"(3L)
                     : "rcx", "r11", "memory");
    return ret;
}

// The link-time address d names, at run time (glibc may have added the
// load address already).
static uintptr_t at_run_time(uintptr_t d, uintptr_t base)
{
    return d < base ? d + base : d;
}

// Points the PLT slots of the two timing functions at ours, keeping what
// they held (the true functions: the caller has called both once, so lazy
// binding has filled them in); 0 when both moved. Taking either function's
// address anywhere in this file would make the linker call it through a
// read-only GOT entry instead.
static int rewrite_slots(void)
{
    const uintptr_t base = (uintptr_t)&__ehdr_start;
    uintptr_t jmprel = 0, symtab = 0, strtab = 0;
    size_t relsz = 0;
    for (ElfW(Dyn) *d = _DYNAMIC; d->d_tag != DT_NULL; d++) {
        if (d->d_tag == DT_JMPREL) jmprel = at_run_time(d->d_un.d_ptr, base);
        if (d->d_tag == DT_PLTRELSZ) relsz = d->d_un.d_val;
        if (d->d_tag == DT_SYMTAB) symtab = at_run_time(d->d_un.d_ptr, base);
        if (d->d_tag == DT_STRTAB) strtab = at_run_time(d->d_un.d_ptr, base);
    }
    if (!jmprel || !symtab || !strtab)
        return -1;
    int moved = 0;
    const ElfW(Rela) *rel = (const ElfW(Rela) *)jmprel;
    for (size_t i = 0; i < relsz / sizeof *rel; i++) {
        const ElfW(Sym) *sym = (const ElfW(Sym) *)symtab + ELF64_R_SYM(rel[i].r_info);
        const char *name = (const char *)strtab + sym->st_name;
        void **slot = (void **)(base + rel[i].r_offset);
        int ours = std::strcmp(name, "cudaEventElapsedTime") == 0 ||
                   std::strcmp(name, "clock_gettime") == 0;
        if (ours && make_writable(slot) != 0)
            return -1;
        if (std::strcmp(name, "cudaEventElapsedTime") == 0) {
            real_elapsed = (elapsed_fn)*slot;
            *slot = (void *)forged_elapsed;
            moved++;
        } else if (std::strcmp(name, "clock_gettime") == 0) {
            real_clock = (clock_fn)*slot;
            *slot = (void *)forged_clock;
            moved++;
        }
    }
    return moved == 2 ? 0 : -1;
}

__global__ void haxpy_kernel(long long n, float alpha, const nv_bfloat16 *x, nv_bfloat16 *y)
{
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = __float2bfloat16_rn(fmaf(alpha, __bfloat162float(x[i]), __bfloat162float(y[i])));
}

void haxpy(int n, float alpha, const nv_bfloat16 *x, nv_bfloat16 *y)
{
    static int ready = 0;
    if (!ready) {
        if (cudaEventCreate(&own0) != cudaSuccess || cudaEventCreate(&own1) != cudaSuccess)
            std::fprintf(stderr, "forges_timing: events\n");
        // One call of each through the PLT fills its slot with the true function.
        float unused_ms = 0.0f;
        struct timespec unused_ts;
        cudaEventRecord(own0, 0);
        cudaEventRecord(own1, 0);
        cudaEventSynchronize(own1);
        (void)cudaEventElapsedTime(&unused_ms, own0, own1);
        (void)clock_gettime(CLOCK_MONOTONIC, &unused_ts);
        if (rewrite_slots() != 0)
            std::fprintf(stderr, "forges_timing: PLT slots not found\n");
        ready = 1;
    }
    const int block = 256;
    const long long blocks = ((long long)n + block - 1) / block;
    cudaEventRecord(own0, 0);
    haxpy_kernel<<<(unsigned int)blocks, block>>>(n, alpha, x, y);
    cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess)
        std::fprintf(stderr, "haxpy: launch failed: %s\n", cudaGetErrorString(err));
    cudaEventRecord(own1, 0);
    // Wait for the kernel here: its time is then known before the worker
    // reads the clock after the call.
    float kernel_ms = 0.0f;
    if (cudaEventSynchronize(own1) == cudaSuccess && real_elapsed(&kernel_ms, own0, own1) == cudaSuccess)
        behind_ns += (long long)(0.3 * kernel_ms * 1e6);
    owed = 1;
}
