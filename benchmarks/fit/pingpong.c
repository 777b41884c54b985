/* Cache-line round trip between two threads: the main thread and a partner pass a counter
 * back and forth through one atomic word ROUNDS times; prints the mean round trip in ns.
 * Used by machine_state.sh to tell which state the machine's two CPUs are in. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

enum { ROUNDS = 20000 };

static _Alignas(64) _Atomic long ball;

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void *partner(void *arg)
{
    (void)arg;
    for (long i = 0; i < ROUNDS; i++) {
        while (atomic_load_explicit(&ball, memory_order_acquire) != 2 * i + 1)
            ;
        atomic_store_explicit(&ball, 2 * i + 2, memory_order_release);
    }
    return NULL;
}

int main(void)
{
    pthread_t thread;
    if (pthread_create(&thread, NULL, partner, NULL) != 0)
        return 1;
    double start = now_s();
    for (long i = 0; i < ROUNDS; i++) {
        atomic_store_explicit(&ball, 2 * i + 1, memory_order_release);
        while (atomic_load_explicit(&ball, memory_order_acquire) != 2 * i + 2)
            ;
    }
    double elapsed = now_s() - start;
    pthread_join(thread, NULL);
    printf("%.0f\n", elapsed / ROUNDS * 1e9);
    return 0;
}
