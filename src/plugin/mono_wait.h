/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * File: plugin/mono_wait.h
 *
 * Timed waits of the plugin's C threads on CLOCK_MONOTONIC, so that a step
 * of the wall clock (settimeofday, an NTP step, an admin setting the date
 * back an hour) neither stops nor hurries a periodic job (issue 20: the
 * node-hold re-assertion waited on a CLOCK_REALTIME deadline).  No Slurm
 * header: the unit test (test/unit/plugin/mono_wait_test.c) builds it alone.
 *
 * Every pthread_cond_timedwait() of src/ goes through sl_mono_timedwait() on
 * a condition made by sl_mono_cond_init(); test/unit/plugin/clock_audit.sh
 * fails the suite on a CLOCK_REALTIME wait or deadline anywhere else.
 */
#ifndef SWITCH_LUA_MONO_WAIT_H
#define SWITCH_LUA_MONO_WAIT_H

#include <pthread.h>
#include <time.h>

/* Initialise `cond` so that its timed waits measure CLOCK_MONOTONIC.
 * RET 0, or the errno of pthread_condattr_*() / pthread_cond_init(). */
extern int sl_mono_cond_init(pthread_cond_t *cond);

/* `*deadline` = CLOCK_MONOTONIC now + `sec` seconds (sec >= 0). */
extern void sl_mono_deadline(struct timespec *deadline, unsigned sec);

/* pthread_cond_timedwait() on a condition from sl_mono_cond_init(), until
 * the CLOCK_MONOTONIC `deadline` from sl_mono_deadline().  `mutex` held.
 * RET 0 (signalled, or spuriously woken), ETIMEDOUT, or another errno. */
extern int sl_mono_timedwait(pthread_cond_t *cond, pthread_mutex_t *mutex,
			     const struct timespec *deadline);

#endif
