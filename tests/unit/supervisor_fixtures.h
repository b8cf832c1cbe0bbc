/* What the supervisor's unit tests share (test_supervisor.c,
 * test_run_dialogue.c, test_worker_environment.c, test_containment.c): a
 * fake worker (tests/unit/fake_worker.c) started and called over shared
 * memory, the clock, and the checks that every test ends with. */
#ifndef BWLAB_SUPERVISOR_FIXTURES_H
#define BWLAB_SUPERVISOR_FIXTURES_H
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "protocol.h"
#include "shm.h"
#include "supervisor.h"

#define IMAGE_BYTES 4096u

double now_s(void);
void nap_ms(long ms);
/* Options for the fake worker: output cap, HELLO time limit. */
bw_worker_opts fake_opts(size_t cap, double startup);
/* A started fake worker whose HELLO said everything is as promised. */
bw_worker *start_fake(bw_shm *shm, size_t cap);
bw_shm *make_shm(size_t bytes);
/* A RUN of n over n_arrays images of image_bytes each, without a chunk plan. */
bw_request run_req(int n, int n_arrays, uint64_t image_bytes, const bw_shm *shm);
/* One RUN; returns the call status, *why freed unless wanted. */
bw_call_status call_n(bw_worker *w, bw_shm *shm, int n, double timeout, bw_reply *rep,
                      char **why_out);
/* Fails the test if a child process of it was left unreaped. */
void assert_no_children(void);
/* The process is gone (or someone else's zombie) within 2 s. */
int process_gone(pid_t pid);
int contains(const char *hay, const char *needle);

#endif
