/* See format_value.h. */
#include <math.h>
#include <stdio.h>
#include "format_value.h"

void bw_format_bits(bw_type t, uint32_t v, char out[16])
{
    snprintf(out, 16, t == BW_F32 ? "0x%08x" : "0x%04x", (unsigned)v);
}

void bw_format_value(bw_type t, uint32_t v, char out[BW_VALUE_TEXT])
{
    char bits[16];
    bw_format_bits(t, v, bits);
    if (v == bw_type_poison(t)) {
        snprintf(out, BW_VALUE_TEXT, "%s (never written)", bits);
        return;
    }
    double d = bw_elem_to_double(t, v);
    if (isnan(d))
        snprintf(out, BW_VALUE_TEXT, "%s (nan)", bits);
    else if (isinf(d))
        snprintf(out, BW_VALUE_TEXT, "%s (%s)", bits, d > 0 ? "inf" : "-inf");
    else
        snprintf(out, BW_VALUE_TEXT, t == BW_F32 ? "%s (%.9g)" : "%s (%.6g)", bits, d);
}

void bw_format_bf16(bf16_t v, char out[BW_BF16_TEXT]) { bw_format_value(BW_BF16, v, out); }

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
