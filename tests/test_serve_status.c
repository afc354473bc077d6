/* SPDX-License-Identifier: Apache-2.0 */
/* test_serve_status.c: what operators see of a server: eht_serve_status while it serves (tables,
 * readiness, attached workers with their pid), -ENOENT once it stopped; and `eht serve`'s readiness
 * signals: READY=1 on $NOTIFY_SOCKET, the --ready-file (removed on SIGTERM), `eht status --json`,
 * and `eht regions list` showing the served tables. */
#include <jansson.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

static void in_process(const char *ckpt)
{
	char key[64];
	snprintf(key, sizeof(key), "eht-test-status-%d", (int)getpid());
	struct eht_serve_opts so = {.size = sizeof(so), .key = key, .tier = EHT_TIER_REGION};
	eht_server *s = NULL;
	CHECK_RC(eht_serve_start(ckpt, &so, &s), 0);
	if (!s)
		return;
	json_t *j = t_serve_status(key);
	CHECK(j && json_is_true(json_object_get(j, "ready")));
	CHECK(j && !strcmp(json_string_value(json_object_get(j, "state")), "ready"));
	CHECK(j && json_array_size(json_object_get(j, "tables")) == 2);
	CHECK(j && json_integer_value(json_object_get(j, "bytes")) == 2 * 700 * 264);
	/* Each table's CPU page size as the server maps it (4 KiB or huge: whatever this node gives). */
	json_t *t0 = j ? json_array_get(json_object_get(j, "tables"), 0) : NULL;
	CHECK(t0 && json_integer_value(json_object_get(t0, "cpu_page_size")) >= 4096);
	CHECK(t0 && json_is_string(json_object_get(t0, "cpu_pages")));
	CHECK(j && json_integer_value(json_object_get(j, "pid")) == getpid());
	CHECK(j && json_array_size(json_object_get(j, "workers")) == 0);
	json_decref(j);
	j = NULL;

	struct eht_attach_opts ao = {.size = sizeof(ao), .device = -1, .timeout_ms = 5000};
	eht_client *c = NULL;
	CHECK_RC(eht_attach(key, &ao, &c), 0);
	/* the attach thread records the worker right after sending the tables: wait for it (up to 30 s:
	 * that thread may be off the CPU for a while on a loaded machine) */
	json_t *w = NULL;
	for (int i = 0; i < 3000; i++) {
		json_decref(j);
		j = t_serve_status(key);
		w = j ? json_array_get(json_object_get(j, "workers"), 0) : NULL;
		if (w)
			break;
		usleep(10000);
	}
	CHECK(w && json_integer_value(json_object_get(w, "pid")) == getpid());
	CHECK(w && json_integer_value(json_object_get(w, "uid")) == (json_int_t)geteuid());
	CHECK(w && json_is_null(json_object_get(w, "device")));
	json_decref(j);

	/* NULL key: every server of this user, this one among them */
	j = t_serve_status(NULL);
	int found = 0;
	size_t i;
	json_t *e;
	json_array_foreach(j, i, e) found |= !strcmp(json_string_value(json_object_get(e, "key")), key);
	CHECK(found);
	json_decref(j);

	eht_detach(c);
	CHECK_RC(eht_serve_stop(s), 0);
	char *text = NULL;
	CHECK_RC(eht_serve_status(key, &text), -ENOENT);
	CHECK(text == NULL && strstr(eht_last_error(), key));
	CHECK_RC(eht_serve_status("bad key!", &text), -EINVAL);
}

static void cli_readiness(const char *ckpt, const char *dir)
{
	const char *cli = getenv("EHT_CLI");
	if (!cli) {
		fprintf(stderr, "EHT_CLI not set: the eht serve part is not run\n");
		t_failures++;
		return;
	}
	char key[64], ready[600], notify[108];
	snprintf(key, sizeof(key), "eht-test-ready-%d", (int)getpid());
	snprintf(ready, sizeof(ready), "%s/ready.json", dir);
	snprintf(notify, sizeof(notify), "@eht-test-notify-%d", (int)getpid());
	int nfd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	memcpy(a.sun_path + 1, notify + 1, strlen(notify) - 1);
	CHECK(nfd >= 0 && bind(nfd, (struct sockaddr *)&a,
			       (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(notify))) == 0);
	pid_t pid = fork();
	if (pid == 0) {
		setenv("NOTIFY_SOCKET", notify, 1);
		int devnull = open("/dev/null", 1);
		dup2(devnull, 1);
		execl(cli, "eht", "serve", ckpt, "--key", key, "--tier", "region", "--ready-file", ready, (char *)NULL);
		_exit(127);
	}
	struct timeval tv = {.tv_sec = 30};
	setsockopt(nfd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	char msg[512] = "";
	ssize_t n = recv(nfd, msg, sizeof(msg) - 1, 0);
	msg[n > 0 ? n : 0] = '\0';
	CHECK(strstr(msg, "READY=1") && strstr(msg, key));
	struct stat st;
	CHECK(stat(ready, &st) == 0);
	char cmd[1024];
	snprintf(cmd, sizeof(cmd), "'%s' status %s --json | grep -q '\"ready\":true'", cli, key);
	CHECK(system(cmd) == 0);
	/* its region files are unlinked once mapped: regions list shows them as held by the server */
	snprintf(cmd, sizeof(cmd), "'%s' regions list --json | grep -q '\"key\":\"%s\"'", cli, key);
	CHECK(system(cmd) == 0);
	snprintf(cmd, sizeof(cmd), "'%s' regions list | grep -q 'held by running servers'", cli);
	CHECK(system(cmd) == 0);
	kill(pid, SIGTERM);
	n = recv(nfd, msg, sizeof(msg) - 1, 0);
	msg[n > 0 ? n : 0] = '\0';
	CHECK(strstr(msg, "STOPPING=1"));
	int ws = 0;
	CHECK(waitpid(pid, &ws, 0) == pid && WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
	CHECK(stat(ready, &st) != 0);
	close(nfd);
}

int main(void)
{
	char *dir = t_tmpdir("status");
	char ckpt[600];
	snprintf(ckpt, sizeof(ckpt), "%s/ck", dir);
	struct eht_synth_opts so = {.size = sizeof(so), .rows = 700};
	CHECK_RC(eht_synth_checkpoint(ckpt, &so), 0);
	in_process(ckpt);
	cli_readiness(ckpt, dir);
	t_rmtree(dir);
	return t_done();
}
