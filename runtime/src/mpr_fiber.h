/*
 * mpr_fiber.h -- the fiber record: its states, storage classes, tag word and header layout.
 * Making and enabling fibers on a PE: mpr_spawn.h and mpr_sched.h.
 */
#ifndef MPR_FIBER_H
#define MPR_FIBER_H

#include "mpr_base.h"

typedef enum {
    MPR_FIBER_FREE = 0,
    MPR_FIBER_CREATED,
    MPR_FIBER_ENABLED,
    MPR_FIBER_EXECUTING
} mpr_fiber_state;

/* Three storage classes.  A tiny slot (48-byte header, 16 bytes of arguments: one cache line)
 * holds the common fiber that carries a pointer or two; small ones hold a few more words; large
 * ones anything up to MP_FIBER_ARGS_MAX.  Tiny slots are what keeps spawn + dispatch fast: a
 * round of a thousand fibers in 112-byte slots does not fit the 32 KB L1 cache, and rt_micro's
 * spawn + dispatch took 5.15-5.25 ns in them against 4.55-4.74 in tiny ones (docs/runtime.md). */
#define MPR_FIBER_TINY_ARGS 16
#define MPR_FIBER_SMALL_ARGS 64
#define MPR_SLOT_CLASSES 3
typedef enum { MPR_SLOT_TINY = 0, MPR_SLOT_SMALL = 1, MPR_SLOT_LARGE = 2 } mpr_slot_class;

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "mpr_fiber_tag packs its fields assuming a little-endian machine"
#endif

/* The small fields of a fiber share one word, so that creating a fiber writes them with a
 * single store built from a per-PE template (mpr_tag_make). */
typedef union {
    struct {
        uint8_t sched;   /* scheduler id: built-ins plus at most MPR_MAX_SCHED custom */
        uint8_t enabler; /* access category of the fiber (or sender) that enabled it */
        uint8_t creator; /* access category of the creating fiber, for diagnosis */
        uint8_t state;   /* mpr_fiber_state */
        uint8_t slot;    /* mpr_slot_class of its storage */
        uint8_t reused;  /* storage handed to a continuation */
        uint16_t pe;
    };
    uint64_t word;
} mpr_fiber_tag;

/* 48 bytes.  waiting_on is NULL except while the fiber waits on a counter, and stays NULL in
 * free slots, so creating a fiber need not write it. */
struct mpr_fiber {
    struct mpr_fiber *next; /* scheduler queue, free list, or counter wait list */
    mp_fiber_fn fn;
    uint64_t idle_at_create; /* C_total (idle ns) when the fiber was created */
    mpr_fiber_tag tag;
    struct mpr_counter *waiting_on;
    uint64_t wait_value;
    _Alignas(16) unsigned char args[];
};
typedef struct mpr_fiber mpr_fiber;

#endif /* MPR_FIBER_H */
