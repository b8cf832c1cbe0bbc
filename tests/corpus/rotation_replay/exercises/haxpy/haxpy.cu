// CORPUS: cheat. A correct, naive haxpy (one element a thread) whose
// later benchmark calls do not compute y. Before every call the benchmark
// rewrites x and y as the validated call's, rotated by a fresh r, and
// hashes them keyed by unrotated place, so the rotated validated output was
// every later call's right answer. This file keeps that output, finds r
// from 264 elements of x (a table of x's windows built during the
// validated, untimed call) and writes the kept output rotated: 2 bytes read
// and 2 written an element instead of 4 and 2. It then spins to look like
// the solution (below the `impossible` bound). Every call's inputs now
// also have a few elements moved (grader/protocol/transplant.h), so the
// rotated output is wrong at places only a read of all of x and y finds.
// Found by an attack review (session 39).
#include "haxpy.h"
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <cuda/ptx>

namespace {
using elem_t = uint16_t;   // bf16 bits
// ---------------------------------------------------------------------------
// The replay machinery (the same in every file of this attack). Nothing
// below reads the worker's memory or makes a system call: it keeps device
// buffers of its own, and reads at most a few hundred input elements of a
// call to find out which rotation of the validated call's inputs it got.
// ---------------------------------------------------------------------------
namespace replay {

constexpr int kV = 16 / (int)sizeof(elem_t);   // elements per 16-byte vector
constexpr int kW = kV;                         // elements in a lookup key
constexpr long long kStride = 256;             // keys kept at multiples of this
constexpr int kVerify = 32;                    // spot checks of a found rotation

__device__ __forceinline__ uint4 window_at(const elem_t *a, long long p)
{
    elem_t e[kW];
#pragma unroll
    for (int m = 0; m < kW; ++m)
        e[m] = a[p + m];
    uint4 v;
    memcpy(&v, e, sizeof v);
    return v;
}

__device__ __forceinline__ bool same(uint4 a, uint4 b)
{
    return a.x == b.x && a.y == b.y && a.z == b.z && a.w == b.w;
}

__device__ __forceinline__ unsigned long long key_of(uint4 v)
{
    unsigned long long h = (((unsigned long long)v.y << 32) | v.x) * 0x9E3779B97F4A7C15ull;
    h ^= (((unsigned long long)v.w << 32) | v.z) + (h >> 29);
    h *= 0xBF58476D1CE4E5B9ull;
    return h ^ (h >> 31);
}

// Bytes s .. s + 15 of the 32 in lo:hi (s a multiple of the element size).
__device__ __forceinline__ uint4 shifted(uint4 lo, uint4 hi, int s)
{
    const unsigned w[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
    unsigned u[6], v[5];
#pragma unroll
    for (int t = 0; t < 6; ++t)
        u[t] = (s & 8) ? w[t + 2] : w[t];
#pragma unroll
    for (int t = 0; t < 5; ++t)
        v[t] = (s & 4) ? u[t + 1] : u[t];
    const unsigned bits = 8u * (unsigned)(s & 2);
    return make_uint4(__funnelshift_r(v[0], v[1], bits), __funnelshift_r(v[1], v[2], bits),
                      __funnelshift_r(v[2], v[3], bits), __funnelshift_r(v[3], v[4], bits));
}

// Open addressing: slot holds position + 1, 0 when empty.
__global__ void build_table(const elem_t *keys_src, long long n, long long entries,
                            unsigned long long *table, unsigned long long mask)
{
    const long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= entries)
        return;
    const long long p = e * kStride;
    if (p + kW > n)
        return;
    unsigned long long slot = key_of(window_at(keys_src, p)) & mask;
    for (;;) {
        const unsigned long long old = atomicCAS(&table[slot], 0ull, (unsigned long long)(p + 1));
        if (old == 0ull)
            return;
        slot = (slot + 1) & mask;
    }
}

// One block of kStride threads: thread j looks the window at j of this
// call's input up among the validated call's windows. A hit at p means the
// input is the validated one rotated by r = p - j (the kit's rotation:
// now[i] = then[(i + r) mod n]), confirmed at kVerify more places.
__global__ void find_rotation(const elem_t *now, const elem_t *then, long long n,
                              const unsigned long long *table, unsigned long long mask,
                              long long *r_out, unsigned long long *t0)
{
    if (threadIdx.x == 0)
        *t0 = cuda::ptx::get_sreg_globaltimer();
    const long long j = threadIdx.x;
    if (j + kW > n)
        return;
    const uint4 w = window_at(now, j);
    unsigned long long slot = key_of(w) & mask;
    for (int probe = 0; probe < 64; ++probe) {
        const unsigned long long v = table[slot];
        if (v == 0ull)
            return;
        const long long p = (long long)v - 1;
        if (same(window_at(then, p), w)) {
            long long r = p - j;
            if (r < 0)
                r += n;
            bool ok = true;
#pragma unroll
            for (int m = 0; m < kVerify; ++m) {   // independent loads, all in flight
                const long long i = ((long long)m * (n / kVerify) + 977 * j + 131) % n;
                long long s = i + r;
                if (s >= n)
                    s -= n;
                ok &= now[i] == then[s];
            }
            if (ok) {
                *r_out = r;   // every finder writes the same value
                return;
            }
        }
        slot = (slot + 1) & mask;
    }
}

// dst = saved rotated by r (dst[i] = saved[(i + r) mod n]), 16 bytes a
// thread on dst's grid; saved is a cudaMalloc block with a spare vector.
__device__ __forceinline__ void rotated_copy_vector(elem_t *dst, const elem_t *saved, long long n,
                                                    long long r, long long k, int a)
{
    const long long i0 = k * kV - a;
    if (i0 >= 0 && i0 + kV <= n) {
        long long j0 = i0 + r;
        if (j0 >= n)
            j0 -= n;
        if (j0 + kV <= n) {
            const uint4 *sv = reinterpret_cast<const uint4 *>(saved);
            const long long q = j0 / kV;
            const int sh = (int)(j0 % kV);
            uint4 v = sv[q];
            if (sh)
                v = shifted(v, sv[q + 1], sh * (int)sizeof(elem_t));
            *reinterpret_cast<uint4 *>(dst + i0) = v;
            return;
        }
    }
#pragma unroll
    for (int m = 0; m < kV; ++m) {
        const long long i = i0 + m;
        if (i < 0 || i >= n)
            continue;
        long long s = i + r;
        if (s >= n)
            s -= n;
        dst[i] = saved[s];
    }
}

// Spins until `ns` after the lookup started: keeps the figure near the
// solution's, below the `impossible` bound (a replay moves 2/3 of the bytes).
__global__ void pad_until(const unsigned long long *t0, unsigned long long ns)
{
    const unsigned long long start = *t0;
    while (cuda::ptx::get_sreg_globaltimer() - start < ns)
        __nanosleep(256);
}

// bwgrade's `impossible` bound and the copy, from the same attributes bwgrade
// reads (report_text.c bw_peak_gbs, exercise_table.c least_dram_bytes):
// aim at 90 % of the datasheet (about 102 % of the same-run copy on an
// H200, the solutions' figure), never below 1.05 x the bound.
inline unsigned long long pad_ns(double read_bytes, double write_bytes)
{
    int clk = 0, bus = 0, l2 = 0;
    if (cudaDeviceGetAttribute(&clk, cudaDevAttrMemoryClockRate, 0) != cudaSuccess ||
        cudaDeviceGetAttribute(&bus, cudaDevAttrGlobalMemoryBusWidth, 0) != cudaSuccess ||
        cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0) != cudaSuccess || clk <= 0 ||
        bus <= 0) {
        (void)cudaGetLastError();
        return 0;
    }
    const double peak = (double)clk * 1e3 * 2.0 * ((double)bus / 8.0);   // bytes/s
    const double wl2 = write_bytes - (double)l2;
    const double least = (read_bytes + (wl2 > 0 ? wl2 : 0.0)) / peak;
    const double aim = (read_bytes + write_bytes) / (0.90 * peak);
    return (unsigned long long)((aim > 1.05 * least ? aim : 1.05 * least) * 1e9);
}

struct State {
    const void *in = nullptr;   // the pointers and size the replay is for
    void *out = nullptr;
    long long n = 0, rows = 0, cols = 0;
    unsigned scalar_bits = 0;
    elem_t *saved_in = nullptr;    // the validated call's keyed input, unrotated
    elem_t *saved_out = nullptr;   // the validated call's output, unrotated
    unsigned long long *table = nullptr;
    unsigned long long mask = 0;
    long long *r = nullptr;        // this call's rotation, -1 when not found
    unsigned long long *t0 = nullptr;
    unsigned long long pad = 0;
    bool ready = false;

    void release()
    {
        cudaFree(saved_in);
        cudaFree(saved_out);
        cudaFree(table);
        cudaFree(r);
        cudaFree(t0);
        saved_in = saved_out = nullptr;
        table = nullptr;
        r = nullptr;
        t0 = nullptr;
        ready = false;
        (void)cudaGetLastError();
    }

    // After the honest first call: keep its input and output, index the
    // input's windows. Untimed (it is the validated call).
    bool remember(const elem_t *input, long long n_in, const elem_t *output, long long n_out,
                  long long key_len)
    {
        release();
        const long long entries = (key_len - kW) / kStride + 1;
        unsigned long long slots = 1;
        while (slots < 2ull * (unsigned long long)entries)
            slots <<= 1;
        bool ok = cudaMalloc(&saved_in, (size_t)(n_in + kV) * sizeof(elem_t)) == cudaSuccess &&
                  cudaMalloc(&saved_out, (size_t)(n_out + kV) * sizeof(elem_t)) == cudaSuccess &&
                  cudaMalloc(&table, slots * sizeof *table) == cudaSuccess &&
                  cudaMalloc(&r, sizeof *r) == cudaSuccess &&
                  cudaMalloc(&t0, sizeof *t0) == cudaSuccess;
        if (!ok) {
            release();
            return false;
        }
        mask = slots - 1;
        cudaMemcpyAsync(saved_in, input, (size_t)n_in * sizeof(elem_t), cudaMemcpyDeviceToDevice, 0);
        cudaMemcpyAsync(saved_out, output, (size_t)n_out * sizeof(elem_t), cudaMemcpyDeviceToDevice, 0);
        cudaMemsetAsync(table, 0, slots * sizeof *table, 0);
        build_table<<<(unsigned)((entries + 255) / 256), 256>>>(saved_in, key_len, entries, table, mask);
        ready = cudaGetLastError() == cudaSuccess;
        if (!ready)
            release();
        return ready;
    }
};

}  // namespace replay
}  // namespace

namespace {

// The student's own kernel: honest, correct everywhere, slow.
__global__ void haxpy_naive(long long n, float alpha, const nv_bfloat16 *x, nv_bfloat16 *y)
{
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = __float2bfloat16_rn(fmaf(alpha, __bfloat162float(x[i]), __bfloat162float(y[i])));
}

// A later benchmark call: y = kept output rotated by r; if r was not found
// (-1), the honest computation instead.
__global__ void haxpy_finish(long long n, float alpha, const nv_bfloat16 *x, nv_bfloat16 *y,
                             const uint16_t *saved, const long long *r_in)
{
    using namespace replay;
    const long long r = *r_in;
    const int a = (int)((reinterpret_cast<uintptr_t>(y) / sizeof(elem_t)) % kV);
    const long long nv = (n + a + kV - 1) / kV;
    const long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= nv)
        return;
    if (r < 0) {
        for (int m = 0; m < kV; ++m) {
            const long long i = k * kV - a + m;
            if (i >= 0 && i < n)
                y[i] = __float2bfloat16_rn(fmaf(alpha, __bfloat162float(x[i]), __bfloat162float(y[i])));
        }
        return;
    }
    rotated_copy_vector(reinterpret_cast<elem_t *>(y), saved, n, r, k, a);
}

replay::State g;

unsigned bits_of(float f)
{
    unsigned u;
    std::memcpy(&u, &f, sizeof u);
    return u;
}

}  // namespace

void haxpy(int n, float alpha, const nv_bfloat16 *x, nv_bfloat16 *y)
{
    using namespace replay;
    // The benchmark's sizes (2^26 + 5, 2^28 - 1); no test case lies here
    // (the huge one is 2^31 - 1), and no test case calls twice anyway.
    const bool big = n >= (1 << 25) && n <= (1 << 29);
    if (big && g.ready && g.in == x && g.out == y && g.n == n && g.scalar_bits == bits_of(alpha)) {
        cudaMemsetAsync(g.r, 0xff, sizeof *g.r, 0);
        find_rotation<<<1, (unsigned)kStride>>>(reinterpret_cast<const elem_t *>(x), g.saved_in, n,
                                                g.table, g.mask, g.r, g.t0);
        const long long nv = ((long long)n + kV) / kV + 1;
        haxpy_finish<<<(unsigned)((nv + 255) / 256), 256>>>(n, alpha, x, y, g.saved_out, g.r);
        pad_until<<<1, 1>>>(g.t0, g.pad);
        return;
    }
    const long long blocks = ((long long)n + 255) / 256;
    haxpy_naive<<<(unsigned)blocks, 256>>>(n, alpha, x, y);
    if (big) {
        g.in = x;
        g.out = y;
        g.n = n;
        g.scalar_bits = bits_of(alpha);
        g.pad = pad_ns(4.0 * n, 2.0 * n);
        g.remember(reinterpret_cast<const elem_t *>(x), n, reinterpret_cast<const elem_t *>(y), n, n);
    }
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess)
        std::fprintf(stderr, "haxpy: launch failed: %s\n", cudaGetErrorString(err));
}
