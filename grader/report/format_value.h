/* Small formatters with bounded output, for values a report shows: an
 * element of any type, a size in bytes, a CUDA version. Used by the text
 * and JSON reports and by the judge's own messages (case_data.c). */
#ifndef BWLAB_FORMAT_VALUE_H
#define BWLAB_FORMAT_VALUE_H
#include <stdint.h>
#include "element.h"

#define BW_BF16_TEXT 48
#define BW_VALUE_TEXT 48
/* "0x3f80 (1)", "0x7fd7 (never written)", "0xff80 (-inf)", "0x7fc0 (nan)";
 * fp32: "0x3f800000 (1)". */
void bw_format_value(bw_type t, uint32_t v, char out[BW_VALUE_TEXT]);
/* The same for a bf16. */
void bw_format_bf16(bf16_t v, char out[BW_BF16_TEXT]);
/* "0x3f80", "0x3f800000": the bits, as wide as the type. */
void bw_format_bits(bw_type t, uint32_t v, char out[16]);

#define BW_SIZE_TEXT 32
/* Binary units with 3 significant digits: "512 bytes", "1.50 KiB", "8.00 GiB". */
void bw_format_bytes(uint64_t bytes, char out[BW_SIZE_TEXT]);

#define BW_VERSION_TEXT 24
/* CUDA's 1000*major + 10*minor: 13000 -> "13.0", 12080 -> "12.8"; 0 -> "?". */
void bw_format_cuda_version(int v, char out[BW_VERSION_TEXT]);

#endif
