/* SPDX-License-Identifier: Apache-2.0 */
/* settings.c: the table of EHT_* settings, read into one snapshot per process (settings.h). */
#include "util/settings.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "eht.h"
#include "util/size.h"
#include "util/log.h"

extern char **environ;

#define KB (1ull << 10)
#define GB (1ull << 30)
#define TB (1ull << 40)

/* A row, its name spelt from its id so that the two cannot drift apart. */
#define ROW(id, type_, cls_, dflt_, meaning_) \
	[EHT_SET_##id] = {.name = "EHT_" #id, .type = type_, .cls = cls_, .dflt = dflt_, .meaning = meaning_}
#define NUM(id, type_, cls_, dflt_, lo_, hi_, meaning_)                                                   \
	[EHT_SET_##id] = {.name = "EHT_" #id, .type = type_, .cls = cls_, .dflt = dflt_, .lo = lo_, .hi = hi_, \
			  .meaning = meaning_}
#define DBL(id, cls_, dflt_, lo_, hi_, meaning_)                                                     \
	[EHT_SET_##id] = {.name = "EHT_" #id, .type = EHT_SETTING_DOUBLE, .cls = cls_, .dflt = dflt_, \
			  .dlo = lo_, .dhi = hi_, .meaning = meaning_}
#define ENUM(id, cls_, dflt_, choices_, meaning_)                                                  \
	[EHT_SET_##id] = {.name = "EHT_" #id, .type = EHT_SETTING_ENUM, .cls = cls_, .dflt = dflt_, \
			  .choices = choices_, .meaning = meaning_}

#define U EHT_SETTING_USER
#define T EHT_SETTING_TUNING
#define X EHT_SETTING_TEST

static const struct eht_setting_def table[EHT_SET_COUNT] = {
	/* ---- user */
	ENUM(LOG, U, "warn", "error|warn|info|debug|trace", "what libeht logs (to stderr, or eht_log_set_callback's sink)"),
	ROW(NO_CUDA, EHT_SETTING_BOOL, U, "0", "1: behave as on a machine without a GPU (the CUDA driver is not loaded)"),
	ROW(SHM_DIR, EHT_SETTING_STR, U, "/dev/shm", "directory of shared regions (a hugetlbfs mount works)"),
	NUM(SERVE_ALLOW_GID, EHT_SETTING_U64, U, NULL, 0, 4294967294ull,
	    "root's `eht serve` also serves workers of this group, and such a worker also looks for root's server (notes below)"),
	NUM(SHARE_CHUNK, EHT_SETTING_SIZE, U, "1G", 4 * KB, 1 * TB,
	    "host-NUMA tier: the chunks a shared table is made of (unless its options' chunk_bytes says)"),
	NUM(NUMA_RESERVE, EHT_SETTING_SIZE, U, NULL, 1, 64 * TB,
	    "memory a NUMA node keeps free of table copies (unset: a tenth of the node)"),
	NUM(GROUP_TIMEOUT_MS, EHT_SETTING_U64, U, "300000", 1, 4294967295ull,
	    "deadline of a node-local group's steps, in ms (unless its options' timeout_ms says)"),
	NUM(PIN_CHUNK, EHT_SETTING_SIZE, U, "64G", 4 * KB, 64 * TB,
	    "largest single registration of host memory with the GPU (a larger table is registered in pieces)"),
	NUM(THREADS, EHT_SETTING_U64, U, NULL, 1, 1024,
	    "threads of the process's one lookup pool (unset: the budget `eht serve` handed a worker of served tables, "
	    "else the NUMA node's CPUs this process may use, by affinity and cgroup CPU quota, per GPU on it, less two)"),
	NUM(LOOKUP_SM_CAP, EHT_SETTING_U64, U, NULL, 1, 65535,
	    "no lookup kernel has more blocks than this, unless the options' sm_cap says (unset: no cap; half the SMs "
	    "in the background mode)"),
	ROW(LOOKUP_BACKGROUND, EHT_SETTING_BOOL, U, "0",
	    "1: every engine in the background mode (as the EHT_LOOKUP_BACKGROUND flag, Python background=True): no SM "
	    "waits for the CPU, AUTO runs as HOST, kernels capped at half the SMs"),
	ROW(LOOKUP_BG_PUSH, EHT_SETTING_BOOL, U, NULL,
	    "1 / 0: every engine's captured background lookups pushed by the CPU (two graph nodes a lookup) or the "
	    "stream's way, whatever the options' EHT_LOOKUP_BG_PUSH / EHT_LOOKUP_BG_STREAM flags say (unset: pushed "
	    "unless BG_STREAM); eager ones are always pushed"),
	ROW(NODE_ID, EHT_SETTING_STR, U, NULL,
	    "this process's node identity instead of the host's (1..64 characters of A-Z a-z 0-9 . _ -): several "
	    "simulated nodes on one machine"),
	DBL(REGION_GC_GRACE_S, U, "30", 0, 1e9,
	    "age in seconds before `eht regions gc` removes a creator's partial region (at once where the pid in its "
	    "name is gone)"),
	ENUM(DISK_URING, U, "auto", "auto|0|1",
	     "disk tier: auto reads uncached rows with io_uring (pread where it is unavailable); 1 every row (as the "
	     "EHT_DISK_URING flag); 0 uncached rows with pread"),
	/* ---- tuning */
	ROW(LOOKUP_AUTO_SPLIT, EHT_SETTING_BOOL, T, "1", "0: AUTO never splits a batch between the GPU and the CPU"),
	NUM(LOOKUP_DEDUP_MIN, EHT_SETTING_U64, T, NULL, 1, 4294967295ull,
	    "smallest batch that uses GPU dedup and the hot set (unset: 4096 with ids in GPU memory or a graph, 32768 "
	    "with host ids, whose CPU path is faster below that; 1 on the disk tier)"),
	NUM(LOOKUP_PREFETCH, EHT_SETTING_U64, T, "8", 0, 64, "rows a thread of the CPU gather prefetches ahead (0: none)"),
	NUM(LOOKUP_CHUNK_MAX, EHT_SETTING_U64, T, "256", 16, 1024,
	    "largest chunk (rows) of the CPU gather (prefill graphs 11-13% faster at 256 than at 1024 on the H200)"),
	NUM(BELL_SPIN_US, EHT_SETTING_U64, T, "100", 0, 1000000,
	    "how long the doorbell poller of GPU-id and graph lookups spins after the last request before it sleeps, "
	    "in µs (up to 1 ms while requests come back to back; it also spins where a replayed graph's request is due)"),
	NUM(POOL_SPIN_US, EHT_SETTING_U64, T, "50", 0, 1000000,
	    "while jobs come back to back, how long the lookup pool's threads spin after one at least, in µs (twice the "
	    "recent gaps, at most 1 ms; unless the options' spin_us says); after a lone job they sleep at once"),
	ROW(DISK_SPLIT, EHT_SETTING_BOOL, T, "1",
	    "0: disk tier without the resident/uncached split: every row copied from the mapping (page faults read the "
	    "uncached ones)"),
	NUM(DISK_HINT_PAGES, EHT_SETTING_U64, T, NULL, 1, 1ull << 32,
	    "disk tier: pages remembered as resident before the hints are cleared (unset: half the memory budget, the "
	    "smaller of the cgroup's limit and RAM)"),
	NUM(DISK_CHECK_US, EHT_SETTING_U64, T, "1000", 0, 1000000000000ull,
	    "disk tier: compare the files with what was seen at open at most this often, in µs"),
	/* ---- tests */
	ROW(TEST_CU_HIDE, EHT_SETTING_STR, X, NULL,
	    "CUDA driver entry points to treat as missing, comma-separated (the device layer's optional symbols)"),
	ROW(TEST_FAULT, EHT_SETTING_STR, X, NULL,
	    "`<step>[:rank=N],...`: make a sharing step (host-NUMA steps, or region) fail on one node rank; "
	    "`populate-madvise`, `populate-eintr`: play an old kernel in a region's populate"),
	ROW(TEST_DISK_URING_FAIL, EHT_SETTING_BOOL, X, "0",
	    "1: io_uring set-up fails as on a kernel that forbids it (the disk split falls back to pread)"),
	ROW(TEST_REGION_SKIP_CAPACITY_CHECK, EHT_SETTING_BOOL, X, "0",
	    "1: no free-space check before a region is made (allocation still fails cleanly)"),
	ROW(TEST_SHARE_HUGE_FIRST, EHT_SETTING_BOOL, X, "0",
	    "1: the auto tier of eht_table_share tries huge pages first without a GPU too"),
	ROW(TEST_NUMA_NODES, EHT_SETTING_STR, X, NULL,
	    "the NUMA nodes that get a copy, like 0,1 (a node the machine lacks is never bound, its copy only recorded "
	    "as that node's)"),
	NUM(TEST_WORKER_NUMA, EHT_SETTING_U64, X, NULL, 0, 4095, "this process's NUMA node"),
	NUM(TEST_NUMA_AVAIL, EHT_SETTING_SIZE, X, NULL, 0, 64 * TB, "every NUMA node's available memory"),
	NUM(TEST_CORES, EHT_SETTING_U64, X, NULL, 1, 65536, "the cores `eht serve` sees"),
	DBL(TEST_DEDUP_SHARE, X, NULL, 0, 1,
	    "the GPU's share of a deduplicating AUTO run's distinct rows, instead of the calibrated one"),
	ROW(TEST_DEQUANT_SIMD, EHT_SETTING_BOOL, X, "1",
	    "0: the CPU's bf16 dequant looks every weight up in a table instead of using AVX-512BW (same bits)"),
	ROW(TEST_BELL_TRACE, EHT_SETTING_BOOL, X, "0",
	    "1: print where stream-triggered lookups spend their time when an engine is destroyed"),
};

#undef U
#undef T
#undef X

/* ------------------------------------------------------------------- values */
struct value {
	bool set;      /* the environment gave a valid value */
	uint64_t u;
	double d;
	const char *s; /* the text: the environment's copy, or the row's default */
};

/* What one reading of the environment found. Snapshots are never freed: a reader may hold a string
 * of an older one, and only tests reload. */
struct snapshot {
	struct value v[EHT_SET_COUNT];
	char warn[EHT_SET_COUNT][320]; /* the warning of each row, "" for none */
	atomic_bool warn_pending;      /* warnings not logged yet */
	struct snapshot *older;
};

static struct snapshot first;
static _Atomic(struct snapshot *) current;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_mutex_t reload_mu = PTHREAD_MUTEX_INITIALIZER;
static atomic_bool logged;
/* Set while this thread logs a snapshot's warnings: logging reads EHT_LOG through here again. */
static _Thread_local bool emitting;

static bool parse_bool(const char *s, uint64_t *out)
{
	static const char *const yes[] = {"1", "true", "yes", "on"}, *const no[] = {"0", "false", "no", "off"};
	for (size_t i = 0; i < 4; i++) {
		if (!strcasecmp(s, yes[i]))
			return *out = 1, true;
		if (!strcasecmp(s, no[i]))
			return *out = 0, true;
	}
	return false;
}

/* Decimal or 0x hex digits only: no sign, no space, no suffix. */
static bool parse_u64(const char *s, uint64_t *out)
{
	int base = s[0] == '0' && (s[1] == 'x' || s[1] == 'X') ? 16 : 10;
	const char *d = base == 16 ? s + 2 : s;
	if (!*d)
		return false;
	for (const char *p = d; *p; p++)
		if (base == 16 ? !isxdigit((unsigned char)*p) : !isdigit((unsigned char)*p))
			return false;
	errno = 0;
	*out = strtoull(d, NULL, base);
	return errno == 0;
}

/* The position of text among the '|'-separated choices, or -1. */
static int choice_index(const char *choices, const char *text)
{
	size_t n = strlen(text);
	int i = 0;
	for (const char *c = choices; *c; i++) {
		size_t len = strcspn(c, "|");
		if (len == n && !strncmp(c, text, n))
			return i;
		c += len + (c[len] == '|');
	}
	return -1;
}

/* The choices as a sentence: "a, b or c". */
static void choices_text(const char *choices, char *buf, size_t len)
{
	size_t o = 0;
	buf[0] = '\0';
	for (const char *c = choices; *c && o < len;) {
		size_t n = strcspn(c, "|");
		const char *sep = c == choices ? "" : c[n] ? ", " : " or ";
		o += (size_t)snprintf(buf + o, len - o, "%s%.*s", sep, (int)n, c);
		c += n + (c[n] == '|');
	}
}

/* An integer bound as the table writes it: sizes with their largest exact binary suffix. */
static void bound_text(const struct eht_setting_def *r, uint64_t v, char *buf, size_t len)
{
	static const char sfx[] = "KMGT";
	int k = -1;
	if (r->type == EHT_SETTING_SIZE)
		while (k < 3 && v >= (1024ull << (10 * (k + 1))) && v % (1024ull << (10 * (k + 1))) == 0)
			k++;
	if (k >= 0)
		snprintf(buf, len, "%llu%c", (unsigned long long)(v >> (10 * (k + 1))), sfx[k]);
	else
		snprintf(buf, len, "%llu", (unsigned long long)v);
}

static void bounds_text(const struct eht_setting_def *r, char *buf, size_t len)
{
	char a[28], b[28];
	buf[0] = '\0';
	if (r->type == EHT_SETTING_U64 || r->type == EHT_SETTING_SIZE) {
		bound_text(r, r->lo, a, sizeof(a));
		bound_text(r, r->hi, b, sizeof(b));
		snprintf(buf, len, "%s..%s", a, b);
	} else if (r->type == EHT_SETTING_DOUBLE) {
		snprintf(buf, len, "%.15g..%.15g", r->dlo, r->dhi);
	}
}

/* Parses text as row r's type and checks its bounds. 0, or -EINVAL with why filled. */
static int parse(const struct eht_setting_def *r, const char *text, struct value *v, char *why, size_t wl)
{
	char b[32], bounds[64];
	int k;
	v->u = 0;
	v->d = 0;
	v->s = text;
	switch (r->type) {
	case EHT_SETTING_BOOL:
		if (!parse_bool(text, &v->u))
			return snprintf(why, wl, "not 0 or 1"), -EINVAL;
		break;
	case EHT_SETTING_U64:
		if (!parse_u64(text, &v->u))
			return snprintf(why, wl, "not a non-negative integer"), -EINVAL;
		break;
	case EHT_SETTING_SIZE:
		if (eht_parse_size(text, &v->u) != 0)
			return snprintf(why, wl, "not a size like 64M"), -EINVAL;
		break;
	case EHT_SETTING_DOUBLE: {
		char *end;
		errno = 0;
		v->d = strtod(text, &end);
		if (errno || *end || end == text || !isfinite(v->d))
			return snprintf(why, wl, "not a number"), -EINVAL;
		if (v->d < r->dlo || v->d > r->dhi) {
			bounds_text(r, bounds, sizeof(bounds));
			snprintf(why, wl, "%s its bound %.15g (%s)", v->d < r->dlo ? "below" : "above",
				 v->d < r->dlo ? r->dlo : r->dhi, bounds);
			return -EINVAL;
		}
		v->u = v->d >= 0 && v->d < 18446744073709551615.0 ? (uint64_t)v->d : 0;
		return 0;
	}
	case EHT_SETTING_STR:
		return 0;
	case EHT_SETTING_ENUM:
		if ((k = choice_index(r->choices, text)) < 0) {
			choices_text(r->choices, bounds, sizeof(bounds));
			return snprintf(why, wl, "not %s", bounds), -EINVAL;
		}
		v->u = (uint64_t)k;
		v->d = k;
		return 0;
	}
	if ((r->type == EHT_SETTING_U64 || r->type == EHT_SETTING_SIZE) && (v->u < r->lo || v->u > r->hi)) {
		bound_text(r, v->u < r->lo ? r->lo : r->hi, b, sizeof(b));
		bounds_text(r, bounds, sizeof(bounds));
		snprintf(why, wl, "%s its bound %s (%s)", v->u < r->lo ? "below" : "above", b, bounds);
		return -EINVAL;
	}
	v->d = (double)v->u;
	return 0;
}

/* Row r's default: its text parsed (a table's default always parses: test_settings checks). */
static void default_of(const struct eht_setting_def *r, struct value *v)
{
	char why[128];
	*v = (struct value){0};
	if (r->dflt && parse(r, r->dflt, v, why, sizeof(why)) != 0)
		*v = (struct value){0};
	v->set = false;
}

static void read_into(struct snapshot *s)
{
	for (int i = 0; i < EHT_SET_COUNT; i++) {
		const struct eht_setting_def *r = &table[i];
		const char *e = getenv(r->name);
		char why[128];
		s->warn[i][0] = '\0';
		default_of(r, &s->v[i]);
		if (!e || !*e) /* empty counts as unset, as a shell's `EHT_X= cmd` means */
			continue;
		char *copy = strdup(e);
		struct value v;
		if (!copy) {
			snprintf(s->warn[i], sizeof(s->warn[i]), "ignoring %s: out of memory", r->name);
		} else if (parse(r, copy, &v, why, sizeof(why)) != 0) {
			snprintf(s->warn[i], sizeof(s->warn[i]), "ignoring %s=%.64s: %s; %s%s", r->name, e, why,
				 r->dflt ? "the default applies: " : "left unset", r->dflt ? r->dflt : "");
			free(copy);
		} else {
			v.set = true;
			v.s = copy; /* the snapshot keeps it (v.s points into it for every type) */
			s->v[i] = v;
		}
	}
	atomic_store(&s->warn_pending, true);
}

static void first_read(void)
{
	read_into(&first);
	atomic_store_explicit(&current, &first, memory_order_release);
}

static void log_warnings(struct snapshot *s)
{
	if (emitting || !atomic_exchange(&s->warn_pending, false))
		return;
	emitting = true;
	for (int i = 0; i < EHT_SET_COUNT; i++)
		if (s->warn[i][0])
			eht_warn("%s", s->warn[i]);
	emitting = false;
}

static struct snapshot *snap(void)
{
	pthread_once(&once, first_read);
	struct snapshot *s = atomic_load_explicit(&current, memory_order_acquire);
	if (atomic_load_explicit(&s->warn_pending, memory_order_relaxed))
		log_warnings(s);
	return s;
}

int eht_settings_reload(void)
{
	pthread_once(&once, first_read);
	struct snapshot *s = calloc(1, sizeof(*s));
	if (!s)
		return eht_err(ENOMEM, "settings: out of memory");
	read_into(s);
	pthread_mutex_lock(&reload_mu);
	s->older = atomic_load(&current);
	atomic_store_explicit(&current, s, memory_order_release);
	pthread_mutex_unlock(&reload_mu);
	atomic_store(&logged, false);
	snap();
	return 0;
}

/* ------------------------------------------------------------------- accessors */
const struct eht_setting_def *eht_setting_def(enum eht_setting id)
{
	return (unsigned)id < EHT_SET_COUNT ? &table[id] : NULL;
}

int eht_setting_find(const char *name)
{
	for (int i = 0; name && i < EHT_SET_COUNT; i++)
		if (!strcmp(table[i].name, name))
			return i;
	return -1;
}

static const struct value *value_of(enum eht_setting id)
{
	static const struct value none;
	return (unsigned)id < EHT_SET_COUNT ? &snap()->v[id] : &none;
}

bool eht_setting_bool(enum eht_setting id) { return value_of(id)->u != 0; }
uint64_t eht_setting_u64(enum eht_setting id) { return value_of(id)->u; }
double eht_setting_double(enum eht_setting id) { return value_of(id)->d; }
const char *eht_setting_str(enum eht_setting id) { return value_of(id)->s; }
unsigned eht_setting_enum(enum eht_setting id) { return (unsigned)value_of(id)->u; }
bool eht_setting_is_set(enum eht_setting id) { return value_of(id)->set; }

/* ------------------------------------------------------------------- the log line */
static bool differs(const struct eht_setting_def *r, const struct value *v)
{
	struct value d;
	if (!v->set)
		return false;
	if (!r->dflt)
		return true;
	default_of(r, &d);
	switch (r->type) {
	case EHT_SETTING_STR:
		return !d.s || strcmp(v->s, d.s) != 0;
	case EHT_SETTING_DOUBLE:
		return v->d != d.d;
	default:
		return v->u != d.u;
	}
}

int eht_settings_describe(char *buf, size_t len)
{
	const struct snapshot *s = snap();
	size_t o = (size_t)snprintf(buf, len, "settings:");
	int n = 0;
#define PUT(...) (o += (size_t)snprintf(buf + (o < len ? o : len), o < len ? len - o : 0, __VA_ARGS__))
	for (int i = 0; i < EHT_SET_COUNT; i++)
		if (differs(&table[i], &s->v[i]))
			PUT("%s %s=%s", n++ ? "," : "", table[i].name, s->v[i].s);
	if (!n)
		PUT(" every EHT_* setting at its default");
	/* Names this table lacks: a typo, a removed setting, or a tool's variable. */
	int u = 0;
	for (char **e = environ; e && *e; e++) {
		size_t nl = strcspn(*e, "=");
		char name[96];
		if (strncmp(*e, "EHT_", 4) || nl >= sizeof(name))
			continue;
		memcpy(name, *e, nl);
		name[nl] = '\0';
		if (eht_setting_find(name) < 0)
			PUT("%s %s", u++ ? "," : "; not read by libeht:", name);
	}
#undef PUT
	return (int)o;
}

void eht_settings_log_once(void)
{
	if (atomic_load(&logged) || atomic_exchange(&logged, true))
		return;
	char line[1536];
	eht_settings_describe(line, sizeof(line));
	eht_info("%s", line);
}

/* ------------------------------------------------------------------- docs */
/* text with '|' escaped, as a Markdown table cell needs. */
static void cell(FILE *f, const char *text)
{
	for (const char *p = text; *p; p++) {
		if (*p == '|')
			fputc('\\', f);
		fputc(*p, f);
	}
}

int eht_settings_markdown(FILE *f)
{
	static const char *const titles[] = {
		[EHT_SETTING_USER] = "User settings",
		[EHT_SETTING_TUNING] = "Tuning (measured defaults)",
		[EHT_SETTING_TEST] = "Tests and diagnosis (`EHT_TEST_*`)",
	};
	static const char *const types[] = {
		[EHT_SETTING_BOOL] = "0 or 1", [EHT_SETTING_U64] = "integer", [EHT_SETTING_SIZE] = "size",
		[EHT_SETTING_DOUBLE] = "number", [EHT_SETTING_STR] = "text",   [EHT_SETTING_ENUM] = "",
	};
	for (int c = EHT_SETTING_USER; c <= EHT_SETTING_TEST; c++) {
		fprintf(f, "%s### %s\n\n| variable | type | default | bounds | meaning |\n| --- | --- | --- | --- | --- |\n",
			c == EHT_SETTING_USER ? "" : "\n", titles[c]);
		for (int i = 0; i < EHT_SET_COUNT; i++) {
			const struct eht_setting_def *r = &table[i];
			char type[128], bounds[64];
			if ((int)r->cls != c)
				continue;
			if (r->type == EHT_SETTING_ENUM)
				choices_text(r->choices, type, sizeof(type));
			else
				snprintf(type, sizeof(type), "%s", types[r->type]);
			bounds_text(r, bounds, sizeof(bounds));
			fprintf(f, "| `%s` | %s | %s%s%s | %s | ", r->name, type, r->dflt ? "`" : "",
				r->dflt ? r->dflt : "unset", r->dflt ? "`" : "", bounds);
			cell(f, r->meaning);
			fputs(" |\n", f);
		}
	}
	return ferror(f) ? -EIO : 0;
}
