/*
 * ctx.h -- user-space execution contexts for PEs that share a worker thread (shm backend).
 *
 * A PE multiplexed on a worker runs on its own stack, because its pe_main may block
 * (mp_block_until) in the middle of its schedule loop.  Switching is a hand-written register
 * swap on x86-64 (callee-saved registers, MXCSR and the x87 control word; no signal mask, so
 * no system call) and ucontext elsewhere.  Fibers stay stackless: only PEs get contexts.
 * The switch tells ASan and TSan about the stack change when they are compiled in.
 */
#ifndef MPR_SHM_CTX_H
#define MPR_SHM_CTX_H

#include <stddef.h>

#if !defined(__x86_64__)
#include <ucontext.h>
#endif

typedef struct mpr_ctx {
#if defined(__x86_64__)
    void *sp; /* saved stack pointer while switched out */
#else
    ucontext_t uc;
#endif
    void *stack; /* lowest usable byte of the stack (NULL: a thread's own stack) */
    size_t stack_size;
    void (*fn)(void *);
    void *arg;
    void *asan_fake_stack; /* ASan bookkeeping of the switched-out context */
    void *tsan_fiber;      /* TSan's fiber for this context */
} mpr_ctx;

/* Makes `c` the context of the calling thread (the worker's scheduler). */
void mpr_ctx_init_thread(mpr_ctx *c);
/* Prepares `c` to run fn(arg) on [stack, stack + size) at its first switch.  fn must never
 * return: it ends with mpr_ctx_exit. */
void mpr_ctx_make(mpr_ctx *c, void *stack, size_t size, void (*fn)(void *), void *arg);
/* Saves the running context in `from` and resumes `to`. */
void mpr_ctx_switch(mpr_ctx *from, mpr_ctx *to);
/* Leaves `from` for good (its stack may be freed once `to` runs). */
void mpr_ctx_exit(mpr_ctx *from, mpr_ctx *to) __attribute__((noreturn));
/* Releases what mpr_ctx_make set up (not the stack). */
void mpr_ctx_destroy(mpr_ctx *c);

#endif
