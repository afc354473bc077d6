/* SPDX-License-Identifier: Apache-2.0 */
/* test_serve_hotset.c: served hot sets (CPU): the rows a server is given arrive bit-exact at every
 * worker (eht_table_hotset), tables without one say -ENOENT; bad hot-set files (a row out of range, a
 * repeated row, a truncated file, a bare FILE with two tables, an unknown NAME) make eht_serve_start
 * and `eht serve` fail naming the file and the entry, leaving nothing in the shm directory; and a
 * worker refuses a tampered hot-set descriptor (short, unsealed, rows out of range or repeated, a
 * count that lies, an index past the descriptors), relayed by a man in the middle of a real attach. */
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "table/hotset.h"
#include "os/sock_io.h"
#include "serve/serve_client.h"
#include "serve/serve_proto.h"
#include "testutil.h"
#include "util/clock.h"

#define ROWS 3000
#define T1 "layers.1.engram.embed"
#define T14 "layers.14.engram.embed"

static char ckpt[512], shm[512], dir[512];


/* Writes a file of the hot-set format whose header says count rows (a lie makes it truncated). */
static void write_hot(const char *path, const int64_t *rows, uint64_t n, uint64_t count)
{
	unsigned char buf[16 + 8 * 64];
	memcpy(buf, EHT_HOTSET_MAGIC, 8);
	for (int i = 0; i < 8; i++)
		buf[8 + i] = (unsigned char)(count >> (8 * i));
	for (uint64_t k = 0; k < n; k++)
		for (int i = 0; i < 8; i++)
			buf[16 + 8 * k + i] = (unsigned char)((uint64_t)rows[k] >> (8 * i));
	CHECK_RC(t_write_file(path, buf, 16 + 8 * n), 0);
}

/* A server of the fixture with table T14's hot set from goodp (NULL when it did not start). */
static eht_server *start_with_hotset(const char *key, const char *goodp)
{
	char spec[700];
	snprintf(spec, sizeof(spec), "%s=%s", T14, goodp);
	const char *specs[] = {spec};
	struct eht_serve_opts so = {.size = sizeof(so), .key = key, .device = -1, .hotsets = specs, .nhotsets = 1};
	eht_server *s = NULL;
	CHECK_RC(eht_serve_start(ckpt, &so, &s), 0);
	return s;
}

/* ------------------------------------------------------------------ good: rows arrive bit-exact */
static int64_t good[40];

static void served_rows_arrive(const char *key, const char *goodp)
{
	eht_server *s = start_with_hotset(key, goodp);
	if (!s)
		return;
	char *st = NULL;
	CHECK_RC(eht_serve_status(key, &st), 0);
	CHECK(st && strstr(st, "\"hotset_rows\"") && strstr(st, goodp));
	free(st);
	/* `eht status KEY` prints it too. */
	char cmd[1400], line[1024];
	snprintf(cmd, sizeof(cmd), "'%s' status '%s'", getenv("EHT_CLI"), key);
	FILE *p = popen(cmd, "r");
	int seen = 0;
	while (p && fgets(line, sizeof(line), p))
		seen += strstr(line, "hot set 40 rows from") != NULL && strstr(line, goodp) != NULL;
	CHECK(p && pclose(p) == 0);
	CHECK(seen == 1);
	struct eht_attach_opts ao = {.size = sizeof(ao), .device = -1, .timeout_ms = 10000};
	for (int w = 0; w < 2; w++) { /* every worker gets it */
		eht_client *c = NULL;
		CHECK_RC(eht_attach(key, &ao, &c), 0);
		eht_table *t1 = NULL, *t14 = NULL;
		const int64_t *rows = NULL;
		uint64_t n = 99;
		CHECK_RC(eht_client_find(c, T1, &t1), 0);
		CHECK_RC(eht_client_find(c, T14, &t14), 0);
		CHECK_RC(eht_table_hotset(t1, &rows, &n), -ENOENT);
		CHECK(rows == NULL && n == 0 && strstr(eht_last_error(), T1));
		CHECK_RC(eht_table_hotset(t14, &rows, &n), 0);
		CHECK(n == 40 && rows && memcmp(rows, good, sizeof(good)) == 0);
		CHECK_RC(eht_table_hotset(t14, NULL, &n), -EINVAL);
		CHECK_RC(eht_table_hotset(NULL, &rows, &n), -EINVAL);
		CHECK_RC(eht_detach(c), 0);
	}
	CHECK_RC(eht_serve_stop(s), 0);
	CHECK(t_dir_entries(shm) == 0);
}

/* ------------------------------------------------------------------ bad files */
/* eht_serve_start refuses spec with rc and a message holding want (and want2). */
static void refused(const char *key, const char *spec, int rc, const char *want, const char *want2)
{
	const char *specs[] = {spec};
	struct eht_serve_opts so = {.size = sizeof(so), .key = key, .device = -1, .hotsets = specs, .nhotsets = 1};
	eht_server *s = NULL;
	CHECK_RC(eht_serve_start(ckpt, &so, &s), rc);
	CHECK(s == NULL);
	if (!strstr(eht_last_error(), want) || (want2 && !strstr(eht_last_error(), want2))) {
		fprintf(stderr, "hot set %s: message lacks '%s' / '%s': %s\n", spec, want, want2 ? want2 : "",
			eht_last_error());
		t_failures++;
	}
	CHECK(t_dir_entries(shm) == 0);
}

/* `eht serve ckpt --hotset spec` exits non-zero, its stderr holding want and want2, nothing left. */
static void cli_refuses(const char *key, const char *spec, const char *want, const char *want2)
{
	char errp[600];
	snprintf(errp, sizeof(errp), "%s/serve.err", dir);
	pid_t pid = fork();
	if (pid == 0) {
		alarm(60);
		if (t_stderr_to(errp) != 0)
			_exit(126);
		int null = open("/dev/null", O_WRONLY);
		dup2(null, 1);
		execl(t_cli(), "eht", "serve", ckpt, "--key", key, "--hotset", spec, (char *)NULL);
		_exit(127);
	}
	int st = 0;
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 1);
	char msg[4096] = "";
	FILE *f = fopen(errp, "r");
	size_t k = f ? fread(msg, 1, sizeof(msg) - 1, f) : 0;
	msg[k] = '\0';
	if (f)
		fclose(f);
	if (!strstr(msg, want) || (want2 && !strstr(msg, want2))) {
		fprintf(stderr, "eht serve --hotset %s: stderr lacks '%s' / '%s': %s\n", spec, want, want2 ? want2 : "", msg);
		t_failures++;
	}
	CHECK(t_dir_entries(shm) == 0);
	unlink(errp);
}

static void bad_files(const char *key)
{
	char oor[600], dup[600], trunc[600], spec[700], goodp[600];
	snprintf(oor, sizeof(oor), "%s/oor.hot", dir);
	snprintf(dup, sizeof(dup), "%s/dup.hot", dir);
	snprintf(trunc, sizeof(trunc), "%s/trunc.hot", dir);
	snprintf(goodp, sizeof(goodp), "%s/good.hot", dir);
	int64_t r_oor[] = {5, 7, ROWS}, r_dup[] = {5, 7, 9, 7}, r_tr[] = {1, 2, 3};
	write_hot(oor, r_oor, 3, 3);
	write_hot(dup, r_dup, 4, 4);
	write_hot(trunc, r_tr, 3, 4);

	snprintf(spec, sizeof(spec), "%s=%s", T1, oor);
	refused(key, spec, -EINVAL, oor, "row 3000 (entry 2) is dead here: outside the rows [0, 3000)");
	cli_refuses(key, spec, oor, "row 3000 (entry 2)");
	snprintf(spec, sizeof(spec), "%s=%s", T1, dup);
	refused(key, spec, -EINVAL, dup, "row 7 appears twice (entries 1 and 3)");
	cli_refuses(key, spec, dup, "appears twice");
	snprintf(spec, sizeof(spec), "%s=%s", T1, trunc);
	refused(key, spec, -EINVAL, trunc, "header says 4 rows");
	cli_refuses(key, spec, trunc, "header says 4 rows");
	refused(key, goodp, -EINVAL, "2 tables are served", "NAME=");
	refused(key, "nope=x.hot", -ENOENT, "no served table is named 'nope'", T14);
	snprintf(spec, sizeof(spec), "%s=%s/missing.hot", T1, dir);
	refused(key, spec, -ENOENT, "missing.hot", NULL);
	/* Two files for one table, and a NULL entry. */
	char s1[700], s2[700];
	snprintf(s1, sizeof(s1), "%s=%s", T1, goodp);
	snprintf(s2, sizeof(s2), "%s=%s", T1, goodp);
	const char *two[] = {s1, s2}, *null1[] = {NULL};
	struct eht_serve_opts so = {.size = sizeof(so), .key = key, .device = -1, .hotsets = two, .nhotsets = 2};
	eht_server *s = NULL;
	CHECK_RC(eht_serve_start(ckpt, &so, &s), -EINVAL);
	CHECK(strstr(eht_last_error(), "two hot sets") != NULL);
	so.hotsets = null1;
	so.nhotsets = 1;
	CHECK_RC(eht_serve_start(ckpt, &so, &s), -EINVAL);
	so.hotsets = NULL;
	CHECK_RC(eht_serve_start(ckpt, &so, &s), -EINVAL);
	CHECK(t_dir_entries(shm) == 0);
}

/* ------------------------------------------------------------------ tampered descriptors */
struct answer {
	struct serve_hello h;
	char *json;
	int fds[64];
	size_t nfds;
};

/* Connects to key's server as a worker would and takes its whole answer. */
static int take_answer(const char *key, struct answer *a)
{
	struct sockaddr_un addr;
	socklen_t alen;
	if (serve_addr(key, &addr, &alen) != 0)
		return -1;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	int64_t dl = eht_now_ms() + 10000;
	if (fd < 0 || connect(fd, (struct sockaddr *)&addr, alen) != 0)
		return -1;
	int rc = eht_sock_recv_all(fd, &a->h, sizeof(a->h), NULL, 0, NULL, dl);
	if (!rc && (a->h.json_len > 100000 || a->h.nfds > 64))
		rc = -1;
	a->json = rc ? NULL : calloc(1, a->h.json_len + 1);
	if (!rc)
		rc = eht_sock_recv_all(fd, a->json, a->h.json_len, NULL, 0, NULL, dl);
	a->nfds = 0;
	while (!rc && a->nfds < a->h.nfds) {
		char b;
		size_t n = 0;
		rc = eht_sock_recv_all(fd, &b, 1, a->fds + a->nfds, a->h.nfds - a->nfds, &n, dl);
		a->nfds += n;
	}
	close(fd);
	return rc;
}

/* A sealed (or not) memfd holding 16 + 8 n bytes of the hot-set format with a header of count. */
static int craft_memfd(const int64_t *rows, uint64_t n, uint64_t count, int seal)
{
	int fd = memfd_create("eht-test-hot", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	unsigned char buf[16 + 8 * 64];
	memcpy(buf, EHT_HOTSET_MAGIC, 8);
	memcpy(buf + 8, &count, 8);
	memcpy(buf + 16, rows, 8 * n);
	if (fd < 0 || write(fd, buf, 16 + 8 * n) != (ssize_t)(16 + 8 * n))
		return -1;
	if (seal && fcntl(fd, F_ADD_SEALS, F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE) != 0)
		return -1;
	return fd;
}

/* Relays answer a to serve_attach_fd with the hot set's entry of table T14 changed: its descriptor
 * replaced by hot_fd (>= 0; taken), its "rows" by rows (> 0), its "fd" by fd_index (>= 0). Returns
 * serve_attach_fd's result; with want_rows the attached table's hot set must equal them. */
static int relay(const struct answer *a, int hot_fd, long long rows, long long fd_index, const int64_t *want_rows,
		 uint64_t want_n)
{
	json_t *root = json_loads(a->json, 0, NULL), *tj, *hj = NULL;
	size_t i;
	json_array_foreach(json_object_get(root, "tables"), i, tj)
	if (!strcmp(json_string_value(json_object_get(tj, "name")), T14))
		hj = json_object_get(tj, "hotset");
	CHECK(hj != NULL);
	long long at = json_integer_value(json_object_get(hj, "fd"));
	if (hj && rows > 0)
		json_object_set_new(hj, "rows", json_integer(rows));
	if (hj && fd_index >= 0)
		json_object_set_new(hj, "fd", json_integer(fd_index));
	char *text = json_dumps(root, JSON_COMPACT);
	json_decref(root);
	int fds[64];
	for (size_t k = 0; k < a->nfds; k++)
		fds[k] = (long long)k == at && hot_fd >= 0 ? hot_fd : fcntl(a->fds[k], F_DUPFD_CLOEXEC, 0);
	int sv[2];
	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	struct serve_hello h = a->h;
	h.json_len = (uint32_t)strlen(text);
	int64_t dl = eht_now_ms() + 5000;
	CHECK_RC(eht_sock_send_all(sv[0], &h, sizeof(h), NULL, 0, dl), 0);
	CHECK_RC(eht_sock_send_all(sv[0], text, h.json_len, NULL, 0, dl), 0);
	char b = 'F';
	CHECK_RC(eht_sock_send_all(sv[0], &b, 1, fds, a->nfds, dl), 0);
	eht_sock_close_fds(fds, a->nfds);
	free(text);
	struct eht_attach_opts ao = {.size = sizeof(ao), .device = -1, .timeout_ms = 5000};
	eht_client *c = NULL;
	int fd0 = t_dir_entries("/proc/self/fd"); /* sv[1] and whatever else is open */
	int rc = serve_attach_fd(sv[1], "mitm", &ao, &c);
	if (!rc && want_rows) {
		eht_table *t = NULL;
		const int64_t *r = NULL;
		uint64_t n = 0;
		CHECK_RC(eht_client_find(c, T14, &t), 0);
		CHECK_RC(eht_table_hotset(t, &r, &n), 0);
		CHECK(n == want_n && r && memcmp(r, want_rows, 8 * n) == 0);
	}
	if (rc && !strstr(eht_last_error(), "hot set")) {
		fprintf(stderr, "a refused hot set without saying so: %s\n", eht_last_error());
		t_failures++;
	}
	eht_detach(c);
	close(sv[0]);
	/* Refused or not, the worker keeps no descriptor of what it was sent: only the pair's two are gone. */
	int fd1 = t_dir_entries("/proc/self/fd");
	if (fd1 != fd0 - 2) {
		fprintf(stderr, "relay: %d descriptors open before the attach, %d after detaching (rc %d)\n", fd0, fd1, rc);
		t_failures++;
	}
	return rc;
}

static void tampered(const char *key, const char *goodp)
{
	eht_server *s = start_with_hotset(key, goodp);
	if (!s)
		return;
	struct answer a = {0};
	int before = t_dir_entries("/proc/self/fd");
	CHECK_RC(take_answer(key, &a), 0);
	if (!a.json) {
		eht_serve_stop(s);
		return;
	}
	/* The server (a thread of this process) drops the connection above once it sees it closed: wait
	 * for that (this process then holds what it was sent, no more), so counts of descriptors hold. */
	int settled = 0;
	for (int i = 0; i < 3000 && !(settled = t_dir_entries("/proc/self/fd") == before + (int)a.nfds); i++)
		usleep(10 * 1000);
	CHECK(settled);
	/* The relay itself is faithful: unchanged, it attaches with the rows. */
	CHECK_RC(relay(&a, -1, 0, -1, good, 40), 0);
	/* The same rows, unsealed: the server could change them after the check. */
	CHECK_RC(relay(&a, craft_memfd(good, 40, 40, 0), 0, -1, NULL, 0), -EPROTO);
	CHECK(strstr(eht_last_error(), "not a sealed memfd") != NULL);
	/* Short: 39 rows of a hot set announced (and headed) as 40. */
	CHECK_RC(relay(&a, craft_memfd(good, 39, 40, 1), 0, -1, NULL, 0), -EPROTO);
	CHECK(strstr(eht_last_error(), "want 336") != NULL);
	/* A count that lies: the descriptor's 40 rows announced as 41, or as more than the table has. */
	CHECK_RC(relay(&a, -1, 41, -1, NULL, 0), -EPROTO);
	CHECK_RC(relay(&a, -1, ROWS + 1, -1, NULL, 0), -EPROTO);
	/* A header count other than the announced one. */
	CHECK_RC(relay(&a, craft_memfd(good, 40, 39, 1), 0, -1, NULL, 0), -EPROTO);
	/* Rows out of range, negative or repeated. */
	int64_t bad[40];
	memcpy(bad, good, sizeof(bad));
	bad[17] = ROWS;
	CHECK_RC(relay(&a, craft_memfd(bad, 40, 40, 1), 0, -1, NULL, 0), -EPROTO);
	CHECK(strstr(eht_last_error(), "row 3000 (entry 17)") != NULL);
	bad[17] = -2;
	CHECK_RC(relay(&a, craft_memfd(bad, 40, 40, 1), 0, -1, NULL, 0), -EPROTO);
	bad[17] = good[3];
	CHECK_RC(relay(&a, craft_memfd(bad, 40, 40, 1), 0, -1, NULL, 0), -EPROTO);
	CHECK(strstr(eht_last_error(), "appears twice") != NULL);
	/* Indices past the descriptors, or one of a table's (closed after its import). */
	CHECK_RC(relay(&a, -1, 0, (long long)a.nfds, NULL, 0), -EPROTO);
	CHECK_RC(relay(&a, -1, 0, 0, NULL, 0), -EPROTO);
	/* Not a memfd: the checkpoint's own file, of another size. */
	CHECK_RC(relay(&a, open(ckpt, O_RDONLY | O_DIRECTORY | O_CLOEXEC), 0, -1, NULL, 0), -EPROTO);
	eht_sock_close_fds(a.fds, a.nfds);
	free(a.json);
	CHECK_RC(eht_serve_stop(s), 0);
	CHECK(t_dir_entries(shm) == 0);
}

int main(void)
{
	t_cli(); /* skips where EHT_CLI is not set */
	t_setenv("EHT_NO_CUDA", "1"); /* the CPU path; test_gpu_serve_hotset covers the GPU */
	signal(SIGPIPE, SIG_IGN);
	char *tmp = t_tmpdir("servehot");
	snprintf(dir, sizeof(dir), "%s", tmp);
	snprintf(ckpt, sizeof(ckpt), "%s/ckpt", tmp);
	snprintf(shm, sizeof(shm), "%s/shm", tmp);
	mkdir(shm, 0700);
	t_setenv("EHT_SHM_DIR", shm);
	struct eht_synth_opts sy = {.size = sizeof(sy), .tables = 2, .rows = ROWS, .seed = 5};
	CHECK_RC(eht_synth_checkpoint(ckpt, &sy), 0);
	for (int i = 0; i < 39; i++) /* distinct, the first and the last row among them */
		good[i] = (int64_t)(i * 73);
	good[39] = ROWS - 1;
	char goodp[600], key[64];
	snprintf(goodp, sizeof(goodp), "%s/good.hot", dir);
	write_hot(goodp, good, 40, 40);
	snprintf(key, sizeof(key), "hot-%d", (int)getpid());

	served_rows_arrive(key, goodp);
	bad_files(key);
	tampered(key, goodp);
	t_rmtree(tmp);
	return t_done();
}
