/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * File: plugin/mono_wait.c
 *
 * See mono_wait.h.
 */

#include "mono_wait.h"

extern int sl_mono_cond_init(pthread_cond_t *cond)
{
	pthread_condattr_t attr;
	int rc;

	if ((rc = pthread_condattr_init(&attr)))
		return rc;
	if (!(rc = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC)))
		rc = pthread_cond_init(cond, &attr);
	(void) pthread_condattr_destroy(&attr);
	return rc;
}

extern void sl_mono_deadline(struct timespec *deadline, unsigned sec)
{
	(void) clock_gettime(CLOCK_MONOTONIC, deadline);
	deadline->tv_sec += (time_t) sec;
}

extern int sl_mono_timedwait(pthread_cond_t *cond, pthread_mutex_t *mutex,
			     const struct timespec *deadline)
{
	return pthread_cond_timedwait(cond, mutex, deadline);
}
