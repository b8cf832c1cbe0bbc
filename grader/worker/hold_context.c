/* bwhold: keeps a CUDA context open on the visible GPU until its standard
 * input closes, so that the workers run.py grade starts one after another
 * find the GPU's driver state already set up.
 *
 * Measured on nvidia-h200-x2 (persistence mode on): a process's first CUDA
 * call took 0.26-0.35 s with no other process on its GPU and 0.14-0.15 s
 * while bwhold held a context there; 0.46-0.50 s and 0.26-0.29 s when both
 * GPUs' processes started at once (tests/gpu/probe_lanes.sh, docs/SPEED.md).
 * A grading batch starts about six workers per submission on each GPU.
 *
 * It prints "ready" once the context exists. Exit 0 when its input closes
 * (run.py's end, or its death), 1 when CUDA cannot start or the GPU is in
 * an exclusive compute mode (where a held context would keep the workers
 * out): grading goes on without it, only slower. No student code ever runs
 * here. */
#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

int main(void)
{
    /* In an exclusive compute mode a held context would lock every worker
     * out of the GPU: hold nothing there. */
    int mode = cudaComputeModeDefault;
    cudaError_t e = cudaDeviceGetAttribute(&mode, cudaDevAttrComputeMode, 0);
    if (e == cudaSuccess && mode != cudaComputeModeDefault) {
        fprintf(stderr, "bwhold: the GPU is not in the default compute mode (mode %d); "
                        "holding no context\n", mode);
        return 1;
    }
    if (e == cudaSuccess)
        e = cudaFree(0);
    if (e != cudaSuccess) {
        fprintf(stderr, "bwhold: no CUDA context: %s\n", cudaGetErrorString(e));
        return 1;
    }
    printf("ready\n");
    fflush(stdout);
    char buf[256];
    for (;;) {
        ssize_t r = read(STDIN_FILENO, buf, sizeof buf);
        if (r == 0 || (r < 0 && errno != EINTR))
            break;
    }
    return 0;
}
