/* SPDX-License-Identifier: Apache-2.0 */
/* test_settings_doc.c: docs/ENVIRONMENT.md's settings tables are what src/util/settings.c's table
 * renders. `build/test_settings_doc --write [FILE]` in the source tree writes them into FILE
 * (default: docs/ENVIRONMENT.md under $EHT_SOURCE_DIR, else under the current folder) between its two
 * marker lines. */
#include <string.h>

#include "testutil.h"
#include "util/settings.h"

#define BEGIN_MARK "<!-- BEGIN settings: generated from src/util/settings.c"
#define END_MARK "<!-- END settings -->"

static char *read_all(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	char chunk[4096];
	size_t n;
	while (m && (n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		fwrite(chunk, 1, n, m);
	fclose(f);
	if (m)
		fclose(m);
	return buf;
}

/* The table as Markdown (malloc'd). */
static char *rendered(void)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	if (!m || eht_settings_markdown(m) != 0) {
		fprintf(stderr, "test_settings_doc: cannot render the table\n");
		exit(1);
	}
	fclose(m);
	return buf;
}

int main(int argc, char **argv)
{
	const char *src = getenv("EHT_SOURCE_DIR");
	char path[4096];
	bool write = argc > 1 && !strcmp(argv[1], "--write");
	if (argc > 1 + write)
		snprintf(path, sizeof(path), "%s", argv[1 + write]);
	else
		snprintf(path, sizeof(path), "%s/docs/ENVIRONMENT.md", src ? src : "."); /* ctest sets it */
	char *doc = read_all(path), *table = rendered();
	char *begin = doc ? strstr(doc, BEGIN_MARK) : NULL;
	char *body = begin ? strchr(begin, '\n') : NULL;
	char *end = body ? strstr(body, END_MARK) : NULL;
	if (!end) {
		fprintf(stderr, "test_settings_doc: %s lacks the lines '%s ...' and '%s'\n", path, BEGIN_MARK, END_MARK);
		return 1;
	}
	body++;
	if (write) {
		FILE *f = fopen(path, "w");
		if (!f || fprintf(f, "%.*s%s%s", (int)(body - doc), doc, table, end) < 0 || fclose(f) != 0) {
			fprintf(stderr, "test_settings_doc: cannot write %s\n", path);
			return 1;
		}
		printf("%s: settings tables written\n", path);
		return 0;
	}
	size_t blen = (size_t)(end - body);
	if (blen != strlen(table) || memcmp(body, table, blen) != 0) {
		const char *a = body, *b = table;
		int line = 1;
		while (*a && *a == *b && a < end) {
			line += *a == '\n';
			a++, b++;
		}
		while (a > body && a[-1] != '\n') /* the whole line of each */
			a--, b--;
		fprintf(stderr,
			"test_settings_doc: %s differs from the table in src/util/settings.c, from line %d of the "
			"generated part on:\n  doc:   %.*s\n  table: %.*s\nregenerate it: build/test_settings_doc --write\n",
			path, line, (int)strcspn(a, "\n"), a, (int)strcspn(b, "\n"), b);
		t_failures++;
	}
	free(doc);
	free(table);
	return t_done();
}
