/* See format_alloc.h. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include "format_alloc.h"

char *bw_format_valloc(const char *fmt, va_list ap)
{
    va_list again;
    va_copy(again, ap);
    int len = vsnprintf(NULL, 0, fmt, ap);
    char *s = len < 0 ? NULL : malloc((size_t)len + 1);
    if (s)
        vsnprintf(s, (size_t)len + 1, fmt, again);
    va_end(again);
    return s;
}

char *bw_format_alloc(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = bw_format_valloc(fmt, ap);
    va_end(ap);
    return s;
}
