// Probe for the exercises saxpy, reduce_sum and transpose: correctness of one
// implementation against a CPU reference, and its speed next to a
// device-to-device copy of the same bytes. Not part of the kit's build;
// tests/gpu/new_exercises_probe.sh builds it once per implementation (the
// implementation's .cu compiled alongside, the exercise picked with
// -DPROBE_SAXPY, -DPROBE_REDUCE_SUM or -DPROBE_TRANSPOSE) and runs it.
//
//   probe check [quick]     every case below; "quick" leaves out the
//                           largest (the GiB-sized ones)
//   probe time N            saxpy, reduce_sum: n = N at offsets 0, 1, 7
//   probe time R C          transpose: R x C at offsets 0, 1
//
// Inputs are a hash of the element index (the CPU recomputes any element
// without a copy of the array), never all zeros. Arrays sit kGuard bytes into
// a poisoned cudaMalloc block (256-byte aligned), shifted by the offset in
// elements; the guards must be untouched afterwards and inputs unchanged.
// Timing: L2 evicted before every call by reading a buffer twice its size
// (a read, so that no dirty lines are written back inside the timed span),
// then two events around the call; the median of kSamples calls after
// kWarmup. A timing process makes no other call first: CUB's DeviceTransform
// picks its tile at the first call of a process (docs/BENCHMARKS.md).
// The copy baseline is cudaMemcpyAsync of half the bytes the call moves (a
// copy reads and writes each byte), timed the same way in the same process.
// Output lines for the script: "CASE ...", "CHECK label ex pass N of M",
// "ROW|ex|label|size|offset|ms|GB/s|copy GB/s|% of copy".
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#if defined(PROBE_SAXPY)
#include "saxpy.h"
static const char* const kExercise = "saxpy";
#elif defined(PROBE_REDUCE_SUM)
#include "reduce_sum.h"
static const char* const kExercise = "reduce_sum";
#elif defined(PROBE_TRANSPOSE)
#include "transpose.h"
static const char* const kExercise = "transpose";
#else
#error "define PROBE_SAXPY, PROBE_REDUCE_SUM or PROBE_TRANSPOSE"
#endif
#ifndef PROBE_LABEL
#define PROBE_LABEL "impl"
#endif

#define CK(call)                                                                   \
    do {                                                                           \
        cudaError_t e_ = (call);                                                   \
        if (e_ != cudaSuccess) {                                                   \
            std::printf("FATAL %s:%d %s: %s\n", __FILE__, __LINE__, #call,         \
                        cudaGetErrorString(e_));                                   \
            std::fflush(stdout);                                                   \
            std::exit(2);                                                          \
        }                                                                          \
    } while (0)

// A named namespace, not an anonymous one: each build uses only its
// exercise's helpers, and unused ones with internal linkage would warn.
namespace probe {

constexpr size_t kGuard = 4096;      // bytes before and after each array
constexpr unsigned char kPoison = 0xFF;   // guards (and saxpy/reduce padding): NaN bits
#if defined(PROBE_TRANSPOSE)
constexpr unsigned char kOutPoison = 0xA5; // transpose's output before the call
#endif
constexpr int kWarmup = 3;
constexpr int kSamples = 25;

// ---- the data: a hash of the index, the same on host and device ----------

__host__ __device__ inline uint64_t mix64(uint64_t z)
{
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

__host__ __device__ inline float bits_to_float(uint32_t u)
{
#ifdef __CUDA_ARCH__
    return __uint_as_float(u);
#else
    float f;
    std::memcpy(&f, &u, 4);
    return f;
#endif
}

__host__ __device__ inline uint32_t float_to_bits(float f)
{
#ifdef __CUDA_ARCH__
    return __float_as_uint(f);
#else
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
#endif
}

#if defined(PROBE_SAXPY)
// saxpy: finite floats, magnitudes 2^-20 .. 2^20, random signs and
// mantissas; one element in 61 a subnormal (a flush to zero shows).
__host__ __device__ inline float saxpy_value(uint64_t i, uint64_t seed)
{
    const uint64_t h = mix64(i ^ seed);
    const uint32_t sign = (uint32_t)(h >> 63) << 31;
    const uint32_t mant = (uint32_t)(h >> 8) & 0x7FFFFFu;
    if (h % 61 == 0)
        return bits_to_float(sign | (mant | 1u));
    const uint32_t exp = 127u - 20u + (uint32_t)((h >> 40) % 41);
    return bits_to_float(sign | (exp << 23) | mant);
}
#endif

// reduce_sum kinds: 0 uniform in [-1, 1]; 1 integers -4..4; 2 positive in
// [0, 2) (no cancellation: the largest sums); 3 sparse integers (one in 1024
// is +-1..4, the rest 0: exact sums even at n = 2^31 - 1). Kinds 4, 5, 6
// are kind 0 with special values written over it by check_one (+Inf; a NaN;
// +Inf and -Inf).
__host__ __device__ inline float reduce_value(uint64_t i, uint64_t seed, int kind)
{
    const uint64_t h = mix64(i ^ seed);
    float v;
    switch (kind) {
    case 0: v = (float)((int64_t)(h % 4097) - 2048) / 2048.0f; break;
    case 1: v = (float)((int)(h % 9) - 4); break;
    case 2: v = (float)(h % 4096) / 2048.0f; break;
    default: {
        const int k = (int)((h >> 20) % 8);   // 0..7 -> -4..-1, 1..4
        v = (h % 1024 == 0) ? (float)(k < 4 ? k - 4 : k - 3) : 0.0f;
        break;
    }
    }
    return v;
}

// The value as bf16 bits (round to nearest even; every value above is a
// bf16 except some of kind 0 and 2, which round: the reference uses the
// rounded value).
__host__ __device__ inline uint16_t float_to_bf16_bits(float f)
{
    const uint32_t u = float_to_bits(f);
    const uint32_t r = u + 0x7FFFu + ((u >> 16) & 1u);
    return (uint16_t)(r >> 16);
}

#if defined(PROBE_REDUCE_SUM)
__host__ __device__ inline float bf16_bits_to_float(uint16_t b)
{
    return bits_to_float((uint32_t)b << 16);
}
#endif

// transpose: every 16-bit pattern, NaNs with payloads included.
__host__ __device__ inline uint16_t transpose_value(uint64_t e, uint64_t seed)
{
    return (uint16_t)(mix64(e ^ seed) >> 17);
}

#if defined(PROBE_SAXPY)
__global__ void fill_saxpy(float* p, long long n, uint64_t seed)
{
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x)
        p[i] = saxpy_value((uint64_t)i, seed);
}
#else
__global__ void fill_bf16(uint16_t* p, long long n, uint64_t seed, int kind)
{
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x)
        p[i] = kind < 0 ? transpose_value((uint64_t)i, seed)
                        : float_to_bf16_bits(reduce_value((uint64_t)i, seed, kind));
}
#endif

// Inputs unchanged: count elements that differ from the model.
#if defined(PROBE_SAXPY)
__global__ void count_bad_saxpy(const float* p, long long n, uint64_t seed, unsigned long long* bad)
{
    unsigned long long b = 0;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x)
        b += float_to_bits(p[i]) != float_to_bits(saxpy_value((uint64_t)i, seed));
    if (b)
        atomicAdd(bad, b);
}
#else
__global__ void count_bad_bf16(const uint16_t* p, long long n, uint64_t seed, int kind,
                               unsigned long long* bad)
{
    unsigned long long b = 0;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        const uint16_t want = kind < 0 ? transpose_value((uint64_t)i, seed)
                                       : float_to_bf16_bits(reduce_value((uint64_t)i, seed, kind));
        b += p[i] != want;
    }
    if (b)
        atomicAdd(bad, b);
}
#endif

// The L2 flush: read every 16 bytes; the store never happens in practice.
__global__ void flush_read(const uint4* buf, size_t n, unsigned* sink)
{
    unsigned acc = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        const uint4 v = buf[i];
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x9E3779B9u)
        *sink = acc;
}

int g_sms = 0;

unsigned grid_for(long long n)
{
    const long long b = (n + 255) / 256;
    const long long cap = (long long)g_sms * 16;
    return (unsigned)std::max(1LL, std::min(b, cap));
}

// ---- memory -----------------------------------------------------------------

// One array in its own cudaMalloc block: kGuard bytes, offset elements, the
// array, kGuard bytes.
struct DevArray {
    char* base = nullptr;
    size_t total = 0;       // bytes in the block
    size_t head = 0;        // bytes before the array
    size_t bytes = 0;       // bytes of the array
    void* ptr() const { return base + head; }
    bool alloc(size_t elems, size_t elem_size, int offset, unsigned char poison)
    {
        head = kGuard + (size_t)offset * elem_size;
        bytes = elems * elem_size;
        total = head + bytes + kGuard;
        if (cudaMalloc(&base, total) != cudaSuccess) {
            (void)cudaGetLastError();
            base = nullptr;
            return false;
        }
        CK(cudaMemset(base, poison, total));
        return true;
    }
    // Guards untouched: count the bytes that changed.
    long long guard_damage(unsigned char poison) const
    {
        std::vector<unsigned char> h(head), t(kGuard);
        CK(cudaMemcpy(h.data(), base, head, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(t.data(), base + head + bytes, kGuard, cudaMemcpyDeviceToHost));
        long long bad = 0;
        for (unsigned char c : h)
            bad += c != poison;
        for (unsigned char c : t)
            bad += c != poison;
        return bad;
    }
    ~DevArray()
    {
        if (base)
            (void)cudaFree(base);
    }
};

size_t device_free()
{
    size_t free_b = 0, total_b = 0;
    CK(cudaMemGetInfo(&free_b, &total_b));
    return free_b;
}

size_t host_available()
{
    FILE* f = std::fopen("/proc/meminfo", "r");
    if (!f)
        return 0;
    char line[256];
    size_t kb = 0;
    while (std::fgets(line, sizeof line, f))
        if (std::sscanf(line, "MemAvailable: %zu kB", &kb) == 1)
            break;
    std::fclose(f);
    return kb * 1024;
}

// Enough room for device bytes dev and host bytes host, with a margin?
bool fits(size_t dev, size_t host)
{
    return dev + (512u << 20) < device_free() && host + (2ull << 30) < host_available();
}

// ---- host helpers -----------------------------------------------------------

// Runs f(lo, hi) over [0, n) on all cores; returns the sum of its results.
template <class F> long long par_sum(long long n, F f)
{
    const int threads = n < (1 << 20) ? 1 : (int)std::max(1u, std::thread::hardware_concurrency());
    std::vector<long long> part(threads, 0);
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; ++t) {
        const long long lo = n * t / threads, hi = n * (t + 1) / threads;
        ts.emplace_back([&, t, lo, hi] { part[t] = f(lo, hi); });
    }
    for (auto& th : ts)
        th.join();
    long long s = 0;
    for (long long p : part)
        s += p;
    return s;
}

unsigned long long* g_bad = nullptr;   // device counter for count_bad_*

unsigned long long device_count(std::function<void()> launch)
{
    CK(cudaMemset(g_bad, 0, sizeof *g_bad));
    launch();
    CK(cudaGetLastError());
    unsigned long long b = 0;
    CK(cudaMemcpy(&b, g_bad, sizeof b, cudaMemcpyDeviceToHost));
    return b;
}

int g_cases = 0, g_pass = 0;

void report(bool ok, const std::string& what, const std::string& detail)
{
    ++g_cases;
    g_pass += ok;
    if (!ok)
        std::printf("CASE FAIL %s %s: %s\n", kExercise, what.c_str(), detail.c_str());
    std::fflush(stdout);
}

// ---- timing -----------------------------------------------------------------

struct Timer {
    void* flush = nullptr;
    size_t flush_bytes = 0;
    unsigned* sink = nullptr;
    cudaEvent_t e0{}, e1{};
    Timer()
    {
        int l2 = 0;
        CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
        flush_bytes = ((size_t)2 * l2 + 15) / 16 * 16;
        CK(cudaMalloc(&flush, flush_bytes));
        CK(cudaMemset(flush, 0x5A, flush_bytes));   // written once, read before every call
        CK(cudaMalloc(&sink, sizeof *sink));
        CK(cudaEventCreate(&e0));
        CK(cudaEventCreate(&e1));
    }
    // Median milliseconds of call(), each after an L2 flush.
    double median_ms(const std::function<void()>& call)
    {
        for (int i = 0; i < kWarmup; ++i) {
            call();
            CK(cudaGetLastError());
        }
        CK(cudaDeviceSynchronize());
        std::vector<float> t;
        for (int i = 0; i < kSamples; ++i) {
            flush_read<<<g_sms * 8, 256>>>(static_cast<const uint4*>(flush), flush_bytes / 16, sink);
            CK(cudaGetLastError());
            CK(cudaEventRecord(e0, 0));
            call();
            CK(cudaGetLastError());
            CK(cudaEventRecord(e1, 0));
            CK(cudaEventSynchronize(e1));
            float ms = 0;
            CK(cudaEventElapsedTime(&ms, e0, e1));
            t.push_back(ms);
        }
        std::sort(t.begin(), t.end());
        return t[t.size() / 2];
    }
    // A copy of bytes_moved / 2 bytes (read once, written once), timed the same way.
    double copy_ms(size_t bytes_moved)
    {
        const size_t half = bytes_moved / 2;
        void *src = nullptr, *dst = nullptr;
        CK(cudaMalloc(&src, half));
        CK(cudaMalloc(&dst, half));
        CK(cudaMemset(src, 0x3C, half));
        CK(cudaMemset(dst, 0, half));
        const double ms = median_ms([&] {
            CK(cudaMemcpyAsync(dst, src, half, cudaMemcpyDeviceToDevice, 0));
        });
        CK(cudaFree(src));
        CK(cudaFree(dst));
        return ms;
    }
};

void print_row(const std::string& size, int offset, size_t bytes, double ms, double copy)
{
    const double gbs = bytes / ms / 1e6, cgbs = bytes / copy / 1e6;
    std::printf("ROW|%s|%s|%s|%d|%.4f|%.1f|%.1f|%.1f\n", kExercise, PROBE_LABEL, size.c_str(),
                offset, ms, gbs, cgbs, 100.0 * gbs / cgbs);
    std::fflush(stdout);
}

// ---- saxpy ------------------------------------------------------------------
#if defined(PROBE_SAXPY)

void check_one(long long n, int off, float a, uint64_t seed)
{
    const std::string what = "n=" + std::to_string(n) + " off=" + std::to_string(off);
    if (!fits(2 * (size_t)n * 4, (size_t)n * 4)) {
        std::printf("CASE SKIP %s %s: not enough memory\n", kExercise, what.c_str());
        return;
    }
    DevArray X, Y;
    if (!X.alloc(n, 4, off, kPoison) || !Y.alloc(n, 4, off, kPoison)) {
        std::printf("CASE SKIP %s %s: cudaMalloc failed\n", kExercise, what.c_str());
        return;
    }
    float* x = static_cast<float*>(X.ptr());
    float* y = static_cast<float*>(Y.ptr());
    fill_saxpy<<<grid_for(n), 256>>>(x, n, seed);
    CK(cudaGetLastError());
    fill_saxpy<<<grid_for(n), 256>>>(y, n, seed + 1);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    saxpy((int)n, a, x, y);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    std::vector<float> out(n);
    CK(cudaMemcpy(out.data(), y, (size_t)n * 4, cudaMemcpyDeviceToHost));
    long long first = -1;   // the first wrong element, if the first chunk has one
    const long long bad = par_sum(n, [&](long long lo, long long hi) {
        long long b = 0;
        for (long long i = lo; i < hi; ++i) {
            const float want = std::fmaf(a, saxpy_value(i, seed), saxpy_value(i, seed + 1));
            if (float_to_bits(out[i]) != float_to_bits(want) && b++ == 0 && lo == 0)
                first = i;
        }
        return b;
    });
    const unsigned long long x_bad = device_count([&] {
        count_bad_saxpy<<<grid_for(n), 256>>>(x, n, seed, g_bad);
    });
    const long long guards = X.guard_damage(kPoison) + Y.guard_damage(kPoison);
    char detail[256];
    std::snprintf(detail, sizeof detail,
                  "%lld wrong elements (first in the first chunk: %lld), x changed at %llu, %lld guard bytes written",
                  bad, first, x_bad, guards);
    report(bad == 0 && x_bad == 0 && guards == 0, what, detail);
}

void check_all(bool quick)
{
    const float as[] = {1.7f, -0.375f, 3.0e-5f};
    const long long ns[] = {1, 2, 3, 4, 5, 7, 8, 63, 64, 65, 67, 255, 256, 257, 1000, 4097, 65537,
                            1048579, 16777219, 100000007};
    int k = 0;
    for (long long n : ns)
        for (int off : {0, 1, 7}) {
            if (quick && n > 16777219)
                continue;
            check_one(n, off, as[k % 3], 1000 + k);
            ++k;
        }
    if (!quick)
        check_one(2147483647LL, 1, 1.7f, 77);   // byte offsets past 2^32
}

void time_all(int argc, char** argv)
{
    const long long n = std::atoll(argv[2]);
    (void)argc;
    Timer tm;
    const size_t bytes = (size_t)n * 12;
    for (int off : {0, 1, 7}) {
        DevArray X, Y;
        if (!X.alloc(n, 4, off, kPoison) || !Y.alloc(n, 4, off, kPoison)) {
            std::printf("FATAL cudaMalloc\n");
            std::exit(2);
        }
        float* x = static_cast<float*>(X.ptr());
        float* y = static_cast<float*>(Y.ptr());
        fill_saxpy<<<grid_for(n), 256>>>(x, n, 5);
        fill_saxpy<<<grid_for(n), 256>>>(y, n, 6);
        CK(cudaGetLastError());
        const double ms = tm.median_ms([&] { saxpy((int)n, 0.5f, x, y); });
        const double copy = tm.copy_ms(bytes);
        print_row(std::to_string(n), off, bytes, ms, copy);
    }
}

// ---- reduce_sum ---------------------------------------------------------------
#elif defined(PROBE_REDUCE_SUM)

void check_one(long long n, int off, int kind, uint64_t seed)
{
    const std::string what = "n=" + std::to_string(n) + " off=" + std::to_string(off) +
                             " kind=" + std::to_string(kind);
    const int base = kind >= 4 ? 0 : kind;   // the model the array is filled from
    if (!fits((size_t)n * 2, 0)) {
        std::printf("CASE SKIP %s %s: not enough memory\n", kExercise, what.c_str());
        return;
    }
    DevArray X, S;
    if (!X.alloc(n, 2, off, kPoison) || !S.alloc(1, 4, 0, kPoison)) {
        std::printf("CASE SKIP %s %s: cudaMalloc failed\n", kExercise, what.c_str());
        return;
    }
    const auto* x = static_cast<const nv_bfloat16*>(X.ptr());
    float* sum = static_cast<float*>(S.ptr());
    fill_bf16<<<grid_for(n), 256>>>(static_cast<uint16_t*>(X.ptr()), n, seed, base);
    CK(cudaGetLastError());
    // Special values: +Inf (kind 4), a NaN with a payload (5), +Inf and -Inf (6).
    std::vector<std::pair<long long, uint16_t>> specials;
    if (kind >= 4) {
        const long long p = (long long)(mix64(seed) % (uint64_t)n);
        specials.push_back({p, kind == 5 ? (uint16_t)0x7FC5 : (uint16_t)0x7F80});
        if (kind == 6 && n > 1)
            specials.push_back({(p + n / 2) % n, (uint16_t)0xFF80});
    }
    for (const auto& sp : specials)
        CK(cudaMemcpy(static_cast<uint16_t*>(X.ptr()) + sp.first, &sp.second, 2, cudaMemcpyHostToDevice));
    CK(cudaDeviceSynchronize());
    auto count_changed = [&] {
        return device_count([&] {
            count_bad_bf16<<<grid_for(n), 256>>>(static_cast<const uint16_t*>(X.ptr()), n, seed, base, g_bad);
        });
    };
    const unsigned long long x_differs = count_changed();   // the specials, before the calls

    // The reference: in double (exact for every n here), and sum |x|.
    double ref = 0, mag = 0;
    {
        const int threads = n < (1 << 20) ? 1 : (int)std::max(1u, std::thread::hardware_concurrency());
        std::vector<double> s(threads), m(threads);
        std::vector<std::thread> ts;
        for (int t = 0; t < threads; ++t)
            ts.emplace_back([&, t] {
                const long long lo = n * t / threads, hi = n * (t + 1) / threads;
                double a = 0, b = 0;
                for (long long i = lo; i < hi; ++i) {
                    const double v = bf16_bits_to_float(float_to_bf16_bits(reduce_value(i, seed, base)));
                    a += v;
                    b += std::fabs(v);
                }
                s[t] = a;
                m[t] = b;
            });
        for (auto& th : ts)
            th.join();
        for (int t = 0; t < threads; ++t) {
            ref += s[t];
            mag += m[t];
        }
        for (const auto& sp : specials) {   // in place of the model's values there
            const double v = bf16_bits_to_float(float_to_bf16_bits(reduce_value(sp.first, seed, base)));
            ref += (double)bf16_bits_to_float(sp.second) - v;
        }
    }
    // The grader's bound (handout/reduce_sum.md): 2^-10 sum|x| plus half a
    // float ulp of the result; exact when the inputs are integers and no
    // partial sum can reach 2^24.
    const bool exact = (kind == 1 || kind == 3) && mag < 16777216.0;
    const float ref_f = (float)ref;
    const double half_ulp = std::isfinite(ref_f)
        ? 0.5 * ((double)std::nextafter(std::fabs(ref_f), INFINITY) - std::fabs(ref_f)) : 0.0;
    const double tol = exact ? 0.0 : std::ldexp(mag, -10) + half_ulp;

    // Two calls: *sum starts as NaN, then as 1e30 (garbage either way), and
    // the second call shows that the first left its scratch clean.
    float got[2];
    const float garbage[2] = {std::nanf(""), 1e30f};
    for (int c = 0; c < 2; ++c) {
        CK(cudaMemcpy(sum, &garbage[c], 4, cudaMemcpyHostToDevice));
        reduce_sum((int)n, x, sum);
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
        CK(cudaMemcpy(&got[c], sum, 4, cudaMemcpyDeviceToHost));
    }
    const unsigned long long x_bad = count_changed() - x_differs;
    const long long guards = X.guard_damage(kPoison) + S.guard_damage(kPoison);
    bool ok = x_bad == 0 && guards == 0;
    for (float g : got) {
        if (std::isnan(ref))
            ok = ok && std::isnan(g);
        else if (std::isinf(ref))
            ok = ok && g == ref;
        else
            ok = ok && std::isfinite(g) && std::fabs((double)g - ref) <= tol;
    }
    char detail[320];
    std::snprintf(detail, sizeof detail,
                  "got %.9g and %.9g, want %.9g within %.3g (%s), x changed at %llu, %lld guard bytes written",
                  got[0], got[1], ref, tol, exact ? "exact" : "2^-10 sum|x|", x_bad, guards);
    report(ok, what, detail);
}

void check_all(bool quick)
{
    const long long ns[] = {1, 2, 3, 7, 8, 9, 127, 128, 129, 135, 136, 1000, 4097, 65537, 1048579,
                            16777259, 268435455};
    for (long long n : ns)
        for (int off : {0, 1, 7})
            for (int kind = 0; kind < 4; ++kind) {
                if (quick && n > 16777259)
                    continue;
                check_one(n, off, kind, 3000 + n * 7 + off * 4 + kind);
            }
    for (long long n : {1LL, 2LL, 9LL, 1000LL, 65537LL, 16777259LL})   // Inf and NaN
        for (int kind = 4; kind < 7; ++kind)
            check_one(n, 1, kind, 7000 + n + kind);
    if (!quick) {
        check_one(2147483647LL, 1, 2, 91);   // the largest sum, byte offsets past 2^32
        check_one(2147483647LL, 7, 3, 92);   // exact
    }
}

void time_all(int argc, char** argv)
{
    const long long n = std::atoll(argv[2]);
    (void)argc;
    Timer tm;
    const size_t bytes = (size_t)n * 2 + 4;
    DevArray S;
    if (!S.alloc(1, 4, 0, kPoison)) {
        std::printf("FATAL cudaMalloc\n");
        std::exit(2);
    }
    for (int off : {0, 1, 7}) {
        DevArray X;
        if (!X.alloc(n, 2, off, kPoison)) {
            std::printf("FATAL cudaMalloc\n");
            std::exit(2);
        }
        fill_bf16<<<grid_for(n), 256>>>(static_cast<uint16_t*>(X.ptr()), n, 8, 0);
        CK(cudaGetLastError());
        const auto* x = static_cast<const nv_bfloat16*>(X.ptr());
        float* sum = static_cast<float*>(S.ptr());
        const double ms = tm.median_ms([&] { reduce_sum((int)n, x, sum); });
        const double copy = tm.copy_ms(bytes);
        print_row(std::to_string(n), off, bytes, ms, copy);
    }
}

// ---- transpose --------------------------------------------------------------
#else

void check_one(int rows, int cols, int off, uint64_t seed)
{
    const long long n = (long long)rows * cols;
    const std::string what = std::to_string(rows) + "x" + std::to_string(cols) + " off=" + std::to_string(off);
    if (!fits(2 * (size_t)n * 2, (size_t)n * 2)) {
        std::printf("CASE SKIP %s %s: not enough memory\n", kExercise, what.c_str());
        return;
    }
    DevArray I, O;
    if (!I.alloc(n, 2, off, kPoison) || !O.alloc(n, 2, off, kPoison)) {
        std::printf("CASE SKIP %s %s: cudaMalloc failed\n", kExercise, what.c_str());
        return;
    }
    auto* in = static_cast<uint16_t*>(I.ptr());
    auto* out = static_cast<uint16_t*>(O.ptr());
    fill_bf16<<<grid_for(n), 256>>>(in, n, seed, -1);
    CK(cudaGetLastError());
    CK(cudaMemset(out, kOutPoison, (size_t)n * 2));
    CK(cudaDeviceSynchronize());
    transpose(rows, cols, reinterpret_cast<const nv_bfloat16*>(in), reinterpret_cast<nv_bfloat16*>(out));
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    std::vector<uint16_t> h(n);
    CK(cudaMemcpy(h.data(), out, (size_t)n * 2, cudaMemcpyDeviceToHost));
    // out[c * rows + r] must be in[r * cols + c], bit for bit (the inputs
    // are all 16-bit patterns: about 1 in 256 is a NaN, nearly all with a
    // payload other than the canonical 0x7FC0).
    const long long bad = par_sum(n, [&](long long lo, long long hi) {
        long long b = 0;
        long long c = lo / rows, r = lo % rows;
        for (long long f = lo; f < hi; ++f) {
            const uint16_t want = transpose_value((uint64_t)(r * cols + c), seed);
            b += h[f] != want;
            if (++r == rows) {
                r = 0;
                ++c;
            }
        }
        return b;
    });
    const unsigned long long in_bad = device_count([&] {
        count_bad_bf16<<<grid_for(n), 256>>>(in, n, seed, -1, g_bad);
    });
    const long long guards = I.guard_damage(kPoison) + O.guard_damage(kPoison);
    char detail[256];
    std::snprintf(detail, sizeof detail, "%lld wrong elements, in changed at %llu, %lld guard bytes written",
                  bad, in_bad, guards);
    report(bad == 0 && in_bad == 0 && guards == 0, what, detail);
}

void check_all(bool quick)
{
    const int shapes[][2] = {{1, 1},       {1, 2},      {2, 1},          {2, 3},       {3, 2},
                             {1, 65537},   {65537, 1},  {33, 33},        {64, 64},     {63, 65},
                             {8, 513},     {513, 8},    {255, 257},      {1000, 1001}, {9, 100003},
                             {100003, 9},  {17, 65537}, {65537, 17},     {7, 1000003}, {1000003, 7},
                             {4099, 4093}, {1048579, 17}};
    int k = 0;
    for (const auto& s : shapes)
        for (int off : {0, 1, 7}) {
            if (quick && (long long)s[0] * s[1] > 5000000 && off != 1)
                continue;
            check_one(s[0], s[1], off, 500 + k++);
        }
    if (!quick) {
        check_one(46340, 46340, 1, 61);           // 4 GiB in, 4 GiB out
        check_one(2, 1073741823, 7, 62);          // gridDim.y would overflow
    }
}

void time_all(int argc, char** argv)
{
    if (argc < 4) {
        std::printf("FATAL usage: time ROWS COLS\n");
        std::exit(2);
    }
    const int rows = std::atoi(argv[2]), cols = std::atoi(argv[3]);
    const long long n = (long long)rows * cols;
    Timer tm;
    const size_t bytes = (size_t)n * 4;
    for (int off : {0, 1}) {
        DevArray I, O;
        if (!I.alloc(n, 2, off, kPoison) || !O.alloc(n, 2, off, kPoison)) {
            std::printf("FATAL cudaMalloc\n");
            std::exit(2);
        }
        fill_bf16<<<grid_for(n), 256>>>(static_cast<uint16_t*>(I.ptr()), n, 9, -1);
        CK(cudaGetLastError());
        const auto* in = static_cast<const nv_bfloat16*>(I.ptr());
        auto* out = static_cast<nv_bfloat16*>(O.ptr());
        const double ms = tm.median_ms([&] { transpose(rows, cols, in, out); });
        const double copy = tm.copy_ms(bytes);
        print_row(std::to_string(rows) + "x" + std::to_string(cols), off, bytes, ms, copy);
    }
}
#endif

} // namespace probe

int main(int argc, char** argv)
{
    using namespace probe;
    if (argc < 2) {
        std::printf("usage: %s check [quick] | time N | time ROWS COLS\n", argv[0]);
        return 2;
    }
    CK(cudaDeviceGetAttribute(&g_sms, cudaDevAttrMultiProcessorCount, 0));
    CK(cudaMalloc(&g_bad, sizeof *g_bad));
    const std::string mode = argv[1];
    if (mode == "check") {
        const bool quick = argc > 2 && std::string(argv[2]) == "quick";
        check_all(quick);
        std::printf("CHECK %s %s pass %d of %d\n", PROBE_LABEL, kExercise, g_pass, g_cases);
        return g_pass == g_cases ? 0 : 1;
    }
    if (mode == "time" && argc > 2) {
        time_all(argc, argv);
        return 0;
    }
    std::printf("usage: %s check [quick] | time N | time ROWS COLS\n", argv[0]);
    return 2;
}
