/* Bubblewrap (bwrap) around every worker: the student's code runs with no
 * network, a read-only file system, only its private HOME/TMPDIR (and a
 * sanitizer's log file) writable, the paths it must not read (the
 * instructor's files, a seed file) hidden, the GPU's device nodes present,
 * and is killed with the grader. The policy is process-wide: bwgrade sets it
 * once from its command line (--sandbox, --hide) before starting workers. */
#ifndef BWLAB_SANDBOX_H
#define BWLAB_SANDBOX_H

/* Every worker started afterwards runs inside `bwrap` (the executable's path;
 * NULL turns the sandbox off). hide: ':'-separated paths made invisible inside
 * (a directory becomes an empty one, a file reads as empty); NULL for none.
 * The GPU's device nodes and which hidden paths exist are looked up here,
 * once. Returns 0, or -1 when out of memory (then no sandbox is set). */
int bw_sandbox_set(const char *bwrap, const char *hide);

/* The bwrap executable in force, or NULL. */
const char *bw_sandbox_bwrap(void);

/* How many GPU nodes of their own (/dev/nvidiaN, gpu_node.h) bw_sandbox_set
 * found; the driver's shared nodes are always bound. */
int bw_sandbox_gpu_nodes(void);
/* Workers started afterwards get only /dev/nvidia<minor> of them (-1: all,
 * the default after bw_sandbox_set): another GPU is then invisible to them. */
void bw_sandbox_keep_gpu(int minor);
/* The minor kept, or -1 for all. */
int bw_sandbox_kept_gpu(void);
/* For tests: the nodes bw_sandbox_set looks for (default "/dev/nvidia*"). */
void bw_sandbox_set_dev_glob(const char *pattern);

/* The command line that runs inner (NULL-terminated) inside the sandbox,
 * with each path of writable (NULL-terminated, may be NULL) bound read-write:
 *   bwrap --unshare-all --die-with-parent --ro-bind / / --dev /dev
 *         --dev-bind D D (each shared /dev/nvidia* node) --proc /proc
 *         --dev-bind G G (each /dev/nvidiaN kept) --bind W W (each writable) --tmpfs H | --ro-bind /dev/null H (each hidden)
 *         -- inner...
 * Every string is a malloc'd copy; free with bw_sandbox_argv_free. NULL when
 * no sandbox is set or out of memory. */
char **bw_sandbox_argv(char *const *inner, const char *const *writable);
void bw_sandbox_argv_free(char **argv);

#endif
