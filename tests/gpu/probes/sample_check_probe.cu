// The benchmark's per-call check (grader/worker/sample_check.cu) on its
// own: its rotation and hash against a CPU reference, then their speed.
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -Igrader/protocol -Igrader/worker
//        tests/gpu/probes/sample_check_probe.cu grader/worker/sample_check.cu -o /tmp/scp
//   /tmp/scp check        every geometry below against the CPU, bit for bit
//   /tmp/scp time [N]     a preparation's kernels (hash, then rotation from a
//                         pristine copy) for one array of N elements (default
//                         2^28 - 1) of 4 and of 2 bytes at offsets 0, 1, 7
//                         and 0 again, all in the same buffers
//   /tmp/scp prep ROWS COLS OFF EB
//                         a whole sample's preparation for two arrays (hash
//                         then rotation of each) at 24 rotation amounts: a
//                         vector of ROWS elements (COLS 0; 2 arrays of it),
//                         or a transpose's in (whole rows) and out (within
//                         rows); EB-byte elements, both OFF elements in.
//                         Does the preparation depend on the amount?
// Prints "CHECK pass K of K" or the first failures; "TIME ..." and "PREP ..." rows.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <cuda_runtime.h>

#include "mix64.h"
#include "protocol.h"
#include "sample_check.h"

#define CK(call)                                                                          \
    do {                                                                                  \
        cudaError_t e_ = (call);                                                          \
        if (e_ != cudaSuccess) {                                                          \
            std::printf("FATAL %s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
            std::exit(1);                                                                 \
        }                                                                                 \
    } while (0)

namespace {

constexpr size_t kGuard = 64;          // bytes of poison after an array (256 and more before)
constexpr uint8_t kPoison = 0xA5;

bw_array_geom geom(uint32_t elem_bytes, int64_t count, int64_t outer, bool rows)
{
    bw_array_geom g;
    std::memset(&g, 0, sizeof g);
    g.elem_bytes = elem_bytes;
    g.count = count;
    g.outer = outer;
    g.inner = count / outer;
    g.flags = rows ? BW_ARRAY_ROTATE_OUTER : 0u;
    return g;
}

// Where element i of the rotated array came from (sample_check.h's rule).
int64_t source(const bw_array_geom &g, int64_t r, int64_t i)
{
    const int64_t outer = g.outer > 0 ? g.outer : 1, inner = g.count / outer;
    int64_t row = i / inner, col = i % inner;
    if (g.flags & BW_ARRAY_ROTATE_OUTER)
        row = (row + r) % outer;
    else
        col = (col + r) % inner;
    return row * inner + col;
}

uint64_t value_at(const std::vector<uint8_t> &a, uint32_t eb, int64_t i)
{
    uint32_t v = 0;
    std::memcpy(&v, &a[(size_t)i * eb], eb);
    return v;
}

// One geometry: rotate a random src into dst (dst off elements past a
// 256-byte boundary, src src_off), compare with the CPU, check the guards,
// then hash dst and compare. Returns 0 or prints what differs.
int check_one(const bw_array_geom &g, int64_t r, uint32_t flip, int off, int src_off, uint64_t seed)
{
    const uint32_t eb = g.elem_bytes;
    const size_t bytes = (size_t)g.count * eb;
    const size_t span = 256 + 16 + bytes + kGuard;   // dst starts 256 bytes in
    std::vector<uint8_t> src(bytes), want(bytes), got(span);
    uint64_t z = seed;
    for (auto &b : src)
        b = (uint8_t)bw_mix64(++z);
    for (int64_t i = 0; i < g.count; i++) {
        const uint64_t v = value_at(src, eb, source(g, r, i)) ^ flip;
        std::memcpy(&want[(size_t)i * eb], &v, eb);
    }
    uint8_t *d_dst = nullptr, *d_src = nullptr;
    unsigned long long *d_acc = nullptr;
    CK(cudaMalloc(&d_dst, span));
    CK(cudaMalloc(&d_src, bytes + 256));
    CK(cudaMalloc(&d_acc, sizeof *d_acc));
    CK(cudaMemset(d_dst, kPoison, span));
    uint8_t *dst = d_dst + 256 + (size_t)off * eb;   // off elements past a 256-byte boundary
    uint8_t *s = d_src + (size_t)src_off * eb;
    CK(cudaMemcpy(s, src.data(), bytes, cudaMemcpyHostToDevice));
    CK(bw_rotate_array(dst, s, &g, r, flip));
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(got.data(), d_dst, span, cudaMemcpyDeviceToHost));
    const size_t at = (size_t)(dst - d_dst);
    int bad = 0;
    char what[160];
    std::snprintf(what, sizeof what, "%u-byte n=%lld outer=%lld %s r=%lld off=%d src_off=%d", eb,
                  (long long)g.count, (long long)g.outer,
                  g.flags & BW_ARRAY_ROTATE_OUTER ? "rows" : "in-rows", (long long)r, off, src_off);
    for (size_t b = 0; b < span; b++) {
        const bool in = b >= at && b < at + bytes;
        const uint8_t w = in ? want[b - at] : kPoison;
        if (got[b] != w && bad++ < 3)
            std::printf("CASE FAIL rotate %s: byte %lld (%s) is 0x%02x, want 0x%02x\n", what,
                        (long long)b - (long long)at, in ? "inside" : "guard", got[b], w);
    }
    // The hash of dst, keyed by unrotated position: the CPU's sum of terms.
    const uint64_t key = bw_mix64(seed ^ 0x5eed);
    uint64_t h = 0;
    for (int64_t i = 0; i < g.count; i++) {
        const uint64_t v = value_at(want, eb, i);
        for (uint32_t u = 0; u < eb / 2; u++)
            h += bw_hash_term(key, 3, (uint64_t)source(g, r, i) * (eb / 2) + u, (uint16_t)(v >> (16 * u)));
    }
    CK(cudaMemset(d_acc, 0, sizeof *d_acc));
    CK(bw_hash_array(dst, &g, r, key, 3, d_acc));
    unsigned long long hd = 0;
    CK(cudaMemcpy(&hd, d_acc, sizeof hd, cudaMemcpyDeviceToHost));
    if (hd != h && bad++ < 4)
        std::printf("CASE FAIL hash %s: 0x%016llx, want 0x%016llx\n", what, hd, (unsigned long long)h);
    CK(cudaFree(d_dst));
    CK(cudaFree(d_src));
    CK(cudaFree(d_acc));
    return bad ? 1 : 0;
}

int check_all()
{
    int cases = 0, failed = 0;
    uint64_t seed = 1;
    const int64_t lengths[] = {1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 33, 100, 1000, 4097, (1 << 20) + 3};
    for (uint32_t eb : {2u, 4u}) {
        const uint32_t flip = eb == 4 ? 0x80000000u : 0x8000u;
        for (int64_t n : lengths)
            for (int off : {0, 1, 3, 7})
                for (int src_off : {0, 1}) {
                    const int64_t rs[] = {0, 1, n / 3, n - 1};
                    for (int64_t r : rs) {
                        if (r >= n && n > 1)
                            continue;
                        failed += check_one(geom(eb, n, 1, false), n > 1 ? r : 0, r & 1 ? flip : 0, off,
                                            src_off, ++seed);
                        cases++;
                    }
                }
        // Matrices: whole rows move, or elements within each row.
        const int64_t shapes[][2] = {{7, 13}, {5, 16}, {1, 9}, {9, 1}, {33, 17}, {1000, 3}};
        for (auto &sh : shapes)
            for (bool rows : {true, false})
                for (int off : {0, 5}) {
                    const int64_t axis = rows ? sh[0] : sh[1];
                    const int64_t rs[] = {0, 1, axis - 1};
                    for (int64_t r : rs) {
                        if (r >= axis && axis > 1)
                            continue;
                        failed += check_one(geom(eb, sh[0] * sh[1], sh[0], rows), axis > 1 ? r : 0, 0, off,
                                            0, ++seed);
                        cases++;
                    }
                }
    }
    std::printf("CHECK sample_check pass %d of %d\n", cases - failed, cases);
    return failed ? 1 : 0;
}

// A preparation's kernels for one array: hash it, then rewrite it rotated
// from its pristine copy. Median of 11, each after an L2 flush. The buffers
// are the caller's, so that offsets are compared on the same memory.
struct Buffers {
    uint8_t *arr, *pristine, *flush;
    unsigned long long *acc;
    size_t flush_bytes;
};

void time_one(const Buffers &b, uint32_t eb, int64_t n, int off)
{
    const size_t bytes = (size_t)n * eb;
    CK(cudaMemset(b.pristine, 0x3c, bytes));
    uint8_t *arr = b.arr + (size_t)off * eb;
    const bw_array_geom g = geom(eb, n, 1, false);
    cudaEvent_t e0, e1, e2;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    CK(cudaEventCreate(&e2));
    std::vector<float> hash_ms, rot_ms;
    uint64_t z = 7;
    for (int k = 0; k < 11; k++) {
        CK(cudaMemset(b.flush, k, b.flush_bytes));
        const int64_t r = 1 + (int64_t)(bw_mix64(++z) % (uint64_t)(n - 1));
        CK(cudaEventRecord(e0));
        CK(cudaMemsetAsync(b.acc, 0, sizeof *b.acc));
        CK(bw_hash_array(arr, &g, r, 42, 1, b.acc));
        CK(cudaEventRecord(e1));
        CK(bw_rotate_array(arr, b.pristine, &g, r, 0));
        CK(cudaEventRecord(e2));
        CK(cudaEventSynchronize(e2));
        float h = 0, t = 0;
        CK(cudaEventElapsedTime(&h, e0, e1));
        CK(cudaEventElapsedTime(&t, e1, e2));
        hash_ms.push_back(h);
        rot_ms.push_back(t);
    }
    std::sort(hash_ms.begin(), hash_ms.end());
    std::sort(rot_ms.begin(), rot_ms.end());
    const double gb = (double)bytes / 1e9;
    std::printf("TIME %u-byte n=%lld off=%d  hash %.3f ms (%.0f GB/s)  rotate %.3f ms (%.0f GB/s)  spread %.3f / %.3f ms\n",
                eb, (long long)n, off, hash_ms[5], gb / hash_ms[5] * 1e3, rot_ms[5], 2 * gb / rot_ms[5] * 1e3,
                hash_ms[10] - hash_ms[0], rot_ms[10] - rot_ms[0]);
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    CK(cudaEventDestroy(e2));
}

// One sample's preparation, as the worker runs it, at one rotation amount:
// ms, the median of 5 (each after an L2 flush).
double prep_once(const Buffers &b, const bw_array_geom g[2], uint8_t *arr[2], uint8_t *pris[2], int64_t r)
{
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    std::vector<float> ms;
    for (int k = 0; k < 5; k++) {
        CK(cudaMemset(b.flush, k, b.flush_bytes));
        CK(cudaEventRecord(e0));
        CK(cudaMemsetAsync(b.acc, 0, sizeof *b.acc));
        for (int a = 0; a < 2; a++)
            CK(bw_hash_array(arr[a], &g[a], r, 42, a, b.acc));
        for (int a = 0; a < 2; a++)
            CK(bw_rotate_array(arr[a], pris[a], &g[a], r, 0));
        CK(cudaEventRecord(e1));
        CK(cudaEventSynchronize(e1));
        float t = 0;
        CK(cudaEventElapsedTime(&t, e0, e1));
        ms.push_back(t);
    }
    std::sort(ms.begin(), ms.end());
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    return ms[2];
}

int prep_sweep(int64_t rows, int64_t cols, int off, uint32_t eb)
{
    const bool matrix = cols > 0;
    const int64_t count = matrix ? rows * cols : rows;
    const size_t bytes = (size_t)count * eb;
    bw_array_geom g[2] = {geom(eb, count, matrix ? rows : 1, matrix),
                          geom(eb, count, matrix ? cols : 1, false)};
    Buffers b;
    b.flush_bytes = (size_t)256 << 20;
    uint8_t *arr[2], *pris[2], *base[2];
    for (int a = 0; a < 2; a++) {
        CK(cudaMalloc(&base[a], bytes + 256));
        CK(cudaMalloc(&pris[a], bytes));
        CK(cudaMemset(pris[a], 0x3c + a, bytes));
        arr[a] = base[a] + (size_t)off * eb;
    }
    CK(cudaMalloc(&b.flush, b.flush_bytes));
    CK(cudaMalloc(&b.acc, sizeof *b.acc));
    const int64_t axis = matrix ? rows : count;
    // The in-array's rotation moves r * cols elements (r for a vector): its
    // place among 16-byte vectors is what the vector kernels see.
    const int64_t per = 16 / eb, step = matrix ? cols : 1;
    std::vector<std::vector<double>> by_class(per);
    uint64_t z = 11;
    for (int k = 0; k < 24; k++) {
        const int64_t r = 1 + (int64_t)(bw_mix64(++z) % (uint64_t)(axis - 1));
        const double ms = prep_once(b, g, arr, pris, r);
        const int cls = (int)((r % per) * (step % per) % per);
        by_class[cls].push_back(ms);
        std::printf("PREP rows=%lld cols=%lld off=%d eb=%u r=%lld shift%%%lld=%d  %.3f ms\n",
                    (long long)rows, (long long)cols, off, eb, (long long)r, (long long)per, cls, ms);
    }
    for (int c = 0; c < per; c++) {
        auto &v = by_class[c];
        if (v.empty())
            continue;
        std::sort(v.begin(), v.end());
        std::printf("PREP CLASS rows=%lld cols=%lld off=%d shift%%%lld=%d  n=%zu  %.3f .. %.3f ms\n",
                    (long long)rows, (long long)cols, off, (long long)per, c, v.size(), v.front(), v.back());
    }
    for (int a = 0; a < 2; a++) {
        CK(cudaFree(base[a]));
        CK(cudaFree(pris[a]));
    }
    CK(cudaFree(b.flush));
    CK(cudaFree(b.acc));
    return 0;
}

} // namespace

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "check";
    if (std::strcmp(mode, "check") == 0)
        return check_all();
    if (std::strcmp(mode, "time") == 0) {
        const int64_t n = argc > 2 ? std::atoll(argv[2]) : (int64_t)268435455;
        Buffers b;
        b.flush_bytes = (size_t)256 << 20;
        CK(cudaMalloc(&b.arr, (size_t)n * 4 + 256));
        CK(cudaMalloc(&b.pristine, (size_t)n * 4));
        CK(cudaMalloc(&b.flush, b.flush_bytes));
        CK(cudaMalloc(&b.acc, sizeof *b.acc));
        for (uint32_t eb : {4u, 2u})
            for (int off : {0, 1, 7, 0})   // offset 0 again: the same memory, later
                time_one(b, eb, n, off);
        CK(cudaFree(b.arr));
        CK(cudaFree(b.pristine));
        CK(cudaFree(b.flush));
        CK(cudaFree(b.acc));
        return 0;
    }
    if (std::strcmp(mode, "prep") == 0 && argc == 6)
        return prep_sweep(std::atoll(argv[2]), std::atoll(argv[3]), std::atoi(argv[4]),
                          (uint32_t)std::atoi(argv[5]));
    std::fprintf(stderr, "usage: %s check | time [N] | prep ROWS COLS OFF EB\n", argv[0]);
    return 2;
}
