/* SPDX-License-Identifier: Apache-2.0 */
/* st_impl.h: private layout of safetensors files and checkpoints, shared by the st sources. */
#ifndef EHT_ST_IMPL_H
#define EHT_ST_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "eht.h"

/* The reference reader's limit on the header length. */
#define EHT_ST_MAX_HEADER 100000000ull
/* Cap of the reported alignment: the mapping starts on a page, so more says nothing. */
#define EHT_ST_MAX_ALIGN 4096ull

struct st_tensor {
	char *name;
	int dtype;
	uint32_t ndim;
	uint64_t *shape; /* points into eht_st_file.dims */
	uint64_t elements;
	uint64_t nbytes;
	uint64_t begin, end; /* data_offsets */
};

struct eht_st_file {
	char *path;             /* "<memory>" for images */
	const uint8_t *base;    /* the whole file image */
	uint64_t len;
	void *map;              /* mmap base, NULL for images */
	uint64_t header_len;    /* n of the 8-byte prefix */
	struct st_tensor *t;    /* sorted by data offset */
	size_t nt;
	size_t *by_name;        /* indices of t sorted by name */
	uint64_t *dims;
	char **meta;            /* key, value pairs */
	size_t nmeta;
	uint32_t file_index;    /* set by the checkpoint */
};

/* Fills a full tensor info for tensor i of f, then copies info->size bytes of it out. */
int st_fill_info(const struct eht_st_file *f, size_t i, struct eht_st_tensor_info *info);
/* Index of tensor `name` in f, or -1. */
long st_lookup(const struct eht_st_file *f, const char *name);
/* Copies s into out (size cap) with control and non-ASCII bytes escaped, truncating long names:
 * names in messages stay one printable line. Returns out. */
const char *st_quote(const char *s, char *out, size_t cap);
/* True when s (len bytes) is valid UTF-8. */
int st_utf8_valid(const char *s, size_t len);

#endif
