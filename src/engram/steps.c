/* SPDX-License-Identifier: Apache-2.0 */
/* steps.c: the STEPS.json format of `eht hash` (an array of steps of named request chunks). */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "engram/steps.h"
#include "util/err.h"

#define MAX_NAME 256

void engram_steps_free(struct engram_steps *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++) {
		struct engram_step *st = &s->steps[i];
		free(st->req);
		free(st->tokens);
		free(st->dead);
		free(st->starts);
	}
	for (size_t i = 0; i < s->n_names; i++)
		free(s->names[i]);
	free(s->names);
	free(s->steps);
	free(s);
}

static int name_id(struct engram_steps *s, const char *name, uint64_t *id)
{
	for (size_t i = 0; i < s->n_names; i++)
		if (!strcmp(s->names[i], name)) {
			*id = i;
			return 0;
		}
	char **v = realloc(s->names, (s->n_names + 1) * sizeof(*v));
	if (!v)
		return eht_err(ENOMEM, "steps: out of memory");
	s->names = v;
	if (!(v[s->n_names] = strdup(name)))
		return eht_err(ENOMEM, "steps: out of memory");
	*id = s->n_names++;
	return 0;
}

static int parse_step(struct engram_steps *s, size_t si, json_t *step, struct engram_step *out)
{
	json_t *reqs = json_is_object(step) ? json_object_get(step, "requests") : NULL, *r;
	size_t ri, total = 0;
	if (!json_is_array(reqs))
		return eht_err(EINVAL, "steps[%zu]: not an object with a \"requests\" array", si);
	size_t nr = json_array_size(reqs);
	json_array_foreach(reqs, ri, r)
	{
		json_t *t = json_is_object(r) ? json_object_get(r, "token_ids") : NULL;
		if (!json_is_array(t))
			return eht_err(EINVAL, "steps[%zu].requests[%zu]: no \"token_ids\" array", si, ri);
		total += json_array_size(t);
	}
	if (total > INT32_MAX)
		return eht_err(EINVAL, "steps[%zu]: too many tokens", si);
	out->n_requests = nr;
	out->n_tokens = total;
	out->req = calloc(nr + 1, sizeof(*out->req));
	out->starts = calloc(nr + 1, sizeof(*out->starts));
	out->tokens = calloc(total + 1, sizeof(*out->tokens));
	out->dead = calloc(total + 1, 1);
	if (!out->req || !out->starts || !out->tokens || !out->dead)
		return eht_err(ENOMEM, "steps: out of memory");
	size_t k = 0;
	json_array_foreach(reqs, ri, r)
	{
		json_t *name = json_object_get(r, "req"), *t = json_object_get(r, "token_ids"),
		       *d = json_object_get(r, "dead"), *e;
		const char *key;
		json_t *val;
		json_object_foreach(r, key, val)
		{
			if (strcmp(key, "req") && strcmp(key, "token_ids") && strcmp(key, "dead"))
				return eht_err(EINVAL, "steps[%zu].requests[%zu]: unknown key \"%s\"", si, ri, key);
		}
		if (!json_is_string(name) || json_string_length(name) == 0 || json_string_length(name) > MAX_NAME ||
		    strlen(json_string_value(name)) != json_string_length(name))
			return eht_err(EINVAL, "steps[%zu].requests[%zu]: \"req\" must be a name of 1..%d characters", si,
				       ri, MAX_NAME);
		int rc = name_id(s, json_string_value(name), &out->req[ri]);
		if (rc)
			return rc;
		for (size_t q = 0; q < ri; q++)
			if (out->req[q] == out->req[ri])
				return eht_err(EINVAL, "steps[%zu]: request \"%s\" appears twice", si,
					       json_string_value(name));
		if (d && (!json_is_array(d) || json_array_size(d) != json_array_size(t)))
			return eht_err(EINVAL, "steps[%zu].requests[%zu]: \"dead\" must be an array as long as token_ids",
				       si, ri);
		out->starts[ri] = (uint32_t)k;
		size_t i;
		json_array_foreach(t, i, e)
		{
			if (!json_is_integer(e) || json_integer_value(e) < 0 || json_integer_value(e) > INT32_MAX)
				return eht_err(EINVAL, "steps[%zu].requests[%zu].token_ids[%zu]: not an id in [0, 2^31)", si,
					       ri, i);
			out->tokens[k + i] = (int32_t)json_integer_value(e);
			if (d) {
				json_t *f = json_array_get(d, i);
				if (!json_is_integer(f) || (json_integer_value(f) != 0 && json_integer_value(f) != 1))
					return eht_err(EINVAL, "steps[%zu].requests[%zu].dead[%zu]: not 0 or 1", si, ri, i);
				out->dead[k + i] = (uint8_t)json_integer_value(f);
			}
		}
		k += json_array_size(t);
	}
	out->starts[nr] = (uint32_t)k;
	return 0;
}

int engram_steps_parse(const char *json, size_t len, struct engram_steps **out)
{
	json_error_t je;
	json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je), *step;
	if (!root)
		return eht_err(EINVAL, "steps: line %d: %s", je.line, je.text);
	struct engram_steps *s = calloc(1, sizeof(*s));
	int rc = 0;
	size_t i;
	if (!s) {
		rc = eht_err(ENOMEM, "steps: out of memory");
		goto out;
	}
	if (!json_is_array(root)) {
		rc = eht_err(EINVAL, "steps: not a JSON array of steps");
		goto out;
	}
	s->steps = calloc(json_array_size(root) + 1, sizeof(*s->steps));
	if (!s->steps) {
		rc = eht_err(ENOMEM, "steps: out of memory");
		goto out;
	}
	json_array_foreach(root, i, step)
	{
		s->n = i + 1;
		if ((rc = parse_step(s, i, step, &s->steps[i])))
			goto out;
	}
out:
	json_decref(root);
	if (rc) {
		engram_steps_free(s);
		return rc;
	}
	*out = s;
	return 0;
}
