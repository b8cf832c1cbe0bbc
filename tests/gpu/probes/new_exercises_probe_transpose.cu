// transpose's part of the new exercises' probe (new_exercises_probe.h): its
// shapes checked bit for bit against the CPU, and its rows timed next to a
// copy.
#include "new_exercises_probe.h"

#ifndef PROBE_TRANSPOSE
#error "new_exercises_probe_transpose.cu is transpose's part: build it with -DPROBE_TRANSPOSE"
#endif

namespace probe {

// off: elements in's and out's first element lie past the start of their
// blocks (out's: off_out, when that is not -1).
void check_one(int rows, int cols, int off, uint64_t seed, int off_out = -1)
{
    const long long n = (long long)rows * cols;
    if (off_out < 0)
        off_out = off;
    const std::string what = std::to_string(rows) + "x" + std::to_string(cols) + " off=" + std::to_string(off)
                             + (off_out != off ? "/" + std::to_string(off_out) : "");
    if (!fits(2 * (size_t)n * 2, (size_t)n * 2)) {
        std::printf("CASE SKIP %s %s: not enough memory\n", kExercise, what.c_str());
        return;
    }
    DevArray I, O;
    if (!I.alloc(n, 2, off, kPoison) || !O.alloc(n, 2, off_out, kPoison)) {
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
                             {4099, 4093}, {1048579, 17}, {1000003, 2}, {65537, 3},  {100003, 32},
                             {65537, 64},  {4099, 63},   {1048576, 6}};
    int k = 0;
    for (const auto& s : shapes)
        for (int off : {0, 1, 7}) {
            if (quick && (long long)s[0] * s[1] > 5000000 && off != 1)
                continue;
            check_one(s[0], s[1], off, 500 + k++);
        }
    // Every place on the 32-byte sector for each array, in and out apart.
    const int grid_shapes[][2] = {{17, 17}, {33, 65}, {129, 127}, {255, 257}, {1000, 1001}, {17, 65537}};
    for (const auto& s : grid_shapes)
        for (int off = 0; off < 16; ++off)
            check_one(s[0], s[1], off, 700 + k++, (3 * off + 2) % 16);
    if (!quick) {
        check_one(46340, 46340, 1, 61);           // 4 GiB in, 4 GiB out
        check_one(2, 1073741823, 7, 62);          // gridDim.y would overflow
        check_one(1073741823, 2, 1, 63);          // two columns: the element kernel's largest
        check_one(715827882, 3, 1, 64);           // the tall kernel's: rows * cols = 2^31 - 2
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
    for (int off : {0, 1, 8}) {   // 8: every row of an even-sided square starts mid-sector
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

} // namespace probe
