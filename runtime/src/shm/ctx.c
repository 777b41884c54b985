/*
 * ctx.c -- context switching for PEs multiplexed on a worker thread (see ctx.h).
 */
#define _GNU_SOURCE
#include "ctx.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SANITIZE_ADDRESS__)
#define MPR_ASAN 1
#endif
#if defined(__SANITIZE_THREAD__)
#define MPR_TSAN 1
#endif
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MPR_ASAN 1
#endif
#if __has_feature(thread_sanitizer)
#define MPR_TSAN 1
#endif
#endif

#ifdef MPR_ASAN
void __sanitizer_start_switch_fiber(void **fake_stack_save, const void *bottom, size_t size);
void __sanitizer_finish_switch_fiber(void *fake_stack_save, const void **bottom_old,
                                     size_t *size_old);
#endif
#ifdef MPR_TSAN
void *__tsan_get_current_fiber(void);
void *__tsan_create_fiber(unsigned flags);
void __tsan_destroy_fiber(void *fiber);
void __tsan_switch_to_fiber(void *fiber, unsigned flags);
#endif

/* Called in the context being left, right before the stack changes. */
static inline void before_switch(mpr_ctx *from, mpr_ctx *to, int exiting)
{
#ifdef MPR_ASAN
    __sanitizer_start_switch_fiber(exiting ? NULL : &from->asan_fake_stack, to->stack,
                                   to->stack_size);
#else
    (void)from;
    (void)exiting;
#endif
#ifdef MPR_TSAN
    __tsan_switch_to_fiber(to->tsan_fiber, 0);
#else
    (void)to;
#endif
}

/* Called in the context that resumes, right after the stack changed. */
static inline void after_switch(mpr_ctx *self)
{
#ifdef MPR_ASAN
    __sanitizer_finish_switch_fiber(self->asan_fake_stack, NULL, NULL);
#else
    (void)self;
#endif
}

void mpr_ctx_init_thread(mpr_ctx *c)
{
    memset(c, 0, sizeof *c);
    /* the thread's stack bounds, which ASan needs when a PE switches back to it */
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
        pthread_attr_getstack(&attr, &c->stack, &c->stack_size);
        pthread_attr_destroy(&attr);
    }
#ifdef MPR_TSAN
    c->tsan_fiber = __tsan_get_current_fiber();
#endif
}

void mpr_ctx_destroy(mpr_ctx *c)
{
#ifdef MPR_TSAN
    if (c->tsan_fiber && c->fn) /* made by mpr_ctx_make, not a thread's own */
        __tsan_destroy_fiber(c->tsan_fiber);
#endif
    c->tsan_fiber = NULL;
}

#if defined(__x86_64__)

/* mpr_ctx_swap(&from->sp, to->sp): pushes the callee-saved registers and the floating-point
 * control words on the current stack, stores the stack pointer, loads the other one and pops
 * its registers.  A new context's stack is prepared (mpr_ctx_make) so that the final `ret`
 * enters mpr_ctx_start with r12 = function and r13 = argument. */
void mpr_ctx_swap(void **save_sp, void *new_sp);
__asm__(".text\n"
        ".globl mpr_ctx_swap\n"
        ".type mpr_ctx_swap,@function\n"
        "mpr_ctx_swap:\n"
        "    pushq %rbp\n"
        "    pushq %rbx\n"
        "    pushq %r12\n"
        "    pushq %r13\n"
        "    pushq %r14\n"
        "    pushq %r15\n"
        "    subq $8, %rsp\n"
        "    stmxcsr (%rsp)\n"
        "    fnstcw 4(%rsp)\n"
        "    movq %rsp, (%rdi)\n"
        "    movq %rsi, %rsp\n"
        "    ldmxcsr (%rsp)\n"
        "    fldcw 4(%rsp)\n"
        "    addq $8, %rsp\n"
        "    popq %r15\n"
        "    popq %r14\n"
        "    popq %r13\n"
        "    popq %r12\n"
        "    popq %rbx\n"
        "    popq %rbp\n"
        "    ret\n"
        ".size mpr_ctx_swap, .-mpr_ctx_swap\n"
        ".type mpr_ctx_start,@function\n"
        "mpr_ctx_start:\n"
        "    movq %r13, %rdi\n"
        "    callq *%r12\n"
        "    ud2\n"
        ".size mpr_ctx_start, .-mpr_ctx_start\n");
void mpr_ctx_start(void);

static void ctx_boot(void *p)
{
    mpr_ctx *c = p;
    after_switch(c);
    c->fn(c->arg);
    abort(); /* fn ends with mpr_ctx_exit */
}

void mpr_ctx_make(mpr_ctx *c, void *stack, size_t size, void (*fn)(void *), void *arg)
{
    memset(c, 0, sizeof *c);
    c->stack = stack;
    c->stack_size = size;
    c->fn = fn;
    c->arg = arg;
    uintptr_t top = ((uintptr_t)stack + size) & ~(uintptr_t)15;
    /* frame, low to high: control words, r15, r14, r13, r12, rbx, rbp, return address; the
     * stack pointer after `ret` is 16-aligned, as mpr_ctx_start's call needs */
    uint64_t *sp = (uint64_t *)(top - 80);
    uint32_t mxcsr;
    uint16_t fpucw;
    __asm__ volatile("stmxcsr %0" : "=m"(mxcsr));
    __asm__ volatile("fnstcw %0" : "=m"(fpucw));
    sp[0] = (uint64_t)mxcsr | (uint64_t)fpucw << 32;
    sp[1] = 0;                      /* r15 */
    sp[2] = 0;                      /* r14 */
    sp[3] = (uint64_t)(uintptr_t)c; /* r13: the argument */
    sp[4] = (uint64_t)(uintptr_t)ctx_boot;
    sp[5] = 0; /* rbx */
    sp[6] = 0; /* rbp: ends frame-pointer walks */
    sp[7] = (uint64_t)(uintptr_t)mpr_ctx_start;
    sp[8] = 0;
    sp[9] = 0;
    c->sp = sp;
#ifdef MPR_TSAN
    c->tsan_fiber = __tsan_create_fiber(0);
#endif
}

void mpr_ctx_switch(mpr_ctx *from, mpr_ctx *to)
{
    before_switch(from, to, 0);
    mpr_ctx_swap(&from->sp, to->sp);
    after_switch(from);
}

void mpr_ctx_exit(mpr_ctx *from, mpr_ctx *to)
{
    before_switch(from, to, 1);
    mpr_ctx_swap(&from->sp, to->sp);
    abort(); /* never resumed */
}

#else /* portable fallback: ucontext (swapcontext saves the signal mask: a system call) */

static void ctx_boot_uc(unsigned lo, unsigned hi)
{
    mpr_ctx *c = (mpr_ctx *)(((uintptr_t)hi << 32) | lo);
    after_switch(c);
    c->fn(c->arg);
    abort();
}

void mpr_ctx_make(mpr_ctx *c, void *stack, size_t size, void (*fn)(void *), void *arg)
{
    memset(c, 0, sizeof *c);
    c->stack = stack;
    c->stack_size = size;
    c->fn = fn;
    c->arg = arg;
    getcontext(&c->uc);
    c->uc.uc_stack.ss_sp = stack;
    c->uc.uc_stack.ss_size = size;
    c->uc.uc_link = NULL;
    uintptr_t p = (uintptr_t)c;
    makecontext(&c->uc, (void (*)(void))ctx_boot_uc, 2, (unsigned)p, (unsigned)(p >> 32));
#ifdef MPR_TSAN
    c->tsan_fiber = __tsan_create_fiber(0);
#endif
}

void mpr_ctx_switch(mpr_ctx *from, mpr_ctx *to)
{
    before_switch(from, to, 0);
    swapcontext(&from->uc, &to->uc);
    after_switch(from);
}

void mpr_ctx_exit(mpr_ctx *from, mpr_ctx *to)
{
    before_switch(from, to, 1);
    swapcontext(&from->uc, &to->uc);
    abort();
}

#endif
