/* Array images: layout arithmetic, the guard pattern, and finding a single
 * damaged byte at the right position. */
#include <stdlib.h>
#include <string.h>
#include "check_support.h"
#include "image.h"
#include "image_hash.h"
#include "mix64.h"

/* Catches a wrong layout: offset not in bytes, guard missing, no rounding,
 * the element size ignored. */
START_TEST(layout_numbers)
{
    bw_image_layout l = bw_image_layout_for(5, 2, 3, 0);
    ck_assert_uint_eq(l.front_bytes, BW_GUARD_BYTES + 6);
    ck_assert_uint_eq(l.data_bytes, 10);
    ck_assert_uint_ge(l.back_bytes, BW_GUARD_BYTES);
    ck_assert_uint_eq(l.total_bytes % 256, 0);
    ck_assert_uint_eq(l.total_bytes, l.front_bytes + l.data_bytes + l.back_bytes);
    ck_assert_uint_lt(l.total_bytes - (l.front_bytes + l.data_bytes + BW_GUARD_BYTES), 256);
    /* The array start keeps the offset modulo 256 in a 256-aligned allocation. */
    ck_assert_uint_eq(l.front_bytes % 256, 6);

    bw_image_layout s = bw_image_layout_for(5, 2, 3, 1);
    ck_assert_uint_eq(s.front_bytes, BW_GUARD_BYTES + 6);
    ck_assert_uint_eq(s.back_bytes, 0);
    ck_assert_uint_eq(s.total_bytes, s.front_bytes + s.data_bytes);

    /* 4-byte elements: the offset and the data are counted in them. */
    bw_image_layout f = bw_image_layout_for(5, 4, 3, 0);
    ck_assert_uint_eq(f.front_bytes, BW_GUARD_BYTES + 12);
    ck_assert_uint_eq(f.data_bytes, 20);
    ck_assert_uint_ge(f.back_bytes, BW_GUARD_BYTES);
    ck_assert_uint_eq(f.total_bytes % 256, 0);
    ck_assert_uint_eq(f.total_bytes, f.front_bytes + f.data_bytes + f.back_bytes);
    ck_assert_uint_lt(f.total_bytes - (f.front_bytes + f.data_bytes + BW_GUARD_BYTES), 256);
    bw_image_layout fs = bw_image_layout_for(5, 4, 3, 1);
    ck_assert_uint_eq(fs.front_bytes, BW_GUARD_BYTES + 12);
    ck_assert_uint_eq(fs.back_bytes, 0);
    ck_assert_uint_eq(fs.total_bytes, fs.front_bytes + 20);

    /* n near INT_MAX: no 32-bit overflow. */
    bw_image_layout h = bw_image_layout_for(2147483647, 2, 127, 0);
    ck_assert_uint_eq(h.data_bytes, UINT64_C(4294967294));
    ck_assert_uint_gt(h.total_bytes, UINT64_C(4294967294) + 2 * BW_GUARD_BYTES);
    bw_image_layout h4 = bw_image_layout_for(2147483647, 4, 63, 0);
    ck_assert_uint_eq(h4.front_bytes, BW_GUARD_BYTES + 252);
    ck_assert_uint_eq(h4.data_bytes, UINT64_C(8589934588));
    ck_assert_uint_gt(h4.total_bytes, UINT64_C(8589934588) + 2 * BW_GUARD_BYTES);
}
END_TEST

/* Catches a constant guard byte, which a shifted copy would not disturb,
 * and guard bytes that could spell the poison. */
START_TEST(guard_pattern_varies)
{
    int seen[256] = {0}, distinct = 0, same_as_shift = 0;
    for (uint64_t p = 0; p < 4096; p++) {
        uint8_t b = bw_guard_byte(p);
        distinct += !seen[b]++;
        same_as_shift += b == bw_guard_byte(p + 1);
        ck_assert(b != 0xD7 && b != 0x7F);
    }
    ck_assert_int_gt(distinct, 100);
    ck_assert_int_lt(same_as_shift, 100);
    ck_assert_uint_eq(bw_guard_byte(77), bw_guard_byte(77));
}
END_TEST

static uint8_t *make_image(const bw_image_layout *l)
{
    uint8_t *img = malloc(l->total_bytes);
    ck_assert_ptr_nonnull(img);
    memset(img, 0xAB, l->total_bytes);   /* the data area gets anything */
    bw_image_fill_guards(img, l);
    return img;
}

/* Catches a check that scans the data (any data would look damaged) or a
 * fill that misses part of a guard. */
START_TEST(round_trip)
{
    for (int sanitize = 0; sanitize <= 1; sanitize++) {
        for (int eb = 2; eb <= 4; eb += 2) {
            for (int off = 0; off < 256 / eb; off += 9) {
                bw_image_layout l = bw_image_layout_for(1000 + off, eb, off, sanitize);
                uint8_t *img = make_image(&l);
                int64_t first = 99, last = 99;
                ck_assert_int_eq(bw_image_check_guards(img, &l, &first, &last), 0);
                ck_assert_int_eq(first, 0);
                ck_assert_int_eq(last, 0);
                /* Data is not part of the guard. */
                memset(img + l.front_bytes, 0x11, l.data_bytes);
                ck_assert_int_eq(bw_image_check_guards(img, &l, NULL, NULL), 0);
                ck_assert_ptr_eq(bw_image_data(img, &l), (void *)(img + l.front_bytes));
                free(img);
            }
        }
    }
}
END_TEST

static void flip_and_check(const bw_image_layout *l, uint64_t pos, int64_t want_rel)
{
    uint8_t *img = make_image(l);
    img[pos] ^= 0x01;
    int64_t first = 0, last = 0;
    ck_assert_int_eq(bw_image_check_guards(img, l, &first, &last), 1);
    ck_assert_int_eq(first, want_rel);
    ck_assert_int_eq(last, want_rel);
    free(img);
}

/* Catches off-by-one zone bounds and positions not relative to the array. */
START_TEST(single_flip_found)
{
    bw_image_layout l = bw_image_layout_for(17, 2, 5, 0);
    int64_t front = (int64_t)l.front_bytes, data = (int64_t)l.data_bytes;
    flip_and_check(&l, l.front_bytes - 1, -1);                     /* just before */
    flip_and_check(&l, l.front_bytes + l.data_bytes, data);        /* just after */
    flip_and_check(&l, 0, -front);                                 /* first byte */
    flip_and_check(&l, l.total_bytes - 1, (int64_t)l.total_bytes - 1 - front);

    bw_image_layout s = bw_image_layout_for(17, 2, 5, 1);
    flip_and_check(&s, s.front_bytes - 1, -1);
    flip_and_check(&s, 0, -(int64_t)s.front_bytes);

    /* 4-byte elements: the data zone is 4 * 17 bytes, 4 * 5 past the guard. */
    bw_image_layout f = bw_image_layout_for(17, 4, 5, 0);
    ck_assert_uint_eq(f.front_bytes, BW_GUARD_BYTES + 20);
    flip_and_check(&f, f.front_bytes - 1, -1);
    flip_and_check(&f, f.front_bytes + f.data_bytes, 68);
    flip_and_check(&f, 0, -(int64_t)f.front_bytes);
    flip_and_check(&f, f.total_bytes - 1, (int64_t)f.total_bytes - 1 - (int64_t)f.front_bytes);
}
END_TEST

/* Catches a count or first/last that ignores all but one damaged zone. */
START_TEST(several_flips)
{
    bw_image_layout l = bw_image_layout_for(300, 2, 2, 0);
    uint8_t *img = make_image(&l);
    img[l.front_bytes - 10] = (uint8_t)~img[l.front_bytes - 10];
    img[l.front_bytes - 3] = (uint8_t)~img[l.front_bytes - 3];
    img[l.front_bytes + l.data_bytes + 4] = (uint8_t)~img[l.front_bytes + l.data_bytes + 4];
    int64_t first = 0, last = 0;
    ck_assert_int_eq(bw_image_check_guards(img, &l, &first, &last), 3);
    ck_assert_int_eq(first, -10);
    ck_assert_int_eq(last, 600 + 4);
    free(img);
}
END_TEST

/* Catches a guard written from a fixed pattern shifted by the offset: a
 * write of the right bytes at the wrong place must still show. */
START_TEST(shifted_guard_detected)
{
    bw_image_layout l = bw_image_layout_for(64, 2, 0, 0);
    uint8_t *img = make_image(&l);
    /* A kernel copying 16 guard bytes over the next 16 (a shifted copy). */
    memmove(img + l.front_bytes + l.data_bytes + 16, img + l.front_bytes + l.data_bytes, 16);
    ck_assert_int_gt(bw_image_check_guards(img, &l, NULL, NULL), 8);
    free(img);
}
END_TEST

/* Two arrays of n elements with offset 3, values i * 7 + array. */
static uint8_t *hash_images(int64_t n, bw_image_layout *l)
{
    *l = bw_image_layout_for(n, 2, 3, 0);
    uint8_t *img = calloc(2, l->total_bytes);
    ck_assert_ptr_nonnull(img);
    for (int a = 0; a < 2; a++)
        for (int64_t i = 0; i < n; i++) {
            uint16_t v = (uint16_t)(i * 7 + a);
            memcpy(img + (uint64_t)a * l->total_bytes + l->front_bytes + 2 * i, &v, 2);
        }
    return img;
}

/* The hash of both arrays, as the worker sums it: each array's own. */
static uint64_t images_hash(const uint8_t *img, const bw_image_layout *l, int64_t n,
                            uint64_t key, int threads)
{
    uint64_t h = 0;
    for (int a = 0; a < 2; a++)
        h += bw_array_hash(img + (uint64_t)a * l->total_bytes + l->front_bytes, a, n, key,
                           threads);
    return h;
}

/* The grader's side of the benchmark's per-call hash: it must be the plain
 * sum of bw_hash_term (what the device kernel computes), whatever the thread
 * count, and notice one changed element and two swapped ones. Catches a
 * chunking bug (a lost or doubled tail), a hash of the guard zones, a hash
 * that ignores the array number, and a hash that ignores positions (which a
 * replayed, shifted output would pass). */
START_TEST(images_hash_matches_terms)
{
    const int64_t n = 100003;
    const uint64_t key = 0x1234567890abcdefULL;
    bw_image_layout l;
    uint8_t *img = hash_images(n, &l);
    uint64_t want = 0;
    for (int a = 0; a < 2; a++)
        for (int64_t i = 0; i < n; i++)
            want += bw_hash_term(key, a, (uint64_t)i, (uint16_t)(i * 7 + a));
    for (int threads = 1; threads <= 5; threads += 2)
        ck_assert_uint_eq(images_hash(img, &l, n, key, threads), want);
    ck_assert_uint_ne(images_hash(img, &l, n, key ^ 1, 3), want);
    /* Array 1's data hashed as array 0's is not array 1's hash. */
    const uint8_t *d1 = img + l.total_bytes + l.front_bytes;
    ck_assert_uint_ne(bw_array_hash(d1, 0, n, key, 3), bw_array_hash(d1, 1, n, key, 3));
    /* Pieces add up to the whole (bw_elems_hash from any first index). */
    ck_assert_uint_eq(bw_elems_hash(d1, 1, 0, 777, key) +
                          bw_elems_hash(d1 + 2 * 777, 1, 777, n - 777, key),
                      bw_array_hash(d1, 1, n, key, 2));

    uint8_t *data = img + l.total_bytes + l.front_bytes; /* array 1 */
    data[2 * (n - 1)] ^= 1;                              /* the very last element */
    ck_assert_uint_ne(images_hash(img, &l, n, key, 3), want);
    data[2 * (n - 1)] ^= 1;
    uint8_t t[2];
    memcpy(t, data + 10, 2);
    memcpy(data + 10, data + 12, 2);
    memcpy(data + 12, t, 2);
    ck_assert_uint_ne(images_hash(img, &l, n, key, 3), want);
    memcpy(data + 12, data + 10, 2);
    memcpy(data + 10, t, 2);
    img[0] ^= 0xff; /* a guard byte: not part of the hash */
    ck_assert_uint_eq(images_hash(img, &l, n, key, 3), want);
    free(img);
}
END_TEST

/* 4-byte elements are hashed as their two 16-bit halves, low first: units
 * 2i and 2i + 1. Catches a hash of an fp32 array that reads only half of it
 * (the high halves, where a wrong low mantissa would go unseen). */
START_TEST(array_hash_of_wide_elements)
{
    enum { N = 1001 };
    const uint64_t key = 0x0badc0ffee0ddf00ULL;
    static uint32_t v[N];
    for (int i = 0; i < N; i++)
        v[i] = (uint32_t)i * 2654435761u + 12345u;
    uint64_t want = 0;
    for (int i = 0; i < N; i++) {
        want += bw_hash_term(key, 2, 2u * (uint64_t)i, (uint16_t)(v[i] & 0xFFFFu));
        want += bw_hash_term(key, 2, 2u * (uint64_t)i + 1u, (uint16_t)(v[i] >> 16));
    }
    uint8_t bytes[4 * N];
    for (int i = 0; i < N; i++)
        for (int b = 0; b < 4; b++)
            bytes[4 * i + b] = (uint8_t)(v[i] >> (8 * b));   /* little-endian, whatever the host */
    for (int threads = 1; threads <= 4; threads += 3)
        ck_assert_uint_eq(bw_array_hash(bytes, 2, 2 * N, key, threads), want);
    bytes[4 * (N - 1)] ^= 1;   /* the last element's lowest byte */
    ck_assert_uint_ne(bw_array_hash(bytes, 2, 2 * N, key, 2), want);
}
END_TEST

/* The term's value is pinned: the worker's kernels (grader/worker/
 * sample_check.cu) build it from bw_hash_base and bw_hash_term_at, the
 * grader from bw_hash_term, and both must give the value the formula in
 * mix64.h gave before it was split (computed apart, in Python). Catches a
 * split that drops the index's upper half, the array or the key's upper half. */
START_TEST(hash_term_pinned)
{
    const uint64_t key = 0x0123456789ABCDEFULL;
    ck_assert_uint_eq(bw_hash_term(key, 2, 0x100000005ULL, 0xBEEF), 0xab8778aabbe6e2ULL);
    ck_assert_uint_eq(bw_hash_term(key, 0, 7, 0), 0xc05e9d4216b151ULL);
    ck_assert_uint_eq(bw_hash_term_at(bw_hash_base(key, 2, 1u), 5u, (uint32_t)(key >> 32), 0xBEEF),
                      0xab8778aabbe6e2ULL);
}
END_TEST

/* The check's race fingerprint: pieces of any split add up to the whole,
 * one changed element anywhere (even by 0x8000, the sign bit) or two swapped
 * ones change it, and the key matters. Catches a hash whose K_i is even
 * (a change by a power of two vanishing), one indexed from the piece's start
 * instead of the element's index (a split changing the value, a swap going
 * unseen), and one that skips a piece's tail. */
START_TEST(race_hash_splits_and_changes)
{
    enum { N = 4099 };
    const uint64_t key = 0x7261636568617368ULL;
    static uint16_t v[N];
    for (int i = 0; i < N; i++)
        v[i] = (uint16_t)(i * 40503u + 17u);
    const uint8_t *d = (const uint8_t *)v;
    uint32_t whole = bw_race_hash(d, 1000, N, key);
    for (int cut = 0; cut <= N; cut += 97)
        ck_assert_uint_eq((uint32_t)(bw_race_hash(d, 1000, cut, key) +
                                     bw_race_hash(d + 2 * cut, 1000 + cut, N - cut, key)),
                          whole);
    ck_assert_uint_ne(bw_race_hash(d, 1000, N, key ^ 2), whole);
    ck_assert_uint_ne(bw_race_hash(d, 1001, N, key), whole);
    int unseen = 0;
    for (int i = 0; i < N; i++) {
        static const uint16_t flips[] = {1, 0x40, 0x8000, 0xFFFF};
        uint16_t keep = v[i];
        for (int f = 0; f < 4; f++) {
            v[i] = keep ^ flips[f];
            unseen += bw_race_hash(d, 1000, N, key) == whole;
        }
        v[i] = keep;
    }
    ck_assert_int_eq(unseen, 0);
    for (int i = 0; i + 1 < N; i += 101) {
        uint16_t t = v[i];
        v[i] = v[i + 1];
        v[i + 1] = t;
        unseen += bw_race_hash(d, 1000, N, key) == whole;
        v[i + 1] = v[i];
        v[i] = t;
    }
    ck_assert_int_eq(unseen, 0);
    ck_assert_uint_eq(bw_race_hash(d, 1000, N, key), whole);
    /* A key that makes element 1005's multiplier 0 but for its odd bit. */
    const uint64_t zero_at_1005 = (uint32_t)(0u - 1005u * 0x9E3779B9u);
    uint32_t h = bw_race_hash(d, 1000, N, zero_at_1005);
    v[5] ^= 0x8000;
    ck_assert_uint_ne(bw_race_hash(d, 1000, N, zero_at_1005), h);
    v[5] ^= 0x8000;
}
END_TEST

int main(void)
{
    Suite *s = suite_create("image");
    TCase *t = tcase_create("image");
    tcase_add_test(t, layout_numbers);
    tcase_add_test(t, guard_pattern_varies);
    tcase_add_test(t, round_trip);
    tcase_add_test(t, single_flip_found);
    tcase_add_test(t, several_flips);
    tcase_add_test(t, shifted_guard_detected);
    tcase_add_test(t, images_hash_matches_terms);
    tcase_add_test(t, array_hash_of_wide_elements);
    tcase_add_test(t, hash_term_pinned);
    tcase_add_test(t, race_hash_splits_and_changes);
    suite_add_tcase(s, t);
    return bw_run_suite(s);
}
