/* A growable NUL-terminated string for building text (logs, notes): running
 * out of memory leaves it short rather than failing. */
#ifndef BWLAB_TEXT_BUF_H
#define BWLAB_TEXT_BUF_H
#include <stddef.h>

typedef struct {
    char *s;          /* NULL until the first byte; free() it when done */
    size_t len, cap;
} bw_text_buf;

/* Appends n bytes of p. */
void bw_text_add(bw_text_buf *b, const char *p, size_t n);

/* 1 when needle occurs in the len bytes at h (which need no NUL). */
int bw_text_contains(const char *h, size_t len, const char *needle);

#endif
