/*
 * cpu_view.c -- run a program as if the machine had CPU_VIEW CPUs: a rehearsal, on a small
 * machine, of what a larger one changes in mprof's defaults and in the tests' assumptions.
 *
 *   cc -O2 -shared -fPIC -o build/cpu_view.so benchmarks/device/cpu_view.c -ldl
 *   CPU_VIEW=16 LD_PRELOAD=$PWD/build/cpu_view.so .venv/bin/python -m pytest -q tests/runtime
 *
 * A preloaded library that answers, for every process below it (Python, the C programs):
 *   - sched_getaffinity: CPUs 0 .. CPU_VIEW-1, which is what the runtime sizes its default
 *     worker threads by (shm/machine.c) and Python's os.sched_getaffinity returns;
 *   - sysconf(_SC_NPROCESSORS_ONLN / _CONF): CPU_VIEW (os.cpu_count, nproc);
 *   - sched_setaffinity: the mask folded onto the CPUs really there (CPU k -> k mod n), so
 *     that a test that binds a process to "CPU 5" still runs.
 * The topology hwloc reads is the real one, so the runtime binds no worker (it has fewer units
 * than workers) and runs CPU_VIEW threads unbound, time-shared on the real CPUs: counts and
 * orders are what the larger machine gives, times are not.  Unset or 0: the real answers.
 * ASan's runtime must come first among preloaded libraries, so programs built with it do not
 * run under this view; TSan's do.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int view(void)
{
    const char *s = getenv("CPU_VIEW");
    int n = s ? atoi(s) : 0;
    return n > 0 && n <= CPU_SETSIZE ? n : 0;
}

int sched_getaffinity(pid_t pid, size_t size, cpu_set_t *mask)
{
    static int (*real)(pid_t, size_t, cpu_set_t *);
    if (!real)
        real = (int (*)(pid_t, size_t, cpu_set_t *))dlsym(RTLD_NEXT, "sched_getaffinity");
    int n = view();
    if (!n)
        return real(pid, size, mask);
    if (size * 8 < (size_t)n) {
        errno = EINVAL;
        return -1;
    }
    memset(mask, 0, size);
    for (int i = 0; i < n; i++)
        CPU_SET_S(i, size, mask);
    return 0;
}

int sched_setaffinity(pid_t pid, size_t size, const cpu_set_t *mask)
{
    static int (*real)(pid_t, size_t, const cpu_set_t *);
    static long (*real_sysconf)(int);
    if (!real) {
        real = (int (*)(pid_t, size_t, const cpu_set_t *))dlsym(RTLD_NEXT, "sched_setaffinity");
        real_sysconf = (long (*)(int))dlsym(RTLD_NEXT, "sysconf");
    }
    if (!view())
        return real(pid, size, mask);
    long have = real_sysconf(_SC_NPROCESSORS_ONLN);
    cpu_set_t folded;
    CPU_ZERO(&folded);
    for (size_t i = 0; i < size * 8; i++)
        if (CPU_ISSET_S(i, size, mask))
            CPU_SET(i % (size_t)(have > 0 ? have : 1), &folded);
    return real(pid, sizeof folded, &folded);
}

long sysconf(int name)
{
    static long (*real)(int);
    if (!real)
        real = (long (*)(int))dlsym(RTLD_NEXT, "sysconf");
    int n = view();
    if (n && (name == _SC_NPROCESSORS_ONLN || name == _SC_NPROCESSORS_CONF))
        return n;
    return real(name);
}
