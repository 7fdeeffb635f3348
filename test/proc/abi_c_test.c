/* SPDX-License-Identifier: GPL-2.0-or-later
 *
 * The plugin's C ABI (src/plugin/switch_lua_core.h) driven from C, as the
 * Slurm glue drives it, with the real supervisor and runner running
 * test/fixtures/core_flow.lua: the records a non-controller process keeps
 * without reading them, the step side's refusal of a missing script, the
 * controller's refusal of a bad SlurmctldParameters value, one job set
 * up and torn down through slc_ctld_job_start / slc_ctld_job_complete, and
 * the log stamp the glue writes its lines with (slc_log_subject).
 * A plain C program: prints "ok"/"FAIL" lines, exit status 1 on a failure.
 */
#define _GNU_SOURCE /* memmem */
#include "plugin/switch_lua_core.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int failures;

#define CHECK(cond, what)                                                      \
	do {                                                                   \
		if (cond) {                                                    \
			printf("ok   %s\n", what);                             \
		} else {                                                       \
			printf("FAIL %s (%s:%d: %s)\n", what, __FILE__,        \
			       __LINE__, #cond);                               \
			failures++;                                            \
		}                                                              \
	} while (0)

/* ---- a fake slurmctld: records what the core asks of it */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static char logs[65536];
static int ended, held, released, drained, requeued, cancelled, forgotten;

static void on_log(int level, const char *line)
{
	pthread_mutex_lock(&mu);
	if (strlen(logs) + strlen(line) + 2 < sizeof(logs)) {
		strcat(logs, line);
		strcat(logs, "\n");
	}
	pthread_mutex_unlock(&mu);
}
static int logged(const char *text)
{
	pthread_mutex_lock(&mu);
	int r = strstr(logs, text) != NULL;
	pthread_mutex_unlock(&mu);
	return r;
}
static void count(int *n)
{
	pthread_mutex_lock(&mu);
	(*n)++;
	pthread_mutex_unlock(&mu);
}
static int get(const int *n)
{
	pthread_mutex_lock(&mu);
	int r = *n;
	pthread_mutex_unlock(&mu);
	return r;
}
static void nop(void)
{
}
static void on_end(uint32_t id)
{
	count(&ended);
}
static void on_requeue(uint32_t id, const char *r)
{
	count(&requeued);
}
static void on_cancel(uint32_t id, const char *r)
{
	count(&cancelled);
}
static void on_hold(uint32_t id, const char *n, bool h)
{
	count(&held);
}
static void on_release(uint32_t id, const char *n, bool r)
{
	count(&released);
}
static void on_drain(const char *n, const char *r)
{
	count(&drained);
}
static void on_forget(uint32_t id)
{
	count(&forgotten);
}

static const slc_ctld_ops_t ops = {
	.lock = nop,
	.unlock = nop,
	.end_configuring = on_end,
	.requeue = on_requeue,
	.cancel = on_cancel,
	.hold = on_hold,
	.release = on_release,
	.drain = on_drain,
	.forget = on_forget,
	.save_state = nop,
	.log = on_log,
};

/* Waits up to 10 s for *n to reach want. */
static int wait_for(const int *n, int want)
{
	struct timespec ten_ms = {0, 10 * 1000 * 1000};
	for (int i = 0; i < 1000; i++) {
		if (get(n) >= want)
			return 1;
		nanosleep(&ten_ms, NULL);
	}
	return 0;
}

/* In slurmd or slurmstepd (no slc_ctld_init) a record is kept as bytes and
 * packed again unchanged, never interpreted: even one this version cannot
 * read. */
static void records_outside_slurmctld(void)
{
	char *buf = NULL;
	size_t len = 0;
	void *h = (void *) 1;
	slc_ctld_pack(NULL, &buf, &len);
	CHECK(buf && len > 0, "pack(NULL) gives the absent record");
	CHECK(slc_ctld_unpack(buf, len, &h) == 0 && h != NULL,
	      "a record is kept outside slurmctld");
	char *again = NULL;
	size_t again_len = 0;
	slc_ctld_pack(h, &again, &again_len);
	CHECK(again_len == len && memcmp(again, buf, len) == 0,
	      "and packed again byte for byte");
	slc_free(buf);
	slc_free(again);

	const char garbage[] = "\xc1\xff not msgpack";
	CHECK(slc_ctld_unpack(garbage, sizeof(garbage), &h) == 0,
	      "unreadable bytes are kept too");
	slc_ctld_pack(h, &again, &again_len);
	CHECK(again_len == sizeof(garbage) &&
		      memcmp(again, garbage, again_len) == 0,
	      "and given back unchanged");
	slc_free(again);

	CHECK(slc_ctld_stepinfo(NULL, NULL, &buf, &len) == 0 && buf == NULL &&
		      len == 0,
	      "no stepinfo without a handle");

	/* Slurm 25.11+ frees job records with their switch_jobinfo: a kept
   * record is freed once, whatever record hands it back. */
	CHECK(slc_jobinfo_free(h, 7) == 1,
	      "a kept record is freed with its job record");
	CHECK(slc_jobinfo_free(h, 7) == 0,
	      "and never twice (the pointer is not read again)");
	int never_ours = 0;
	CHECK(slc_jobinfo_free(&never_ours, 7) == 0,
	      "a pointer the core never handed out is left alone");
}

static void stepd_missing_script(void)
{
	CHECK(slc_stepd_init("/nonexistent/switch.lua", on_log) == -1,
	      "slurmstepd refuses a missing script");
	CHECK(logged("switch/lua") && logged("/nonexistent/switch.lua"),
	      "and its log line names switch/lua and the file");
	slc_step_t step = {
		.job_id = 9, .step_id = 0, .num_nodes = 1, .num_tasks = 1};
	CHECK(slc_stepd_preinit(&step, NULL, 0) == 0,
	      "a step without stepinfo proceeds (fail-open)");
	/* Issue 20: a step of a managed job (it has a stepinfo) never runs
	 * without its hooks. */
	step.node_name = "node7";
	CHECK(slc_stepd_preinit(&step, "x", 1) == -1,
	      "a managed step on a node whose script did not load fails");
	CHECK(logged("JobId=9 StepId=9.0 step_preinit on node7: the job is "
		     "managed by switch/lua") &&
		      logged("this node's script did not load") &&
		      logged("the step fails (Error configuring interconnect)"),
	      "with a line naming the step, the node and why");
	char *reason = NULL;
	CHECK(slc_stepd_postfini(&step, "x", 1, NULL, &reason) == 0 && !reason,
	      "its postfini only logs");
}

static void no_set_env(void *ctx, const char *name, const char *value)
{
	(void) ctx;
	(void) name;
	(void) value;
}

static void no_unset_env(void *ctx, const char *name)
{
	(void) ctx;
	(void) name;
}

/* Issue 36 item 4: on 25.11+ a node whose script did not load fails a
 * managed batch step (it has a stepinfo) in step_init, as it fails a
 * managed normal step, instead of running it without step_init; a batch
 * step without stepinfo proceeds.  24.11 runs no hook in a batch step. */
static void stepd_missing_script_batch_step(void)
{
	slc_step_t batch = {.job_id = 11,
			    .step_id = 0xfffffffbu, /* SLURM_BATCH_SCRIPT */
			    .num_nodes = 1,
			    .num_tasks = 1,
			    .node_name = "node9",
			    .batch = true};

	slc_set_slurm_special_steps(true);
	CHECK(slc_stepd_init("/nonexistent/switch.lua", on_log) == -1,
	      "25.11+: slurmstepd refuses a missing script");
	CHECK(slc_stepd_setup_special_steps(),
	      "25.11+: and tells Slurm to call step_init for the batch step");
	CHECK(slc_stepd_init_step(&batch, NULL, 0, no_set_env, no_unset_env,
				  NULL) == 0,
	      "25.11+: a batch step without stepinfo proceeds");
	CHECK(slc_stepd_init_step(&batch, "x", 1, no_set_env, no_unset_env,
				  NULL) == -1,
	      "25.11+: a managed batch step fails");
	CHECK(logged("switch/lua: JobId=11 StepId=11.batch step_init on node9: "
		     "the job is managed by switch/lua (its step has a "
		     "stepinfo) but this node's script did not load "
		     "(cannot open /nonexistent/switch.lua") &&
		      logged("the step fails (Error configuring interconnect)"),
	      "25.11+: with a line naming the hook, the job, the file and why");
	slc_set_slurm_special_steps(false);
	CHECK(slc_stepd_init("/nonexistent/switch.lua", on_log) == -1 &&
		      !slc_stepd_setup_special_steps(),
	      "24.11: no step_init for a batch step, loaded or not");
}

/* Issue 20: a stepinfo this node cannot read (a newer controller) fails a
 * managed step, naming what this node reads. */
static void stepd_unreadable_stepinfo(void)
{
	slc_step_t step = {.job_id = 10,
			   .step_id = 0,
			   .num_nodes = 1,
			   .num_tasks = 1,
			   .node_name = "node8"};
	CHECK(slc_stepd_init(SWITCHLUA_FIXTURES "/core_flow.lua", on_log) == 0,
	      "slurmstepd loads a good script");
	/* [ "swlua-step", 9, <bin: empty>, nil ]: version 9. */
	CHECK(slc_stepd_preinit(&step, "\x94\xaaswlua-step\x09\xc4\x00\xc0",
				16) == -1,
	      "a stepinfo of a version this node does not read fails the step");
	CHECK(logged("JobId=10 StepId=10.0 step_preinit on node8") &&
		      logged("this node cannot read its stepinfo (switch/lua "
			     "stepinfo: record version 9 is newer") &&
		      logged("this node reads stepinfo versions 1 to"),
	      "with a line naming the node and both versions");
}

/* Whether batch and interactive steps run step_init is the script's
 * setup_special_steps(), asked once by each process, and only where Slurm
 * honours it (slc_set_slurm_special_steps: 25.11+). */
static void special_steps(void)
{
	const char *script = SWITCHLUA_FIXTURES "/special_steps.lua";

	slc_set_slurm_special_steps(false);
	CHECK(slc_stepd_init(script, on_log) == 0 &&
		      !slc_stepd_setup_special_steps(),
	      "24.11: slurmstepd does not take setup_special_steps");
	CHECK(!logged("special_steps fixture: setup_special_steps asked"),
	      "24.11: and does not ask it");
	unsetenv("SWITCHLUA_GOOD_SLURMCTLD_PARAMETERS");
	CHECK(slc_ctld_init(&ops, script, "switch_timeout=30",
			    SWITCHLUA_LIBEXEC, NULL) == 0 &&
		      !slc_ctld_setup_special_steps(),
	      "24.11: a true answer is not taken by slurmctld either");
	CHECK(logged("but a Slurm older than 25.11 never calls the step init"),
	      "24.11: slurmctld says the answer is ignored");
	slc_ctld_fini();

	slc_set_slurm_special_steps(true);
	CHECK(slc_stepd_init(script, on_log) == 0 &&
		      slc_stepd_setup_special_steps(),
	      "25.11+: slurmstepd takes the script's setup_special_steps");
	CHECK(logged("special_steps fixture: block_job_complete asked") &&
		      logged("special_steps fixture: setup_special_steps asked"),
	      "25.11+: slurmstepd asks both questions when it loads the script");
	CHECK(slc_ctld_init(&ops, script, "switch_timeout=30",
			    SWITCHLUA_LIBEXEC, NULL) == 0 &&
		      slc_ctld_setup_special_steps(),
	      "25.11+: slurmctld takes it too");
	CHECK(logged("batch and interactive steps get a stepinfo"),
	      "25.11+: and says so");
	slc_ctld_fini();
	slc_set_slurm_special_steps(false);
}

static void ctld_bad_parameter(const char *script)
{
	unsetenv("SWITCHLUA_GOOD_SLURMCTLD_PARAMETERS");
	CHECK(slc_ctld_init(&ops, script, "switch_timeout=0", SWITCHLUA_LIBEXEC,
			    NULL) == -1,
	      "slurmctld start refuses switch_timeout=0");
	CHECK(logged("switch_timeout"), "and the error names the setting");
}

/* ctld_one_job() leaves these for stepmgr_from_relayed_record(). */
static char *relayed, *ctld_info;
/* The step both slurmctld and the stepmgr build a stepinfo for. */
static const slc_step_facts_t facts_of_step = {.network = "step-net;x",
					       .num_tasks = 3};
static size_t relayed_len, ctld_info_len;

static void ctld_one_job(const char *script)
{
	const char *nodes[] = {"node1"};
	slc_job_t job = {
		.job_id = 42,
		.num_nodes = 1,
		.name = "ok",
		.nodes = "node1",
		.node_names = nodes,
		.node_names_count = 1,
		.network = "fabric",
		.batch = true,
		.requeue_allowed = true,
		.submit_time = 1000,
	};
	unsetenv("SWITCHLUA_GOOD_SLURMCTLD_PARAMETERS");
	CHECK(slc_ctld_init(&ops, script, "switch_timeout=30",
			    SWITCHLUA_LIBEXEC, NULL) == 0,
	      "slurmctld init with a good script");
	CHECK(slc_ctld_block_job_complete(),
	      "block_job_complete() as the script answers");
	CHECK(slc_ctld_job_start(&job) == NULL,
	      "before switch_p_restore (a standby, or a reconfigure not yet committed) no setup runs");
	CHECK(slc_ctld_take_control(false) == 0,
	      "switch_p_restore: this slurmctld takes control");
	slc_job_t plain = job;
	plain.job_id = 43;
	plain.network = NULL;
	CHECK(slc_ctld_job_start(&plain) == NULL,
	      "a job without --network is not ours");
	void *h = slc_ctld_job_start(&job);
	CHECK(h != NULL, "a job with --network is ours");
	CHECK(wait_for(&ended, 1), "its setup ends CONFIGURING");
	char *info = NULL;
	size_t len = 0;
	CHECK(slc_ctld_stepinfo(h, NULL, &info, &len) == 1 && len > 0,
	      "a set-up job has stepinfo");
	CHECK(memmem(info, len, "fabric", 6) != NULL,
	      "a batch credential's stepinfo carries the job's network");
	slc_free(info);
	/* Issue 21: the step's --network as slurmctld recorded it travels in
	 * the stepinfo, whatever the job's. */
	CHECK(slc_ctld_stepinfo(h, &facts_of_step, &info, &len) == 1 &&
		      memmem(info, len, "step-net;x", 10) != NULL &&
		      memmem(info, len, "fabric", 6) == NULL,
	      "a step's stepinfo carries the step's network, not the job's");
	CHECK(slc_jobinfo_job_id(h) == 42, "the handle names its job");
	/* What slurmctld relays to the job's stepmgr slurmstepd. */
	slc_ctld_pack(h, &relayed, &relayed_len);
	ctld_info = info;
	ctld_info_len = len;
	/* Issue 20: slurmctld says node1 failed, and node9 (not the job's). */
	slc_job_end_t end = {.nodes_now = "node1", .failed_nodes = "node[1,9]"};
	slc_ctld_job_complete(42, h, &end);
	CHECK(logged("JobId=42 ended with failed nodes node1 (DOWN"),
	      "the failed node of the job is named, the other ignored");
	CHECK(wait_for(&released, 1), "its teardown releases what it held");
	CHECK(get(&held) == 1 && get(&drained) == 0 && get(&requeued) == 0 &&
		      get(&cancelled) == 0,
	      "held once, nothing drained, requeued or cancelled");
	CHECK(wait_for(&forgotten, 1),
	      "and the job record forgets its switch state");
	CHECK(logged("torn down ok"),
	      "job_complete ran with the jobinfo job_start returned");

	/* job_array_split() copies switch_jobinfo into the new meta record
	 * (another job id): Slurm 25.11+ frees both records. */
	slc_job_t task = job;
	task.job_id = 44;
	void *t = slc_ctld_job_start(&task);
	CHECK(t != NULL && wait_for(&ended, 2), "a second job is set up");
	CHECK(slc_jobinfo_free(t, 45) == 0,
	      "a copy in another job's record is not freed");
	CHECK(slc_jobinfo_free(t, 44) == 1, "the owning record frees it");
	CHECK(slc_jobinfo_free(t, 44) == 0 && slc_jobinfo_free(t, 45) == 0,
	      "once: neither record frees it again");
	CHECK(slc_ctld_stepinfo(t, NULL, &info, &len) == 0 && info == NULL,
	      "a freed handle is not read");
	CHECK(slc_jobinfo_job_id(t) == 0, "nor named");
	slc_ctld_fini();
}

/* Issue 20: a postfini of a step that was killed, whose job was
 * requeued since the setup of its stepinfo (ctld_info: restart count 0),
 * says that its attempt is over; a job of the same run, or no answer,
 * says nothing. */
static void stale_postfini(void)
{
	slc_step_t step = {.job_id = 42, .step_id = 0, .node_name = "node3"};
	slc_job_now_t same = {
		.found = true, .restart_count = 0, .state = "RUNNING"};
	slc_job_now_t requeued = {
		.found = true, .restart_count = 1, .state = "PENDING"};
	char *reason = NULL;

	slc_stepd_postfini(&step, ctld_info, ctld_info_len, NULL, &reason);
	slc_stepd_postfini(&step, ctld_info, ctld_info_len, &same, &reason);
	CHECK(!logged("is over:"),
	      "no line for a step of the job's current run");
	slc_stepd_postfini(&step, ctld_info, ctld_info_len, &requeued, &reason);
	CHECK(logged("JobId=42 StepId=42.0 step_postfini on node3: the step was killed, and its attempt ") &&
		      logged(" is over: the job was requeued since (restart_count 0 at that setup, 1 now, PENDING); step_postfini runs with step.attempt="),
	      "a requeued job's stale postfini names its attempt as over");
	slc_free(reason);
}

/* The job's stepmgr slurmstepd (Slurm 25.11+) builds its steps' stepinfo
 * from the relayed record, as slurmctld would, and only between
 * slc_stepmgr_init and slc_stepmgr_fini. */
static void stepmgr_from_relayed_record(void)
{
	void *h = NULL;
	char *info = NULL;
	size_t len = 0;

	CHECK(relayed && relayed_len > 0, "slurmctld packed the job's record");
	CHECK(slc_ctld_unpack(relayed, relayed_len, &h) == 0 && h != NULL,
	      "the stepmgr keeps it as bytes");
	CHECK(slc_ctld_stepinfo(h, &facts_of_step, &info, &len) == 0 &&
		      info == NULL,
	      "no stepinfo before stepmgr_init");
	CHECK(slc_stepmgr_init("switch_timeout=30", on_log) == 0,
	      "stepmgr_init");
	CHECK(slc_ctld_stepinfo(h, &facts_of_step, &info, &len) == 1 &&
		      len == ctld_info_len && memcmp(info, ctld_info, len) == 0,
	      "the stepmgr's stepinfo is slurmctld's, byte for byte");
	CHECK(slc_jobinfo_job_id(h) == 42, "and names the job");
	slc_free(info);
	info = NULL;
	slc_stepmgr_fini(42);
	CHECK(slc_ctld_stepinfo(h, &facts_of_step, &info, &len) == 0 &&
		      info == NULL,
	      "no stepinfo after stepmgr_fini");
	CHECK(slc_jobinfo_free(h, 42) == 1,
	      "the relayed record is freed with its job record");
	slc_free(relayed);
	stale_postfini();
	slc_free(ctld_info);
}

static void log_subject_from_c(void)
{
	char buf[64], tiny[8];

	CHECK(strcmp(slc_log_subject(buf, sizeof(buf), 42, SLC_NO_STEP, NULL),
		     "JobId=42") == 0,
	      "a job line's subject is JobId=N");
	CHECK(strcmp(slc_log_subject(buf, sizeof(buf), 42, 0xfffffffbu,
				     "step_postfini"),
		     "JobId=42 StepId=42.batch step_postfini") == 0,
	      "a batch step is StepId=N.batch, as Slurm writes it");
	CHECK(strcmp(slc_log_subject(buf, sizeof(buf), 42, 3, NULL),
		     "JobId=42 StepId=42.3") == 0,
	      "a numbered step is StepId=N.M");
	CHECK(strcmp(slc_log_subject(tiny, sizeof(tiny), 1234567, 3, NULL),
		     "JobId=1") == 0,
	      "a subject longer than the buffer is cut, NUL-terminated");
	CHECK(strcmp(slc_log_subject(buf, sizeof(buf), 0, SLC_NO_STEP, NULL),
		     "") == 0,
	      "no job, no subject");
}

int main(int argc, char **argv)
{
	const char *script = SWITCHLUA_FIXTURES "/core_flow.lua";
	slc_set_slurm_user(0);
	log_subject_from_c();
	records_outside_slurmctld();
	stepd_missing_script();
	stepd_missing_script_batch_step();
	stepd_unreadable_stepinfo();
	special_steps();
	ctld_bad_parameter(script);
	ctld_one_job(script);
	stepmgr_from_relayed_record();
	if (failures)
		fprintf(stderr, "%d check(s) failed; log:\n%s", failures, logs);
	return failures ? 1 : 0;
}
