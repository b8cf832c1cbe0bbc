/* One GPU per sandbox (gpu_node.c, sandbox.c): the driver's /proc map from a
 * GPU's UUID to its /dev/nvidiaN, and the sandbox's command line binding only
 * that node once it is kept, the driver's shared nodes always. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "check_support.h"
#include "gpu_node.h"
#include "sandbox.h"

static char dir[64];

static void put(const char *rel, const char *text)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

static void sub(const char *rel)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    ck_assert_int_eq(mkdir(path, 0700), 0);
}

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/bwlab-gpu-node-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

/* As the H200's driver (580) writes it, tabs and all. */
static void gpu(const char *bus, const char *uuid, int minor)
{
    char rel[128], text[512];
    sub(bus);
    snprintf(rel, sizeof rel, "%s/information", bus);
    snprintf(text, sizeof text,
             "Model: \t\t NVIDIA H200\nIRQ:   \t\t 41\nGPU UUID: \t %s\nVideo BIOS: \t "
             "96.00.a5.00.1a\nBus Type: \t PCIe\nBus Location: \t %s\nDevice Minor: \t %d\n"
             "GPU Excluded:\t No\n", uuid, bus, minor);
    put(rel, text);
}

#define UUID_A "GPU-1ed589a9-8235-4e24-2f39-73371d32ee40"
#define UUID_B "GPU-00000000-1111-2222-3333-444444444444"

START_TEST(the_uuid_names_its_minor)
{
    gpu("0000:00:06.0", UUID_A, 0);
    gpu("0000:00:07.0", UUID_B, 3);
    ck_assert_int_eq(bw_gpu_minor(dir, UUID_B), 3);   /* not the first one read */
    ck_assert_int_eq(bw_gpu_minor(dir, UUID_A), 0);
    ck_assert_int_eq(bw_gpu_minor(dir, "GPU-1ed589a9"), -1);   /* no prefix match */
    ck_assert_int_eq(bw_gpu_minor(dir, ""), -1);
    ck_assert_int_eq(bw_gpu_minor("/nonexistent/gpus", UUID_A), -1);
}
END_TEST

START_TEST(only_nvidia_and_digits_is_a_gpus_own_node)
{
    int m = -1;
    ck_assert(bw_gpu_node_minor("/dev/nvidia0", &m) && m == 0);
    ck_assert(bw_gpu_node_minor("/dev/nvidia12", &m) && m == 12);
    ck_assert(!bw_gpu_node_minor("/dev/nvidiactl", &m));
    ck_assert(!bw_gpu_node_minor("/dev/nvidia-uvm", &m));
    ck_assert(!bw_gpu_node_minor("/dev/nvidia-caps", &m));
    ck_assert(!bw_gpu_node_minor("/dev/nvidia0x", &m));
}
END_TEST

/* How many times "--dev-bind" binds a node whose path ends in name. */
static int binds(char **argv, const char *name)
{
    int k = 0;
    for (size_t i = 0; argv[i] && argv[i + 1]; i++)
        if (strcmp(argv[i], "--dev-bind") == 0) {
            size_t a = strlen(argv[i + 1]), b = strlen(name);
            k += a >= b && strcmp(argv[i + 1] + a - b, name) == 0;
        }
    return k;
}

START_TEST(a_kept_gpu_is_the_only_gpu_node_bound)
{
    put("nvidia0", "");
    put("nvidia3", "");
    put("nvidiactl", "");
    put("nvidia-uvm", "");
    char pattern[128];
    snprintf(pattern, sizeof pattern, "%s/nvidia*", dir);
    bw_sandbox_set_dev_glob(pattern);
    ck_assert_int_eq(bw_sandbox_set("/usr/bin/bwrap", NULL), 0);
    ck_assert_int_eq(bw_sandbox_gpu_nodes(), 2);
    ck_assert_int_eq(bw_sandbox_kept_gpu(), -1);
    char *inner[] = {"worker", NULL};
    char **a = bw_sandbox_argv(inner, NULL);
    ck_assert(binds(a, "/nvidia0") == 1 && binds(a, "/nvidia3") == 1);
    bw_sandbox_argv_free(a);

    bw_sandbox_keep_gpu(3);
    a = bw_sandbox_argv(inner, NULL);
    ck_assert_int_eq(binds(a, "/nvidia0"), 0);
    ck_assert_int_eq(binds(a, "/nvidia3"), 1);
    ck_assert(binds(a, "/nvidiactl") == 1 && binds(a, "/nvidia-uvm") == 1);
    bw_sandbox_argv_free(a);

    /* A new sandbox starts with every node again. */
    ck_assert_int_eq(bw_sandbox_set("/usr/bin/bwrap", NULL), 0);
    ck_assert_int_eq(bw_sandbox_kept_gpu(), -1);
    a = bw_sandbox_argv(inner, NULL);
    ck_assert(binds(a, "/nvidia0") == 1 && binds(a, "/nvidia3") == 1);
    bw_sandbox_argv_free(a);
    bw_sandbox_set(NULL, NULL);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("gpu_node");
    TCase *t = tcase_create("core");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_add_test(t, the_uuid_names_its_minor);
    tcase_add_test(t, only_nvidia_and_digits_is_a_gpus_own_node);
    tcase_add_test(t, a_kept_gpu_is_the_only_gpu_node_bound);
    suite_add_tcase(s, t);
    return s;
}

int main(void) { return bw_run_suite(suite()); }
