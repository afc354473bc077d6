/* SPDX-License-Identifier: Apache-2.0 */
/* cli_info.c: `eht info PATH [--json]`: the tensors of a safetensors file or checkpoint directory. */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "eht.h"

static const char *kind_name(int kind)
{
	return kind == EHT_CKPT_FILE ? "file" : kind == EHT_CKPT_INDEX ? "index" : "dir";
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

/* One line on stderr, whatever the message holds (paths and names may carry control bytes). */
static int fail_line(int json)
{
	char msg[1100];
	snprintf(msg, sizeof(msg), "%s", eht_last_error());
	for (char *c = msg; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
	return cli_error("info", json, msg);
}

static void shape_str(const struct eht_st_tensor_info *t, char *out, size_t cap)
{
	size_t o = 0;
	o += (size_t)snprintf(out + o, cap - o, "[");
	for (uint32_t d = 0; d < t->ndim && o < cap; d++)
		o += (size_t)snprintf(out + o, cap - o, d ? ",%llu" : "%llu", (unsigned long long)t->shape[d]);
	if (o < cap)
		snprintf(out + o, cap - o, "]");
}

static int print_json(const eht_ckpt *c)
{
	json_t *root = json_object(), *files = json_array(), *tensors = json_array();
	uint64_t total = 0;
	int rc = 1;
	if (!root || !files || !tensors)
		goto out;
	json_object_set_new(root, "path", json_string(eht_ckpt_path(c)));
	json_object_set_new(root, "kind", json_string(kind_name(eht_ckpt_kind(c))));
	for (size_t f = 0; f < eht_ckpt_file_count(c); f++) {
		const eht_st_file *sf = eht_ckpt_file(c, f);
		json_t *jf = json_object(), *meta = json_object();
		const char *k, *v;
		for (size_t m = 0; m < eht_st_metadata_count(sf); m++)
			if (eht_st_metadata_at(sf, m, &k, &v) == 0)
				json_object_set_new(meta, k, json_string(v));
		json_object_set_new(jf, "path", json_string(eht_st_path(sf)));
		json_object_set_new(jf, "size", json_integer((json_int_t)eht_st_file_size(sf)));
		json_object_set_new(jf, "data_start", json_integer((json_int_t)eht_st_data_start(sf)));
		json_object_set_new(jf, "tensors", json_integer((json_int_t)eht_st_count(sf)));
		json_object_set_new(jf, "metadata", meta);
		json_array_append_new(files, jf);
	}
	for (size_t i = 0; i < eht_ckpt_count(c); i++) {
		struct eht_st_tensor_info t = {.size = sizeof(t)};
		if (eht_ckpt_tensor(c, i, &t))
			goto out;
		json_t *jt = json_object(), *shape = json_array();
		for (uint32_t d = 0; d < t.ndim; d++)
			json_array_append_new(shape, json_integer((json_int_t)t.shape[d]));
		json_object_set_new(jt, "name", json_string(t.name));
		json_object_set_new(jt, "dtype", json_string(eht_dtype_name(t.dtype)));
		json_object_set_new(jt, "shape", shape);
		json_object_set_new(jt, "bytes", json_integer((json_int_t)t.nbytes));
		json_object_set_new(jt, "file", json_string(t.path));
		json_object_set_new(jt, "offset", json_integer((json_int_t)t.file_offset));
		json_object_set_new(jt, "alignment", json_integer((json_int_t)t.alignment));
		json_object_set_new(jt, "misaligned", json_boolean(t.misaligned));
		json_array_append_new(tensors, jt);
		total += t.nbytes;
	}
	json_object_set_new(root, "files", files);
	json_object_set_new(root, "tensors", tensors);
	files = tensors = NULL;
	json_object_set_new(root, "total_tensors", json_integer((json_int_t)eht_ckpt_count(c)));
	json_object_set_new(root, "total_bytes", json_integer((json_int_t)total));
	rc = cli_print_json(root);
	root = NULL; /* taken */
out:
	json_decref(files);
	json_decref(tensors);
	json_decref(root);
	if (rc)
		cli_errorf("info", 1, "could not write the JSON report");
	return rc;
}

static int print_table(const eht_ckpt *c)
{
	uint64_t total = 0, misaligned = 0;
	size_t w = 4;
	for (size_t i = 0; i < eht_ckpt_count(c); i++) {
		struct eht_st_tensor_info t = {.size = sizeof(t)};
		if (eht_ckpt_tensor(c, i, &t) == 0 && strlen(t.name) > w)
			w = strlen(t.name);
	}
	if (w > 60)
		w = 60;
	printf("%-*s %-11s %-16s %12s %-34s %12s %5s\n", (int)w, "NAME", "DTYPE", "SHAPE", "BYTES", "FILE",
	       "OFFSET", "ALIGN");
	for (size_t i = 0; i < eht_ckpt_count(c); i++) {
		struct eht_st_tensor_info t = {.size = sizeof(t)};
		char shape[64], name[128];
		if (eht_ckpt_tensor(c, i, &t))
			return fail_line(0);
		snprintf(name, sizeof(name), "%s", t.name);
		for (char *p = name; *p; p++)
			if ((unsigned char)*p < 0x20 || *p == 0x7f)
				*p = '?';
		shape_str(&t, shape, sizeof(shape));
		printf("%-*s %-11s %-16s %12llu %-34s %12llu %4llu%s\n", (int)w, name, eht_dtype_name(t.dtype), shape,
		       (unsigned long long)t.nbytes, base_name(t.path), (unsigned long long)t.file_offset,
		       (unsigned long long)t.alignment, t.misaligned ? "!" : " ");
		total += t.nbytes;
		misaligned += t.misaligned;
	}
	printf("%zu tensors, %llu bytes (%.1f MiB) in %zu file(s) [%s]", eht_ckpt_count(c),
	       (unsigned long long)total, (double)total / 1048576.0, eht_ckpt_file_count(c),
	       kind_name(eht_ckpt_kind(c)));
	if (misaligned)
		printf("; %llu tensor(s) not aligned to their element size (!)", (unsigned long long)misaligned);
	printf("\n");
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: eht info PATH [--json]\n"
		   "The tensors of a safetensors file, a sharded checkpoint (model.safetensors.index.json) or a\n"
		   "directory of .safetensors files: dtype, shape, bytes, file, offset and alignment.\n"
		   "  --json   one JSON object (errors as {\"error\": ...})\n");
}

/* the options getopt reads; tools/cli/commands.c lists them for --help, completion and man */
const struct option cli_opts_info[] = {{"json", no_argument, NULL, 'j'}, {"help", no_argument, NULL, 'h'}, {0}};

int cmd_info(int argc, char **argv)
{
	const struct option *longopts = cli_opts_info;
	int json = 0, c;
	cli_opt_reset();
	while ((c = cli_getopt(argc, argv, "info", "h", longopts)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return 0;
		}
		if (c == 'j')
			json = 1;
		else
			return 2;
	}
	if (optind >= argc)
		return cli_usage_error("info", "no PATH given");
	if (optind + 1 < argc)
		return cli_usage_error("info", "one PATH only");
	const char *path = argv[optind];
	eht_ckpt *ck = NULL;
	if (eht_ckpt_open(path, 0, &ck) != 0)
		return fail_line(json);
	int rc = json ? print_json(ck) : print_table(ck);
	eht_ckpt_close(ck);
	return rc;
}
