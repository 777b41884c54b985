/*
 * phylo_store.h -- the success and failure stores of the Phylogeny program: tries over the
 * bit strings of character subsets (Wen 1995, section 2.2.3.4), plus a set of 64-bit masks
 * and a growable vector of them.  Implemented in phylo_store.c.
 *
 * A stored subset is the path of its characters in increasing order; every node remembers
 * whether a subset ends there.  The three queries the search needs:
 *   store_has_subset_of(t, Y)    some stored T with T <= Y   (failure store: Y fails)
 *   store_has_superset_of(t, X)  some stored T with X <= T   (success store: X succeeds)
 * Each store also keeps the list of its subsets in insertion order (what a combine ships).
 */
#ifndef PHYLO_STORE_H
#define PHYLO_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint8_t ch;      /* the character of the edge into this node */
    bool end;        /* a stored subset ends here */
    int32_t child;   /* first child (children in increasing ch), -1 none */
    int32_t sibling; /* next sibling, -1 none */
} trie_node;

typedef struct {
    trie_node *n;
    size_t nn, capn;
    uint64_t *list; /* stored subsets, insertion order */
    size_t nlist, caplist;
} store;

void store_init(store *t);
void store_free(store *t);
bool store_insert(store *t, uint64_t x);    /* false when X was already stored */
bool store_has(const store *t, uint64_t x); /* X itself was stored */
bool store_has_subset_of(const store *t, uint64_t y);
bool store_has_superset_of(const store *t, uint64_t x);
/* A stored subset that contains x and ends at a leaf of the trie (no stored path extends
 * it), or 0 when no stored subset contains x (x != 0). */
uint64_t store_superset_leaf(const store *t, uint64_t x);

/* Doubles *cap (256 at first) and reallocates p to *cap elements of elt bytes; exits when
 * out of memory. */
void *store_grow(void *p, size_t *cap, size_t elt);

/* A set of 64-bit masks (open addressing; 0 is never stored: the empty subset is the root) */
typedef struct {
    uint64_t *slot;
    size_t cap, n;
} maskset;

void maskset_init(maskset *s, size_t cap); /* cap: a power of two */
bool maskset_add(maskset *s, uint64_t x);  /* false when x was there already */
bool maskset_has(const maskset *s, uint64_t x);

/* A growable vector of masks */
typedef struct {
    uint64_t *v;
    size_t n, cap;
} u64vec;

void vec_push(u64vec *v, uint64_t x);

#endif
