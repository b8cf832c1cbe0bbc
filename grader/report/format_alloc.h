/* printf into a fresh malloc'd string: the one helper every part of the
 * grader uses for messages of unbounded length. */
#ifndef BWLAB_FORMAT_ALLOC_H
#define BWLAB_FORMAT_ALLOC_H

#include <stdarg.h>

/* malloc'd printf; NULL only when out of memory. */
char *bw_format_alloc(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The same for a caller's own variable arguments. */
char *bw_format_valloc(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

#endif
