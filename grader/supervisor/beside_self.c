/* See beside_self.h. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "beside_self.h"
#include "format_alloc.h"

char *bw_path_beside_self(const char *name)
{
    size_t cap = 256;
    for (;;) {
        char *buf = malloc(cap);
        if (!buf)
            return NULL;
        ssize_t len = readlink("/proc/self/exe", buf, cap);
        if (len < 0) {
            free(buf);
            return NULL;
        }
        if ((size_t)len < cap) {
            buf[len] = '\0';
            char *slash = strrchr(buf, '/');
            if (slash)
                *slash = '\0';
            char *out = bw_format_alloc("%s/%s", slash ? buf : ".", name);
            free(buf);
            return out;
        }
        free(buf);   /* cut short: try a larger buffer */
        cap *= 2;
    }
}
