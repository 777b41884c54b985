/*
 * shm/affinity.c -- binding the worker threads to processing units (affinity.h).
 *
 * The topology (which processing units share a core) comes from hwloc; the binding itself is
 * the thread's CPU affinity mask.
 */
#define _GNU_SOURCE
#include "affinity.h"

#include "../mpr.h"

#include <hwloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct {
    int rank; /* among the usable units of its core: 0 for the first */
    int core; /* the core's logical index */
    int os;   /* the unit's OS CPU number */
} unit;

static int by_rank_then_core(const void *a, const void *b)
{
    const unit *x = a, *y = b;
    return x->rank != y->rank ? x->rank - y->rank : x->core - y->core;
}

/* hwloc's plugins, all of which find I/O devices or read XML: none adds a core or a unit, and
 * loading them is most of what binding costs at start-up (on Debian, hwloc_xml_libxml brings
 * libxml2 and ICU, hwloc_gl X11, hwloc_opencl and hwloc_pci their libraries: about 8 ms of
 * dlopen and relocation in every run).  hwloc loads every plugin it finds when a process's
 * first topology is initialised, before any per-topology setting applies; its environment
 * variable is the only way to keep them out. */
#define UNUSED_PLUGINS                                                                             \
    "hwloc_xml_libxml,hwloc_pci,hwloc_opencl,hwloc_cuda,hwloc_nvml,hwloc_rsmi,hwloc_levelzero,"    \
    "hwloc_gl"

/* hwloc_topology_init without UNUSED_PLUGINS, unless the user chose what hwloc loads.  The
 * variable is set only for the call: a program that uses hwloc itself (or its children) still
 * finds its plugins.  This runs before the worker threads start; the watchdog thread reads
 * no environment. */
static int topology_init_lean(hwloc_topology_t *topo)
{
    if (getenv("HWLOC_PLUGINS_BLACKLIST") || getenv("HWLOC_PLUGINS_PATH"))
        return hwloc_topology_init(topo);
    setenv("HWLOC_PLUGINS_BLACKLIST", UNUSED_PLUGINS, 1);
    int rc = hwloc_topology_init(topo);
    unsetenv("HWLOC_PLUGINS_BLACKLIST");
    return rc;
}

/* The units this process may use, in binding order: the first unit of every core, core by
 * core, then every core's second unit, and so on.  Returns how many were written (at most
 * max), or -1 when the topology cannot be read. */
static int units_in_order(int *out, int max)
{
    hwloc_topology_t topo;
    if (topology_init_lean(&topo) != 0)
        return -1;
    /* only cores and their units: caches, NUMA details and I/O would cost start-up time */
    hwloc_topology_set_all_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_NONE);
    hwloc_topology_set_type_filter(topo, HWLOC_OBJ_CORE, HWLOC_TYPE_FILTER_KEEP_ALL);
    hwloc_topology_set_type_filter(topo, HWLOC_OBJ_PACKAGE, HWLOC_TYPE_FILTER_KEEP_ALL);
    hwloc_bitmap_t allowed = hwloc_bitmap_alloc();
    unit *u = NULL;
    int *seen = NULL, n = -1;
    if (!allowed || hwloc_topology_load(topo) != 0 ||
        hwloc_get_cpubind(topo, allowed, HWLOC_CPUBIND_PROCESS) != 0)
        goto done;
    int npu = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
    u = malloc(sizeof *u * (size_t)(npu > 0 ? npu : 1));
    seen = calloc((size_t)(npu > 0 ? npu : 1), sizeof *seen);
    if (!u || !seen)
        goto done;
    n = 0;
    for (int i = 0; i < npu; i++) {
        hwloc_obj_t pu = hwloc_get_obj_by_type(topo, HWLOC_OBJ_PU, (unsigned)i);
        if (!hwloc_bitmap_isset(allowed, pu->os_index))
            continue;
        /* a topology without cores (some VMs): each unit is a core of its own */
        hwloc_obj_t core = hwloc_get_ancestor_obj_by_type(topo, HWLOC_OBJ_CORE, pu);
        int c = core && core->logical_index < (unsigned)npu ? (int)core->logical_index : i;
        u[n++] = (unit){seen[c]++, c, (int)pu->os_index};
    }
    qsort(u, (size_t)n, sizeof *u, by_rank_then_core);
    if (n > max)
        n = max;
    for (int i = 0; i < n; i++)
        out[i] = u[i].os;
done:
    free(u);
    free(seen);
    hwloc_bitmap_free(allowed);
    hwloc_topology_destroy(topo);
    return n;
}

int mpr_shm_affinity_plan(int nworkers, int *cpu_of)
{
    if (!(int)mpr_env_number("MPROF_PIN", 1, 0, 1, 1, 0) || nworkers < 1)
        return 0;
    int n = units_in_order(cpu_of, nworkers);
    return n == nworkers ? nworkers : 0; /* more workers than units: the OS time-shares them */
}

void mpr_shm_affinity_bind(int cpu)
{
    static atomic_flag reported = ATOMIC_FLAG_INIT;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    int rc = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    if (rc != 0 && !atomic_flag_test_and_set(&reported))
        fprintf(stderr,
                "mprof: cannot bind a worker thread to CPU %d (error %d); set MPROF_PIN=0\n", cpu,
                rc);
}
