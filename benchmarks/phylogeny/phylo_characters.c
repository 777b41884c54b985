/*
 * phylo_characters.c -- the Phylogeny program's input (seeded random binary characters), the
 * perfect-phylogeny test of a character subset, and the sequential reference of --check.  See
 * phylogeny.c.
 */
#include "phylo_internal.h"

/* ------------------------------------------------------------------------------------ */
/* Input and the compatibility test                                                      */

void make_characters(void)
{
    uint32_t n = (uint32_t)prm.species, cluster[MAX_SPECIES], clade[MAX_SPECIES];
    uint32_t nclus = n, nclade = 0;
    for (uint32_t i = 0; i < n; i++)
        cluster[i] = 1u << i;
    /* a random binary tree: merge two random clusters until one is left */
    for (uint32_t step = 0; nclus > 1; step++) {
        uint64_t h = bu_hash3(prm.seed, 1, step, 0);
        uint32_t a = (uint32_t)(h % nclus), b = (uint32_t)((h >> 32) % (nclus - 1));
        if (b >= a)
            b++;
        uint32_t merged = cluster[a] | cluster[b];
        if (nclus > 2) /* the root clade (every species) is no character */
            clade[nclade++] = merged;
        uint32_t lo = a < b ? a : b, hi = a < b ? b : a;
        cluster[lo] = merged;
        cluster[hi] = cluster[--nclus];
    }
    for (uint32_t c = 0; c < prm.chars; c++) {
        uint64_t h = bu_hash3(prm.seed, 2, c, 0);
        uint32_t m = nclade ? clade[h % nclade] : 1u;
        for (uint32_t s = 0; s < n; s++)
            if (bu_unit(bu_hash3(prm.seed, 3, c, s)) < prm.noise)
                m ^= 1u << s;
        charmask[c] = m;
    }
}

static inline bool pair_ok(uint32_t a, uint32_t b, uint32_t all)
{
    return !((a & b) && (a & ~b) && (~a & b & all) && (~a & ~b & all));
}

/* The perfect-phylogeny test of a subset: every pair compatible.  On failure *witness is
 * the first incompatible pair found (itself a failure: the failure store keeps it, and it
 * condemns every superset). */
bool compatible(uint64_t x, uint64_t *pairs, uint64_t *witness)
{
    uint32_t all = prm.species == 32 ? ~0u : (1u << prm.species) - 1;
    for (uint64_t r = x; r; r &= r - 1) {
        int i = __builtin_ctzll(r);
        for (uint64_t q = r & (r - 1); q; q &= q - 1) {
            int j = __builtin_ctzll(q);
            ++*pairs;
            if (!pair_ok(charmask[i], charmask[j], all)) {
                *witness = 1ull << i | 1ull << j;
                return false;
            }
        }
    }
    return true;
}

/* ------------------------------------------------------------------------------------ */
/* The sequential reference (--check): every compatible subset once, maximal ones sorted  */

int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void enumerate(uint64_t x, int next, const uint64_t *ok, u64vec *out)
{
    bool extendable = false; /* by any character, not only those above the last */
    for (int c = 0; c < (int)prm.chars; c++)
        if (!(x >> c & 1) && (ok[c] & x) == x) {
            extendable = true;
            if (c >= next)
                enumerate(x | 1ull << c, c + 1, ok, out);
        }
    if (!extendable && x)
        vec_push(out, x);
}

u64vec sequential_maximal(void)
{
    uint64_t ok[MAX_CHARS] = {0}; /* ok[c]: the characters compatible with c */
    uint32_t all = prm.species == 32 ? ~0u : (1u << prm.species) - 1;
    for (int a = 0; a < (int)prm.chars; a++)
        for (int b = 0; b < (int)prm.chars; b++)
            if (a != b && pair_ok(charmask[a], charmask[b], all))
                ok[a] |= 1ull << b;
    u64vec out = {0};
    enumerate(0, 0, ok, &out);
    qsort(out.v, out.n, sizeof *out.v, cmp_u64);
    return out;
}
