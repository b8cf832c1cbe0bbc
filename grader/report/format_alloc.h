/* printf into a fresh malloc'd string: the one helper every part of the
 * grader uses for messages of unbounded length. */
#ifndef BWLAB_FORMAT_ALLOC_H
#define BWLAB_FORMAT_ALLOC_H

/* malloc'd printf; NULL only when out of memory. */
char *bw_format_alloc(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
