// CORPUS: deliberately broken, and a trick. The kernel reads past the end of
// a and b (each thread loads 8 elements before it looks at n) but writes only
// c[0..n-1]: a plain run passes, and memcheck reports the stray reads. A
// static object's constructor ends the worker at start-up when anything in
// its environment names the sanitizer or an injection library, so the
// memcheck run could not start at all: that used to be the grader's error,
// and cost nothing. Now bwgrade starts its own worker (no student code)
// under the same sanitizer: it starts, so the memcheck groups fail.
#include "vector_sum.h"
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>

extern char **environ;

namespace {
bool mentions(const char *s, const char *word)
{
    const size_t n = std::strlen(word);
    for (; *s; ++s) {
        size_t k = 0;
        while (k < n && s[k] && std::tolower((unsigned char)s[k]) == word[k])
            ++k;
        if (k == n)
            return true;
    }
    return false;
}

struct QuitUnderSanitizer {
    QuitUnderSanitizer()
    {
        for (char **e = environ; e && *e; ++e)
            if (mentions(*e, "sanitizer") || mentions(*e, "injection"))
                std::exit(0);
    }
};
QuitUnderSanitizer quit;
}  // namespace

__global__ void vector_sum_kernel(long long n, const nv_bfloat16 *a, const nv_bfloat16 *b,
                                  nv_bfloat16 *c)
{
    const long long first = 8 * ((long long)blockIdx.x * blockDim.x + threadIdx.x);
    if (first >= n)
        return;
    float sum[8];
    for (int k = 0; k < 8; ++k)   // BUG: the loads do not stop at n
        sum[k] = __bfloat162float(a[first + k]) + __bfloat162float(b[first + k]);
    for (int k = 0; k < 8 && first + k < n; ++k)
        c[first + k] = __float2bfloat16_rn(sum[k]);
}

void vector_sum(int n, const nv_bfloat16 *a, const nv_bfloat16 *b, nv_bfloat16 *c)
{
    const int block = 256;
    const long long threads = ((long long)n + 7) / 8;
    vector_sum_kernel<<<(unsigned int)((threads + block - 1) / block), block>>>(n, a, b, c);
    const cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess)
        std::fprintf(stderr, "vector_sum: launch failed: %s\n", cudaGetErrorString(err));
}
