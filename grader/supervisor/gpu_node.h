/* Which /dev/nvidiaN node is a GPU's, so that a sandbox can hold only that
 * one: a GPU whose node is absent is invisible to CUDA (cudaErrorNoDevice
 * in bubblewrap without /dev/nvidia0, H200), so a student's worker cannot
 * reach another lane's GPU by changing CUDA_VISIBLE_DEVICES. */
#ifndef BWLAB_GPU_NODE_H
#define BWLAB_GPU_NODE_H

/* The NVIDIA driver's folder of one subfolder per GPU, each with a file
 * "information" that holds lines "GPU UUID: \t GPU-..." and "Device Minor: \t N". */
#define BW_NVIDIA_PROC_GPUS "/proc/driver/nvidia/gpus"

/* N of the GPU whose UUID is uuid ("GPU-1ed589a9-..."), read from proc_dir
 * (tests pass a folder of their own); -1 when no GPU there has it. */
int bw_gpu_minor(const char *proc_dir, const char *uuid);

/* 1 when path names a GPU's own node, .../nvidiaN (N: digits), and then
 * *minor = N; 0 for the driver's shared nodes (nvidiactl, nvidia-uvm, ...). */
int bw_gpu_node_minor(const char *path, int *minor);

#endif
