/* Shared by the report writers' tests (test_report.c, test_report_bench.c):
 * a writer's output captured in memory, checks on it, and a made-up H100. */
#ifndef BWLAB_REPORT_CAPTURE_H
#define BWLAB_REPORT_CAPTURE_H
#include <stdio.h>
#include <string.h>
#include "check_support.h"
#include "protocol.h"

typedef struct {
    char *buf;
    size_t len;
    FILE *f;
} capture;

static inline FILE *cap_open(capture *c)
{
    c->buf = NULL;
    c->len = 0;
    c->f = open_memstream(&c->buf, &c->len);
    ck_assert_ptr_nonnull(c->f);
    return c->f;
}

static inline char *cap_close(capture *c)
{
    fclose(c->f);
    return c->buf;
}

#define HAS(text, needle) ck_assert_msg(strstr((text), (needle)) != NULL, \
                                        "missing \"%s\" in:\n%s", (needle), (text))
#define LACKS(text, needle) ck_assert_msg(strstr((text), (needle)) == NULL, \
                                          "unexpected \"%s\" in:\n%s", (needle), (text))

static inline bw_reply h100(void)
{
    bw_reply d;
    memset(&d, 0, sizeof d);
    snprintf(d.device_name, sizeof d.device_name, "NVIDIA H100 80GB HBM3");
    d.cc_major = 9;
    d.sm_count = 132;
    d.l2_bytes = 50 << 20;
    d.mem_clock_khz = 2619000;
    d.bus_width_bits = 5120;
    d.driver_version = 13000;
    d.runtime_version = 13000;
    return d;
}

#endif
