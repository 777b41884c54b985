/*
 * fiber.c -- fiber storage and life cycle: created -> enabled -> executing.
 *
 * Storage comes from per-PE slabs in two slot sizes and returns to a per-PE free list, so
 * creating a fiber never calls malloc once the slab is warm, and needs no lock.
 */
#define _GNU_SOURCE
#include "mpr.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SLAB_SLOTS 256

static const size_t slot_args[2] = {MPR_FIBER_SMALL_ARGS, MP_FIBER_ARGS_MAX};

typedef struct slab {
    struct slab *next;
    _Alignas(64) unsigned char mem[];
} slab;

static MPR_COLD mpr_fiber *refill(mpr_pe *pe, int cls)
{
    size_t slot = sizeof(mpr_fiber) + slot_args[cls];
    slab *s = aligned_alloc(64, sizeof(slab) + SLAB_SLOTS * slot + 64);
    if (!s)
        mpr_fatal("out of memory allocating fiber storage");
    s->next = pe->slabs;
    pe->slabs = s;
    mpr_fiber *head = NULL;
    for (int i = SLAB_SLOTS - 1; i >= 0; i--) {
        mpr_fiber *f = (mpr_fiber *)(s->mem + (size_t)i * slot);
        f->slot = (uint8_t)cls;
        f->state = MPR_FIBER_FREE;
        f->next = head;
        head = f;
    }
    return head;
}

static inline mpr_fiber *slot_get(mpr_pe *pe, size_t args_size)
{
    int cls = args_size > MPR_FIBER_SMALL_ARGS;
    mpr_fiber *f = pe->free_slots[cls];
    if (MPR_UNLIKELY(!f))
        f = refill(pe, cls);
    pe->free_slots[cls] = f->next;
    return f;
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
    pe->free_slots[0] = pe->free_slots[1] = NULL;
}

static inline void fiber_init(mpr_pe *pe, mpr_fiber *f, mp_fiber_fn fn, const void *args,
                              size_t size, mp_sched_t sched, uint16_t creator)
{
    f->fn = fn;
    f->idle_at_create = pe->c_total;
    f->waiting_on = NULL;
    f->args_size = (uint32_t)size;
    f->sched = (int16_t)sched;
    f->creator = creator;
    f->pe = (uint16_t)pe->id;
    f->state = MPR_FIBER_CREATED;
    f->reused = 0;
    if (size)
        memcpy(f->args, args, size);
    RTS_INC(&pe->rts, ThreadAlloc, 1);
    RTS_INC(&pe->rts, ThreadContext, size);
}

/* A created fiber for the message layer; `creator` is the sender's category. */
mpr_fiber *mpr_fiber_new(mpr_pe *pe, mp_fiber_fn fn, const void *args, size_t size,
                         mp_sched_t sched, uint16_t creator)
{
    mpr_fiber *f = slot_get(pe, size);
    fiber_init(pe, f, fn, args, size, sched, creator);
    return f;
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
    mpr_fiber *f = slot_get(pe, size);
    fiber_init(pe, f, fn, args, size, sched, pe->cur_access);
    return f;
}

static MPR_COLD mp_err spawn_general(mp_fiber_fn fn, const void *args, size_t size,
                                    mp_sched_t sched)
{
    mpr_pe *pe = mpr_pe_self();
    if (!create_ok(pe, fn, args, size, sched))
        return check_create(pe, fn, args, size, sched);
    mpr_fiber *f = slot_get(pe, size);
    fiber_init(pe, f, fn, args, size, sched, pe->cur_access);
    mpr_enable(pe, f, pe->cur_access);
    return MP_SUCCESS;
}

/* Argument copy of the fast path, reached by a tail call so that mp_spawn itself needs no
 * stack frame.  The fiber is already queued, which is fine: it cannot run before we return. */
static __attribute__((noinline)) mp_err copy_args(mpr_fiber *f, const void *args, size_t size)
{
    if (MPR_UNLIKELY(!args))
        return mpr_misuse(MP_ERR_INVALID_ARG, "fiber arguments are NULL but size is %zu", size);
    memcpy(f->args, args, size);
    return MP_SUCCESS;
}

/* The common case (small arguments, built-in queue with room, warm slab) in straight-line
 * code; everything else takes spawn_general. */
mp_err mp_spawn(mp_fiber_fn fn, const void *args, size_t size, mp_sched_t sched)
{
    mpr_pe *pe = mpr_pe_self();
    if (MPR_UNLIKELY(!pe || !fn || size > MPR_FIBER_SMALL_ARGS || (unsigned)sched > MP_SCHED_FIFO))
        return spawn_general(fn, args, size, sched);
    mpr_queue *q = &pe->queue[sched];
    mpr_fiber *f = pe->free_slots[MPR_SLOT_SMALL];
    if (MPR_UNLIKELY(!f || q->tail - q->head > q->mask))
        return spawn_general(fn, args, size, sched);
    pe->free_slots[MPR_SLOT_SMALL] = f->next;
    uint16_t access = pe->cur_access;
    f->fn = fn;
    f->idle_at_create = pe->c_total;
    f->waiting_on = NULL;
    f->args_size = (uint32_t)size;
    f->sched = (int16_t)sched;
    f->enabler = access;
    f->creator = access;
    f->pe = (uint16_t)pe->id;
    f->state = MPR_FIBER_ENABLED;
    f->reused = 0;
    rts_stats_t *rts = &pe->rts;
    RTS_INC(rts, ThreadAlloc, 1);
    RTS_INC(rts, ThreadContext, size);
    RTS_INC(rts, ThreadEnable, 1);
    q->buf[q->tail++ & q->mask] = f;
    if (size)
        return copy_args(f, args, size);
    return MP_SUCCESS;
}

mp_err mp_fiber_enable(mp_fiber_t f)
{
    mpr_pe *pe = mpr_pe_self();
    if (MPR_UNLIKELY(!f))
        return mpr_misuse(MP_ERR_INVALID_ARG, "enabling a NULL fiber");
    if (MPR_UNLIKELY(!pe || f->pe != pe->id))
        return mpr_misuse(MP_ERR_BAD_STATE, "enabling a fiber of PE %d from another PE", f->pe);
    if (MPR_UNLIKELY(f->state != MPR_FIBER_CREATED || f->waiting_on))
        return mpr_misuse(MP_ERR_BAD_STATE, "enabling a fiber that is %s",
                          f->waiting_on ? "waiting on a counter" : "not in the created state");
    mpr_enable(pe, f, pe->cur_access);
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
    if (f->sched == MP_SCHED_PREEMPT || sched == MP_SCHED_PREEMPT) {
        mpr_misuse(MP_ERR_BAD_STATE, "preemptive fibers cannot have or be continuations");
        return NULL;
    }
    if (f->reused) {
        mpr_misuse(MP_ERR_BAD_STATE, "a fiber can hand its storage to one continuation only");
        return NULL;
    }
    /* The executing fiber keeps running on these bytes; only the header is re-initialised. */
    f->reused = 1;
    f->fn = fn;
    f->sched = (int16_t)sched;
    f->idle_at_create = pe->c_total;
    f->waiting_on = NULL;
    f->creator = pe->cur_access;
    f->state = MPR_FIBER_CREATED;
    RTS_INC(&pe->rts, ThreadAlloc, 1);
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
