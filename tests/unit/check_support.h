/* Shared by the Check unit tests: run a suite and turn it into an exit code. */
#ifndef BWLAB_CHECK_SUPPORT_H
#define BWLAB_CHECK_SUPPORT_H
#include <check.h>

/* Runs the suite with CK_NORMAL output; returns EXIT_SUCCESS only if every test passed. */
int bw_run_suite(Suite *s);

#endif
