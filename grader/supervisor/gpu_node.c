/* See gpu_node.h. */
#include "gpu_node.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format_alloc.h"

/* The value of the line "key: value" (blanks around the value dropped), in
 * out; 0 when found. */
static int field(const char *line, const char *key, char *out, size_t cap)
{
    size_t k = strlen(key);
    if (strncmp(line, key, k) != 0 || line[k] != ':')
        return -1;
    const char *v = line + k + 1;
    v += strspn(v, " \t");
    size_t len = strcspn(v, "\r\n");
    while (len > 0 && (v[len - 1] == ' ' || v[len - 1] == '\t'))
        len--;
    if (len >= cap)
        return -1;
    memcpy(out, v, len);
    out[len] = '\0';
    return 0;
}

/* The minor of the GPU described by file path if its UUID is uuid, else -1. */
static int minor_if(const char *path, const char *uuid)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return -1;
    char line[256], val[128];
    int same = 0, minor = -1;
    while (fgets(line, sizeof line, f) != NULL) {
        if (field(line, "GPU UUID", val, sizeof val) == 0)
            same = strcmp(val, uuid) == 0;
        else if (field(line, "Device Minor", val, sizeof val) == 0) {
            char *end = NULL;
            long v = strtol(val, &end, 10);
            minor = end != val && *end == '\0' && v >= 0 && v < 1 << 20 ? (int)v : -1;
        }
    }
    fclose(f);
    return same ? minor : -1;
}

int bw_gpu_minor(const char *proc_dir, const char *uuid)
{
    if (uuid == NULL || strncmp(uuid, "GPU-", 4) != 0)
        return -1;
    DIR *d = opendir(proc_dir);
    if (d == NULL)
        return -1;
    int minor = -1;
    for (struct dirent *e; minor < 0 && (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.')
            continue;
        char *path = bw_format_alloc("%s/%s/information", proc_dir, e->d_name);
        if (path != NULL)
            minor = minor_if(path, uuid);
        free(path);
    }
    closedir(d);
    return minor;
}

int bw_gpu_node_minor(const char *path, int *minor)
{
    static const char prefix[] = "nvidia";
    const char *base = strrchr(path, '/');
    base = base != NULL ? base + 1 : path;
    if (strncmp(base, prefix, sizeof prefix - 1) != 0)
        return 0;
    const char *digits = base + sizeof prefix - 1;
    size_t n = strspn(digits, "0123456789");
    if (n == 0 || n > 6 || digits[n] != '\0')
        return 0;
    *minor = atoi(digits);
    return 1;
}
