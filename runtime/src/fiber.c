/*
 * fiber.c -- fiber storage and life cycle: created -> enabled -> executing.
 *
 * Storage comes from per-PE slabs in three slot sizes and returns to a per-PE free list, so
 * creating a fiber never calls malloc once the slab is warm, and needs no lock.
 */
#define _GNU_SOURCE
#include "mpr.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SLAB_SLOTS 256

typedef struct slab {
    struct slab *next;
    _Alignas(64) unsigned char mem[];
} slab;

/* Slots in the free list keep the invariants creation relies on: waiting_on NULL, reused 0,
 * and the slot class in the tag. */
mpr_fiber *mpr_slot_refill(mpr_pe *pe, mpr_slot_class cls)
{
    size_t slot = sizeof(mpr_fiber) + mpr_slot_args(cls);
    slab *s = aligned_alloc(64, sizeof(slab) + SLAB_SLOTS * slot + 64);
    if (!s)
        mpr_fatal("out of memory allocating fiber storage");
    s->next = pe->slabs;
    pe->slabs = s;
    mpr_fiber *head = NULL;
    for (int i = SLAB_SLOTS - 1; i >= 0; i--) {
        mpr_fiber *f = (mpr_fiber *)(s->mem + (size_t)i * slot);
        f->tag.word = mpr_tag_make(pe, 0, 0, 0, MPR_FIBER_FREE, cls);
        f->waiting_on = NULL;
        f->next = head;
        head = f;
    }
    return head;
}

void mpr_fiber_slabs_free(mpr_pe *pe)
{
    slab *s = pe->slabs;
    while (s) {
        slab *n = s->next;
        free(s);
        s = n;
    }
    pe->slabs = NULL;
    for (int cls = 0; cls < MPR_SLOT_CLASSES; cls++)
        pe->free_slots[cls] = NULL;
}

/* Fibers whose storage is in use (allocated, not yet dispatched): all slots but the free. */
uint64_t mpr_fiber_live(const mpr_pe *pe)
{
    uint64_t slots = 0;
    for (const slab *s = pe->slabs; s; s = s->next)
        slots += SLAB_SLOTS;
    for (int cls = 0; cls < MPR_SLOT_CLASSES; cls++)
        for (const mpr_fiber *f = pe->free_slots[cls]; f; f = f->next)
            slots--;
    return slots;
}

static MPR_COLD mp_err check_create(mpr_pe *pe, mp_fiber_fn fn, const void *args, size_t size,
                                    mp_sched_t sched)
{
    if (!pe)
        return mpr_misuse(MP_ERR_BAD_STATE, "fiber created outside a running PE");
    if (!fn)
        return mpr_misuse(MP_ERR_INVALID_ARG, "fiber created with a NULL function");
    if (size > MP_FIBER_ARGS_MAX)
        return mpr_misuse(MP_ERR_TOO_LARGE, "fiber arguments of %zu bytes exceed %d", size,
                          MP_FIBER_ARGS_MAX);
    if (size && !args)
        return mpr_misuse(MP_ERR_INVALID_ARG, "fiber arguments are NULL but size is %zu", size);
    if (sched < 0 || sched >= pe->nsched)
        return mpr_misuse(MP_ERR_INVALID_ARG, "unknown scheduler id %d", sched);
    return MP_SUCCESS;
}

static inline int create_ok(mpr_pe *pe, mp_fiber_fn fn, const void *args, size_t size,
                            mp_sched_t sched)
{
    return MPR_LIKELY(pe && fn && size <= MP_FIBER_ARGS_MAX && (args || !size) && sched >= 0 &&
                      sched < pe->nsched);
}

mp_fiber_t mp_fiber_create(mp_fiber_fn fn, const void *args, size_t size, mp_sched_t sched)
{
    mpr_pe *pe = mpr_pe_self();
    if (!create_ok(pe, fn, args, size, sched)) {
        check_create(pe, fn, args, size, sched);
        return NULL;
    }
    return mpr_fiber_make(pe, fn, args, size, (unsigned)sched, mpr_cur_access(pe), 0,
                          MPR_FIBER_CREATED, false);
}

/* Every fiber the fast paths do not take: more than a small slot's arguments, another
 * scheduler, an empty free list.  Not cold: compiled for size, as cold code is, its argument
 * copy was a `rep movsb`, which made a FIFO spawn of 512 bytes (or an invocation on the PE
 * itself) cost about twice the same spawn through the C library's memcpy. */
static MPR_NOIPA mp_err spawn_general(mp_fiber_fn fn, const void *args, size_t size,
                                      mp_sched_t sched)
{
    mpr_pe *pe = mpr_pe_self();
    if (!create_ok(pe, fn, args, size, sched))
        return check_create(pe, fn, args, size, sched);
    mpr_fiber_spawn(pe, fn, args, size, (unsigned)sched, mpr_cur_access(pe), false);
    return MP_SUCCESS;
}

/* Argument copy of the fast path, reached by a tail call so that mp_spawn itself needs no
 * stack frame.  The fiber is already queued, which is fine: it cannot run before we return. */
static MPR_NOIPA mp_err copy_args(mp_fiber_fn fn, const void *args, size_t size, mp_sched_t sched,
                                  mpr_pe *pe, mpr_fiber *f)
{
    /* mp_spawn's own arguments first, though unused: they stay in their registers, and mp_spawn
     * moves none of them to make room for pe and f */
    (void)fn;
    (void)sched;
    if (MPR_UNLIKELY(!args))
        return mpr_misuse(MP_ERR_INVALID_ARG, "fiber arguments are NULL but size is %zu", size);
    RTS_INC(&pe->rts, ThreadContext, size); /* before the call: pe and size need not survive it */
    memcpy(f->args, args, size);
    return MP_SUCCESS;
}

/* The fast path's steps once the checks have passed: the fiber takes the free slot `f` of
 * class `cls` (the head of its free list) and `tag`, the ready spawn tag with that class, and
 * joins the FIFO queue; its arguments are copied last, by a tail call. */
static inline mp_err spawn_ready(mpr_pe *pe, mpr_fiber *f, mpr_slot_class cls, uint64_t tag,
                                 mp_fiber_fn fn, const void *args, size_t size, mp_sched_t sched)
{
    pe->free_slots[cls] = f->next;
    mpr_fiber_init(pe, f, fn, tag);
    mpr_queue_push(&pe->queue[MP_SCHED_FIFO], f);
    if (size)
        return copy_args(fn, args, size, sched, pe, f);
    return MP_SUCCESS;
}

/* mp_spawn beyond its fast path.  A FIFO fiber with more arguments than a tiny slot holds, up
 * to a small slot's, takes the fast path's steps for the small class (its tag differs from the
 * ready one in the class only); everything else takes spawn_general.  A tail call, so that the
 * tiny path pays nothing for it. */
static MPR_NOIPA mp_err spawn_other(mp_fiber_fn fn, const void *args, size_t size, mp_sched_t sched,
                                    mpr_pe *pe)
{
    mpr_fiber *f;
    if (!pe || !fn || sched != MP_SCHED_FIFO || size <= MPR_FIBER_TINY_ARGS ||
        size > MPR_FIBER_SMALL_ARGS || !(f = pe->free_slots[MPR_SLOT_SMALL]))
        return spawn_general(fn, args, size, sched);
    mpr_fiber_tag tag = pe->spawn_tag;
    tag.slot = MPR_SLOT_SMALL;
    return spawn_ready(pe, f, MPR_SLOT_SMALL, tag.word, fn, args, size, sched);
}

/* The common case (a tiny slot's arguments, FIFO queue, warm slab) in straight-line code; the
 * rest takes spawn_other.  The spawn tag is a FIFO fiber's in a tiny slot, ready to store. */
mp_err mp_spawn(mp_fiber_fn fn, const void *args, size_t size, mp_sched_t sched)
{
    mpr_pe *pe = mpr_pe_self();
    if (MPR_UNLIKELY(!pe || !fn || size > MPR_FIBER_TINY_ARGS || sched != MP_SCHED_FIFO))
        return spawn_other(fn, args, size, sched, pe);
    mpr_fiber *f = pe->free_slots[MPR_SLOT_TINY];
    if (MPR_UNLIKELY(!f))
        return spawn_general(fn, args, size, sched);
    return spawn_ready(pe, f, MPR_SLOT_TINY, pe->spawn_tag.word, fn, args, size, sched);
}

mp_err mp_fiber_enable(mp_fiber_t f)
{
    mpr_pe *pe = mpr_pe_self();
    if (MPR_UNLIKELY(!f))
        return mpr_misuse(MP_ERR_INVALID_ARG, "enabling a NULL fiber");
    if (MPR_UNLIKELY(!pe)) /* the fiber's storage went with its PE, or never was one's */
        return mpr_misuse(MP_ERR_BAD_STATE, "mp_fiber_enable outside a running PE");
    if (MPR_UNLIKELY(f->tag.pe != pe->id))
        return mpr_misuse(MP_ERR_BAD_STATE, "enabling a fiber of PE %d from another PE", f->tag.pe);
    if (MPR_UNLIKELY(f->tag.state != MPR_FIBER_CREATED || f->waiting_on))
        return mpr_misuse(MP_ERR_BAD_STATE, "enabling a fiber that is %s",
                          f->waiting_on ? "waiting on a counter" : "not in the created state");
    mpr_enable(pe, f, mpr_cur_access(pe));
    return MP_SUCCESS;
}

mp_fiber_t mp_continue(mp_fiber_fn fn, mp_sched_t sched)
{
    mpr_pe *pe = mpr_pe_self();
    mpr_fiber *f = pe ? pe->current : NULL;
    if (!f) {
        mpr_misuse(MP_ERR_NOT_IN_FIBER, "mp_continue called outside a fiber");
        return NULL;
    }
    if (!fn || sched < 0 || sched >= pe->nsched) {
        mpr_misuse(MP_ERR_INVALID_ARG, "mp_continue with %s",
                   fn ? "an unknown scheduler" : "a NULL function");
        return NULL;
    }
    if (f->tag.sched == MP_SCHED_PREEMPT || sched == MP_SCHED_PREEMPT) {
        mpr_misuse(MP_ERR_BAD_STATE, "preemptive fibers cannot have or be continuations");
        return NULL;
    }
    if (f->tag.reused) {
        mpr_misuse(MP_ERR_BAD_STATE, "a fiber can hand its storage to one continuation only");
        return NULL;
    }
    /* The executing fiber keeps running on these bytes; only the header is re-initialised
     * (waiting_on is already NULL: the fiber is executing). */
    mpr_fiber_init(pe, f, fn,
                   mpr_tag_make(pe, (unsigned)sched, mpr_cur_access(pe), 0, MPR_FIBER_CREATED,
                                (mpr_slot_class)f->tag.slot));
    f->tag.reused = 1;
    return f;
}

mp_fiber_t mp_self(void)
{
    mpr_pe *pe = mpr_pe_self();
    return pe ? pe->current : NULL;
}

void *mp_fiber_args(mp_fiber_t f) { return f ? f->args : NULL; }

const char *mpr_fn_name(mp_fiber_fn fn, char *buf, size_t len)
{
    Dl_info info;
    union {
        mp_fiber_fn fn;
        void *p;
    } u = {.fn = fn};
    if (dladdr(u.p, &info) && info.dli_sname)
        snprintf(buf, len, "%s", info.dli_sname);
    else
        snprintf(buf, len, "%p", u.p);
    return buf;
}
