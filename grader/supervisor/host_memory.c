/* Does a case fit in host and device memory? See host_memory.h. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "format_alloc.h"
#include "host_memory.h"

#define GIB (1024.0 * 1024.0 * 1024.0)
#define MIB ((uint64_t)1 << 20)

static uint64_t read_number_file(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    unsigned long long v = 0;
    if (fscanf(f, "%llu", &v) != 1)
        v = 0;
    fclose(f);
    return (uint64_t)v;
}

static uint64_t meminfo_available(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f)
        return 0;
    char *line = NULL;
    size_t cap = 0;
    uint64_t kb = 0;
    while (getline(&line, &cap, f) > 0) {
        unsigned long long v;
        if (sscanf(line, "MemAvailable: %llu kB", &v) == 1) {
            kb = v;
            break;
        }
    }
    free(line);
    fclose(f);
    return kb * 1024;
}

/* Host memory we may still use: the larger of free pages and MemAvailable
 * (which counts reclaimable cache), capped by a cgroup v2 limit when one is
 * set (containers). 0 when nothing could be read. */
static uint64_t host_available_bytes(void)
{
    uint64_t avail = 0;
    long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0)
        avail = (uint64_t)pages * (uint64_t)page;
    uint64_t ma = meminfo_available();
    if (ma > avail)
        avail = ma;
    uint64_t limit = read_number_file("/sys/fs/cgroup/memory.max");
    if (limit > 0) {
        uint64_t used = read_number_file("/sys/fs/cgroup/memory.current");
        uint64_t room = limit > used ? limit - used : 0;
        if (room < avail)
            avail = room;
    }
    return avail;
}

char *bw_memory_shortfall(uint64_t images_bytes, uint64_t host_bytes, uint64_t extra_device,
                          const bw_reply *device, bw_shm *shm)
{
    uint64_t images = images_bytes;
    size_t have_shm = shm ? bw_shm_size(shm) : 0;
    /* Shared memory already mapped is already counted as used. The shared
     * memory is all the host memory a case takes: the checks regenerate
     * inputs and expected values block by block (case_data.c). */
    uint64_t host_need = host_bytes > have_shm ? host_bytes - have_shm : 0;
    uint64_t dev_need = images + extra_device;
    /* Small cases always fit; this skips reading /proc for each of them. */
    if (host_need < 64 * MIB && dev_need < 64 * MIB)
        return NULL;
    uint64_t host_avail = host_available_bytes();
    uint64_t dev_avail = device ? device->mem_free : 0;
    /* Margins: 10% (5% on the device) plus 256 MiB for everything else the
     * processes and the CUDA context need. */
    int host_ok = host_avail == 0 || host_need + host_need / 10 + 256 * MIB <= host_avail;
    int dev_ok = dev_avail == 0 || dev_need + dev_need / 20 + 256 * MIB <= dev_avail;
    if (host_ok && dev_ok)
        return NULL;
    return bw_format_alloc("needs %.1f GiB host / %.1f GiB device memory; %.1f GiB host / "
                           "%.1f GiB device available",
                           (double)host_need / GIB, (double)dev_need / GIB,
                           (double)host_avail / GIB, (double)dev_avail / GIB);
}
