/* schedulers.c -- urgent before FIFO, FIFO order, preemptive fibers run inside the enabling
 * fiber, custom LIFO and priority schedulers, round-robin between FIFO and custom schedulers.
 * Each scenario records the dispatch order as a string and compares it with the expected one. */
#include "check.h"

static char order[256];
static void logc(char c)
{
    size_t n = strlen(order);
    CHECK(n + 1 < sizeof order);
    order[n] = c;
    order[n + 1] = 0;
}

static void tag(void *p) { logc(*(char *)p); }

static void spawn_tag(char c, mp_sched_t s) { CHECK_OK(mp_spawn(tag, &c, 1, s)); }

/* ---- urgent / FIFO / preemptive ---------------------------------------------------------- */
static void fifo_a(void *p)
{
    (void)p;
    logc('a');
    spawn_tag('x', MP_SCHED_URGENT); /* runs before b, c */
    logc('(');
    spawn_tag('p', MP_SCHED_PREEMPT); /* runs now, inside a */
    logc(')');
    /* a preemptive fiber enabled through a counter runs inside mp_counter_add */
    mp_counter_t c = mp_counter_new(0);
    char q = 'q';
    mp_fiber_t f = mp_fiber_create(tag, &q, 1, MP_SCHED_PREEMPT);
    CHECK_OK(mp_counter_wait(c, 1, f));
    logc('[');
    mp_counter_add(c, 1);
    logc(']');
    mp_counter_free(c);
}

/* Preemptive fibers enabling preemptive fibers: nesting is bounded (the rest is deferred to
 * the urgent queue), and every one of them runs. */
static int nest, max_nest, deep_ran;
static void deep(void *p)
{
    int k = *(int *)p;
    nest++;
    if (nest > max_nest)
        max_nest = nest;
    deep_ran++;
    if (k < 40) {
        k++;
        CHECK_OK(mp_spawn(deep, &k, sizeof k, MP_SCHED_PREEMPT));
    }
    nest--;
}
static void deep_check(void *p)
{
    (void)p;
    CHECK_EQ(deep_ran, 40);
    printf("max_nest=%d\n", max_nest);
    /* the urgent fiber itself plus at most 16 nested preemptive ones */
    CHECK(max_nest >= 2 && max_nest <= 17);
}

static void builtin_main(void)
{
    int one = 1;
    CHECK_OK(mp_spawn(deep, &one, sizeof one, MP_SCHED_URGENT));
    CHECK_OK(mp_spawn(deep_check, NULL, 0, MP_SCHED_FIFO));
    order[0] = 0;
    CHECK_OK(mp_spawn(fifo_a, NULL, 0, MP_SCHED_FIFO));
    spawn_tag('b', MP_SCHED_FIFO);
    spawn_tag('c', MP_SCHED_FIFO);
    spawn_tag('1', MP_SCHED_URGENT);
    spawn_tag('2', MP_SCHED_URGENT);
}

/* ---- custom schedulers ------------------------------------------------------------------- */
typedef struct {
    mp_fiber_t items[128];
    int n;
} stack_sched;

static void stack_deposit(void *st, mp_fiber_t f)
{
    stack_sched *s = st;
    CHECK(s->n < 128);
    s->items[s->n++] = f;
}
static mp_fiber_t stack_select(void *st) /* LIFO */
{
    stack_sched *s = st;
    return s->n ? s->items[--s->n] : NULL;
}
static mp_fiber_t queue_select(void *st) /* FIFO through deposit/select */
{
    stack_sched *s = st;
    if (!s->n)
        return NULL;
    mp_fiber_t f = s->items[0];
    memmove(s->items, s->items + 1, (size_t)--s->n * sizeof f);
    return f;
}
static mp_fiber_t prio_select(void *st) /* highest first byte of the arguments first */
{
    stack_sched *s = st;
    if (!s->n)
        return NULL;
    int best = 0;
    for (int i = 1; i < s->n; i++)
        if (*(char *)mp_fiber_args(s->items[i]) > *(char *)mp_fiber_args(s->items[best]))
            best = i;
    mp_fiber_t f = s->items[best];
    s->items[best] = s->items[--s->n];
    return f;
}

static stack_sched lifo_state, prio_state, queue_state;

static void custom_main(const char *which)
{
    static const mp_sched_ops lifo = {stack_deposit, stack_select, "lifo"};
    static const mp_sched_ops prio = {stack_deposit, prio_select, "prio"};
    static const mp_sched_ops queue = {stack_deposit, queue_select, "queue"};
    mp_sched_t l, p, q;
    CHECK_OK(mp_sched_register(&lifo, &lifo_state, &l));
    CHECK_OK(mp_sched_register(&prio, &prio_state, &p));
    CHECK_OK(mp_sched_register(&queue, &queue_state, &q));
    CHECK(l > MP_SCHED_PREEMPT && p == l + 1 && q == p + 1);
    if (strcmp(which, "lifo") == 0) {
        for (const char *s = "12345"; *s; s++)
            spawn_tag(*s, l);
    } else if (strcmp(which, "prio") == 0) {
        for (const char *s = "3152649"; *s; s++)
            spawn_tag(*s, p);
    } else { /* round-robin: FIFO, then each custom scheduler in turn */
        for (const char *s = "abc"; *s; s++)
            spawn_tag(*s, MP_SCHED_FIFO);
        for (const char *s = "ABC"; *s; s++)
            spawn_tag(*s, q);
        spawn_tag('u', MP_SCHED_URGENT);
    }
}

/* ---- mp_block_until in the middle of a FIFO batch ---------------------------------------- */
static mp_counter_t block_counter;
static void bump_tag(void *p)
{
    tag(p);
    mp_counter_add(block_counter, 1);
}

/* pe_main blocks until b has run: c and d, queued behind b, must not run before pe_main
 * resumes, and must still run before e, which pe_main queues after it resumes. */
static void block_main(void)
{
    order[0] = 0;
    block_counter = mp_counter_new(0);
    spawn_tag('a', MP_SCHED_FIFO);
    char b = 'b';
    CHECK_OK(mp_spawn(bump_tag, &b, 1, MP_SCHED_FIFO));
    spawn_tag('c', MP_SCHED_FIFO);
    spawn_tag('d', MP_SCHED_FIFO);
    CHECK_OK(mp_block_until(block_counter, 1));
    logc('M');
    spawn_tag('e', MP_SCHED_FIFO);
}

/* pe_main blocks until the counter reaches 3: the adds in b and d change it without reaching
 * the target, so the batch runs on; the set in f reaches it, and pe_main resumes before g. */
static void add_tag(void *p)
{
    tag(p);
    mp_counter_add(block_counter, 1);
}
static void set_tag(void *p)
{
    tag(p);
    mp_counter_set(block_counter, 3);
}

static void block_target_main(void)
{
    order[0] = 0;
    block_counter = mp_counter_new(0);
    const char *names = "abcdefg";
    for (const char *c = names; *c; c++)
        CHECK_OK(mp_spawn(*c == 'f'                  ? set_tag
                          : (*c == 'b' || *c == 'd') ? add_tag
                                                     : tag,
                          c, 1, MP_SCHED_FIFO));
    CHECK_OK(mp_block_until(block_counter, 3));
    logc('M');
}

static const char *scenario;

static void pe_main(int argc, char **argv)
{
    (void)argc, (void)argv;
    if (strcmp(scenario, "builtin") == 0)
        builtin_main();
    else if (strcmp(scenario, "block") == 0)
        block_main();
    else if (strcmp(scenario, "block-target") == 0)
        block_target_main();
    else
        custom_main(scenario);
}

int main(int argc, char **argv)
{
    scenario = tst_scenario(argc, argv, "builtin");
    int rc = tst_run(argc, argv, 1, pe_main);
    printf("order=%s\n", order);
    return rc;
}
