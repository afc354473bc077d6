/* SPDX-License-Identifier: Apache-2.0 */
/* st_ckpt.c: one checkpoint object over a file, an indexed set of shards, or a directory of files. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "st/st_impl.h"
#include "util/err.h"
#include "util/grow.h"
#include "util/file.h"
#include "util/log.h"

#define INDEX_NAME "model.safetensors.index.json"

struct ck_ent {
	uint32_t file;
	uint32_t idx;
};

struct eht_ckpt {
	char *path;
	int kind;
	eht_st_file **files;
	size_t nfiles;
	struct ck_ent *ents; /* iteration order: files in order, then by offset */
	size_t n;
	size_t *by_name;     /* indices of ents sorted by name */
};

static const char *ent_name(const struct eht_ckpt *c, size_t i)
{
	return c->files[c->ents[i].file]->t[c->ents[i].idx].name;
}

int eht_ckpt_close(eht_ckpt *c)
{
	int rc = 0;
	if (!c)
		return 0;
	for (size_t i = 0; i < c->nfiles; i++) {
		int r = eht_st_close(c->files[i]);
		if (r && !rc)
			rc = r;
	}
	free(c->files);
	free(c->ents);
	free(c->by_name);
	free(c->path);
	free(c);
	return rc;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Opens dir/names[i] for each name (names sorted, unique) into c->files. */
static int open_files(struct eht_ckpt *c, const char *dir, char **names, size_t n)
{
	c->files = calloc(n ? n : 1, sizeof(*c->files));
	if (!c->files)
		return eht_err(ENOMEM, "%s: out of memory", dir);
	for (size_t i = 0; i < n; i++) {
		char *p = NULL;
		if (asprintf(&p, "%s/%s", dir, names[i]) < 0)
			return eht_err(ENOMEM, "%s: out of memory", dir);
		int rc = eht_st_open(p, 0, &c->files[i]);
		free(p);
		if (rc)
			return rc;
		c->files[i]->file_index = (uint32_t)i;
		c->nfiles++;
	}
	return 0;
}

static int add_all(struct eht_ckpt *c)
{
	size_t total = 0;
	for (size_t f = 0; f < c->nfiles; f++)
		total += c->files[f]->nt;
	c->ents = calloc(total ? total : 1, sizeof(*c->ents));
	if (!c->ents)
		return eht_err(ENOMEM, "%s: out of memory", c->path);
	for (size_t f = 0; f < c->nfiles; f++)
		for (size_t i = 0; i < c->files[f]->nt; i++)
			c->ents[c->n++] = (struct ck_ent){(uint32_t)f, (uint32_t)i};
	return 0;
}

static _Thread_local const struct eht_ckpt *sort_ck;
static int cmp_ent(const void *a, const void *b)
{
	return strcmp(ent_name(sort_ck, *(const size_t *)a), ent_name(sort_ck, *(const size_t *)b));
}

/* Sorts the name index and rejects a name held by two files. */
static int index_names(struct eht_ckpt *c)
{
	c->by_name = malloc((c->n ? c->n : 1) * sizeof(size_t));
	if (!c->by_name)
		return eht_err(ENOMEM, "%s: out of memory", c->path);
	for (size_t i = 0; i < c->n; i++)
		c->by_name[i] = i;
	sort_ck = c;
	qsort(c->by_name, c->n, sizeof(size_t), cmp_ent);
	for (size_t i = 1; i < c->n; i++) {
		size_t a = c->by_name[i - 1], b = c->by_name[i];
		if (strcmp(ent_name(c, a), ent_name(c, b)) == 0) {
			char q[160];
			return eht_err(EINVAL, "%s: duplicate tensor name '%s' in %s and %s", c->path,
				       st_quote(ent_name(c, a), q, sizeof(q)), c->files[c->ents[a].file]->path,
				       c->files[c->ents[b].file]->path);
		}
	}
	return 0;
}

#define INDEX_MAX_BYTES (64u << 20)

/* Reads the index file: a regular file only (O_NONBLOCK: a FIFO must not block the open), at most
 * INDEX_MAX_BYTES. Returns 0 with *text (malloc'ed) and *len, or -errno naming ipath. */
static int read_index(const char *ipath, char **text, size_t *len)
{
	struct stat st;
	char *buf = NULL;
	int rc = 0, fd = eht_file_open_read(ipath, "checkpoint index", &st);
	if (fd < 0)
		return fd;
	if ((uint64_t)st.st_size > INDEX_MAX_BYTES)
		rc = eht_err(EFBIG, "%s: index of %lld bytes is over the %u MiB limit", ipath, (long long)st.st_size,
			     INDEX_MAX_BYTES >> 20);
	else if (!(buf = malloc((size_t)st.st_size + 1)))
		rc = eht_err(ENOMEM, "%s: out of memory", ipath);
	size_t got = 0;
	while (!rc && got < (size_t)st.st_size) {
		ssize_t n = pread(fd, buf + got, (size_t)st.st_size - got, (off_t)got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			rc = eht_err_sys(errno, "%s: read", ipath);
		else if (n == 0)
			break; /* shrank while reading: parse what is there */
		else
			got += (size_t)n;
	}
	close(fd);
	if (rc) {
		free(buf);
		return rc;
	}
	*text = buf;
	*len = got;
	return 0;
}

static int open_index(struct eht_ckpt *c, const char *ipath)
{
	json_error_t je;
	char *text = NULL;
	size_t tlen = 0;
	int rc = read_index(ipath, &text, &tlen);
	if (rc)
		return rc;
	json_t *root = json_loadb(text, tlen, JSON_REJECT_DUPLICATES, &je);
	free(text);
	char **names = NULL;
	uint8_t **listed = NULL;
	size_t nn = 0;
	char q[160], qs[160];

	if (!root)
		return eht_err(EINVAL, "%s: index is not valid JSON: %s at line %d column %d", ipath, je.text,
			       je.line, je.column);
	json_t *wm = json_object_get(root, "weight_map");
	if (!json_is_object(root) || !json_is_object(wm)) {
		rc = eht_err(EINVAL, "%s: index has no \"weight_map\" object", ipath);
		goto out;
	}
	names = calloc(json_object_size(wm) + 1, sizeof(char *));
	if (!names) {
		rc = eht_err(ENOMEM, "%s: out of memory", ipath);
		goto out;
	}
	const char *key;
	json_t *v;
	json_object_foreach(wm, key, v) {
		const char *s = json_string_value(v);
		if (!s || !*s) {
			rc = eht_err(EINVAL, "%s: weight_map entry of tensor '%s' is not a file name", ipath,
				     st_quote(key, q, sizeof(q)));
			goto out;
		}
		if (strchr(s, '/') || strstr(s, "..")) {
			rc = eht_err(EINVAL, "%s: shard name '%s' of tensor '%s' contains '/' or '..'", ipath,
				     st_quote(s, qs, sizeof(qs)), st_quote(key, q, sizeof(q)));
			goto out;
		}
		names[nn++] = (char *)s;
	}
	qsort(names, nn, sizeof(char *), cmp_str);
	size_t u = 0;
	for (size_t i = 0; i < nn; i++)
		if (u == 0 || strcmp(names[u - 1], names[i]))
			names[u++] = names[i];
	nn = u;
	if ((rc = open_files(c, c->path, names, nn)))
		goto out;

	/* Mark what the map lists; every listed tensor must be in its shard. */
	listed = calloc(nn ? nn : 1, sizeof(*listed));
	if (!listed) {
		rc = eht_err(ENOMEM, "%s: out of memory", ipath);
		goto out;
	}
	for (size_t f = 0; f < nn; f++)
		if (!(listed[f] = calloc(c->files[f]->nt + 1, 1))) {
			rc = eht_err(ENOMEM, "%s: out of memory", ipath);
			goto out;
		}
	json_object_foreach(wm, key, v) {
		const char *s = json_string_value(v);
		char **hit = bsearch(&s, names, nn, sizeof(char *), cmp_str);
		size_t f = (size_t)(hit - names);
		long i = st_lookup(c->files[f], key);
		if (i < 0) {
			rc = eht_err(ENOENT, "%s: tensor '%s' listed in the index is missing from shard '%s'", ipath,
				     st_quote(key, q, sizeof(q)), st_quote(s, qs, sizeof(qs)));
			goto out;
		}
		listed[f][i] = 1;
	}
	c->ents = calloc(json_object_size(wm) + 1, sizeof(*c->ents));
	if (!c->ents) {
		rc = eht_err(ENOMEM, "%s: out of memory", ipath);
		goto out;
	}
	size_t unlisted = 0;
	for (size_t f = 0; f < nn; f++)
		for (size_t i = 0; i < c->files[f]->nt; i++) {
			if (listed[f][i])
				c->ents[c->n++] = (struct ck_ent){(uint32_t)f, (uint32_t)i};
			else
				unlisted++;
		}
	if (unlisted)
		eht_warn("%s: %zu tensor(s) in the shards are not in weight_map; left out", ipath, unlisted);
out:
	if (listed)
		for (size_t f = 0; f < nn; f++)
			free(listed[f]);
	free(listed);
	free(names);
	json_decref(root);
	return rc;
}

static int open_dir(struct eht_ckpt *c)
{
	DIR *d = opendir(c->path);
	char **names = NULL;
	size_t nn = 0, cap = 0;
	int rc = 0;
	struct dirent *e;
	if (!d)
		return eht_err_sys(errno, "%s: opendir", c->path);
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);
		if (e->d_name[0] == '.' || l <= 12 || strcmp(e->d_name + l - 12, ".safetensors"))
			continue;
		char **p = eht_grow(names, &cap, nn, sizeof(*names));
		if (!p) {
			rc = eht_err(ENOMEM, "%s: out of memory", c->path);
			goto out;
		}
		names = p;
		if (!(names[nn] = strdup(e->d_name))) {
			rc = eht_err(ENOMEM, "%s: out of memory", c->path);
			goto out;
		}
		nn++;
	}
	if (nn == 0) {
		rc = eht_err(ENOENT, "%s: no %s and no *.safetensors files", c->path, INDEX_NAME);
		goto out;
	}
	qsort(names, nn, sizeof(char *), cmp_str);
	if ((rc = open_files(c, c->path, names, nn)))
		goto out;
	rc = add_all(c);
out:
	for (size_t i = 0; i < nn; i++)
		free(names[i]);
	free(names);
	closedir(d);
	return rc;
}

int eht_ckpt_open(const char *path, uint32_t flags, eht_ckpt **out)
{
	struct stat st;
	struct eht_ckpt *c = NULL;
	char *ipath = NULL;
	int rc;
	if (!path || !out)
		return eht_err(EINVAL, "eht_ckpt_open: NULL argument");
	*out = NULL;
	if (flags)
		return eht_err(EINVAL, "eht_ckpt_open %s: unknown flags 0x%x", path, flags);
	if (stat(path, &st) != 0)
		return eht_err_sys(errno, "%s", path);
	c = calloc(1, sizeof(*c));
	if (!c || !(c->path = strdup(path))) {
		free(c);
		return eht_err(ENOMEM, "%s: out of memory", path);
	}
	if (!S_ISDIR(st.st_mode)) {
		c->kind = EHT_CKPT_FILE;
		c->files = calloc(1, sizeof(*c->files));
		if (!c->files) {
			rc = eht_err(ENOMEM, "%s: out of memory", path);
			goto fail;
		}
		if ((rc = eht_st_open(path, 0, &c->files[0])))
			goto fail;
		c->nfiles = 1;
		rc = add_all(c);
	} else {
		if (asprintf(&ipath, "%s/%s", path, INDEX_NAME) < 0) {
			ipath = NULL;
			rc = eht_err(ENOMEM, "%s: out of memory", path);
			goto fail;
		}
		if (stat(ipath, &st) == 0) {
			c->kind = EHT_CKPT_INDEX;
			rc = open_index(c, ipath);
		} else {
			c->kind = EHT_CKPT_DIR;
			rc = open_dir(c);
		}
	}
	if (rc || (rc = index_names(c)))
		goto fail;
	free(ipath);
	*out = c;
	return 0;
fail:
	free(ipath);
	eht_ckpt_close(c);
	return rc;
}

int eht_ckpt_kind(const eht_ckpt *c) { return c ? c->kind : 0; }
const char *eht_ckpt_path(const eht_ckpt *c) { return c ? c->path : NULL; }
size_t eht_ckpt_file_count(const eht_ckpt *c) { return c ? c->nfiles : 0; }
size_t eht_ckpt_count(const eht_ckpt *c) { return c ? c->n : 0; }

const eht_st_file *eht_ckpt_file(const eht_ckpt *c, size_t index)
{
	return c && index < c->nfiles ? c->files[index] : NULL;
}

int eht_ckpt_tensor(const eht_ckpt *c, size_t index, struct eht_st_tensor_info *info)
{
	if (!c || index >= c->n)
		return eht_err(EINVAL, "eht_ckpt_tensor: index %zu out of range (%zu tensors)", index, c ? c->n : 0);
	return st_fill_info(c->files[c->ents[index].file], c->ents[index].idx, info);
}

int eht_ckpt_find(const eht_ckpt *c, const char *name, struct eht_st_tensor_info *info)
{
	char q[160];
	if (!c || !name)
		return eht_err(EINVAL, "eht_ckpt_find: NULL argument");
	size_t lo = 0, hi = c->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		size_t e = c->by_name[mid];
		int r = strcmp(ent_name(c, e), name);
		if (r == 0)
			return st_fill_info(c->files[c->ents[e].file], c->ents[e].idx, info);
		if (r < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return eht_err(ENOENT, "%s: no tensor '%s'", c->path, st_quote(name, q, sizeof(q)));
}
