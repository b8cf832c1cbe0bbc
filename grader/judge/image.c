/* Array images: guard zones around the data, checked byte for byte. Only the
 * guard zones are ever touched here, so a 4 GiB image costs a few kilobytes. */
#include "image.h"

/* Layout:
 *   front = BW_GUARD_BYTES + elem_bytes * offset_elems   (the array starts here)
 *   data  = elem_bytes * count
 *   back  = BW_GUARD_BYTES, and the total is rounded up to 256 bytes (the
 *           rounding adds to the back guard);
 * sanitize != 0: back = 0 and total = front + data exactly, not rounded, so
 *   the allocation ends with element n-1 and any read past it is caught. */
bw_image_layout bw_image_layout_for(int64_t count, int elem_bytes, int offset_elems, int sanitize)
{
    bw_image_layout l;
    l.front_bytes = BW_GUARD_BYTES + (uint64_t)elem_bytes * (uint64_t)offset_elems;
    l.data_bytes = (uint64_t)elem_bytes * (uint64_t)count;
    if (sanitize) {
        l.back_bytes = 0;
        l.total_bytes = l.front_bytes + l.data_bytes;
    } else {
        uint64_t raw = l.front_bytes + l.data_bytes + BW_GUARD_BYTES;
        l.total_bytes = (raw + 255u) & ~(uint64_t)255u;
        l.back_bytes = l.total_bytes - l.front_bytes - l.data_bytes;
    }
    return l;
}

uint8_t bw_guard_byte(uint64_t pos)
{
    uint64_t z = (pos + 1u) * UINT64_C(0x9E3779B97F4A7C15);
    z ^= z >> 29;
    z *= UINT64_C(0xBF58476D1CE4E5B9);
    uint8_t b = (uint8_t)(z >> 56);
    /* The bf16 poison's bytes (0xD7 0x7F, little-endian) never appear, so
     * a guard read as elements can never pass for an unwritten element (every
     * type's poison has a 0xD7 low byte: element.c). */
    if (b == 0xD7 || b == 0x7F)
        b ^= 0x01;
    return b;
}

static uint64_t max_u64(uint64_t a, uint64_t b) { return a > b ? a : b; }
static uint64_t min_u64(uint64_t a, uint64_t b) { return a < b ? a : b; }

void bw_image_fill_guards_in(uint8_t *at, const bw_image_layout *l, uint64_t from, uint64_t to)
{
    for (uint64_t p = from; p < min_u64(to, l->front_bytes); p++)
        at[p - from] = bw_guard_byte(p);
    for (uint64_t p = max_u64(from, l->front_bytes + l->data_bytes); p < min_u64(to, l->total_bytes);
         p++)
        at[p - from] = bw_guard_byte(p);
}

void bw_image_fill_guards(uint8_t *image, const bw_image_layout *l)
{
    bw_image_fill_guards_in(image, l, 0, l->total_bytes);
}

static void scan_range(const uint8_t *at, uint64_t base, uint64_t from, uint64_t to,
                       uint64_t front, bw_guard_scan *s)
{
    for (uint64_t p = from; p < to; p++) {
        if (at[p - base] == bw_guard_byte(p))
            continue;
        int64_t rel = (int64_t)p - (int64_t)front;
        if (s->count == 0)
            s->first = rel;
        s->last = rel;
        s->count++;
    }
}

void bw_image_scan_guards_in(const uint8_t *at, const bw_image_layout *l, uint64_t from,
                             uint64_t to, bw_guard_scan *s)
{
    scan_range(at, from, from, min_u64(to, l->front_bytes), l->front_bytes, s);
    scan_range(at, from, max_u64(from, l->front_bytes + l->data_bytes), min_u64(to, l->total_bytes),
               l->front_bytes, s);
}

int64_t bw_image_check_guards(const uint8_t *image, const bw_image_layout *l,
                              int64_t *first_bad, int64_t *last_bad)
{
    bw_guard_scan s = {0, 0, 0};
    bw_image_scan_guards_in(image, l, 0, l->total_bytes, &s);
    if (first_bad)
        *first_bad = s.first;
    if (last_bad)
        *last_bad = s.last;
    return s.count;
}
