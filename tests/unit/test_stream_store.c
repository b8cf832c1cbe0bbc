/* bw_stream_copy: the same bytes as memcpy for every alignment of source
 * and destination and every length around the 16-byte stores, and not a
 * byte outside the destination. Catches a wrong head (the bytes before the
 * first 16-byte boundary), a lost tail, and a store past the end. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "check_support.h"
#include "stream_store.h"

#define SPAN 256

START_TEST(copies_exactly_what_memcpy_does)
{
    uint8_t src[SPAN + 32], want[SPAN + 64], got[SPAN + 64];
    for (int i = 0; i < (int)sizeof src; i++)
        src[i] = (uint8_t)(i * 37 + 11);
    for (int so = 0; so < 16; so++)
        for (int dof = 0; dof < 16; dof++)
            for (int len = 0; len <= SPAN; len++) {
                memset(want, 0xA5, sizeof want);
                memset(got, 0xA5, sizeof got);
                memcpy(want + 16 + dof, src + so, (size_t)len);
                bw_stream_copy(got + 16 + dof, src + so, (size_t)len);
                bw_stream_fence();
                if (memcmp(want, got, sizeof want) != 0) {
                    int at = 0;
                    while (want[at] == got[at])
                        at++;
                    ck_abort_msg("source +%d, destination +%d, %d bytes: byte %d is 0x%02x, "
                                 "expected 0x%02x", so, dof, len, at - 16 - dof, got[at], want[at]);
                }
            }
}
END_TEST

static Suite *stream_store_suite(void)
{
    Suite *s = suite_create("stream_store");
    TCase *tc = tcase_create("stream_store");
    tcase_add_test(tc, copies_exactly_what_memcpy_does);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return bw_run_suite(stream_store_suite()); }
