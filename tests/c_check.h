/* CHECK for the C tests: a failed condition is printed with its place and counted in
 * `failures`; main() returns non-zero when any failed. */
#ifndef RECOURSE_TESTS_C_CHECK_H
#define RECOURSE_TESTS_C_CHECK_H

#include <stdio.h>

static int failures = 0;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                              \
    }                                                                          \
  } while (0)

#endif /* RECOURSE_TESTS_C_CHECK_H */
