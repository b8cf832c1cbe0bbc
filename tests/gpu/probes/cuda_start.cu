// Probe: how long a process's first CUDA call takes (the cost each bwgrade
// worker pays when it starts). Prints "TAG first CUDA call X.XXX s".
// Not part of the kit's build; tests/gpu/probe_lanes.sh builds and runs it.
#include <cstdio>
#include <ctime>
#include <cuda_runtime.h>

static double now()
{
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    const char *tag = argc > 1 ? argv[1] : "";
    double t0 = now();
    cudaError_t e = cudaFree(0);
    double s = now() - t0;
    if (e != cudaSuccess) {
        std::printf("%s: %s\n", tag, cudaGetErrorString(e));
        return 1;
    }
    std::printf("%s first CUDA call %.3f s\n", tag, s);
    return 0;
}
