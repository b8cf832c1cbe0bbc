/* See format_value.h. */
#include <math.h>
#include <stdio.h>
#include "format_value.h"
#include "image.h"   /* BW_POISON */

void bw_format_bf16(bf16_t v, char out[BW_BF16_TEXT])
{
    if (v == BW_POISON) {
        snprintf(out, BW_BF16_TEXT, "0x%04x (never written)", (unsigned)v);
        return;
    }
    double d = (double)bf16_to_float(v);
    if (isnan(d))
        snprintf(out, BW_BF16_TEXT, "0x%04x (nan)", (unsigned)v);
    else if (isinf(d))
        snprintf(out, BW_BF16_TEXT, "0x%04x (%s)", (unsigned)v, d > 0 ? "inf" : "-inf");
    else
        snprintf(out, BW_BF16_TEXT, "0x%04x (%.6g)", (unsigned)v, d);
}

void bw_format_bytes(uint64_t bytes, char out[BW_SIZE_TEXT])
{
    static const char *const unit[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    if (bytes < 1024) {
        snprintf(out, BW_SIZE_TEXT, "%u bytes", (unsigned)bytes);
        return;
    }
    double v = (double)bytes / 1024.0;
    int u = 0;
    while (v >= 1024.0 && u < 5) {
        v /= 1024.0;
        u++;
    }
    /* Three significant digits: 1.50, 15.0, 150. */
    int decimals = v < 10.0 ? 2 : v < 100.0 ? 1 : 0;
    snprintf(out, BW_SIZE_TEXT, "%.*f %s", decimals, v, unit[u]);
}

void bw_format_cuda_version(int v, char out[BW_VERSION_TEXT])
{
    if (v <= 0)
        snprintf(out, BW_VERSION_TEXT, "?");
    else
        snprintf(out, BW_VERSION_TEXT, "%d.%d", v / 1000, (v % 1000) / 10);
}
