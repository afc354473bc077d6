/* SPDX-License-Identifier: Apache-2.0 */
/* steps.h: parsed STEPS.json of `eht hash` (library-internal, shared with its fuzz target). */
#ifndef EHT_ENGRAM_STEPS_H
#define EHT_ENGRAM_STEPS_H

#include <stddef.h>
#include <stdint.h>

struct engram_step {
	size_t n_requests, n_tokens;
	uint64_t *req;    /* request ids: index into engram_steps.names */
	uint32_t *starts; /* n_requests + 1 */
	int32_t *tokens;
	uint8_t *dead;
};

struct engram_steps {
	struct engram_step *steps;
	size_t n;
	char **names; /* request names in order of first appearance */
	size_t n_names;
};

/* Parses len bytes of json. Returns 0, -EINVAL (naming the step, request and index), -ENOMEM. */
int engram_steps_parse(const char *json, size_t len, struct engram_steps **out);
void engram_steps_free(struct engram_steps *steps);

#endif
