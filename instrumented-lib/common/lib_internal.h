/*
 * lib_internal.h -- helpers shared by the structures of the instrumented library (hash table,
 * task stealer, bipartite graph, event graph).  Internal: not part of any public header.
 *
 * Define LIB_MODULE (the structure's name, used in messages) before including it:
 *
 *     #define LIB_MODULE "bipartite"
 *     #include "lib_internal.h"
 *
 * Everything is static, so each structure's library keeps its own copy and the libraries
 * stay independent of each other.
 */
#ifndef MPROF_LIB_INTERNAL_H
#define MPROF_LIB_INTERNAL_H

#ifndef LIB_MODULE
#error "define LIB_MODULE before including lib_internal.h"
#endif

#include "mp.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "<module> (PE n): " into line, or "<module>: " outside a PE (before or after mp_main);
 * returns its length. */
static __attribute__((unused)) int lib_prefix(char *line, size_t size)
{
    int me = mp_mype();
    return me >= 0 ? snprintf(line, size, "%s (PE %d): ", LIB_MODULE, me)
                   : snprintf(line, size, "%s: ", LIB_MODULE);
}

/* Reports an unrecoverable error ("<module> (PE n): ...") and aborts.  One write: the line of
 * another PE dying at the same moment does not cut into it. */
static _Noreturn __attribute__((format(printf, 1, 2), unused)) void lib_die(const char *fmt, ...)
{
    char line[1024];
    int n = lib_prefix(line, sizeof line);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s\n", line);
    fflush(stderr);
    abort();
}

static __attribute__((unused)) void *lib_malloc(size_t n)
{
    void *q = malloc(n ? n : 1);
    if (!q)
        lib_die("out of memory (%zu bytes)", n);
    return q;
}

static __attribute__((unused)) void *lib_calloc(size_t n, size_t size)
{
    void *q = calloc(n ? n : 1, size ? size : 1);
    if (!q)
        lib_die("out of memory (%zu x %zu bytes)", n, size);
    return q;
}

/* Zeroed memory that is written now, by the calling PE, or NULL.  For a table that the hot
 * path reads before it writes (a hash table's bins): calloc leaves fresh pages to the kernel,
 * which maps its shared zero page at the first read, and the first write then replaces it and
 * must flush the old translation from every CPU that runs the program, an interprocessor
 * interrupt per page to all of them.  Writing the pages here takes one fault per page on this
 * PE's own CPU, with nothing to flush, and places them near it on a multi-socket machine. */
static __attribute__((unused)) void *lib_zeroed(size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size)
        return NULL;
    size_t bytes = n * size;
    void *q = malloc(bytes ? bytes : 1);
    if (q) {
        /* (the compiler may turn malloc and a memset of zeros into calloc: it must not know
         * the memory's contents when the memset runs) */
        __asm__ volatile("" : : "r"(q) : "memory");
        memset(q, 0, bytes);
    }
    return q;
}

static __attribute__((unused)) void *lib_realloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        lib_die("out of memory (%zu bytes)", n);
    return q;
}

/* "a" or "an" before a structure's name ("an event graph"). */
static __attribute__((unused)) const char *lib_article(const char *noun)
{
    return strchr("aeiou", noun[0]) ? "an" : "a";
}

/* This PE's partition of object `id`; aborts when the PE has none (a message for an object
 * this PE did not create, or one already destroyed). */
static __attribute__((unused)) void *lib_part(mp_obj_t id)
{
    void *p = mp_obj_local(id);
    if (!p)
        lib_die("object %u is not %s " LIB_MODULE " on this PE (not created here, or destroyed)",
                id, lib_article(LIB_MODULE));
    return p;
}

/* Misuse that the call also reports through its result: told here, as the runtime does, so
 * that a bare error code is not the only trace of it ("<module> (PE n): ..."). */
static __attribute__((format(printf, 1, 2), unused)) void lib_misuse(const char *fmt, ...)
{
    char line[512]; /* one write: the lines of PEs reporting at once do not interleave */
    int n = lib_prefix(line, sizeof line);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s\n", line);
}

/* Every structure's partition begins with its tag (a uint32_t `magic`, set while the
 * partition lives), so that a handle of another kind -- a snapshot's, another structure's --
 * is told apart instead of read as this one.  This PE's partition of `id` when it is a live
 * `kind` (tagged `magic`), else NULL after a report naming `fn`: for the calls that can return
 * an error. */
static __attribute__((unused)) void *lib_part_checked(mp_obj_t id, uint32_t magic, const char *kind,
                                                      const char *fn)
{
    uint32_t *p = mp_obj_local(id);
    if (!p)
        lib_misuse("%s: object %u is not %s %s on this PE (not created here, or destroyed)", fn, id,
                   lib_article(kind), kind);
    else if (*p != magic)
        lib_misuse("%s: object %u is not %s %s", fn, id, lib_article(kind), kind);
    else
        return p;
    return NULL;
}

/* The same for the calls that cannot return an error, and the structure's own fibers: misuse
 * ends the run. */
static __attribute__((unused)) void *lib_part_of_kind(mp_obj_t id, uint32_t magic, const char *kind)
{
    uint32_t *p = lib_part(id);
    if (*p != magic)
        lib_die("object %u is not %s %s", id, lib_article(kind), kind);
    return p;
}

/* The partition an iterator walks, checked at each step: its handle must still name the
 * partition it was set up with.  The iterator holds the partition's address for speed, and a
 * destroy frees it: without the check the next step read freed memory.  Ends the run. */
static __attribute__((unused)) void *lib_iter_part(mp_obj_t id, void *part, uint32_t magic,
                                                   const char *fn, const char *kind)
{
    uint32_t *p = mp_obj_local(id);
    if (p != part || *p != magic)
        lib_die("%s: the %s was destroyed since the iterator was set up", fn, kind);
    return p;
}

/* A structure's creation is collective, and some of its options must be the same on every PE
 * (the sizes its messages carry, the layout of a graph): the messages carry a fingerprint of
 * those options, and a receiver whose own differs ends the run, instead of copying a sender's
 * bytes with its own sizes (a buffer overrun or garbage).  FNV-1a over `n` bytes at p, from
 * `h` (start with LIB_HASH_INIT). */
#define LIB_HASH_INIT 2166136261u
static __attribute__((unused)) uint32_t lib_hash(uint32_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 16777619u;
    return h;
}

/* Registers the module's access categories once per process (thread-safe); the structures
 * call it from their create functions, in case the program did not. */
#define LIB_PERF_INIT(init_fn)                                                                     \
    do {                                                                                           \
        static pthread_once_t once_ = PTHREAD_ONCE_INIT;                                           \
        pthread_once(&once_, init_fn);                                                             \
    } while (0)

/* ---------------------------------------------------------------------------------- */
/* Bulk stores of malloc'd buffers                                                      */

typedef struct {
    mp_counter_t c;
    void *buf;
} lib_free_args;

static __attribute__((unused)) void lib_free_after(void *args)
{
    lib_free_args *a = args;
    free(a->buf);
    mp_counter_free(a->c);
}

/* mp_bulk_store of `buf` (malloc'd, n bytes) that frees it once the runtime lets go of it. */
static __attribute__((unused)) void lib_store_and_free(int to, void *dst, void *buf, size_t n,
                                                       mp_fiber_fn on_arrival, const void *user,
                                                       size_t user_size)
{
    mp_counter_t c = mp_counter_new(0);
    if (mp_bulk_store(to, dst, buf, n, c, on_arrival, user, user_size) == MP_FAIL)
        lib_die("bulk store of %zu bytes to PE %d failed", n, to);
    lib_free_args fa = {c, buf};
    mp_counter_wait(c, 1, mp_fiber_create(lib_free_after, &fa, sizeof fa, MP_SCHED_URGENT));
}

/* ---------------------------------------------------------------------------------- */
/* Destroying a structure                                                               */

typedef struct {
    void (*free_part)(void *part);
    void *part;
    mp_counter_t inner, done;
} lib_destroy_args;

static __attribute__((unused)) void lib_destroyed(void *args)
{
    lib_destroy_args *a = args;
    a->free_part(a->part);
    mp_counter_free(a->inner);
    mp_counter_add(a->done, 1);
}

/* Collective, split-phase: mp_obj_destroy of the structure's object `id` and, unless 0, of
 * the snapshot object it owns; then free_part(part) frees this PE's partition and `done` is
 * incremented.  The structure must be quiescent (see mp_obj_destroy).  MP_WAIT or MP_FAIL. */
static __attribute__((unused)) mp_status lib_destroy(mp_obj_t id, mp_snapshot_t snap,
                                                     void (*free_part)(void *), void *part,
                                                     mp_counter_t done)
{
    lib_destroy_args a = {free_part, part, mp_counter_new(0), done};
    uint64_t n = snap ? 2 : 1;
    /* The snapshot first: a freeze or sync in progress keeps it busy, and its destroy is
     * refused then before the structure's own object is touched, so that a refused call
     * leaves the structure as it was. */
    if (snap && mp_obj_destroy(snap, a.inner) == MP_FAIL) {
        mp_counter_free(a.inner);
        return MP_FAIL;
    }
    if (mp_obj_destroy(id, a.inner) == MP_FAIL)
        lib_die("destroy: object %u refused its destroy after its snapshot's had begun (a "
                "global operation of the structure was still in progress)",
                id);
    mp_counter_wait(a.inner, n, mp_fiber_create(lib_destroyed, &a, sizeof a, MP_SCHED_FIFO));
    return MP_WAIT;
}

#endif
