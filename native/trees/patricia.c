/*
 * Patricia-Merkle tree update in native code (patricia.h). The walk is src/verifier/trees/reference/patricia.ts's,
 * step for step: where every change follows the same path for k levels (through an edge or an empty
 * subtree) it jumps those levels at once; an edge is never hashed at the lengths it passes through.
 *
 * It runs in two kinds of passes. Discovery passes walk from a frontier of tasks (subtrees waiting
 * for a record) as far as the records allow, and collect the records needed next, so that each
 * round of reads is one lookup in the store and no subtree is walked twice. A record supplied is
 * decoded at once and linked from the stored node that asked for it. When nothing more is needed,
 * one build pass walks from the root through those links and makes the new nodes. Only the build
 * pass can find that it needs yet another record: where a deletion leaves a node with one child
 * that is an untouched stored node, which may be an edge to be merged with the one above. It then
 * asks for it and builds again from the root, which happens only in batches that delete leaves.
 *
 * Nodes live in one growing array and refer to each other by index (no pointers survive a growth).
 * Nodes read from the store are never changed once made, so every pass shares them. Every node
 * carries the gen of its record (src/storage/records/node-record.ts): a stored one the gen its parent's record
 * names, a new one the batch's.
 */
#include "patricia.h"
#include "record_format.h"
#include "tree_util.h"
#include "u256.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- nodes ---- */

enum { T_EMPTY, T_LEAF, T_STORED, T_BINARY, T_EDGE };

/** Positions are tracked only where they are remembered; elsewhere NONE (patricia.ts). */
#define NONE (-1)
/** Walk results besides a node's index. */
#define PENDING (-1)
#define FAILED (-2)
/** Node 0 is the one empty node. */
#define EMPTY_NODE 0

typedef struct {
  uint8_t t;
  /** Binary and edge nodes: the hash is known (read from the store, or hashed by its rank). */
  uint8_t hashed;
  /** Edge: its length. */
  uint16_t len;
  /** Binary: children; edge: a is the bottom; stored: b is the node read for it (0: not yet). */
  int32_t a, b;
  /** New nodes, once ranked: height, rank, and index in its level (NONE: not remembered). */
  int32_t h, rank;
  int64_t index;
  /** Edge: its path, `len` bits. */
  u256 path;
  uint8_t hash[32];
  /** The gen of its record. */
  uint32_t gen;
} pnode;

/** A subtree that discovery left waiting for its record: walk(node, h, index, lo, hi). */
typedef struct {
  int32_t node, h;
  int64_t index;
  size_t lo, hi;
} task;

struct pt_update {
  int height, remembered;
  /** The gen of the records this update writes. */
  uint32_t batch_gen;
  size_t n;
  u256 *ids;
  uint8_t *leaf_hashes;
  int32_t old_root;

  pnode *nodes;
  size_t node_count, node_cap;

  task *frontier, *next;
  size_t frontier_count, next_count, task_cap, next_cap;
  int discovering;

  /** The records asked for: hashes, positions (depth, index), gens, and the stored nodes asking. */
  uint8_t *need_hashes;
  int32_t *need_positions, *need_nodes;
  uint32_t *need_gens;
  size_t need_count, need_cap, need_positions_cap, need_nodes_cap, need_gens_cap;

  int32_t new_root;
  /** New nodes in the order ranked; then by_rank, by rank (rank_start[r − 1] .. rank_start[r]). */
  int32_t *ranked, *by_rank;
  size_t ranked_count, ranked_cap, by_rank_cap;
  size_t *rank_start;
  int rank_count;

  int failed;
  char err[200];
};

static void fail(pt_update *u, const char *fmt, ...) {
  if (u->failed) return;
  u->failed = 1;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(u->err, sizeof u->err, fmt, ap);
  va_end(ap);
}

static void out_of_memory(pt_update *u) { fail(u, "out of memory"); }


static int32_t new_node(pt_update *u, uint8_t t) {
  if (!grow((void **)&u->nodes, &u->node_cap, u->node_count + 1, sizeof(pnode))) {
    out_of_memory(u);
    return FAILED;
  }
  pnode *p = &u->nodes[u->node_count];
  memset(p, 0, sizeof *p);
  p->t = t;
  p->index = NONE;
  p->gen = u->batch_gen;
  return (int32_t)u->node_count++;
}

static int is_zero32(const uint8_t *h) {
  for (int i = 0; i < 32; i++)
    if (h[i]) return 0;
  return 1;
}

/** A node known by hash and gen at height h: a leaf at height 0, empty when the hash is 0. */
static int32_t from_hash(pt_update *u, const uint8_t *hash, uint32_t gen, int h) {
  if (is_zero32(hash)) return EMPTY_NODE;
  int32_t id = new_node(u, h == 0 ? T_LEAF : T_STORED);
  if (id >= 0) {
    memcpy(u->nodes[id].hash, hash, 32);
    u->nodes[id].gen = gen;
  }
  return id;
}

/** The gen a parent's record names for `node` (0 for the empty one, which has no record). */
static uint32_t gen_of(const pt_update *u, int32_t node) { return node == EMPTY_NODE ? 0 : u->nodes[node].gen; }

static int32_t binary_node(pt_update *u, int32_t l, int32_t r) {
  int32_t id = new_node(u, T_BINARY);
  if (id >= 0) {
    u->nodes[id].a = l;
    u->nodes[id].b = r;
  }
  return id;
}

static int32_t edge_node(pt_update *u, u256 path, int len, int32_t bottom) {
  int32_t id = new_node(u, T_EDGE);
  if (id >= 0) {
    u->nodes[id].path = path;
    u->nodes[id].len = (uint16_t)len;
    u->nodes[id].a = bottom;
  }
  return id;
}

/** What an edge leads to below its top k levels: the rest of the edge, or its bottom. */
static int32_t below_top(pt_update *u, int32_t edge, int k) {
  pnode e = u->nodes[edge];
  if (k == e.len) return e.a;
  return edge_node(u, u_low_bits(e.path, (unsigned)(e.len - k)), e.len - k, e.a);
}

/** `child` below an edge of `len` levels along `path`; a child edge makes the edge longer. */
static int32_t extend(pt_update *u, u256 path, int len, int32_t child) {
  pnode c = u->nodes[child];
  if (c.t == T_EDGE) return edge_node(u, u_or(u_shl(path, c.len), c.path), len + c.len, c.a);
  return edge_node(u, path, len, child);
}

/* ---- records ---- */

/**
 * Adds the record of stored node `node` at height h to the next round's reads; the position lets
 * the caller remember it.
 */
static int need(pt_update *u, int32_t node, int h, int64_t index) {
  if (!grow((void **)&u->need_hashes, &u->need_cap, u->need_count + 1, 32) ||
      !grow((void **)&u->need_positions, &u->need_positions_cap, 2 * (u->need_count + 1), sizeof(int32_t)) ||
      !grow((void **)&u->need_nodes, &u->need_nodes_cap, u->need_count + 1, sizeof(int32_t)) ||
      !grow((void **)&u->need_gens, &u->need_gens_cap, u->need_count + 1, sizeof(uint32_t))) {
    out_of_memory(u);
    return 0;
  }
  memcpy(u->need_hashes + u->need_count * 32, u->nodes[node].hash, 32);
  u->need_gens[u->need_count] = u->nodes[node].gen;
  u->need_nodes[u->need_count] = node;
  u->need_positions[2 * u->need_count] = u->height - h;
  u->need_positions[2 * u->need_count + 1] = (int32_t)index;
  u->need_count++;
  return 1;
}


/* Records (record_format.h): binary `left ‖ right ‖ left gen ‖ right gen`, edge
 * `bottom ‖ path ‖ length ‖ bottom gen`. */

/**
 * The node that the record `rec` (`len` bytes in the store, PT_MISSING: not there) of `hash`, of
 * gen `gen`, describes at height h; FAILED, with the reason patricia.ts gives, when it is missing or
 * corrupt.
 */
static int32_t decode(pt_update *u, const uint8_t *hash, uint32_t gen, const uint8_t *rec, uint32_t len, int h) {
  const int edge_len = len == REC_EDGE_LENGTH ? rec[REC_EDGE_LENGTH_AT] : 0;
  if (len != REC_BINARY_LENGTH && !(len == REC_EDGE_LENGTH && edge_len >= 1 && edge_len <= h)) {
    char hex[65];
    hex32(hash, hex);
    if (len == PT_MISSING) fail(u, "node %s at height %d: missing", hex, h);
    else if (len == REC_EDGE_LENGTH) fail(u, "node %s at height %d: edge length %d", hex, h, edge_len);
    else fail(u, "node %s at height %d: record of %u bytes", hex, h, len);
    return FAILED;
  }
  int32_t id;
  if (len == REC_BINARY_LENGTH) {
    int32_t l = from_hash(u, rec, rd_gen(rec + REC_BINARY_GENS_AT), h - 1);
    int32_t r = l >= 0 ? from_hash(u, rec + REC_HASH_BYTES, rd_gen(rec + REC_BINARY_GENS_AT + REC_GEN_BYTES), h - 1)
                       : FAILED;
    id = r >= 0 ? binary_node(u, l, r) : FAILED;
  } else {
    int32_t bottom = from_hash(u, rec, rd_gen(rec + REC_EDGE_HEAD_LENGTH), h - edge_len);
    id = bottom >= 0 ? edge_node(u, u_from_be(rec + REC_EDGE_PATH_AT), edge_len, bottom) : FAILED;
  }
  if (id < 0) return FAILED;
  u->nodes[id].hashed = 1;
  u->nodes[id].gen = gen;
  memcpy(u->nodes[id].hash, hash, 32);
  return id;
}

/** The stored node `node` at height h, read: its node, or PENDING (asked for now) or FAILED. */
static int32_t load(pt_update *u, int32_t node, int h, int64_t index) {
  int32_t read = u->nodes[node].b;
  if (read > 0) return read;
  return need(u, node, h, index) ? PENDING : FAILED;
}

/* ---- positions ---- */

/** The index of the node `levels` below the node at `index`, at `depth`, along `path`. */
static int64_t child_index(const pt_update *u, int64_t index, int depth, int levels, const u256 *path) {
  return index != NONE && depth < u->remembered ? index * ((int64_t)1 << levels) + (int64_t)path->w[0] : NONE;
}

static int64_t index_below(const pt_update *u, int64_t index, int h, int levels, const u256 *path) {
  return child_index(u, index, u->height - (h - levels), levels, path);
}

/** Bits [from, from + count) of change i's id. */
static u256 id_bits(const pt_update *u, size_t i, int from, int count) {
  return u_low_bits(u_shr(u->ids[i], (unsigned)from), (unsigned)count);
}

/** The index at height h of the path node above change i (NONE below the remembered levels). */
static int64_t index_of(const pt_update *u, size_t i, int h) {
  if (u->height - h >= u->remembered) return NONE;
  return (int64_t)id_bits(u, i, h, u->height - h).w[0];
}

/** The first index in [lo, hi) whose id has bit `bit` set (the ids there agree above it). */
static size_t first_with_bit(const pt_update *u, size_t lo, size_t hi, int bit) {
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (u_bit(&u->ids[mid], (unsigned)bit)) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/** Levels below height h that changes lo..hi−1 all agree on. */
static int shared_levels(const pt_update *u, int h, size_t lo, size_t hi) {
  return h - (int)u_xor_bit_length(&u->ids[lo], &u->ids[hi - 1]);
}

/**
 * For an edge at height h that changes lo..hi−1 walk into: how many of its levels they all follow
 * (at most `shared`, the levels they agree on among themselves).
 */
static int levels_along_edge(const pt_update *u, const pnode *e, int h, size_t lo, int shared) {
  u256 top = id_bits(u, lo, h - e->len, e->len);
  int along = e->len - (int)u_xor_bit_length(&top, &e->path);
  return along < shared ? along : shared;
}

/** The two children (height h − 1) of a loaded non-empty node; FAILED for any other kind. */
static int expand(pt_update *u, int32_t node, int32_t *l, int32_t *r) {
  pnode p = u->nodes[node];
  switch (p.t) {
    case T_EMPTY:
      *l = *r = EMPTY_NODE;
      return 1;
    case T_BINARY:
      *l = p.a;
      *r = p.b;
      return 1;
    case T_EDGE: {
      int32_t rest = below_top(u, node, 1);
      if (rest < 0) return 0;
      int bit = u_bit(&p.path, (unsigned)(p.len - 1));
      *l = bit ? EMPTY_NODE : rest;
      *r = bit ? rest : EMPTY_NODE;
      return 1;
    }
    default:
      fail(u, "internal: a leaf or unread node to expand");
      return 0;
  }
}

/**
 * One step of the walk down from a loaded node at height h, for changes lo..hi−1: either all of
 * them follow the same path for `shared` levels (through an edge or an empty subtree) to `rest`,
 * or (shared 0) they go to the children l and r, the first `split` − lo of them left.
 */
typedef struct {
  int shared;
  int32_t rest, l, r;
  size_t split;
} descent;

/** The walk's next step from `node` (descent); 0 when it failed. */
static int descend(pt_update *u, int32_t node, int h, size_t lo, size_t hi, descent *d) {
  int shared = shared_levels(u, h, lo, hi);
  const pnode *p = &u->nodes[node];
  if (p->t == T_EDGE) shared = levels_along_edge(u, p, h, lo, shared);
  if (shared > 0 && (p->t == T_EDGE || p->t == T_EMPTY)) {
    d->shared = shared;
    d->rest = p->t == T_EDGE ? below_top(u, node, shared) : EMPTY_NODE;
    return d->rest >= 0;
  }
  d->shared = 0;
  if (!expand(u, node, &d->l, &d->r)) return 0;
  d->split = first_with_bit(u, lo, hi, h - 1);
  return 1;
}

/* ---- discovery ---- */

static int push_task(pt_update *u, int32_t node, int h, int64_t index, size_t lo, size_t hi) {
  if (!grow((void **)&u->next, &u->next_cap, u->next_count + 1, sizeof(task))) {
    out_of_memory(u);
    return 0;
  }
  u->next[u->next_count++] = (task){node, h, index, lo, hi};
  return 1;
}

/**
 * Walks the subtree as the build will, without building: where a stored node's record is not
 * there yet, asks for it and leaves the subtree for the next round.
 */
static void discover(pt_update *u, int32_t node, int h, int64_t index, size_t lo, size_t hi) {
  if (lo == hi || h == 0 || node == EMPTY_NODE || u->failed) return;
  if (u->nodes[node].t == T_STORED) {
    int32_t read = u->nodes[node].b;
    if (read == 0) {
      if (need(u, node, h, index)) push_task(u, node, h, index, lo, hi);
      return;
    }
    node = read;
  }
  descent d;
  if (!descend(u, node, h, lo, hi, &d)) return;
  if (d.shared > 0) {
    discover(u, d.rest, h - d.shared, index_of(u, lo, h - d.shared), lo, hi);
    return;
  }
  u256 zero = {{0, 0, 0, 0}}, one = {{1, 0, 0, 0}};
  discover(u, d.l, h - 1, index_below(u, index, h, 1, &zero), lo, d.split);
  discover(u, d.r, h - 1, index_below(u, index, h, 1, &one), d.split, hi);
}

/* ---- build ---- */

static int32_t walk(pt_update *u, int32_t node, int h, int64_t index, size_t lo, size_t hi);

/**
 * A subtree at height h whose only non-empty descendant is `child`, `len` levels down along
 * `path`: nothing, an edge, or (when the child is itself an edge) a longer edge.
 */
static int32_t wrap(pt_update *u, u256 path, int len, int32_t child, int h, int64_t index) {
  if (child < 0) return child;
  if (child == EMPTY_NODE) return EMPTY_NODE;
  /* An untouched stored child may itself be an edge, which must be extended rather than wrapped. */
  if (u->nodes[child].t == T_STORED && h - len > 0) {
    int32_t loaded = load(u, child, h - len, index_below(u, index, h, len, &path));
    if (loaded < 0) return loaded;
    return extend(u, path, len, u->nodes[loaded].t == T_EDGE ? loaded : child);
  }
  return extend(u, path, len, child);
}

/** A parent at height h from its new children. */
static int32_t combine(pt_update *u, int32_t l, int32_t r, int h, int64_t index) {
  if (l == FAILED || r == FAILED) return FAILED;
  if (l == PENDING || r == PENDING) return PENDING;
  if (l != EMPTY_NODE && r != EMPTY_NODE) return binary_node(u, l, r);
  u256 zero = {{0, 0, 0, 0}}, one = {{1, 0, 0, 0}};
  return l == EMPTY_NODE ? wrap(u, one, 1, r, h, index) : wrap(u, zero, 1, l, h, index);
}

static int32_t walk_loaded(pt_update *u, int32_t node, int h, int64_t index, size_t lo, size_t hi) {
  descent d;
  if (!descend(u, node, h, lo, hi, &d)) return FAILED;
  if (d.shared > 0) {
    /* The levels skipped become (part of) an edge: the old edge's top bits, or the changes' own. */
    const pnode *p = &u->nodes[node];
    u256 path = p->t == T_EDGE ? u_shr(p->path, (unsigned)(p->len - d.shared)) : id_bits(u, lo, h - d.shared, d.shared);
    int32_t below = walk(u, d.rest, h - d.shared, index_of(u, lo, h - d.shared), lo, hi);
    return wrap(u, path, d.shared, below, h, index);
  }
  u256 zero = {{0, 0, 0, 0}}, one = {{1, 0, 0, 0}};
  /* Both sides are walked even when one waits for a record, so that a round asks for all it can. */
  int32_t nl = walk(u, d.l, h - 1, index_below(u, index, h, 1, &zero), lo, d.split);
  if (nl == FAILED) return FAILED;
  int32_t nr = walk(u, d.r, h - 1, index_below(u, index, h, 1, &one), d.split, hi);
  return combine(u, nl, nr, h, index);
}

/** The subtree at height h with changes lo..hi−1 applied: a node, PENDING or FAILED. */
static int32_t walk(pt_update *u, int32_t node, int h, int64_t index, size_t lo, size_t hi) {
  if (lo == hi) return node;
  if (h == 0) return from_hash(u, u->leaf_hashes + (hi - 1) * 32, u->batch_gen, 0);
  if (u->nodes[node].t == T_STORED) {
    node = load(u, node, h, index);
    if (node < 0) return node;
  }
  return walk_loaded(u, node, h, index, lo, hi);
}

/* ---- ranks ---- */

/**
 * Files each new node under its rank (1 + the highest rank below it; nodes with known hashes are
 * 0) from the root down, with its height and position; returns the rank of `node`.
 */
static int rank_new(pt_update *u, int32_t node, int h, int64_t index) {
  pnode *p = &u->nodes[node];
  if ((p->t != T_BINARY && p->t != T_EDGE) || p->hashed) return 0;
  int r;
  if (p->t == T_BINARY) {
    u256 zero = {{0, 0, 0, 0}}, one = {{1, 0, 0, 0}};
    int32_t a = p->a, b = p->b;
    int ra = rank_new(u, a, h - 1, child_index(u, index, u->height - h + 1, 1, &zero));
    int rb = rank_new(u, b, h - 1, child_index(u, index, u->height - h + 1, 1, &one));
    r = 1 + (ra > rb ? ra : rb);
  } else {
    int len = p->len;
    u256 path = p->path;
    r = 1 + rank_new(u, p->a, h - len, child_index(u, index, u->height - h + len, len, &path));
  }
  if (u->failed) return 0;
  p = &u->nodes[node];
  p->rank = r;
  p->h = h;
  p->index = index;
  if (!grow((void **)&u->ranked, &u->ranked_cap, u->ranked_count + 1, sizeof(int32_t))) {
    out_of_memory(u);
    return 0;
  }
  u->ranked[u->ranked_count++] = node;
  if (r > u->rank_count) u->rank_count = r;
  return r;
}

/** Orders the ranked nodes by rank (stable: within a rank, the order they were ranked in). */
static int sort_by_rank(pt_update *u) {
  size_t n = u->ranked_count;
  free(u->rank_start);
  u->rank_start = calloc((size_t)u->rank_count + 2, sizeof(size_t));
  if (!u->rank_start || !grow((void **)&u->by_rank, &u->by_rank_cap, n ? n : 1, sizeof(int32_t))) {
    out_of_memory(u);
    return 0;
  }
  for (size_t i = 0; i < n; i++) u->rank_start[u->nodes[u->ranked[i]].rank]++;
  /* rank_start[r] becomes the end of rank r: counts accumulated from rank 1. */
  for (int r = 1; r <= u->rank_count; r++) u->rank_start[r] += u->rank_start[r - 1];
  size_t *at = calloc((size_t)u->rank_count + 2, sizeof(size_t));
  if (!at) {
    out_of_memory(u);
    return 0;
  }
  for (int r = 1; r <= u->rank_count; r++) at[r] = u->rank_start[r - 1];
  for (size_t i = 0; i < n; i++) u->by_rank[at[u->nodes[u->ranked[i]].rank]++] = u->ranked[i];
  free(at);
  return 1;
}

static const uint8_t ZERO32[32];

static const uint8_t *hash_of(const pt_update *u, int32_t node) {
  return node == EMPTY_NODE ? ZERO32 : u->nodes[node].hash;
}

/* ---- buffers kept from one update to the next ---- */

/**
 * The growing buffers of the last update freed on this thread, for the next one: a W-spot batch's
 * update fills ~20 MiB of them, which as fresh memory would cost a page fault per 4 KiB page in
 * every batch. Per thread, since any thread may run updates.
 */
typedef struct {
  int held;
  pnode *nodes;
  size_t node_cap;
  task *frontier, *next;
  size_t task_cap, next_cap;
  uint8_t *need_hashes;
  int32_t *need_positions, *need_nodes;
  uint32_t *need_gens;
  size_t need_cap, need_positions_cap, need_nodes_cap, need_gens_cap;
  int32_t *ranked, *by_rank;
  size_t ranked_cap, by_rank_cap;
} spare_buffers;

static _Thread_local spare_buffers spare;

#define MOVE(to, from, field) ((to)->field = (from)->field, (from)->field = 0)
#define MOVE_ALL(to, from)                                                                          \
  (MOVE(to, from, nodes), MOVE(to, from, node_cap), MOVE(to, from, frontier), MOVE(to, from, next),   \
   MOVE(to, from, task_cap), MOVE(to, from, next_cap), MOVE(to, from, need_hashes),                   \
   MOVE(to, from, need_positions), MOVE(to, from, need_nodes), MOVE(to, from, need_cap),              \
   MOVE(to, from, need_positions_cap), MOVE(to, from, need_nodes_cap), MOVE(to, from, need_gens),     \
   MOVE(to, from, need_gens_cap), MOVE(to, from, ranked), MOVE(to, from, by_rank),                    \
   MOVE(to, from, ranked_cap), MOVE(to, from, by_rank_cap))

/** Gives a new update the spare buffers, if there are any. */
static void take_spare(pt_update *u) {
  if (!spare.held) return;
  MOVE_ALL(u, &spare);
  spare.held = 0;
}

/* ---- the interface ---- */

pt_update *pt_create(int height, int remembered, const uint8_t *ids, const uint8_t *leaf_hashes, size_t n,
                     const uint8_t *old_root, uint32_t old_root_gen, uint32_t batch_gen, char *err,
                     size_t err_len) {
  if (height < 1 || height > 255 || remembered < 0 || remembered > 30 || n == 0) {
    snprintf(err, err_len, "bad tree update: height %d, remembered %d, %zu changes", height, remembered, n);
    return NULL;
  }
  pt_update *u = calloc(1, sizeof *u);
  if (!u) goto oom;
  u->height = height;
  u->remembered = remembered;
  u->batch_gen = batch_gen;
  u->n = n;
  u->ids = malloc(n * sizeof(u256));
  u->leaf_hashes = malloc(n * 32);
  if (!u->ids || !u->leaf_hashes) goto oom;
  take_spare(u);
  memcpy(u->leaf_hashes, leaf_hashes, n * 32);
  for (size_t i = 0; i < n; i++) {
    u->ids[i] = u_from_be(ids + 32 * i);
    if (u_bit_length(u->ids[i]) > (unsigned)height) {
      snprintf(err, err_len, "a leaf id does not fit a tree of height %d", height);
      pt_free(u);
      return NULL;
    }
    if (i > 0 && u_xor_bit_length(&u->ids[i - 1], &u->ids[i]) == 0) {
      snprintf(err, err_len, "leaf ids %zu and %zu are equal", i - 1, i);
      pt_free(u);
      return NULL;
    }
    if (i > 0 && !u_bit(&u->ids[i], u_xor_bit_length(&u->ids[i - 1], &u->ids[i]) - 1)) {
      snprintf(err, err_len, "leaf ids are not in ascending order at %zu", i);
      pt_free(u);
      return NULL;
    }
  }
  if (new_node(u, T_EMPTY) != EMPTY_NODE) goto oom;
  u->old_root = from_hash(u, old_root, old_root_gen, height);
  if (u->old_root < 0) goto oom;
  /* The first round starts at the root. */
  if (!push_task(u, u->old_root, height, remembered > 0 ? 0 : NONE, 0, n)) goto oom;
  u->discovering = 1;
  return u;
oom:
  snprintf(err, err_len, "out of memory");
  pt_free(u);
  return NULL;
}

void pt_free(pt_update *u) {
  if (!u) return;
  free(u->ids);
  free(u->leaf_hashes);
  free(u->rank_start);
  if (!spare.held) {
    MOVE_ALL(&spare, u);
    spare.held = 1;
  }
  free(u->nodes);
  free(u->frontier);
  free(u->next);
  free(u->need_hashes);
  free(u->need_positions);
  free(u->need_nodes);
  free(u->need_gens);
  free(u->ranked);
  free(u->by_rank);
  free(u);
}

long pt_step(pt_update *u) {
  if (u->failed) return -1;
  u->need_count = 0;
  while (u->discovering) {
    /* This round's tasks are the last round's leftovers. */
    task *t = u->frontier;
    u->frontier = u->next;
    u->next = t;
    size_t cap = u->task_cap;
    u->task_cap = u->next_cap;
    u->next_cap = cap;
    u->frontier_count = u->next_count;
    u->next_count = 0;
    for (size_t i = 0; i < u->frontier_count && !u->failed; i++) {
      task k = u->frontier[i];
      discover(u, k.node, k.h, k.index, k.lo, k.hi);
    }
    if (u->failed) return -1;
    if (u->need_count > 0) return (long)u->need_count;
    u->discovering = 0;
  }
  /* Everything the walk reads is here (but for the rare wrap below a deletion): build. */
  int32_t root = walk(u, u->old_root, u->height, u->remembered > 0 ? 0 : NONE, 0, u->n);
  if (root == FAILED || u->failed) return -1;
  if (root == PENDING) return (long)u->need_count;
  u->new_root = root;
  u->ranked_count = 0;
  u->rank_count = 0;
  rank_new(u, root, u->height, u->remembered > 0 ? 0 : NONE);
  if (u->failed || !sort_by_rank(u)) return -1;
  return 0;
}

void pt_needs(const pt_update *u, const uint8_t **hashes, const int32_t **positions, const uint32_t **gens) {
  *hashes = u->need_hashes;
  *positions = u->need_positions;
  *gens = u->need_gens;
}

size_t pt_pending_count(const pt_update *u) { return u->need_count; }

int pt_supply(pt_update *u, const uint8_t *records, const uint32_t *lengths) {
  size_t at = 0;
  for (size_t i = 0; i < u->need_count && !u->failed; i++) {
    int32_t asking = u->need_nodes[i];
    int h = u->height - u->need_positions[2 * i];
    int32_t read = decode(u, u->need_hashes + 32 * i, u->need_gens[i], records + at, lengths[i], h);
    if (lengths[i] != PT_MISSING) at += lengths[i];
    if (read > 0) u->nodes[asking].b = read;
  }
  u->need_count = 0;
  return u->failed ? -1 : 0;
}

int pt_rank_count(const pt_update *u) { return u->rank_count; }

size_t pt_rank_size(const pt_update *u, int r) {
  if (r < 1 || r > u->rank_count) return 0;
  return u->rank_start[r] - u->rank_start[r - 1];
}

void pt_rank_inputs(const pt_update *u, int r, uint8_t *xs, uint8_t *ys) {
  size_t from = u->rank_start[r - 1], to = u->rank_start[r];
  for (size_t i = from; i < to; i++) {
    const pnode *p = &u->nodes[u->by_rank[i]];
    memcpy(xs + 32 * (i - from), hash_of(u, p->a), 32);
    if (p->t == T_BINARY) memcpy(ys + 32 * (i - from), hash_of(u, p->b), 32);
    else u_to_be(p->path, ys + 32 * (i - from));
  }
}

void pt_rank_hashes(pt_update *u, int r, const uint8_t *hashes) {
  size_t from = u->rank_start[r - 1], to = u->rank_start[r];
  for (size_t i = from; i < to; i++) {
    pnode *p = &u->nodes[u->by_rank[i]];
    memcpy(p->hash, hashes + 32 * (i - from), 32);
    if (p->t == T_EDGE) {
      /* H(bottom, path) + length, big-endian. */
      unsigned carry = p->len;
      for (int k = 31; k >= 0 && carry; k--) {
        carry += p->hash[k];
        p->hash[k] = (uint8_t)carry;
        carry >>= 8;
      }
    }
    p->hashed = 1;
  }
}

size_t pt_new_count(const pt_update *u) { return u->ranked_count; }

size_t pt_new_bytes(const pt_update *u) {
  size_t bytes = 0;
  for (size_t i = 0; i < u->ranked_count; i++)
    bytes += u->nodes[u->by_rank[i]].t == T_BINARY ? REC_BINARY_LENGTH : REC_EDGE_LENGTH;
  return bytes;
}

uint32_t pt_batch_gen(const pt_update *u) { return u->batch_gen; }

void pt_result(const pt_update *u, uint8_t *root, uint32_t *root_gen, uint8_t *hashes, uint8_t *records,
               uint32_t *lengths, int32_t *positions) {
  memcpy(root, hash_of(u, u->new_root), 32);
  *root_gen = gen_of(u, u->new_root);
  uint8_t *rec = records;
  for (size_t i = 0; i < u->ranked_count; i++) {
    const pnode *p = &u->nodes[u->by_rank[i]];
    memcpy(hashes + 32 * i, p->hash, 32);
    memcpy(rec, hash_of(u, p->a), 32);
    if (p->t == T_BINARY) {
      memcpy(rec + REC_HASH_BYTES, hash_of(u, p->b), 32);
      wr_gen(rec + REC_BINARY_GENS_AT, gen_of(u, p->a));
      wr_gen(rec + REC_BINARY_GENS_AT + REC_GEN_BYTES, gen_of(u, p->b));
      lengths[i] = REC_BINARY_LENGTH;
    } else {
      u_to_be(p->path, rec + REC_EDGE_PATH_AT);
      rec[REC_EDGE_LENGTH_AT] = (uint8_t)p->len;
      wr_gen(rec + REC_EDGE_HEAD_LENGTH, gen_of(u, p->a));
      lengths[i] = REC_EDGE_LENGTH;
    }
    rec += lengths[i];
    positions[2 * i] = u->height - p->h;
    positions[2 * i + 1] = (int32_t)p->index;
  }
}

const char *pt_error(const pt_update *u) { return u->err; }
