/*
 * mpr_stats.h -- statistics: records created by generated hooks, access category names (stats.c)
 * and the run profile (profile.c).
 */
#ifndef MPR_STATS_H
#define MPR_STATS_H

#include "mpr_base.h"

typedef struct mpr_stats_rec {
    struct mpr_stats_rec *next;
    const mp_stat_module *module;
    uint64_t object_id;
    uint64_t *slots; /* the record's fields: owned storage follows, or embedded elsewhere */
    mp_stats_derive_fn derive; /* what the fields' readers add (mp_stats_derive), or NULL */
    const void *derive_ctx;    /* derive and derive_ctx change under MPR_SDE_LOCK */
    _Alignas(16) uint64_t storage[];
} mpr_stats_rec;

/* stats.c */
const char *mpr_access_name(int id);
int mpr_access_count(void);
void mpr_stats_init(mpr_pe *pe);
mpr_stats_rec *mpr_stats_attach(mpr_pe *pe, const mp_stat_module *module, uint64_t object_id,
                                uint64_t *slots);
void mpr_stats_fini(mpr_pe *pe);
void mpr_stats_settle(mpr_pe *pe);
uint64_t mpr_stat_add(mp_stat_type type, uint64_t a, uint64_t b);
uint64_t mpr_stats_derived(const mpr_stats_rec *r, unsigned field);
void mpr_params_for_each(void (*fn)(const char *name, double value, void *ctx), void *ctx);

/* profile.c */
int mpr_profile_write(const char *path);
/* selfreport.c: MPROF_MODEL's Cost Profile at exit (collective on MPI) */
void mpr_self_report(void);
int mpr_profile_check(const char *path, char *why, size_t why_size);

#endif /* MPR_STATS_H */
