/*
 * Merkle tree update in native code (merkle.h). The algorithm is src/verifier/trees/reference/merkle.ts's, pass for
 * pass; read that file's comments for why it is shaped so. In short:
 *
 * - The changed paths are, per height, the nodes above changed leaves, each given by its first leaf
 *   (its id is that leaf's id >> height), in id order, packed level after level in flat arrays.
 * - Reads go top-down, one round per level: a path node whose old hash is known and not E[h] is
 *   read; a binary record gives its children's hashes, an edge record decides its whole subtree.
 * - Building goes bottom-up in three passes: the shape (each path node empty, part of one lone
 *   leaf's chain, or stored), then every chain climbed in one engine call, then the binary nodes a
 *   level at a time.
 *
 * One difference, for fewer rounds: where a new leaf splits an old edge, the old leaf's ancestor at
 * the split is not climbed apart first (merkle.ts climbToSplits). Its chain starts instead at the
 * edge's checkpoint below the split and climbs through it with the other chains; the values, and so
 * the records, are the same.
 *
 * A node's hash is stored only where another node needs it: binary nodes' in `pair_hashes`, chain
 * tops' in `tops`; an empty node's is E[h]. Every reference to a child carries the gen of the
 * child's record (src/storage/records/node-record.ts): an old record's children come with theirs, and what
 * this update writes has the batch's. Per path node there are 18 bytes, where a W-perp update has
 * ~500k path nodes.
 */
#include "merkle.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tree_util.h"
#include "u256.h"

/** What a path node was before the update (merkle.ts Old), or O_HASH: its old hash is known, unread. */
enum { O_EMPTY, O_BINARY, O_EDGE, O_HASH };
/** What a path node is after it (merkle.ts New). */
enum { N_EMPTY, N_SINGLE, N_STORED };
/** A lone chain that starts off the changed paths (merkle.ts Derived): at an untouched leaf or an old edge. */
enum { D_NONE, D_LEAF, D_EDGE };

/**
 * A hash: 32 bytes at p, or the top of chain `chain`, or the hash of binary node `pair` (−1: not
 * those); and the gen of its record (0 for an empty subtree, which has none).
 */
typedef struct {
  const uint8_t *p;
  int32_t chain, pair;
  uint32_t gen;
} ref;

/** A binary node: its index in its level and its children. */
typedef struct {
  int32_t node;
  ref l, r;
} pair_entry;

/** A lone leaf's chain: where it starts, what its edge record keeps, and where it ends. */
typedef struct {
  /** The value at height `from`. */
  const uint8_t *start;
  /** The leaf hash its record keeps. */
  const uint8_t *leaf;
  /** A split old edge's record: the checkpoints up to `from` are copied from it. */
  const uint8_t *old_rec;
  /** The leaf's id: the record keeps its low `top` bits as the path. */
  u256 path;
  /** The gen of the leaf's record. */
  uint32_t leaf_gen;
  int16_t from, top;
  /** The path node at `top` (its index in the level), or −1: the child on `side` of path node `parent` at top + 1. */
  int32_t node, parent;
  int8_t side;
} chain;

/** One child as its parent sees it (merkle.ts ChildSlot). */
typedef struct {
  uint8_t kind, derived;
  ref hash;
  /** A path child's index in its level; −1 off the paths. */
  int32_t path;
  /** Derived: the chain's start, height and leaf (and its record's gen), the old edge (D_EDGE), the leaf's id. */
  const uint8_t *start, *leaf, *old_rec;
  uint32_t leaf_gen;
  int from;
  u256 id;
} slot;

/** A growable byte buffer. */
typedef struct {
  void *p;
  size_t cap;
} buf;

/**
 * Everything an update allocates that grows with it, kept from one update to the next on the same
 * thread (spare below): as fresh memory it would cost a page fault per 4 KiB page in every batch.
 */
typedef struct {
  buf ids, meet, levels, arena, need_hashes, need_positions, need_gens, need_nodes, chains, pairs, pair_hashes,
      tops, out_hashes, out_records, out_lengths, out_positions;
} buffers;

struct mt_update {
  int height, remembered;
  /** Where the remembered levels start (mt_set_top): positions count from that node. */
  int top_depth;
  u256 top_index;
  /** The gen of the records this update writes. */
  uint32_t batch_gen;
  size_t n;
  u256 *ids;
  uint8_t *empty; /* E[0..height], copied */

  /* Levels: node j of height h is at base[h] + j; count[h] nodes. */
  size_t *base, *count;
  int32_t *starts;   /* the node's first leaf */
  uint8_t *old_kind; /* O_… */
  uint32_t *old_off; /* O_HASH: where its old hash is in the arena; O_BINARY, O_EDGE: its record */
  uint32_t *old_gen; /* O_HASH, O_BINARY: the gen of its old record */
  uint8_t *new_kind; /* N_… */
  int32_t *val;      /* N_SINGLE: its chain; N_STORED: its pair */

  /* Records read, back to back (the old root first), then the new leaf hashes (at leaves_off). */
  size_t arena_len, leaves_off;

  /* Reading: the level being read, whether its records were asked for, and what was asked. */
  int read_h, asked;
  size_t need_count;

  size_t chain_count, pair_count, out_count, out_bytes;
  size_t *pair_start; /* level h's pairs: pair_start[h] .. pair_start[h + 1] */
  int level_h;        /* the level being hashed */

  /* READING → BUILT (mt_build) → CLIMBED (mt_chains_climbed) → HASHED (no level left). */
  int stage;
  buffers b;
  int failed;
  const char *code;
  char err[256];
};

enum { READING, BUILT, CLIMBED, HASHED };

static _Thread_local buffers spare;
static _Thread_local int spare_held;

/** Why an update failed, as the error code the binding throws. */
#define STORE "ERR_MERKLE_STORE"
#define MEMORY "ERR_MERKLE_MEMORY"
#define USAGE "ERR_MERKLE_INPUT"

static void fail(mt_update *u, const char *code, const char *fmt, ...) {
  if (u->failed) return;
  u->failed = 1;
  u->code = code;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(u->err, sizeof u->err, fmt, ap);
  va_end(ap);
}

/** Room for `bytes` in b (keeping what it holds); NULL, with the update failed, when out of memory. */
static void *room(mt_update *u, buf *b, size_t bytes) {
  if (!grow(&b->p, &b->cap, bytes, 1)) {
    fail(u, MEMORY, "out of memory");
    return NULL;
  }
  return b->p;
}

static void free_buffers(buffers *b) {
  buf *all = (buf *)b;
  for (size_t i = 0; i < sizeof *b / sizeof(buf); i++) free(all[i].p);
  memset(b, 0, sizeof *b);
}

/* ---- records (node-record.ts, merkle-edge.ts) ---- */

/* The layout is record_format.h's: binary records, and Merkle edges with their checkpoints. */
static size_t checkpoint_bytes(int h) { return REC_CHECKPOINT_BYTES(h); }
static size_t edge_length(int h) { return REC_MERKLE_EDGE_LENGTH(h); }
static size_t checkpoint_offset(int k) { return REC_CHECKPOINT_AT(k); }
/** An edge record's height (its length byte). */
static int edge_height(const uint8_t *rec) { return rec[REC_EDGE_LENGTH_AT]; }
/** The gen of an edge record's leaf, its last bytes. */
static uint32_t edge_leaf_gen(const uint8_t *rec) { return rd_gen(rec + edge_length(edge_height(rec)) - REC_GEN_BYTES); }

/** Bit k of an edge record's path (32 bytes, big-endian). */
static int edge_path_bit(const uint8_t *rec, int k) { return (rec[REC_EDGE_PATH_AT + 31 - k / 8] >> (k % 8)) & 1; }

/** A well-formed edge record for a subtree of height h (isMerkleEdge). */
static int is_edge(const uint8_t *rec, uint32_t len, int h) {
  return h >= 1 && len == edge_length(h) && edge_height(rec) == h &&
         u_bit_length(u_from_be(rec + REC_EDGE_PATH_AT)) <= (unsigned)h;
}

static int equal32(const uint8_t *a, const uint8_t *b) { return memcmp(a, b, 32) == 0; }

static const uint8_t *empty_at(const mt_update *u, int h) { return u->empty + 32 * (size_t)h; }

/* ---- positions ---- */

/**
 * The index at height h of the node above leaf `id`, among the nodes of its depth below the top
 * node (mt_set_top); −1 above the top, outside it or below the remembered levels.
 */
static int32_t index_of(const mt_update *u, const u256 *id, int h) {
  int r = u->height - h - u->top_depth;
  if (r < 0 || r >= u->remembered) return -1;
  if (u->top_depth > 0) {
    u256 top = u_shr(*id, (unsigned)(u->height - u->top_depth));
    if (memcmp(&top, &u->top_index, sizeof top) != 0) return -1;
  }
  return (int32_t)(u_shr(*id, (unsigned)h).w[0] & ((UINT64_C(1) << r) - 1));
}

/** index_of for the node at height h above leaf i. */
static int32_t index_at(const mt_update *u, int32_t leaf, int h) { return index_of(u, &u->ids[leaf], h); }

/** index_of for the child on `side` at height h of the node at h + 1 above leaf i. */
static int32_t side_index(const mt_update *u, int32_t leaf, int h, int side) {
  u256 id = u->ids[leaf];
  id.w[h / 64] = (id.w[h / 64] & ~(UINT64_C(1) << (h % 64))) | ((uint64_t)side << (h % 64));
  return index_of(u, &id, h);
}

/** The depth below the top node of a node at height h (negative above it). */
static int32_t depth_at(const mt_update *u, int h) { return u->height - h - u->top_depth; }

int mt_set_top(mt_update *u, int depth, const uint8_t *index) {
  if (depth < 0 || depth > u->height) return -1;
  u->top_depth = depth;
  u->top_index = u_from_be(index);
  return u_bit_length(u->top_index) <= (unsigned)depth ? 0 : -1;
}

static void decimal(u256 v, char *out) {
  char digits[80];
  int n = 0;
  do {
    unsigned __int128 rem = 0;
    for (int i = 3; i >= 0; i--) {
      unsigned __int128 cur = (rem << 64) | v.w[i];
      v.w[i] = (uint64_t)(cur / 10);
      rem = cur % 10;
    }
    digits[n++] = (char)('0' + (int)rem);
  } while (v.w[0] | v.w[1] | v.w[2] | v.w[3]);
  for (int i = 0; i < n; i++) out[i] = digits[n - 1 - i];
  out[n] = 0;
}

/* ---- creating ---- */

/** The changed paths (merkle.ts changedPaths): each level's nodes by their first leaves. */
static int lay_out_levels(mt_update *u) {
  int H = u->height;
  size_t n = u->n;
  uint16_t *meet = room(u, &u->b.meet, n * sizeof(uint16_t));
  if (!meet) return 0;
  /* Leaf i starts a node at every height below the one where it meets leaf i − 1. */
  size_t *above = calloc((size_t)H + 2, sizeof(size_t));
  u->base = calloc((size_t)H + 2, sizeof(size_t));
  u->count = calloc((size_t)H + 2, sizeof(size_t));
  u->pair_start = calloc((size_t)H + 2, sizeof(size_t));
  if (!above || !u->base || !u->count || !u->pair_start) {
    free(above);
    fail(u, MEMORY, "out of memory");
    return 0;
  }
  for (size_t i = 1; i < n; i++) {
    meet[i] = (uint16_t)u_xor_bit_length(&u->ids[i - 1], &u->ids[i]);
    above[meet[i] - 1]++;
  }
  for (int h = H - 1; h >= 0; h--) above[h] += above[h + 1];
  size_t total = 0;
  for (int h = 0; h <= H; h++) {
    u->base[h] = total;
    u->count[h] = 1 + above[h];
    total += u->count[h];
  }
  free(above);
  /* One block: starts, old_off, old_gen and val (4 bytes each), old_kind and new_kind (1). */
  uint8_t *block = room(u, &u->b.levels, total * 18);
  if (!block) return 0;
  u->starts = (int32_t *)block;
  u->old_off = (uint32_t *)(block + total * 4);
  u->old_gen = (uint32_t *)(block + total * 8);
  u->val = (int32_t *)(block + total * 12);
  u->old_kind = block + total * 16;
  u->new_kind = block + total * 17;
  for (size_t i = 0; i < n; i++) u->starts[i] = (int32_t)i;
  for (int h = 1; h <= H; h++) {
    const int32_t *below = u->starts + u->base[h - 1];
    int32_t *level = u->starts + u->base[h];
    size_t j = 0;
    level[j++] = 0;
    for (size_t c = 1; c < u->count[h - 1]; c++)
      if (meet[below[c]] > h) level[j++] = below[c];
  }
  return 1;
}

mt_update *mt_create(int height, int remembered, const uint8_t *ids, size_t n, const uint8_t *old_root,
                     uint32_t old_root_gen, uint32_t batch_gen, const uint8_t *empty, char *err, size_t err_len) {
  if (height < 1 || height > 255 || remembered < 0 || remembered > 30 || n == 0 || n > INT32_MAX) {
    snprintf(err, err_len, "bad tree update: height %d, remembered %d, %zu changes", height, remembered, n);
    return NULL;
  }
  mt_update *u = calloc(1, sizeof *u);
  if (!u) goto oom;
  if (spare_held) {
    u->b = spare;
    spare_held = 0;
  }
  u->height = height;
  u->remembered = remembered;
  u->batch_gen = batch_gen;
  u->n = n;
  u->ids = room(u, &u->b.ids, n * sizeof(u256));
  u->empty = malloc(32 * ((size_t)height + 1));
  if (!u->ids || !u->empty) goto oom;
  memcpy(u->empty, empty, 32 * ((size_t)height + 1));
  for (size_t i = 0; i < n; i++) {
    u->ids[i] = u_from_be(ids + 32 * i);
    if (u_bit_length(u->ids[i]) > (unsigned)height) {
      snprintf(err, err_len, "a leaf id does not fit a tree of height %d", height);
      mt_free(u);
      return NULL;
    }
    unsigned meet = i > 0 ? u_xor_bit_length(&u->ids[i - 1], &u->ids[i]) : 0;
    if (i > 0 && (meet == 0 || !u_bit(&u->ids[i], meet - 1))) {
      snprintf(err, err_len, "leaf ids are not strictly ascending at %zu", i);
      mt_free(u);
      return NULL;
    }
  }
  if (!lay_out_levels(u)) goto oom;
  uint8_t *arena = room(u, &u->b.arena, 32);
  if (!arena) goto oom;
  memcpy(arena, old_root, 32);
  u->arena_len = 32;
  size_t root = u->base[height];
  u->old_kind[root] = O_HASH;
  u->old_off[root] = 0;
  u->old_gen[root] = old_root_gen;
  u->read_h = height;
  return u;
oom:
  snprintf(err, err_len, "out of memory");
  mt_free(u);
  return NULL;
}

void mt_free(mt_update *u) {
  if (!u) return;
  free(u->base);
  free(u->count);
  free(u->pair_start);
  free(u->empty);
  if (!spare_held) {
    spare = u->b;
    spare_held = 1;
  } else free_buffers(&u->b);
  free(u);
}

/* ---- reading the old paths (merkle.ts readOldPaths) ---- */

/** Asks for the record of path node j at height h, whose old hash is known. */
static int need(mt_update *u, int h, size_t j) {
  size_t k = u->need_count;
  uint8_t *hashes = room(u, &u->b.need_hashes, (k + 1) * 32);
  int32_t *positions = room(u, &u->b.need_positions, (k + 1) * 2 * sizeof(int32_t));
  uint32_t *gens = room(u, &u->b.need_gens, (k + 1) * sizeof(uint32_t));
  int32_t *nodes = room(u, &u->b.need_nodes, (k + 1) * sizeof(int32_t));
  if (!hashes || !positions || !gens || !nodes) return 0;
  size_t at = u->base[h] + j;
  memcpy(hashes + 32 * k, (uint8_t *)u->b.arena.p + u->old_off[at], 32);
  gens[k] = u->old_gen[at];
  positions[2 * k] = depth_at(u, h);
  positions[2 * k + 1] = index_at(u, u->starts[at], h);
  nodes[k] = (int32_t)j;
  u->need_count = k + 1;
  return 1;
}

/** The old state of the path nodes at height h − 1 from their parents' at h (once those are read). */
static void descend_old(mt_update *u, int h) {
  if (h - 1 < 1) return; /* the leaves' old state is never needed */
  const int32_t *firsts = u->starts + u->base[h], *below = u->starts + u->base[h - 1];
  const uint8_t *kind = u->old_kind + u->base[h];
  const uint32_t *off = u->old_off + u->base[h];
  uint8_t *next_kind = u->old_kind + u->base[h - 1];
  uint32_t *next_off = u->old_off + u->base[h - 1];
  uint32_t *next_gen = u->old_gen + u->base[h - 1];
  const uint8_t *arena = u->b.arena.p;
  size_t parents = u->count[h];
  for (size_t c = 0, j = 0; c < u->count[h - 1]; c++) {
    /* A path child's parent is the last path node starting at or before it; its side is bit h − 1. */
    while (j + 1 < parents && firsts[j + 1] <= below[c]) j++;
    int side = u_bit(&u->ids[below[c]], (unsigned)(h - 1));
    switch (kind[j]) {
      case O_BINARY:
        next_kind[c] = O_HASH;
        next_off[c] = off[j] + 32 * (uint32_t)side;
        next_gen[c] = rd_gen(arena + off[j] + REC_BINARY_GENS_AT + REC_GEN_BYTES * side);
        break;
      case O_EDGE:
        /* Still inside the edge's subtree while the child is on its leaf's side. */
        if (edge_path_bit(arena + off[j], h - 1) == side) {
          next_kind[c] = O_EDGE;
          next_off[c] = off[j];
        } else next_kind[c] = O_EMPTY;
        break;
      default:
        next_kind[c] = O_EMPTY;
    }
  }
}

long mt_step(mt_update *u) {
  if (u->failed) return -1;
  if (u->asked && u->need_count > 0) {
    fail(u, USAGE, "a step before the records asked for were supplied");
    return -1;
  }
  while (u->read_h >= 1) {
    int h = u->read_h;
    if (!u->asked) {
      u->asked = 1;
      u->need_count = 0;
      uint8_t *kind = u->old_kind + u->base[h];
      const uint32_t *off = u->old_off + u->base[h];
      const uint8_t *arena = u->b.arena.p;
      for (size_t j = 0; j < u->count[h]; j++) {
        if (kind[j] != O_HASH) continue;
        if (equal32(arena + off[j], empty_at(u, h))) kind[j] = O_EMPTY;
        else if (!need(u, h, j)) return -1;
      }
      if (u->need_count > 0) return (long)u->need_count;
    }
    descend_old(u, h);
    u->read_h--;
    u->asked = 0;
  }
  return 0;
}

void mt_needs(const mt_update *u, const uint8_t **hashes, const int32_t **positions, const uint32_t **gens) {
  *hashes = u->b.need_hashes.p;
  *positions = u->b.need_positions.p;
  *gens = u->b.need_gens.p;
}

size_t mt_pending_count(const mt_update *u) { return u->asked ? u->need_count : 0; }

int mt_supply(mt_update *u, const uint8_t *records, size_t bytes, const uint32_t *lengths) {
  if (u->failed) return -1;
  if (!u->asked || u->need_count == 0) {
    fail(u, USAGE, "records supplied that were not asked for");
    return -1;
  }
  int h = u->read_h;
  if (u->arena_len + bytes > UINT32_MAX) {
    fail(u, MEMORY, "records of over 4 GiB");
    return -1;
  }
  uint8_t *arena = room(u, &u->b.arena, u->arena_len + bytes);
  if (!arena) return -1;
  const int32_t *nodes = u->b.need_nodes.p;
  const uint8_t *hashes = u->b.need_hashes.p;
  size_t pos = 0;
  for (size_t k = 0; k < u->need_count; k++) {
    size_t at = u->base[h] + (size_t)nodes[k];
    uint32_t len = lengths[k];
    const uint8_t *rec = records + pos;
    int kind = len == REC_BINARY_LENGTH ? O_BINARY : len != MT_MISSING && is_edge(rec, len, h) ? O_EDGE : -1;
    if (kind < 0) {
      char hex[65], index[80];
      hex32(hashes + 32 * k, hex);
      decimal(u_shr(u->ids[u->starts[at]], (unsigned)h), index);
      if (len == MT_MISSING) fail(u, STORE, "node at height %d, index %s (%s) is not in the store", h, index, hex);
      else fail(u, STORE, "node at height %d, index %s (%s) has a record of %u bytes", h, index, hex, len);
      return -1;
    }
    memcpy(arena + u->arena_len, rec, len);
    u->old_kind[at] = (uint8_t)kind;
    u->old_off[at] = (uint32_t)u->arena_len;
    u->arena_len += len;
    pos += len;
  }
  u->need_count = 0;
  return 0;
}

/* ---- building: the shape (merkle.ts buildNewPaths, pass 1) ---- */

static int32_t start_chain(mt_update *u, const uint8_t *start, int from, u256 path, const uint8_t *leaf,
                           uint32_t leaf_gen, const uint8_t *old_rec) {
  chain *c = room(u, &u->b.chains, (u->chain_count + 1) * sizeof(chain));
  if (!c) return -1;
  c += u->chain_count;
  *c = (chain){start, leaf, old_rec, path, leaf_gen, (int16_t)from, -1, -1, -1, 0};
  return (int32_t)u->chain_count++;
}

static chain *chain_of(mt_update *u, int32_t c) { return (chain *)u->b.chains.p + c; }

/** Chain c ends at path node `node` of height `top`. */
static void end_on_path(mt_update *u, int32_t c, int top, int32_t node) {
  chain *ch = chain_of(u, c);
  ch->top = (int16_t)top;
  ch->node = node;
}

/** Path node c of the level below h (its new state). */
static void path_child(const mt_update *u, slot *s, int h, int32_t c) {
  size_t at = u->base[h - 1] + (size_t)c;
  s->kind = u->new_kind[at];
  s->derived = D_NONE;
  s->path = c;
  /* Everything on the paths is written by this update, a changed leaf's record too. */
  s->hash = (ref){NULL, -1, -1, u->batch_gen};
  if (s->kind == N_EMPTY) s->hash = (ref){empty_at(u, h - 1), -1, -1, 0};
  else if (h == 1) s->hash.p = (const uint8_t *)u->b.arena.p + u->leaves_off + 32 * (size_t)c;
  else if (s->kind == N_SINGLE) s->hash.chain = u->val[at];
  else s->hash.pair = u->val[at];
}

/** The untouched child on `side` of path node j at height h (its old state). */
static void sibling(const mt_update *u, slot *s, int h, int32_t j, int side) {
  size_t at = u->base[h] + (size_t)j;
  s->derived = D_NONE;
  s->path = -1;
  s->hash = (ref){empty_at(u, h - 1), -1, -1, 0};
  s->kind = N_EMPTY;
  const u256 *first = &u->ids[u->starts[at]];
  if (u->old_kind[at] == O_BINARY) {
    const uint8_t *rec = (const uint8_t *)u->b.arena.p + u->old_off[at];
    s->hash.p = rec + REC_HASH_BYTES * side;
    if (equal32(s->hash.p, empty_at(u, h - 1))) {
      s->hash.p = empty_at(u, h - 1);
      return;
    }
    s->hash.gen = rd_gen(rec + REC_BINARY_GENS_AT + REC_GEN_BYTES * side);
    if (h > 1) {
      s->kind = N_STORED;
      return;
    }
    /* A leaf: a chain of its own. Its id is the parent's first leaf's with bit 0 = side. */
    s->kind = N_SINGLE;
    s->derived = D_LEAF;
    s->start = s->leaf = s->hash.p;
    s->leaf_gen = s->hash.gen;
    s->old_rec = NULL;
    s->from = 0;
    s->id = *first;
    s->id.w[0] = (s->id.w[0] & ~(uint64_t)1) | (uint64_t)side;
  } else if (u->old_kind[at] == O_EDGE) {
    const uint8_t *rec = (const uint8_t *)u->b.arena.p + u->old_off[at];
    if (edge_path_bit(rec, h - 1) != side) return;
    /*
     * The old lone leaf's side of a split. Its chain starts at the edge's checkpoint below the split
     * (the leaf hash under height 8); its id is the parent's bits above h and the edge's path below.
     */
    s->kind = N_SINGLE;
    s->derived = D_EDGE;
    s->from = (h - 1) / MT_CHECKPOINT_STEP * MT_CHECKPOINT_STEP;
    s->start = s->from == 0 ? rec : rec + checkpoint_offset(s->from);
    s->leaf = rec;
    s->leaf_gen = edge_leaf_gen(rec);
    s->old_rec = rec;
    s->id = u_or(u_shl(u_shr(*first, (unsigned)h), (unsigned)h), u_low_bits(u_from_be(rec + REC_EDGE_PATH_AT), (unsigned)h));
    /* The ancestor at h − 1 is the start when the split is at a checkpoint (or the leaf, at h = 1). */
    s->hash.p = s->from == h - 1 ? s->start : NULL;
    /* A chain of this update's, its record written where it ends; at h = 1, the old leaf itself. */
    s->hash.gen = h == 1 ? s->leaf_gen : u->batch_gen;
  }
}

/** A derived slot's chain, from its start. */
static int32_t start_derived(mt_update *u, const slot *s) {
  return start_chain(u, s->start, s->from, s->id, s->leaf, s->leaf_gen, s->old_rec);
}

/**
 * A child of binary path node j at height h that is a lone chain (above a leaf) ends there, and is
 * written as an edge record; its hash becomes the chain's top.
 */
static int end_chain(mt_update *u, slot *s, int h, int32_t j, int side) {
  if (s->kind != N_SINGLE || h - 1 == 0) return 1;
  if (s->derived) {
    int32_t c = start_derived(u, s);
    if (c < 0) return 0;
    chain *ch = chain_of(u, c);
    ch->top = (int16_t)(h - 1);
    ch->parent = j;
    ch->side = (int8_t)side;
    s->hash = (ref){NULL, c, -1, u->batch_gen};
  } else end_on_path(u, s->hash.chain, h - 1, s->path);
  return 1;
}

static int add_pair(mt_update *u, int32_t j, ref l, ref r) {
  pair_entry *p = room(u, &u->b.pairs, (u->pair_count + 1) * sizeof(pair_entry));
  if (!p) return 0;
  p[u->pair_count] = (pair_entry){j, l, r};
  u->pair_count++;
  return 1;
}

long mt_build(mt_update *u, const uint8_t *leaf_hashes) {
  if (u->failed) return -1;
  if (u->stage != READING || u->read_h >= 1) {
    fail(u, USAGE, "the tree is built once, after the reads");
    return -1;
  }
  int H = u->height;
  size_t n = u->n;
  /* The leaves' hashes live in the arena, after the records (which no longer grow). */
  uint8_t *arena = room(u, &u->b.arena, u->arena_len + n * 32);
  if (!arena) return -1;
  u->leaves_off = u->arena_len;
  uint8_t *leaves = arena + u->leaves_off;
  memcpy(leaves, leaf_hashes, n * 32);
  for (size_t i = 0; i < n; i++) {
    int lone = !equal32(leaves + 32 * i, empty_at(u, 0));
    u->new_kind[i] = lone ? N_SINGLE : N_EMPTY;
    u->val[i] = -1;
  }
  for (int h = 1; h <= H; h++) {
    u->pair_start[h] = u->pair_count;
    const int32_t *parents = u->starts + u->base[h], *children = u->starts + u->base[h - 1];
    size_t np = u->count[h], nc = u->count[h - 1];
    for (size_t j = 0, c = 0; j < np; j++) {
      /* The parent's path children: child c (which starts at the same leaf) and maybe child c + 1. */
      size_t end = j + 1 < np ? (size_t)parents[j + 1] : n;
      slot L, R;
      if (c + 1 < nc && (size_t)children[c + 1] < end) {
        path_child(u, &L, h, (int32_t)c);
        path_child(u, &R, h, (int32_t)c + 1);
        c += 2;
      } else if (!u_bit(&u->ids[children[c]], (unsigned)(h - 1))) {
        path_child(u, &L, h, (int32_t)c++);
        sibling(u, &R, h, (int32_t)j, 1);
      } else {
        sibling(u, &L, h, (int32_t)j, 0);
        path_child(u, &R, h, (int32_t)c++);
      }
      slot *only = L.kind == N_EMPTY ? &R : R.kind == N_EMPTY ? &L : NULL;
      size_t at = u->base[h] + j;
      u->val[at] = -1;
      if (!only || only->kind == N_STORED) {
        u->new_kind[at] = N_STORED;
        if (!end_chain(u, &L, h, (int32_t)j, 0) || !end_chain(u, &R, h, (int32_t)j, 1) ||
            !add_pair(u, (int32_t)j, L.hash, R.hash))
          return -1;
        u->val[at] = (int32_t)u->pair_count - 1;
      } else if (only->kind == N_SINGLE) {
        /* One lone leaf's chain going on up: from a leaf, from an untouched leaf or split edge, or
         * on from the level below. */
        u->new_kind[at] = N_SINGLE;
        int32_t ch;
        if (only->derived) ch = start_derived(u, only);
        else if (h == 1)
          ch = start_chain(u, leaves + 32 * only->path, 0, u->ids[only->path], leaves + 32 * only->path, u->batch_gen,
                           NULL);
        else ch = only->hash.chain;
        if (ch < 0) return -1;
        u->val[at] = ch;
      } else u->new_kind[at] = N_EMPTY;
    }
  }
  u->pair_start[H + 1] = u->pair_count;
  size_t root = u->base[H];
  if (u->new_kind[root] == N_SINGLE) end_on_path(u, u->val[root], H, 0);
  for (size_t i = 0; i < u->chain_count; i++)
    if (chain_of(u, (int32_t)i)->top < 0) {
      fail(u, USAGE, "internal: a lone chain from height %d has no end", chain_of(u, (int32_t)i)->from);
      return -1;
    }
  u->level_h = 0;
  u->stage = u->chain_count > 0 ? BUILT : CLIMBED;
  return (long)u->chain_count;
}

/* ---- building: the chains (pass 2) ---- */

size_t mt_leaf_count(const mt_update *u) { return u->n; }
size_t mt_chain_count(const mt_update *u) { return u->stage == BUILT ? u->chain_count : 0; }

int mt_chain_slots(const mt_update *u) { return (u->height - 1) / MT_CHECKPOINT_STEP; }

void mt_chain_job(const mt_update *u, uint8_t *starts, uint8_t *paths, uint8_t *from, uint8_t *to) {
  const chain *chains = u->b.chains.p;
  for (size_t i = 0; i < u->chain_count; i++) {
    memcpy(starts + 32 * i, chains[i].start, 32);
    u_to_be(chains[i].path, paths + 32 * i);
    from[i] = (uint8_t)chains[i].from;
    to[i] = (uint8_t)chains[i].top;
  }
}

/** A new node to be written: its hash, room for its record (returned), its position. */
static uint8_t *emit(mt_update *u, const uint8_t *hash, size_t len, int h, int32_t index) {
  size_t k = u->out_count;
  uint8_t *hashes = room(u, &u->b.out_hashes, (k + 1) * 32);
  uint32_t *lengths = room(u, &u->b.out_lengths, (k + 1) * sizeof(uint32_t));
  int32_t *positions = room(u, &u->b.out_positions, (k + 1) * 2 * sizeof(int32_t));
  uint8_t *records = room(u, &u->b.out_records, u->out_bytes + len);
  if (!hashes || !lengths || !positions || !records) return NULL;
  memcpy(hashes + 32 * k, hash, 32);
  lengths[k] = (uint32_t)len;
  positions[2 * k] = depth_at(u, h);
  positions[2 * k + 1] = index;
  u->out_count = k + 1;
  u->out_bytes += len;
  return records + u->out_bytes - len;
}

int mt_chains_climbed(mt_update *u, const uint8_t *tops, const uint8_t *marks) {
  if (u->failed) return -1;
  if (u->stage != BUILT) {
    fail(u, USAGE, "chains climbed before the tree was built, or twice");
    return -1;
  }
  u->stage = CLIMBED;
  int slots = mt_chain_slots(u);
  uint8_t *kept = room(u, &u->b.tops, u->chain_count * 32 + 1);
  if (!kept) return -1;
  memcpy(kept, tops, u->chain_count * 32);
  for (size_t i = 0; i < u->chain_count; i++) {
    const chain *ch = chain_of(u, (int32_t)i);
    int top = ch->top, from = ch->from;
    int32_t index = ch->node >= 0 ? index_at(u, u->starts[u->base[top] + (size_t)ch->node], top)
                                  : side_index(u, u->starts[u->base[top + 1] + (size_t)ch->parent], top, ch->side);
    size_t len = edge_length(top);
    uint8_t *rec = emit(u, tops + 32 * i, len, top, index);
    if (!rec) return -1;
    memset(rec, 0, len);
    memcpy(rec, ch->leaf, 32);
    u_to_be(u_low_bits(ch->path, (unsigned)top), rec + REC_EDGE_PATH_AT);
    rec[REC_EDGE_LENGTH_AT] = (uint8_t)top;
    wr_gen(rec + len - REC_GEN_BYTES, ch->leaf_gen);
    /* A split edge's checkpoints up to the chain's start (and below its top) are the old edge's. */
    if (ch->old_rec) {
      int kept_to = from + 1 < top ? from + 1 : top;
      memcpy(rec + REC_EDGE_HEAD_LENGTH, ch->old_rec + REC_EDGE_HEAD_LENGTH, checkpoint_bytes(kept_to));
    }
    for (int k = from + MT_CHECKPOINT_STEP - from % MT_CHECKPOINT_STEP; k < top; k += MT_CHECKPOINT_STEP)
      memcpy(rec + checkpoint_offset(k), marks + ((i * (size_t)slots) + (size_t)(k / MT_CHECKPOINT_STEP) - 1) * 32,
             32);
  }
  return 0;
}

/* ---- building: the binary nodes (pass 3) ---- */

static const uint8_t *resolve(const mt_update *u, ref r) {
  if (r.chain >= 0) return (const uint8_t *)u->b.tops.p + 32 * (size_t)r.chain;
  if (r.pair >= 0) return (const uint8_t *)u->b.pair_hashes.p + 32 * (size_t)r.pair;
  return r.p;
}

long mt_next_level(mt_update *u) {
  if (u->failed) return -1;
  if (u->stage != CLIMBED) {
    fail(u, USAGE, "levels hashed before the chains were climbed, or after the last");
    return -1;
  }
  if (u->level_h == 0 && !room(u, &u->b.pair_hashes, u->pair_count * 32 + 1)) return -1;
  while (u->level_h < u->height) {
    u->level_h++;
    size_t k = u->pair_start[u->level_h + 1] - u->pair_start[u->level_h];
    if (k > 0) return (long)k;
  }
  u->stage = HASHED;
  return 0;
}

size_t mt_level_size(const mt_update *u) {
  if (u->stage != CLIMBED || u->level_h == 0) return 0;
  return u->pair_start[u->level_h + 1] - u->pair_start[u->level_h];
}

void mt_level_inputs(const mt_update *u, uint8_t *xs, uint8_t *ys) {
  if (mt_level_size(u) == 0) return;
  const pair_entry *pairs = u->b.pairs.p;
  for (size_t p = u->pair_start[u->level_h], k = 0; p < u->pair_start[u->level_h + 1]; p++, k++) {
    memcpy(xs + 32 * k, resolve(u, pairs[p].l), 32);
    memcpy(ys + 32 * k, resolve(u, pairs[p].r), 32);
  }
}

void mt_level_hashes(mt_update *u, const uint8_t *hashes) {
  if (mt_level_size(u) == 0) return;
  int h = u->level_h;
  const pair_entry *pairs = u->b.pairs.p;
  uint8_t *pair_hashes = u->b.pair_hashes.p;
  for (size_t p = u->pair_start[h], k = 0; p < u->pair_start[h + 1] && !u->failed; p++, k++) {
    memcpy(pair_hashes + 32 * p, hashes + 32 * k, 32);
    int32_t first = u->starts[u->base[h] + (size_t)pairs[p].node];
    uint8_t *rec = emit(u, hashes + 32 * k, REC_BINARY_LENGTH, h, index_at(u, first, h));
    if (!rec) return;
    memcpy(rec, resolve(u, pairs[p].l), 32);
    memcpy(rec + REC_HASH_BYTES, resolve(u, pairs[p].r), 32);
    wr_gen(rec + REC_BINARY_GENS_AT, pairs[p].l.gen);
    wr_gen(rec + REC_BINARY_GENS_AT + REC_GEN_BYTES, pairs[p].r.gen);
  }
}

/* ---- the result ---- */

int mt_done(const mt_update *u) { return !u->failed && u->stage == HASHED; }
size_t mt_new_count(const mt_update *u) { return u->out_count; }
size_t mt_new_bytes(const mt_update *u) { return u->out_bytes; }
uint32_t mt_batch_gen(const mt_update *u) { return u->batch_gen; }

void mt_result(const mt_update *u, uint8_t *root, uint32_t *root_gen, uint8_t *hashes, uint8_t *records,
               uint32_t *lengths, int32_t *positions) {
  size_t at = u->base[u->height];
  ref r = {empty_at(u, u->height), -1, -1, 0};
  if (u->new_kind[at] == N_SINGLE) r.chain = u->val[at];
  else if (u->new_kind[at] == N_STORED) r.pair = u->val[at];
  memcpy(root, resolve(u, r), 32);
  /* Every path node is written anew, the root too, unless the tree is now empty. */
  *root_gen = u->new_kind[at] == N_EMPTY ? 0 : u->batch_gen;
  memcpy(hashes, u->b.out_hashes.p, u->out_count * 32);
  memcpy(records, u->b.out_records.p, u->out_bytes);
  memcpy(lengths, u->b.out_lengths.p, u->out_count * sizeof(uint32_t));
  memcpy(positions, u->b.out_positions.p, u->out_count * 2 * sizeof(int32_t));
}

const char *mt_error(const mt_update *u) { return u->err; }
const char *mt_error_code(const mt_update *u) { return u->code ? u->code : USAGE; }
