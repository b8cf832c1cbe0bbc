// reduce_sum's part of the new exercises' probe (new_exercises_probe.h): its
// cases (special values among them) checked against a sum in double, and its
// rows timed next to a copy.
#include "new_exercises_probe.h"

#ifndef PROBE_REDUCE_SUM
#error "new_exercises_probe_reduce_sum.cu is reduce_sum's part: build it with -DPROBE_REDUCE_SUM"
#endif

namespace probe {

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
        tm.prep = [&] { fill_bf16<<<grid_for(n), 256>>>(static_cast<uint16_t*>(X.ptr()), n, 8, 0); };
        const double ms = tm.median_ms([&] { reduce_sum((int)n, x, sum); });
        const double copy = tm.copy_ms(bytes);
        print_row(std::to_string(n), off, bytes, ms, copy);
        tm.spans([&] { reduce_sum((int)n, x, sum); }, std::to_string(n), off);
        tm.prep = nullptr;
    }
}

} // namespace probe
