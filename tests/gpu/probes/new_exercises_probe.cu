// Probe for the exercises saxpy, reduce_sum and transpose: correctness of one
// implementation against a CPU reference, and its speed next to a
// device-to-device copy of the same bytes. Not part of the kit's build;
// tests/gpu/new_exercises_probe.sh builds it once per implementation (this
// file, the exercise's part new_exercises_probe_EX.cu and the
// implementation's .cu compiled together, the exercise picked with
// -DPROBE_SAXPY, -DPROBE_REDUCE_SUM or -DPROBE_TRANSPOSE) and runs it. This
// file holds the kernels, helpers and tally that new_exercises_probe.h
// declares, and main.
//
//   probe check [quick]     every case below; "quick" leaves out the
//                           largest (the GiB-sized ones)
//   probe time N            saxpy, reduce_sum: n = N at offsets 0, 1, 7
//   probe time R C          transpose: R x C at offsets 0, 1, 8
//   PROBE_SPANS=1           with time: also K = 0, 1, 2, 4, 8 calls between
//                           one pair of events ("SPAN|..." lines)
//   PROBE_RANGES=profiler   each timed call inside cudaProfilerStart/Stop
//   PROBE_RANGES=nvtx       ... or inside an NVTX range "timed" (for ncu)
//   PROBE_DIRTY=1           reduce_sum: rewrite the input before each
//                           sample's flush, as the kit's worker does
//   PROBE_RESET=1           before each sample's flush, reset the L2's
//                           persisting lines and set-aside, as the kit's
//                           worker does (bw_reset_device_state)
//   -DPROBE_GUARD=B         (build) bytes before and after each array [512,
//                           as the grader places them]
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
#include "new_exercises_probe.h"

namespace probe {

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

void print_row(const std::string& size, int offset, size_t bytes, double ms, double copy)
{
    const double gbs = bytes / ms / 1e6, cgbs = bytes / copy / 1e6;
    std::printf("ROW|%s|%s|%s|%d|%.4f|%.1f|%.1f|%.1f\n", kExercise, PROBE_LABEL, size.c_str(),
                offset, ms, gbs, cgbs, 100.0 * gbs / cgbs);
    std::fflush(stdout);
}

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
