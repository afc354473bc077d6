/* SPDX-License-Identifier: Apache-2.0 */
/* eht_engram.h: Engram n-gram hashing (token ids -> table row ids), its layout and per-request state. */
#ifndef EHT_ENGRAM_H
#define EHT_ENGRAM_H

#include <stddef.h>
#include <stdint.h>

#include "eht.h" /* EHT_API, EHT_MUST_CHECK; eht.h includes this file at its end */

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ Engram hashing
 * A layout holds what the hash needs: per Engram layer (in engram_layer_ids order) and per column
 * c = (order - 2) * n_heads + head, the head's prime modulus and its row offset in the layer's table;
 * the layer's multipliers; the compressed pad id; optionally a token map (tokenizer id -> compressed
 * id). Row ids are int32 and include the offset: rows of one layer's table are [0, rows[layer]).
 *
 * For token position p of a request and layer L (orders 2..max_ngram; s = 0 only seeds R):
 *   blocked = false; R = 0
 *   for s = 0 .. max_ngram-1:
 *     blocked |= (p - s is before the request) || (token p - s is an image/dead token)
 *     v = blocked ? pad : compressed(token p - s)      (an unknown history entry: pad, not blocked)
 *     R ^= v * M[L][s]
 *     if s >= 1: row[(s-1)*n_heads + h] = R mod P[L][s-1][h] + OFF[L][(s-1)*n_heads + h]
 * M[L] = 2 * numpy.random.default_rng(10007 * layer_id).integers(0, B, max_ngram) + 1 with
 * B = (2^63 - 1) // compressed_vocab // 2 (computed exactly: SeedSequence, PCG64, Lemire). */
typedef struct eht_engram_layout eht_engram_layout;
typedef struct eht_engram_state eht_engram_state;

#define EHT_ENGRAM_MAX_LAYERS 16
#define EHT_ENGRAM_MAX_NGRAM 8
#define EHT_ENGRAM_MAX_HEADS 32
/* History entries (int32, newest first, max_ngram - 1 per request): a compressed id >= 0, or: */
#define EHT_ENGRAM_HIST_UNKNOWN (-1) /* not known: hashes as pad, does not block older entries */
#define EHT_ENGRAM_HIST_BLOCK (-2)   /* before the request's start, or an image token: blocks */

/* Layouts by name: "v41" (DeepSeek-V4.1: layers 1 and 14, 8 heads, orders 2..4, engram vocab
 * 16,000,000, compressed vocab 99,092, pad 2: 384,006,168 and 384,016,682 rows) and "v41-small" (the
 * same structure, 24 head ranges per layer, with small primes above 500: about 12 K rows per layer).
 * Returns 0, -EINVAL (NULL argument), -ENOENT (unknown name, listing the known ones), -ENOMEM. */
EHT_API EHT_MUST_CHECK int eht_engram_layout_preset(const char *name, eht_engram_layout **out);
/* From a config.json text (its "text_config" object if present, else the top level): keys
 * engram_layer_ids, engram_max_ngram_size, engram_vocab_size (a number, or one per order),
 * engram_n_heads, engram_pad_token_id, engram_compressed_vocab_size; engram_num_embeddings, when
 * present, must equal the computed rows; vocab_size, when present, is the token map's length. len: bytes of json. Returns 0, -EINVAL (malformed JSON, a
 * missing or out-of-range key, rows that do not fit int32 or disagree, naming the key), -ENOMEM. */
EHT_API EHT_MUST_CHECK int eht_engram_layout_from_json(const char *json, size_t len, eht_engram_layout **out);
/* The same from a file path; also -errno of reading it. */
EHT_API EHT_MUST_CHECK int eht_engram_layout_from_file(const char *path, eht_engram_layout **out);
/* NULL is a no-op. */
EHT_API void eht_engram_layout_free(eht_engram_layout *layout);

struct eht_engram_info {
	uint32_t size; /* sizeof(struct eht_engram_info), set by the caller */
	uint32_t n_layers, max_ngram, n_heads;
	uint32_t cols; /* (max_ngram - 1) * n_heads: row ids per token per layer */
	uint32_t layer_ids[EHT_ENGRAM_MAX_LAYERS];
	uint64_t rows[EHT_ENGRAM_MAX_LAYERS]; /* table rows of each layer (sum of its moduli) */
	uint64_t compressed_vocab;
	int32_t pad_id;
	uint32_t token_map_len; /* 0: token ids are compressed ids already */
};
/* Returns 0 or -EINVAL (NULL, size too small). */
EHT_API int eht_engram_layout_info(const eht_engram_layout *layout, struct eht_engram_info *info);
/* Column col of layer index li: its prime modulus and row offset. Returns 0 or -EINVAL. */
EHT_API int eht_engram_layout_column(const eht_engram_layout *layout, uint32_t li, uint32_t col, uint64_t *modulus,
			     uint64_t *offset);
/* The max_ngram multipliers of layer index li into out. Returns 0 or -EINVAL. */
EHT_API int eht_engram_layout_multipliers(const eht_engram_layout *layout, uint32_t li, uint64_t *out);

/* numpy.random.default_rng(seed).integers(0, high, n) (int64, high >= 1) into out, bit-exact.
 * Returns 0 or -EINVAL (high < 1). Exposed for tests and tools. */
EHT_API EHT_MUST_CHECK int eht_engram_rng_integers(uint64_t seed, int64_t high, size_t n, int64_t *out);

/* Token map: n entries (the tokenizer vocabulary: 129,280 for the presets, config vocab_size when
 * given), each in [0, compressed_vocab), with max + 1 == compressed_vocab. Copied. Returns 0, -EINVAL (naming the first bad entry), -ENOMEM. */
EHT_API EHT_MUST_CHECK int eht_engram_layout_set_token_map(eht_engram_layout *layout, const int32_t *map, size_t n);
/* The same from a file of int32 little-endian entries; also -errno of reading it. */
EHT_API EHT_MUST_CHECK int eht_engram_layout_load_token_map(eht_engram_layout *layout, const char *path);

/* A flattened batch of request chunks. Request r owns tokens [starts[r], starts[r+1]) (starts
 * non-decreasing, starts[0] == 0, starts[n_requests] == n_tokens). */
struct eht_engram_batch {
	uint32_t size;  /* sizeof(struct eht_engram_batch) */
	uint32_t flags; /* 0 */
	size_t n_tokens;
	const int32_t *tokens;  /* tokenizer ids (through the token map) or compressed ids (no map) */
	const uint8_t *dead;    /* NULL, or per token: nonzero = image token (blocks, as before the start) */
	size_t n_requests;
	const uint32_t *starts; /* n_requests + 1 */
	/* NULL: every request starts with this chunk; else n_requests * (max_ngram - 1) entries, request
	 * r's at [r * (max_ngram - 1)], newest first: compressed ids or EHT_ENGRAM_HIST_*. */
	const int32_t *history;
};

/* Writes rows[token][layer][col] (n_tokens * n_layers * cols int32). Big batches use threads.
 * Returns 0, -EINVAL (bad batch, flags, a token outside the map or compressed vocabulary, a history
 * entry < -2, naming the index), -ENOMEM, -EAGAIN. */
EHT_API EHT_MUST_CHECK int eht_engram_hash(const eht_engram_layout *layout, const struct eht_engram_batch *batch, int32_t *rows);

/* The same on the GPU (the layout's CUDA kernel, bit-identical to eht_engram_hash): every pointer of
 * the batch and d_rows are device pointers of the current context's device; runs on stream (a
 * CUstream, 0 = default) asynchronously. Returns 0, -EINVAL, -ENOTSUP (no CUDA), or a CUDA error as
 * -EIO. Token and history values are not checked on the GPU: out-of-range ones give dead (-1) rows. */
EHT_API EHT_MUST_CHECK int eht_engram_hash_gpu(const eht_engram_layout *layout, const struct eht_engram_batch *batch, int32_t *d_rows,
			void *stream);

/* The same from host memory: copies the batch to GPU `device`, hashes there, copies the rows back
 * into host rows (synchronous; for checking and tools). Checks the batch as eht_engram_hash does. */
EHT_API EHT_MUST_CHECK int eht_engram_hash_gpu_copy(const eht_engram_layout *layout, const struct eht_engram_batch *batch, int32_t *rows,
			     int device);

/* Fused: token ids on the GPU hashed into an internal device buffer (max_tokens * cols int32, made
 * at create) and looked up with eht_lookup_run on the same stream, without the ids passing through
 * the caller. Layer index li of the layout; lk's table is that layer's table (or a rank's head-range
 * shard of it: ids outside give zero rows). The handle must be used by one stream at a time, in the
 * current context of create. create: 0, -EINVAL, -ENOTSUP, -ENOMEM, driver errors. run: batch as
 * eht_engram_hash_gpu (device pointers; n_tokens <= max_tokens), d_out holds n_tokens * cols rows in
 * lk's format; flags and dead_count as eht_lookup_run; returns its result. */
typedef struct eht_engram_lookup eht_engram_lookup;
struct eht_lookup;
EHT_API EHT_MUST_CHECK int eht_engram_lookup_create(const eht_engram_layout *layout, uint32_t li, struct eht_lookup *lk, size_t max_tokens,
			     eht_engram_lookup **out);
EHT_API EHT_MUST_CHECK int eht_engram_lookup_run(eht_engram_lookup *el, const struct eht_engram_batch *batch, void *d_out, void *stream,
			  unsigned flags, uint64_t *dead_count);
/* Synchronizes the context and frees the buffer; NULL is a no-op. */
EHT_API void eht_engram_lookup_destroy(eht_engram_lookup *el);

/* ------------------------------------------------------------------ the engine's own call
 * One Engram layer's table as one rank looks it up, called the way an engine calls its own kernel
 * (vLLM's ParallelEngramEmbedding.lookup(indices, out, background)): the rank's head range and vocab
 * range are fixed at create; each call hands the [T, n_heads] hash output as it lies (any strides,
 * int32 or int64) and an output of any token stride, and says per call which way it runs:
 *   - inline (flags 0): the latency way, for a lookup on the model's stream right before the layer;
 *   - background (EHT_ENGRAM_LAYER_BACKGROUND): the way beside the model's layers (a side stream): no
 *     SM waits for the CPU, the rows move by copy engines, kernels capped at half the SMs.
 * Both ways are made at create (two lookup engines over the table, sharing the process's CPU pool),
 * both capture into CUDA graphs and both give the same bytes. Only the inline way loads the table's hot
 * set (beside the model a hot set's kernels cost the step more than the host rows they save). Column j of the rank (0 <= j < part) is
 * the hash output's column head_start + j: a column >= n_heads (a padded head) and an id outside
 * [vocab_start, vocab_end) give a zero row (and count as dead ids).
 * Output row t, j lies at out + t * out_stride + j * R, R = 512 (bf16: 256 values) or the table's
 * row_bytes (RAW: the packed 264-byte row); out_stride 0 means part * R (dense). */
typedef struct eht_engram_layer eht_engram_layer;

#define EHT_ENGRAM_LAYER_ID_SHIFT 0x1u /* opts.id_shift is given (else chosen, see below) */
#define EHT_ENGRAM_LAYER_OPTS_FLAGS (EHT_ENGRAM_LAYER_ID_SHIFT)
struct eht_engram_layer_opts {
	uint32_t size;  /* sizeof(struct eht_engram_layer_opts) */
	uint32_t flags; /* EHT_ENGRAM_LAYER_* above */
	uint32_t n_heads;    /* columns of the hash output per token (0: 24, DeepSeek-V4.1's) */
	uint32_t head_start; /* the rank's first column */
	uint32_t part;       /* the rank's columns (vLLM: cdiv(24, shards)); 0: n_heads - head_start */
	int format;          /* enum eht_lookup_format: EHT_LOOKUP_BF16 (bf16 rows) or EHT_LOOKUP_RAW (packed) */
	int device;          /* CUDA device; -1: the table's, or none (CPU only: host ids and output) */
	uint64_t vocab_start, vocab_end; /* the rank's rows; both 0: every row the table holds */
	/* Added to a live id to give the table's row. Without EHT_ENGRAM_LAYER_ID_SHIFT: 0, unless the
	 * table holds exactly vocab_end - vocab_start rows that start elsewhere (a rank's shard stored
	 * from its row 0), then first_row - vocab_start. */
	int64_t id_shift;
	uint64_t max_tokens;  /* tokens per internal step, larger calls are split (0: 8192) */
	unsigned threads;     /* the lookup engines' CPU threads (as eht_lookup_opts.threads) */
	uint32_t lookup_flags; /* more eht_lookup_opts flags for both engines (EHT_LOOKUP_GPU_DEDUP,
				* EHT_LOOKUP_NO_HOTSET, EHT_LOOKUP_BG_PUSH: the background engine only) */
};
/* Creates the object over `table` (which must outlive it). Returns 0; -EINVAL (bad options, naming
 * the field: part 0 past n_heads, a vocab range outside the table, BF16 on rows that are not 264
 * bytes, unknown flags); -ENOTSUP (a GPU without the kernels in this build); -ENOMEM; the lookup
 * engines' errors. */
EHT_API EHT_MUST_CHECK int eht_engram_layer_create(eht_table *table, const struct eht_engram_layer_opts *opts,
						   eht_engram_layer **out);
#define EHT_ENGRAM_LAYER_BACKGROUND 0x1u /* the way beside the model's layers (else inline) */
#define EHT_ENGRAM_LAYER_HOST 0x2u       /* ids and out are host memory (else both GPU memory) */
#define EHT_ENGRAM_LAYER_START 0x4u      /* the background way, started only: eht_engram_layer_wait ends it */
/* Looks tokens x part rows up: ids[t * s_tok + c * s_head] (elements) for the rank's columns c, into
 * out (see above), on stream (a CUstream; NULL: the legacy default), asynchronously for GPU memory.
 * Returns 0; -EINVAL (NULL pointers, bad id_type / flags, a negative or overlapping out_stride, out
 * not 16-byte aligned for bf16); -EOPNOTSUPP (a strided out first met inside a capture: one eager
 * call with that stride, or any strided call, makes the buffer); the lookup engines' errors. */
EHT_API EHT_MUST_CHECK int eht_engram_layer_lookup(eht_engram_layer *layer, const void *ids, int id_type,
						   uint64_t tokens, int64_t s_tok, int64_t s_head, void *out,
						   uint64_t out_stride, unsigned flags, void *stream);
/* A background lookup in two stream operations placed apart, for an engine that starts a prefetch in
 * one CUDA graph and joins it in another (vLLM's piecewise graphs): eht_engram_layer_lookup with
 * EHT_ENGRAM_LAYER_START enqueues what starts it (the ids handed to the CPU, which moves the rows by
 * copy engines while the stream goes on); eht_engram_layer_wait(layer, stream) enqueues the wait for
 * them (and their dequant where the CPU does not do it): work on that stream after the wait reads the
 * rows. No side stream: both capture, into the same graph or different ones. The wait goes on the
 * start's stream (or one ordered after it), both captured or both eager, before the layer's next
 * background call (-EBUSY until then). The start goes on a stream ordered after the waits of the
 * layer's earlier background calls: a wait that dequantizes polls on every SM, and a dequant the CPU
 * queued for an earlier call ahead of this start's rows would find no SM free. A call that is not
 * one request (host memory, more than max_tokens tokens, a strided out, a table in GPU memory, the
 * stream's own way EHT_LOOKUP_BG_STREAM) runs whole at START and its wait is a no-op. wait returns 0 (also with nothing started); -EINVAL
 * (a NULL layer; a start and wait one captured and one not: the start is dropped); driver errors. */
EHT_API EHT_MUST_CHECK int eht_engram_layer_wait(eht_engram_layer *layer, void *stream);
/* The lookup engine of one way (flags EHT_ENGRAM_LAYER_BACKGROUND or 0), e.g. for hot sets, counters
 * and eht_lookup_last_dead_count; owned by the layer. */
EHT_API struct eht_lookup *eht_engram_layer_engine(eht_engram_layer *layer, unsigned flags);
/* Tokens of one internal step (opts.max_tokens, or its default); 0 for NULL. */
EHT_API uint64_t eht_engram_layer_max_tokens(const eht_engram_layer *layer);
/* Synchronizes the device (queued work may still read its buffers) and frees; NULL is a no-op. */
EHT_API void eht_engram_layer_destroy(eht_engram_layer *layer);

/* Per-request history across steps. Requests are named by 64-bit ids. */
/* keep: tokens of history kept per request for rollback (0: 64; at least max_ngram - 1).
 * Returns 0, -EINVAL, -ENOMEM. */
EHT_API EHT_MUST_CHECK int eht_engram_state_create(const eht_engram_layout *layout, uint32_t keep, eht_engram_state **out);
/* NULL is a no-op. */
EHT_API void eht_engram_state_destroy(eht_engram_state *state);
/* A new request with empty history. -EEXIST when req is known, -ENOMEM. */
EHT_API EHT_MUST_CHECK int eht_engram_state_add(eht_engram_state *state, uint64_t req);
/* Forgets req. -ENOENT when unknown. */
EHT_API EHT_MUST_CHECK int eht_engram_state_drop(eht_engram_state *state, uint64_t req);
/* child starts with parent's history (e.g. parallel sampling). -ENOENT, -EEXIST, -ENOMEM. */
EHT_API EHT_MUST_CHECK int eht_engram_state_fork(eht_engram_state *state, uint64_t parent, uint64_t child);
/* Forgets req's last n tokens (rejected speculative tokens). -ENOENT; -ERANGE when n exceeds the
 * tokens the request has seen; entries older than `keep` become EHT_ENGRAM_HIST_UNKNOWN. */
EHT_API EHT_MUST_CHECK int eht_engram_state_rollback(eht_engram_state *state, uint64_t req, uint32_t n);
/* Hashes one step: reqs[r] names the request of chunk r of batch (batch->history must be NULL: the
 * state supplies it), writes rows as eht_engram_hash, then appends each chunk to its request's history.
 * Unknown requests are added. Returns 0 or the errors of eht_engram_hash (the state is unchanged on
 * error), -EINVAL (a request named twice). */
EHT_API EHT_MUST_CHECK int eht_engram_state_step(eht_engram_state *state, const uint64_t *reqs, const struct eht_engram_batch *batch,
			  int32_t *rows);
/* The two halves of a step, for hashing elsewhere (the GPU): the histories of reqs[0..n) into hist
 * (n * (max_ngram - 1) entries; unknown requests read as new), then, after hashing, appending each
 * chunk of batch to its request (unknown ones are added). Return 0, -EINVAL, -ENOMEM. */
EHT_API EHT_MUST_CHECK int eht_engram_state_batch_history(const eht_engram_state *state, const uint64_t *reqs, size_t n, int32_t *hist);
EHT_API EHT_MUST_CHECK int eht_engram_state_advance(eht_engram_state *state, const uint64_t *reqs, const struct eht_engram_batch *batch);
/* req's history (max_ngram - 1 entries, newest first) into hist. Returns 0 or -ENOENT. */
EHT_API EHT_MUST_CHECK int eht_engram_state_history(const eht_engram_state *state, uint64_t req, int32_t *hist);

/* Head-range sharding (vLLM's): part = ceil(cols / tp); rank r owns columns [r * part, (r+1) * part)
 * of layer index li, i.e. rows [*vocab_start, *vocab_end) (empty for a rank past the last column).
 * Returns 0, -EINVAL (rank >= tp, tp == 0, or (tp - 1) * part >= cols: the last rank would own no head
 * range, as vLLM refuses; for 24 columns tp 7, 9, 10, 11 and above 12). */
EHT_API EHT_MUST_CHECK int eht_engram_shard(const eht_engram_layout *layout, uint32_t li, uint32_t tp, uint32_t rank,
		     uint64_t *vocab_start, uint64_t *vocab_end);

#ifdef __cplusplus
}
#endif
#endif
