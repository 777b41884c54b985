/*
 * overflow.c -- a stack overflow is reported with its PE and fiber instead of a bare SIGSEGV.
 *
 * Every PE's stack ends in a guard page (the thread's own, or the one below a multiplexed PE's
 * stack, shm/machine.c).  Touching it raises SIGSEGV on a stack that has no room left, so the
 * handler runs on an alternate signal stack, one per thread that runs PEs.  A fault whose
 * address lies within OVERFLOW_REACH of the interrupted stack pointer is a stack overflow: the
 * handler prints one line -- PE, fiber function and category (or pe_main) -- and aborts.  Any
 * other fault gets the default action: the handler restores it and returns, and the faulting
 * instruction faults again.
 *
 * A fault in the copy of a bulk transfer whose address another PE named (mpr_transfer) is
 * reported as that transfer's -- the PE, the peer, the address range -- before the default
 * action.  Where another handler is installed already (a sanitizer's; Open MPI's under
 * mpirun, which prints a backtrace), it is left alone and neither report is made.
 */
#define _GNU_SOURCE
#include "mpr.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

/* How far below (or above) the stack pointer a fault still counts as the stack's: a frame
 * larger than the guard page can step past it. */
#define OVERFLOW_REACH ((uintptr_t)1 << 20)
#define ALTSTACK_SIZE ((size_t)64 * 1024)

__thread mpr_transfer_note mpr_transfer;

static pthread_once_t install_once = PTHREAD_ONCE_INIT;
static pthread_key_t altstack_key;
static int installed;
static struct sigaction old_segv, old_bus;
static __thread void *altstack;

static uintptr_t context_sp(void *ctx)
{
    const ucontext_t *uc = ctx;
#if defined(__x86_64__)
    return (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
#elif defined(__aarch64__)
    return (uintptr_t)uc->uc_mcontext.sp;
#else
    (void)uc;
    return 0;
#endif
}

static void on_fault(int sig, siginfo_t *si, void *ctx)
{
    uintptr_t addr = (uintptr_t)si->si_addr, sp = context_sp(ctx);
    const mpr_pe *pe = mpr_pe_self();
    if (pe && sp && addr < sp + OVERFLOW_REACH && addr + OVERFLOW_REACH > sp) {
        char line[512], name[128];
        const mpr_fiber *f = pe->current;
        const char *hint = pe->shared_thread ? "; MPROF_STACK_KB sets the stack of a PE that "
                                               "shares its worker thread"
                                             : "";
        int n;
        if (f)
            n = snprintf(line, sizeof line,
                         "mprof: stack overflow on PE %d in fiber %s (category %s)%s\n", pe->id,
                         mpr_fn_name(f->fn, name, sizeof name),
                         mpr_access_name(pe->spawn_tag.creator), hint);
        else
            n = snprintf(line, sizeof line, "mprof: stack overflow on PE %d in pe_main%s\n", pe->id,
                         hint);
        if (n > 0)
            (void)!write(STDERR_FILENO, line, (size_t)n < sizeof line ? (size_t)n : sizeof line);
        signal(SIGABRT, SIG_DFL);
        abort();
    }
    if (mpr_transfer.what) {
        const char *a = mpr_transfer.addr;
        char line[512];
        int n = snprintf(line, sizeof line,
                         "mprof: PE %d: the address PE %d named for a bulk %s it, %zu bytes at "
                         "%p..%p, is not memory of this PE (%s at %p)\n",
                         pe ? pe->id : -1, mpr_transfer.peer, mpr_transfer.what, mpr_transfer.n,
                         (const void *)a, (const void *)(a + mpr_transfer.n),
                         sig == SIGBUS ? "SIGBUS" : "SIGSEGV", (void *)addr);
        if (n > 0)
            (void)!write(STDERR_FILENO, line, (size_t)n < sizeof line ? (size_t)n : sizeof line);
        mpr_transfer.what = NULL;
    }
    sigaction(sig, sig == SIGBUS ? &old_bus : &old_segv, NULL); /* fault again, as before */
}

static void altstack_free(void *p)
{
    stack_t off = {.ss_flags = SS_DISABLE};
    sigaltstack(&off, NULL);
    munmap(p, ALTSTACK_SIZE);
}

static void install(void)
{
    struct sigaction cur;
    if (sigaction(SIGSEGV, NULL, &cur) != 0 || (cur.sa_flags & SA_SIGINFO) ||
        cur.sa_handler != SIG_DFL)
        return; /* someone else handles faults (a sanitizer) */
    if (pthread_key_create(&altstack_key, altstack_free) != 0)
        return;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &old_segv);
    sigaction(SIGBUS, &sa, &old_bus);
    installed = 1;
}

void mpr_overflow_guard(void)
{
    pthread_once(&install_once, install);
    if (!installed || altstack)
        return;
    void *p = mmap(NULL, ALTSTACK_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return;
    stack_t ss = {.ss_sp = p, .ss_size = ALTSTACK_SIZE, .ss_flags = 0};
    if (sigaltstack(&ss, NULL) != 0) {
        munmap(p, ALTSTACK_SIZE);
        return;
    }
    altstack = p;
    pthread_setspecific(altstack_key, p);
}
