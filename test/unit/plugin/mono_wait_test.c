/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The plugin's timed waits (src/plugin/mono_wait.c) with the wall clock
 * stepped (issue 20: "setting the clock back an hour stops it for an
 * hour").  This program defines clock_gettime() itself, so every reading of
 * CLOCK_REALTIME that the code under test makes is `offset` seconds ahead
 * of the kernel's: a deadline computed from it is as far in the kernel's
 * future as it would be after `date` set the clock back by `offset` right
 * after the deadline was computed.  CLOCK_MONOTONIC is read unchanged.
 *
 *   1. A sl_mono_* wait of 1 s with the clock an hour off returns ETIMEDOUT
 *      after about 1 s: SIGALRM after 30 s fails the test (a CLOCK_REALTIME
 *      wait would sleep an hour), and so does an end before 0.9 s (a
 *      condition on one clock given a deadline on the other: a spin).
 *   2. Control: a default (CLOCK_REALTIME) condition with a CLOCK_REALTIME
 *      deadline of 1 s and the clock 3 s off waits about 3 s more than
 *      asked, so the fake step above does bite.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "mono_wait.h"

static volatile long offset_sec = 0;

int clock_gettime(clockid_t id, struct timespec *ts) {
  long rc = syscall(SYS_clock_gettime, id, ts);

  if (!rc && id == CLOCK_REALTIME)
    ts->tv_sec += offset_sec;
  return (int)rc;
}

static double mono_now(void) {
  struct timespec ts;

  syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void on_alarm(int sig) {
  static const char msg[] = "FAIL: the 1 s wait did not end within 30 s with the wall clock "
                            "stepped: it does not measure CLOCK_MONOTONIC\n";
  (void)sig;
  (void)!write(2, msg, sizeof(msg) - 1);
  _exit(1);
}

int main(void) {
  pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t cond;
  struct timespec deadline;
  double t0, waited;
  int rc, failures = 0;

  signal(SIGALRM, on_alarm);

  /* 1. The plugin's wait, the clock an hour off. */
  offset_sec = 3600;
  if ((rc = sl_mono_cond_init(&cond))) {
    fprintf(stderr, "FAIL: sl_mono_cond_init: %d\n", rc);
    return 1;
  }
  alarm(30);
  pthread_mutex_lock(&mu);
  t0 = mono_now();
  sl_mono_deadline(&deadline, 1);
  do
    rc = sl_mono_timedwait(&cond, &mu, &deadline);
  while (rc == 0); /* spurious wake-ups */
  waited = mono_now() - t0;
  pthread_mutex_unlock(&mu);
  alarm(0);
  if (rc != ETIMEDOUT) {
    fprintf(stderr, "FAIL: sl_mono_timedwait returned %d\n", rc);
    failures++;
  }
  printf("plugin wait of 1 s, wall clock stepped by 3600 s: %.2f s\n", waited);
  if (waited < 0.9) {
    /* A CLOCK_REALTIME condition given a CLOCK_MONOTONIC deadline:
     * the deadline is decades past, the thread would spin. */
    fprintf(stderr,
            "FAIL: the 1 s wait ended after %.2f s: the condition and "
            "the deadline are not on the same (monotonic) clock\n",
            waited);
    failures++;
  }
  pthread_cond_destroy(&cond);

  /* 2. Control: a CLOCK_REALTIME wait is fooled by the same step. */
  offset_sec = 3;
  pthread_cond_init(&cond, NULL);
  pthread_mutex_lock(&mu);
  t0 = mono_now();
  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_sec += 1;
  do
    rc = pthread_cond_timedwait(&cond, &mu, &deadline);
  while (rc == 0);
  waited = mono_now() - t0;
  pthread_mutex_unlock(&mu);
  printf("control: CLOCK_REALTIME wait of 1 s, clock stepped by 3 s: "
         "%.2f s\n",
         waited);
  if (waited < 3.5) {
    fprintf(stderr,
            "FAIL: the control wait took %.2f s: the fake clock step "
            "does not reach the wait, so check 1 proves nothing\n",
            waited);
    failures++;
  }
  pthread_cond_destroy(&cond);
  return failures ? 1 : 0;
}
