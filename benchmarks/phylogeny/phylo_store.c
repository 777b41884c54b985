/*
 * phylo_store.c -- the tries of the success and failure stores, the set of masks and the
 * vector of masks (phylo_store.h).
 */
#include "phylo_store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *store_grow(void *p, size_t *cap, size_t elt)
{
    *cap = *cap ? 2 * *cap : 256;
    p = realloc(p, *cap * elt);
    if (!p) {
        fprintf(stderr, "phylogeny: out of memory\n");
        exit(1);
    }
    return p;
}

static int32_t store_new_node(store *t, uint8_t ch)
{
    if (t->nn == t->capn)
        t->n = store_grow(t->n, &t->capn, sizeof *t->n);
    t->n[t->nn] = (trie_node){ch, false, -1, -1};
    return (int32_t)t->nn++;
}

void store_init(store *t)
{
    *t = (store){0};
    store_new_node(t, 0); /* the root: the empty prefix */
}

void store_free(store *t)
{
    free(t->n);
    free(t->list);
}

bool store_insert(store *t, uint64_t x)
{
    int32_t cur = 0;
    for (uint64_t rest = x; rest; rest &= rest - 1) {
        uint8_t ch = (uint8_t)__builtin_ctzll(rest);
        int32_t *link = &t->n[cur].child;
        while (*link >= 0 && t->n[*link].ch < ch)
            link = &t->n[*link].sibling;
        if (*link < 0 || t->n[*link].ch != ch) {
            int32_t k = store_new_node(t, ch); /* (may move t->n: re-find the link) */
            link = &t->n[cur].child;
            while (*link >= 0 && t->n[*link].ch < ch)
                link = &t->n[*link].sibling;
            t->n[k].sibling = *link;
            *link = k;
        }
        cur = *link;
    }
    if (t->n[cur].end)
        return false;
    t->n[cur].end = true;
    if (t->nlist == t->caplist)
        t->list = store_grow(t->list, &t->caplist, sizeof *t->list);
    t->list[t->nlist++] = x;
    return true;
}

bool store_has(const store *t, uint64_t x)
{
    int32_t cur = 0;
    for (uint64_t rest = x; rest; rest &= rest - 1) {
        uint8_t ch = (uint8_t)__builtin_ctzll(rest);
        int32_t k = t->n[cur].child;
        while (k >= 0 && t->n[k].ch < ch)
            k = t->n[k].sibling;
        if (k < 0 || t->n[k].ch != ch)
            return false;
        cur = k;
    }
    return t->n[cur].end;
}

/* some stored T <= y: follow only the children whose character is in y */
static bool subset_from(const store *t, int32_t node, uint64_t y)
{
    if (t->n[node].end)
        return true;
    for (int32_t k = t->n[node].child; k >= 0; k = t->n[k].sibling)
        if ((y >> t->n[k].ch & 1) && subset_from(t, k, y))
            return true;
    return false;
}

bool store_has_subset_of(const store *t, uint64_t y) { return subset_from(t, 0, y); }

/* some stored T >= x, x's characters above the path so far still to match: a child below
 * the next character of x may be skipped over, one equal to it matches it, one above it
 * cannot lead to x's character any more (paths increase) */
static bool superset_from(const store *t, int32_t node, uint64_t x)
{
    if (!x)
        return true; /* every node lies on a stored path */
    unsigned next = (unsigned)__builtin_ctzll(x);
    for (int32_t k = t->n[node].child; k >= 0; k = t->n[k].sibling) {
        unsigned ch = t->n[k].ch;
        if (ch > next)
            break;
        if (superset_from(t, k, ch == next ? x & (x - 1) : x))
            return true;
    }
    return false;
}

bool store_has_superset_of(const store *t, uint64_t x) { return superset_from(t, 0, x); }

/* as superset_from, remembering the path; once x is matched, first children down to a leaf:
 * every leaf ends a stored subset (nodes exist only on stored paths) */
static uint64_t superset_leaf_from(const store *t, int32_t node, uint64_t x, uint64_t path)
{
    if (!x) {
        for (int32_t k = t->n[node].child; k >= 0; k = t->n[k].child)
            path |= 1ull << t->n[k].ch;
        return path;
    }
    unsigned next = (unsigned)__builtin_ctzll(x);
    for (int32_t k = t->n[node].child; k >= 0; k = t->n[k].sibling) {
        unsigned ch = t->n[k].ch;
        if (ch > next)
            break;
        uint64_t found = superset_leaf_from(t, k, ch == next ? x & (x - 1) : x, path | 1ull << ch);
        if (found)
            return found;
    }
    return 0;
}

uint64_t store_superset_leaf(const store *t, uint64_t x) { return superset_leaf_from(t, 0, x, 0); }

/* ------------------------------------------------------------------------------------ */
/* The set of masks                                                                       */

static inline uint64_t maskset_hash(uint64_t x)
{
    x ^= x >> 31;
    x *= 0x9e3779b97f4a7c15ull;
    return x ^ (x >> 29);
}

void maskset_init(maskset *s, size_t cap)
{
    s->cap = cap;
    s->n = 0;
    /* written here, not left to calloc: the probes read a slot before they write it, and a
     * page read first is the kernel's zero page, whose replacement at the write interrupts
     * every CPU of the program to flush it (docs/datastructures.md, the hash table's memory) */
    s->slot = malloc(cap * sizeof *s->slot);
    if (!s->slot) {
        fprintf(stderr, "phylogeny: out of memory\n");
        exit(1);
    }
    __asm__ volatile("" : : "r"(s->slot) : "memory"); /* (or the compiler makes it a calloc) */
    memset(s->slot, 0, cap * sizeof *s->slot);
}

static void maskset_grow(maskset *s)
{
    maskset old = *s;
    maskset_init(s, 2 * old.cap);
    for (size_t i = 0; i < old.cap; i++)
        if (old.slot[i])
            maskset_add(s, old.slot[i]);
    free(old.slot);
}

bool maskset_add(maskset *s, uint64_t x)
{
    if (2 * (s->n + 1) > s->cap)
        maskset_grow(s);
    size_t i = maskset_hash(x) & (s->cap - 1);
    while (s->slot[i] && s->slot[i] != x)
        i = (i + 1) & (s->cap - 1);
    if (s->slot[i])
        return false;
    s->slot[i] = x;
    s->n++;
    return true;
}

bool maskset_has(const maskset *s, uint64_t x)
{
    size_t i = maskset_hash(x) & (s->cap - 1);
    while (s->slot[i] && s->slot[i] != x)
        i = (i + 1) & (s->cap - 1);
    return s->slot[i] == x;
}

/* ------------------------------------------------------------------------------------ */
/* The vector of masks                                                                    */

void vec_push(u64vec *v, uint64_t x)
{
    if (v->n == v->cap)
        v->v = store_grow(v->v, &v->cap, sizeof *v->v);
    v->v[v->n++] = x;
}
