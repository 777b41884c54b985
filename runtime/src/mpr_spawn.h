/*
 * mpr_spawn.h -- making fibers on a PE: fiber storage (fiber.c's slot pool), the tag word built
 * from the PE's template, and the inline creation paths of mp_spawn, continuations and arriving
 * records.
 */
#ifndef MPR_SPAWN_H
#define MPR_SPAWN_H

#include "mpr_base.h"
#include "mpr_fiber.h"
#include "mpr_pe.h"
#include "mpr_sched.h"
#include "rts_perf.h"

/* fiber.c */
mpr_fiber *mpr_slot_refill(mpr_pe *pe, mpr_slot_class cls) MPR_COLD;
static inline mpr_slot_class mpr_slot_class_of(size_t args_size)
{
    return args_size > MPR_FIBER_SMALL_ARGS  ? MPR_SLOT_LARGE
           : args_size > MPR_FIBER_TINY_ARGS ? MPR_SLOT_SMALL
                                             : MPR_SLOT_TINY;
}
/* The bytes of arguments a slot of class cls holds. */
static inline size_t mpr_slot_args(mpr_slot_class cls)
{
    return cls == MPR_SLOT_TINY    ? MPR_FIBER_TINY_ARGS
           : cls == MPR_SLOT_SMALL ? MPR_FIBER_SMALL_ARGS
                                   : MP_FIBER_ARGS_MAX;
}
/* Copies the arguments of a record (padded to 16 bytes in the record) into a slot (every slot
 * holds a multiple of 16 bytes) in 16-byte moves: no memcpy call, and the same cost per 16
 * bytes at every size. */
static inline void mpr_args_copy_padded(unsigned char *dst, const unsigned char *src, size_t size)
{
    for (size_t i = 0; i < size; i += 16)
        __builtin_memcpy(dst + i, src + i, 16);
}
static inline mpr_fiber *mpr_slot_get(mpr_pe *pe, mpr_slot_class cls)
{
    mpr_fiber *f = pe->free_slots[cls];
    if (MPR_UNLIKELY(!f))
        f = mpr_slot_refill(pe, cls);
    pe->free_slots[cls] = f->next;
    return f;
}
/* The tag keeps its last state: a stale handle is still refused as "not created". */
static inline void mpr_fiber_release(mpr_pe *pe, mpr_fiber *f)
{
    f->next = pe->free_slots[f->tag.slot];
    pe->free_slots[f->tag.slot] = f;
}

static inline uint64_t mpr_tag_make(const mpr_pe *pe, unsigned sched, unsigned creator,
                                    unsigned enabler, mpr_fiber_state state, mpr_slot_class slot)
{
    return pe->tag_pe | sched | (uint64_t)enabler << 8 | (uint64_t)creator << 16 |
           (uint64_t)state << 24 | (uint64_t)slot << 32;
}
void mpr_fiber_slabs_free(mpr_pe *pe);
uint64_t mpr_fiber_live(const mpr_pe *pe);
const char *mpr_fn_name(mp_fiber_fn fn, char *buf, size_t len);

/* Writes the header of a new fiber (or of a continuation reusing one); `tag` holds its
 * scheduler, categories, state and slot class. */
static inline void mpr_fiber_init(mpr_pe *pe, mpr_fiber *f, mp_fiber_fn fn, uint64_t tag)
{
    f->fn = fn;
    if (MPR_LATENCY)
        f->idle_at_create = pe->c_total;
    f->tag.word = tag;
}

/* Takes a slot for `size` bytes of arguments, copies them and writes the header.  Arguments
 * that arrived in a record are padded to 16 bytes and copied in 16-byte chunks rather than
 * through a memcpy call (the slot always has room for the padding). */
static inline mpr_fiber *mpr_fiber_make(mpr_pe *pe, mp_fiber_fn fn, const void *args, size_t size,
                                        unsigned sched, unsigned creator, unsigned enabler,
                                        mpr_fiber_state state, bool padded)
{
    mpr_slot_class cls = mpr_slot_class_of(size);
    mpr_fiber *f = mpr_slot_get(pe, cls);
    if (size) {
        RTS_INC(&pe->rts, ThreadContext, size); /* first: size need not survive a memcpy call */
        if (padded)
            mpr_args_copy_padded(f->args, args, size);
        else
            __builtin_memcpy(f->args, args, size);
    }
    mpr_fiber_init(pe, f, fn, mpr_tag_make(pe, sched, creator, enabler, state, cls));
    return f;
}

/* Makes and enables the fiber of an invocation: a local one (spawn_general, mp_invoke to the
 * own PE) or a record that arrived. */
static inline void mpr_fiber_spawn(mpr_pe *pe, mp_fiber_fn fn, const void *args, size_t size,
                                   unsigned sched, unsigned access, bool padded)
{
    mpr_fiber *f =
        mpr_fiber_make(pe, fn, args, size, sched, access, access, MPR_FIBER_ENABLED, padded);
    mpr_fiber_enqueue(pe, f, sched); /* after the copy: a preemptive fiber runs now */
}

#endif /* MPR_SPAWN_H */
