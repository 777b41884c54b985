/* mprof_report.c -- see mprof_report.h. */
#include "mprof_report.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    uint64_t id;
    char *module;
    const char *const *categories;
    int ncats;
    double *sums;
} entry_t;

static char *copy_string(const char *s)
{
    size_t n = strlen(s) + 1;
    char *out = malloc(n);
    if (out != NULL)
        memcpy(out, s, n);
    return out;
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static entry_t *entries;
static size_t nentries, capacity;
static double total_time;
static double (*band_fn)(const double *f);
static double *band_terms;
static int band_nparams;

int mprof_report_enabled(void)
{
    const char *v = getenv("MPROF_REPORT");
    return v != NULL && strcmp(v, "1") == 0;
}

void mprof_report_add(uint64_t id, const char *module, const char *const *categories,
                      const double *costs, int ncats)
{
    if (ncats <= 0 || module == NULL)
        return;
    pthread_mutex_lock(&lock);
    entry_t *e = NULL;
    for (size_t i = 0; i < nentries; i++)
        if (entries[i].id == id && strcmp(entries[i].module, module) == 0) {
            e = &entries[i];
            break;
        }
    if (e == NULL) {
        if (nentries == capacity) {
            size_t cap = capacity ? 2 * capacity : 16;
            entry_t *grown = realloc(entries, cap * sizeof *grown);
            if (grown == NULL)
                goto out;
            entries = grown;
            capacity = cap;
        }
        e = &entries[nentries];
        e->id = id;
        e->module = copy_string(module);
        e->categories = categories;
        e->ncats = ncats;
        e->sums = calloc((size_t)ncats, sizeof(double));
        if (e->module == NULL || e->sums == NULL) {
            free(e->module);
            free(e->sums);
            goto out;
        }
        nentries++;
    }
    for (int c = 0; c < ncats && c < e->ncats; c++)
        e->sums[c] += costs[c];
out:
    pthread_mutex_unlock(&lock);
}

void mprof_report_add_time(double elapsed_s)
{
    pthread_mutex_lock(&lock);
    total_time += elapsed_s;
    pthread_mutex_unlock(&lock);
}

static int by_id(const void *a, const void *b)
{
    const entry_t *x = a, *y = b;
    if (x->id != y->id)
        return x->id < y->id ? -1 : 1;
    return strcmp(x->module, y->module);
}

void mprof_report_print(FILE *out)
{
    pthread_mutex_lock(&lock);
    qsort(entries, nentries, sizeof *entries, by_id);
    double model = 0.0;
    for (size_t i = 0; i < nentries; i++)
        for (int c = 0; c < entries[i].ncats; c++)
            model += entries[i].sums[c];
    /* 3 decimals as in the paper for a second or more, more for short runs (as mprof report) */
    double largest = model > total_time ? model : total_time;
    int d = 3;
    if (largest > 0 && largest < 1) {
        d = 3 + (int)ceil(-log10(largest));
        if (d > 9)
            d = 9;
    }
    int w = d + 4;
    fprintf(out, "*** Cost Profile ***\n");
    for (size_t i = 0; i < nentries; i++) {
        fprintf(out, "Id %llu:", (unsigned long long)entries[i].id);
        for (int c = 0; c < entries[i].ncats; c++)
            fprintf(out, " %s=%*.*f", entries[i].categories[c], w, d, entries[i].sums[c]);
        fprintf(out, "\n");
    }
    fprintf(out, "Time: Model=%*.*f, Total=%*.*f\n", w, d, model, w, d, total_time);
    if (band_fn && band_terms)
        fprintf(out, "Model band (90 %%): +-%*.*f\n", w, d, band_fn(band_terms));
    fflush(out);
    pthread_mutex_unlock(&lock);
}

void mprof_report_reset(void)
{
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < nentries; i++) {
        free(entries[i].module);
        free(entries[i].sums);
    }
    nentries = 0;
    total_time = 0.0;
    if (band_terms)
        memset(band_terms, 0, (size_t)band_nparams * sizeof *band_terms);
    pthread_mutex_unlock(&lock);
}

void mprof_report_bands(double (*halfwidth)(const double *f), int nparams)
{
    pthread_mutex_lock(&lock);
    free(band_terms);
    band_terms = nparams > 0 && halfwidth ? calloc((size_t)nparams, sizeof *band_terms) : NULL;
    band_nparams = band_terms ? nparams : 0;
    band_fn = band_terms ? halfwidth : NULL;
    pthread_mutex_unlock(&lock);
}

int mprof_report_nparams(void)
{
    pthread_mutex_lock(&lock);
    int n = band_nparams;
    pthread_mutex_unlock(&lock);
    return n;
}

void mprof_report_add_terms(const double *f, int nparams)
{
    pthread_mutex_lock(&lock);
    if (band_terms && nparams == band_nparams)
        for (int i = 0; i < nparams; i++)
            band_terms[i] += f[i];
    pthread_mutex_unlock(&lock);
}

static void print_at_exit(void) { mprof_report_print(stdout); }

int mprof_report_atexit(void)
{
    static int registered;
    if (!mprof_report_enabled())
        return 0;
    pthread_mutex_lock(&lock);
    int first = !registered;
    registered = 1;
    pthread_mutex_unlock(&lock);
    if (first)
        atexit(print_at_exit);
    return 1;
}
