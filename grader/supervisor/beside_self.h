/* Paths of the kit's executables that are built beside bwgrade. */
#ifndef BWLAB_BESIDE_SELF_H
#define BWLAB_BESIDE_SELF_H

/* name in the folder of this process's executable (/proc/self/exe):
 * malloc'd, or NULL when that folder cannot be read. */
char *bw_path_beside_self(const char *name);

#endif
