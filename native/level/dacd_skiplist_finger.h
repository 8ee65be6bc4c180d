// Included inside LevelDB's SkipList class (db/skiplist.h) by leveldb-skiplist-finger.patch:
// inserts that go on in key order from the last one start their search where the last one ended,
// instead of from the head of the list.
//
// Why: every write puts its records into the memtable, a skip list, one at a time, and each
// insert searches the list from its head: about log2(n) key comparisons, most of them on nodes
// far apart in memory. dacd writes a batch's records in key order, sorted run after sorted run
// (one per tree), and bulk loads write whole runs in key order, so almost every insert lands just
// after the one before it. The finger remembers, per level, the last node at or before the last
// key inserted; a key after that one is looked up from the lowest level where the finger's next
// node is already past the key (a pure append: level 0, one comparison), descending from there.
// Any other key takes LevelDB's search from the head. The nodes found are the same either way:
// each level's list is in key order, and a search at a level may start from any node of it that
// is before the key.
//
// Why the levels above the lowest such level need no search: a finger node at level i is the last
// node of level i at or before the last key, so its next node is the first node of level i after
// that key. Every node of a higher level is also a node of the levels below it, so that first node
// at a higher level comes no sooner than the one at a lower level: once the next node is past the
// key at one level, it is past it at every level above.
//
// Insert is externally synchronized (LevelDB's single writer); the finger is the writer's alone,
// and only the links LevelDB already publishes are read.

// The last node inserted (NULL before the first), and per level the last node at or before it.
Node* dacd_last_;
Node* dacd_finger_[kMaxHeight];

// FindGreaterOrEqual(key, prev) for Insert, from the finger when `key` is after the last key.
Node* DacdFindGreaterOrEqual(const Key& key, Node** prev) const {
  if (dacd_last_ == NULL || compare_(dacd_last_->key, key) >= 0) return FindGreaterOrEqual(key, prev);
  const int top = GetMaxHeight();
  int level = 0;
  while (level < top - 1 && KeyIsAfterNode(key, dacd_finger_[level]->Next(level))) level++;
  for (int i = level + 1; i < top; i++) prev[i] = dacd_finger_[i];
  Node* x = dacd_finger_[level];
  while (true) {
    Node* next = x->Next(level);
    if (KeyIsAfterNode(key, next)) {
      x = next;
    } else {
      prev[level] = x;
      if (level == 0) return next;
      level--;
    }
  }
}

// After Insert linked `x` (of `height`) behind prev[0 .. GetMaxHeight() − 1].
void DacdMoveFinger(Node* x, int height, Node* const* prev) {
  const int top = GetMaxHeight();
  for (int i = 0; i < kMaxHeight; i++) dacd_finger_[i] = i < height ? x : i < top ? prev[i] : head_;
  dacd_last_ = x;
}
