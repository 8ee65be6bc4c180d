/* node_cache.h */
#include "node_cache.h"

#include <stdlib.h>
#include <string.h>

#include "tree_util.h"

/** A slot: hash (32) ‖ gen (4, native order) ‖ record length (1) ‖ record (up to NC_MAX_RECORD). */
#define GEN_AT 32
#define LENGTH_AT 36
#define RECORD_AT 37
#define SLOT (RECORD_AT + NC_MAX_RECORD)
#define MIN_TABLE ((size_t)1 << 16)

/** A table cell: the slot + 1 (0: empty) and the key it was filed under. */
typedef struct {
  uint32_t slot;
  uint32_t key;
} cell;

/**
 * A tree's positions: depth → index → slot + 1 (0: none), each allocated when first used; per
 * depth, how many hold a slot and where the last search for one to give up stopped.
 */
typedef struct {
  uint32_t *depth[NC_MAX_LEVELS];
  uint32_t held[NC_MAX_LEVELS];
  uint32_t cursor[NC_MAX_LEVELS];
} tree_positions;

struct nc_cache {
  int levels;
  size_t max_nodes; /* past this many slots in use, new positions take deeper ones' slots */
  uint8_t *slab;
  size_t used, cap;
  /* Slots of forgotten trees, which new positions take first (their nodes findable till then). */
  uint32_t *free_slots;
  size_t free_n, free_cap;
  cell *table;
  size_t table_size, filled;
  tree_positions *trees;
  size_t tree_count;
};

/** 31 bits of a hash (hashes are uniform; the same bits as node-cache.ts). */
static inline uint32_t key_of(const uint8_t *h) {
  return ((uint32_t)(h[28] & 0x7f) << 24) | ((uint32_t)h[29] << 16) | ((uint32_t)h[30] << 8) | h[31];
}

nc_cache *nc_create(int levels) {
  if (levels < 0 || levels > NC_MAX_LEVELS) return NULL;
  nc_cache *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->levels = levels;
  c->max_nodes = SIZE_MAX;
  c->table = calloc(MIN_TABLE, sizeof(cell));
  if (!c->table) {
    free(c);
    return NULL;
  }
  c->table_size = MIN_TABLE;
  return c;
}

void nc_free(nc_cache *c) {
  if (!c) return;
  for (size_t t = 0; t < c->tree_count; t++)
    for (int d = 0; d < NC_MAX_LEVELS; d++) free(c->trees[t].depth[d]);
  free(c->trees);
  free(c->table);
  free(c->slab);
  free(c->free_slots);
  free(c);
}

int nc_levels(const nc_cache *c) { return c->levels; }

void nc_set_max_nodes(nc_cache *c, size_t max_nodes) { c->max_nodes = max_nodes; }

/** Keeps a forgotten position's slot for reuse; out of memory, the slot is simply not reused. */
static void free_slot(nc_cache *c, uint32_t slot) {
  if (c->free_n == c->free_cap) {
    size_t cap = c->free_cap ? c->free_cap * 2 : 1024;
    uint32_t *grown = realloc(c->free_slots, cap * sizeof *grown);
    if (!grown) return;
    c->free_slots = grown;
    c->free_cap = cap;
  }
  c->free_slots[c->free_n++] = slot;
}

void nc_forget(nc_cache *c, int tree) {
  if (tree < 0 || (size_t)tree >= c->tree_count) return;
  tree_positions *p = &c->trees[tree];
  for (int d = 0; d < NC_MAX_LEVELS; d++) {
    if (p->depth[d])
      for (uint32_t i = 0, n = (uint32_t)1 << d; i < n; i++)
        if (p->depth[d][i]) free_slot(c, p->depth[d][i] - 1);
    free(p->depth[d]);
  }
  memset(p, 0, sizeof *p);
}
size_t nc_size(const nc_cache *c) { return c->used - c->free_n; }

static inline uint32_t gen_of(const nc_cache *c, size_t slot) {
  uint32_t g;
  memcpy(&g, c->slab + slot * SLOT + GEN_AT, 4);
  return g;
}

static inline int holds(const nc_cache *c, size_t slot, const uint8_t *hash, uint32_t gen) {
  return memcmp(c->slab + slot * SLOT, hash, 32) == 0 && gen_of(c, slot) == gen;
}

long nc_find(const nc_cache *c, const uint8_t *hash, uint32_t gen) {
  size_t mask = c->table_size - 1;
  uint32_t key = key_of(hash);
  for (size_t i = key & mask;; i = (i + 1) & mask) {
    const cell *e = &c->table[i];
    if (e->slot == 0) return -1;
    if (e->key == key && holds(c, e->slot - 1, hash, gen)) return (long)e->slot - 1;
  }
}

long nc_at(const nc_cache *c, int tree, int depth, int32_t index, const uint8_t *hash, uint32_t gen) {
  if (tree < 0 || (size_t)tree >= c->tree_count || depth < 0 || depth >= c->levels || index < 0 ||
      (uint32_t)index >= (uint32_t)1 << depth)
    return -1;
  const uint32_t *level = c->trees[tree].depth[depth];
  if (!level || level[index] == 0) return -1;
  size_t slot = level[index] - 1;
  return holds(c, slot, hash, gen) ? (long)slot : -1;
}

const uint8_t *nc_record(const nc_cache *c, long slot, uint32_t *length) {
  const uint8_t *s = c->slab + (size_t)slot * SLOT;
  *length = s[LENGTH_AT];
  return s + RECORD_AT;
}

/** Files every live slot in a table of twice their number (stale cells go). 0: out of memory. */
static int rebuild(nc_cache *c) {
  size_t size = MIN_TABLE;
  while (size < c->used * 2 + 1) size *= 2;
  cell *t = calloc(size, sizeof(cell));
  if (!t) return 0;
  size_t mask = size - 1;
  for (size_t slot = 0; slot < c->used; slot++) {
    uint32_t key = key_of(c->slab + slot * SLOT);
    size_t i = key & mask;
    while (t[i].slot) i = (i + 1) & mask;
    t[i] = (cell){(uint32_t)slot + 1, key};
  }
  free(c->table);
  c->table = t;
  c->table_size = size;
  c->filled = c->used;
  return 1;
}

/** Files a slot's node in the first empty cell of its probe sequence. 0: out of memory. */
static int insert(nc_cache *c, size_t slot) {
  if ((c->filled + 1) * 4 > c->table_size * 3 && !rebuild(c)) return 0;
  size_t mask = c->table_size - 1;
  uint32_t key = key_of(c->slab + slot * SLOT);
  size_t i = key & mask;
  while (c->table[i].slot) i = (i + 1) & mask;
  c->table[i] = (cell){(uint32_t)slot + 1, key};
  c->filled++;
  return 1;
}

/**
 * At the node bound, a position takes the slot of a node at a deeper level, the deepest level
 * first (any tree's): a node nearer the top lies on the paths of more leaves, so it saves more
 * reads per batch. So the bound holds the top levels of every tree, whatever order the nodes came
 * in, and only the deepest kept level is partial. The position giving up its slot (not yet
 * cleared), or NULL when no deeper level holds one.
 */
static uint32_t *deeper_position(nc_cache *c, int depth, uint32_t **held) {
  for (int d = c->levels - 1; d > depth; d--)
    for (size_t t = 0; t < c->tree_count; t++) {
      tree_positions *p = &c->trees[t];
      if (!p->held[d]) continue;
      uint32_t mask = ((uint32_t)1 << d) - 1;
      while (!p->depth[d][p->cursor[d]]) p->cursor[d] = (p->cursor[d] + 1) & mask;
      *held = &p->held[d];
      return &p->depth[d][p->cursor[d]];
    }
  return NULL;
}

int nc_remember(nc_cache *c, int tree, int depth, int32_t index, const uint8_t *hash, uint32_t gen,
                const uint8_t *record, uint32_t length) {
  if (tree < 0 || depth < 0 || depth >= c->levels || index < 0 || (uint32_t)index >= (uint32_t)1 << depth ||
      length > NC_MAX_RECORD)
    return 0;
  if ((size_t)tree >= c->tree_count) {
    size_t count = (size_t)tree + 1;
    tree_positions *trees = realloc(c->trees, count * sizeof *trees);
    if (!trees) return -1;
    memset(trees + c->tree_count, 0, (count - c->tree_count) * sizeof *trees);
    c->trees = trees;
    c->tree_count = count;
  }
  uint32_t **level = &c->trees[tree].depth[depth];
  if (!*level && !(*level = calloc((size_t)1 << depth, sizeof(uint32_t)))) return -1;
  uint32_t *at = &(*level)[index];
  uint32_t *given = NULL, *given_held = NULL;
  int reused = 0;
  size_t slot;
  if (*at) {
    slot = *at - 1;
    if (holds(c, slot, hash, gen)) return 0;
    /* The slot now holds the newer node; the old one's table cell goes stale. */
  } else if (c->free_n > 0) {
    /* A forgotten tree's node gives up its slot, and its table cell goes stale. */
    slot = c->free_slots[--c->free_n];
    reused = 1;
  } else if (c->used >= c->max_nodes) {
    /* The deeper node's table cell goes stale with its slot. */
    if (!(given = deeper_position(c, depth, &given_held))) return 0;
    slot = *given - 1;
  } else {
    /* A position, once used, keeps its slot for each newer node there (until its tree is forgotten). */
    if (c->used == c->cap) {
      size_t cap = c->cap ? c->cap * 2 : 1024;
      uint8_t *slab = realloc(c->slab, cap * SLOT);
      if (!slab) return -1;
      c->slab = slab;
      c->cap = cap;
    }
    slot = c->used;
  }
  /* A failed insert (out of memory) leaves the cache as it was. */
  int fresh = *at == 0 && !given && !reused;
  uint8_t *s = c->slab + slot * SLOT, old[32];
  memcpy(old, s, 32);
  memcpy(s, hash, 32);
  if (fresh) c->used++;
  if (!insert(c, slot)) {
    if (fresh)
      c->used--;
    else
      memcpy(s, old, 32);
    if (reused) c->free_n++;
    return -1;
  }
  if (given) {
    *given = 0;
    (*given_held)--;
  }
  if (!*at) c->trees[tree].held[depth]++;
  *at = (uint32_t)slot + 1;
  memcpy(s + GEN_AT, &gen, 4);
  s[LENGTH_AT] = (uint8_t)length;
  memcpy(s + RECORD_AT, record, length);
  return 0;
}

static inline void put_le32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
  p[2] = (uint8_t)(v >> 16);
  p[3] = (uint8_t)(v >> 24);
}

static inline uint32_t get_le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

size_t nc_export(const nc_cache *c, int tree, int32_t *depth, int32_t *index, uint8_t *out, size_t cap) {
  size_t at = 0;
  if (tree < 0 || (size_t)tree >= c->tree_count || *depth < 0) *depth = c->levels;
  for (; *depth < c->levels; (*depth)++, *index = 0) {
    const uint32_t *level = c->trees[tree].depth[*depth];
    if (!level) continue;
    for (uint32_t n = (uint32_t)1 << *depth; (uint32_t)*index < n; (*index)++) {
      if (!level[*index]) continue;
      const uint8_t *s = c->slab + (size_t)(level[*index] - 1) * SLOT;
      if (at + NC_ENTRY_HEAD + s[LENGTH_AT] > cap) return at;
      uint8_t *e = out + at;
      e[0] = (uint8_t)*depth;
      put_le32(e + 1, (uint32_t)*index);
      memcpy(e + 5, s, 32);
      put_le32(e + 37, gen_of(c, (size_t)(level[*index] - 1)));
      e[41] = s[LENGTH_AT];
      memcpy(e + NC_ENTRY_HEAD, s + RECORD_AT, s[LENGTH_AT]);
      at += NC_ENTRY_HEAD + s[LENGTH_AT];
    }
  }
  return at;
}

/** Whether a position holds a node of a later gen than `gen` (a batch's, newer than a snapshot's). */
static int holds_later(const nc_cache *c, int tree, int depth, uint32_t index, uint32_t gen) {
  if (tree < 0 || (size_t)tree >= c->tree_count || depth >= c->levels || index >= (uint32_t)1 << depth) return 0;
  const uint32_t *level = c->trees[tree].depth[depth];
  return level && level[index] && gen_of(c, level[index] - 1) > gen;
}

long nc_import(nc_cache *c, int tree, const uint8_t *in, size_t bytes, uint32_t max_gen) {
  long count = 0;
  for (size_t at = 0; at < bytes; count++) {
    if (bytes - at < NC_ENTRY_HEAD) return -2;
    const uint8_t *e = in + at;
    uint32_t length = e[41];
    if (length > NC_MAX_RECORD || bytes - at - NC_ENTRY_HEAD < length) return -2;
    uint32_t gen = get_le32(e + 37), index = get_le32(e + 1);
    if (gen <= max_gen && !holds_later(c, tree, e[0], index, gen) &&
        nc_remember(c, tree, e[0], (int32_t)index, e + 5, gen, e + NC_ENTRY_HEAD, length) < 0)
      return -1;
    at += NC_ENTRY_HEAD + length;
  }
  return count;
}

void nc_link_free(nc_link *l) {
  free(l->hashes);
  free(l->pos);
  free(l->gens);
  free(l->lengths);
  free(l->placed);
  free(l->hits);
  free(l->miss_hashes);
  free(l->miss_pos);
  free(l->miss_gens);
  free(l->merged);
  free(l->merged_lengths);
  memset(l, 0, sizeof *l);
}

long nc_link_filter(nc_link *l, size_t n, const uint8_t *hashes, const int32_t *positions, const uint32_t *gens) {
  if (n > l->cap_n) {
    size_t cap = l->cap_n;
    void *p;
#define GROW(field, size)                                   \
  p = l->field;                                             \
  cap = l->cap_n;                                           \
  if (!grow(&p, &cap, n, (size))) return -1;                \
  l->field = p;
    GROW(hashes, 32)
    GROW(pos, 8)
    GROW(gens, 4)
    GROW(lengths, 4)
    GROW(placed, 1)
    GROW(miss_hashes, 32)
    GROW(miss_pos, 8)
    GROW(miss_gens, 4)
    GROW(merged_lengths, 4)
#undef GROW
    l->cap_n = cap;
  }
  memcpy(l->hashes, hashes, n * 32);
  memcpy(l->pos, positions, n * 8);
  memcpy(l->gens, gens, n * 4);
  l->n = n;
  l->misses = 0;
  l->hit_bytes = 0;
  const nc_cache *c = l->cache;
  for (size_t i = 0; i < n; i++) {
    const uint8_t *h = hashes + 32 * i;
    int32_t depth = positions[2 * i], index = positions[2 * i + 1];
    long slot = -1;
    l->placed[i] = 0;
    /* Nodes below the cached levels are never here: they go to the store without a probe. */
    if (index >= 0 && depth < c->levels) {
      slot = nc_at(c, l->tree, depth, index, h, gens[i]);
      if (slot >= 0)
        l->placed[i] = 1;
      else
        slot = nc_find(c, h, gens[i]); /* kept under another position */
    }
    if (slot < 0) {
      l->lengths[i] = NC_MISSING;
      memcpy(l->miss_hashes + 32 * l->misses, h, 32);
      memcpy(l->miss_pos + 2 * l->misses, positions + 2 * i, 8);
      l->miss_gens[l->misses] = gens[i];
      l->misses++;
      continue;
    }
    uint32_t len;
    const uint8_t *rec = nc_record(c, slot, &len);
    void *p = l->hits;
    if (!grow(&p, &l->cap_hits, l->hit_bytes + len, 1)) return -1;
    l->hits = p;
    memcpy(l->hits + l->hit_bytes, rec, len);
    l->hit_bytes += len;
    l->lengths[i] = len;
  }
  l->found += n - l->misses;
  return (long)l->misses;
}

int nc_link_merge(nc_link *l, const uint8_t *records, const uint32_t *lengths, size_t *bytes) {
  size_t total = l->hit_bytes;
  for (size_t k = 0; k < l->misses; k++)
    if (lengths[k] != NC_MISSING) total += lengths[k];
  void *p = l->merged;
  if (!grow(&p, &l->cap_merged, total ? total : 1, 1)) return -1;
  l->merged = p;
  size_t at = 0, from_hits = 0, from_records = 0, k = 0;
  for (size_t i = 0; i < l->n; i++) {
    uint32_t len;
    if (l->lengths[i] != NC_MISSING) {
      len = l->lengths[i];
      memcpy(l->merged + at, l->hits + from_hits, len);
      from_hits += len;
    } else {
      len = lengths[k++];
      l->merged_lengths[i] = len;
      if (len == NC_MISSING) continue;
      memcpy(l->merged + at, records + from_records, len);
      from_records += len;
    }
    l->merged_lengths[i] = len;
    at += len;
  }
  *bytes = at;
  return 0;
}

int nc_link_remember_read(nc_link *l) {
  size_t at = 0;
  for (size_t i = 0; i < l->n; i++) {
    uint32_t len = l->merged_lengths[i];
    if (len == NC_MISSING) continue;
    if (!l->placed[i] && l->pos[2 * i + 1] >= 0 &&
        nc_remember(l->cache, l->tree, l->pos[2 * i], l->pos[2 * i + 1], l->hashes + 32 * i, l->gens[i],
                    l->merged + at, len) < 0)
      return -1;
    at += len;
  }
  return 0;
}

int nc_link_remember_new(nc_link *l, size_t n, const uint8_t *hashes, const uint32_t *gens, uint32_t gen,
                         const uint8_t *records, const uint32_t *lengths, const int32_t *positions) {
  size_t at = 0;
  for (size_t i = 0; i < n; i++) {
    if (positions[2 * i + 1] >= 0 &&
        nc_remember(l->cache, l->tree, positions[2 * i], positions[2 * i + 1], hashes + 32 * i,
                    gens ? gens[i] : gen, records + at, lengths[i]) < 0)
      return -1;
    at += lengths[i];
  }
  return 0;
}
