// saxpy's part of the new exercises' probe (new_exercises_probe.h): its
// cases checked against the CPU, and its rows timed next to a copy.
#include "new_exercises_probe.h"

#ifndef PROBE_SAXPY
#error "new_exercises_probe_saxpy.cu is saxpy's part: build it with -DPROBE_SAXPY"
#endif

namespace probe {

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
        tm.spans([&] { saxpy((int)n, 0.5f, x, y); }, std::to_string(n), off);
    }
}

} // namespace probe
