/*
 * selfreport.c -- MPROF_MODEL=model.json: the run prints its own Cost Profile at exit, with
 * the model's 90 % bands, and no Python (docs/reports.md, "The program's own report").
 *
 * The model file (`mprof fit`'s SaveModel) is read with json.c; every statistics record is
 * turned into term values by its module's generated term functions (mp_stat_module.term_values)
 * and priced by cost_engine.h (Eigen).  The figures are those of `mprof report RUN --model
 * MODEL` (mprof/report/build.py, _price): per object and category, per PE with its band, per
 * module and category, and the run's total with its band:
 *
 *   band of a time t = q * sqrt(f' Cov f + residual variance)      q: the model's t quantile
 *   residual variance = se^2 * sum t_i^2 (normalised fits) or se^2 * n, over the samples
 *
 * Every process sends its PEs' measured times and records' term values (as text, doubles
 * with 17 digits) to the process that writes the run profile, which prints the report on
 * stderr, or into the file MPROF_REPORT names.
 */
#define _GNU_SOURCE
#include "cost_engine.h"
#include "mpr.h"
#include "mpr_json.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---------------------------------------------------------------------------------- */
/* What each process sends: its PEs and their records' term values                     */
/*   P <pe> <elapsed_s> <cpu_s>                                                         */
/*   M <module> <nterms> <term>...          (once per module, before its first record)   */
/*   R <object id> <module> <value>...      (nterms values; a module without terms: 0)    */

static void put_local(FILE *f)
{
    const mp_stat_module *sent[256];
    int nsent = 0;
    for (int i = mpr_g.local_first; i < mpr_g.local_first + mpr_g.local_count; i++) {
        mpr_pe *pe = mpr_g.pes[i];
        /* the profile's figures, with the profile's rounding (%.9f) */
        fprintf(f, "P %d %.9f %.9f\n", pe->id, pe->t_end - pe->t_start,
                (double)(pe->cpu_end_ns - pe->cpu_start_ns) * 1e-9);
        for (mpr_stats_rec *r = pe->records; r; r = r->next) {
            const mp_stat_module *m = r->module;
            unsigned nt = m->term_values ? m->nterms : 0;
            int known = 0;
            for (int k = 0; k < nsent && !known; k++)
                known = sent[k] == m;
            if (!known) {
                fprintf(f, "M %s %u", m->module, nt);
                for (unsigned t = 0; t < nt; t++)
                    fprintf(f, " %s", m->term_names[t]);
                fputc('\n', f);
                if (nsent < 256)
                    sent[nsent++] = m;
            }
            fprintf(f, "R %llu %s", (unsigned long long)r->object_id, m->module);
            double values[256];
            if (nt > 0 && nt <= 256) {
                m->term_values(r->slots, values);
                for (unsigned t = 0; t < nt; t++)
                    fprintf(f, " %.17g", values[t]);
            }
            fputc('\n', f);
        }
    }
}

/* ---------------------------------------------------------------------------------- */
/* The model                                                                            */

typedef struct {
    char *name;  /* "module:CAT" */
    int nparams; /* its priced parameters (indices into the model's) */
    int *params;
    int module; /* index into model.modules */
} category;

typedef struct {
    char *name;
    int nterms;
    char **terms; /* the interface's terms, in its order */
    int nstats;
    char **stats;
} module_info;

typedef struct {
    int n, ncov;
    char **names; /* parameters: the covariance's first, then the others */
    double *value;
    bool *priced; /* has a value and is not ignored */
    mpr_cost_model *engine;
    int nmodules;
    module_info *modules;
    int ncats;
    category *cats; /* in module order, then interface order */
    double quantile, se;
    bool normalize, per_run;
    const char *measure;
} model;

static char why_buf[512];

static bool failf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why_buf, sizeof why_buf, fmt, ap);
    va_end(ap);
    return false;
}

static int param_index(const model *m, const char *name)
{
    for (int i = 0; i < m->n; i++)
        if (strcmp(m->names[i], name) == 0)
            return i;
    return -1;
}

static bool in_list(const mpr_json *list, const char *name)
{
    for (size_t i = 0; list && list->type == MPR_JARR && i < list->n; i++)
        if (list->items[i].type == MPR_JSTR && strcmp(list->items[i].str, name) == 0)
            return true;
    return false;
}

static char **strings(const mpr_json *list, int *n)
{
    *n = 0;
    if (!list || list->type != MPR_JARR)
        return NULL;
    char **out = calloc(list->n ? list->n : 1, sizeof *out);
    for (size_t i = 0; out && i < list->n; i++)
        if (list->items[i].type == MPR_JSTR)
            out[(*n)++] = strdup(list->items[i].str);
    return out;
}

static double number(const mpr_json *v, double otherwise)
{
    return v && v->type == MPR_JNUM ? v->num : otherwise;
}

static void model_free(model *m)
{
    for (int i = 0; i < m->n; i++)
        free(m->names[i]);
    free(m->names);
    free(m->value);
    free(m->priced);
    mpr_cost_model_free(m->engine);
    for (int i = 0; i < m->nmodules; i++) {
        for (int t = 0; t < m->modules[i].nterms; t++)
            free(m->modules[i].terms[t]);
        for (int t = 0; t < m->modules[i].nstats; t++)
            free(m->modules[i].stats[t]);
        free(m->modules[i].terms);
        free(m->modules[i].stats);
        free(m->modules[i].name);
    }
    free(m->modules);
    for (int i = 0; i < m->ncats; i++) {
        free(m->cats[i].name);
        free(m->cats[i].params);
    }
    free(m->cats);
}

static bool model_load(model *m, const mpr_json *doc)
{
    memset(m, 0, sizeof *m);
    const mpr_json *schema = mpr_json_get(doc, "schema"), *version = mpr_json_get(doc, "version");
    if (!schema || schema->type != MPR_JSTR || strcmp(schema->str, "mprof.model") != 0)
        return failf("not an mprof model file (schema is not 'mprof.model')");
    if (number(version, 0) != 1 && number(version, 0) != 2)
        return failf("model version %g is not supported (1 and 2 are)", number(version, 0));
    const mpr_json *params = mpr_json_get(doc, "parameters");
    const mpr_json *fitted = mpr_json_get(doc, "fitted");
    const mpr_json *covp = mpr_json_get(doc, "covariance_parameters");
    const mpr_json *cov = mpr_json_get(doc, "covariance");
    const mpr_json *ignored = mpr_json_get(doc, "ignored");
    const mpr_json *quality = mpr_json_get(doc, "quality");
    const mpr_json *settings = mpr_json_get(doc, "settings");
    const mpr_json *ifaces = mpr_json_get(doc, "interfaces");
    if (!params || params->type != MPR_JOBJ || !cov || cov->type != MPR_JARR)
        return failf("malformed model file: no parameters or covariance");
    if (!covp)
        covp = fitted;
    if (!covp || covp->type != MPR_JARR || cov->n != covp->n)
        return failf("malformed model file: the covariance does not match its parameters");
    /* parameters: the covariance's, then the others */
    m->ncov = (int)covp->n;
    m->names = calloc(covp->n + params->n + 1, sizeof *m->names);
    if (!m->names)
        return failf("out of memory");
    for (size_t i = 0; i < covp->n; i++) {
        if (covp->items[i].type != MPR_JSTR)
            return failf("malformed model file: a covariance parameter is not a name");
        m->names[m->n++] = strdup(covp->items[i].str);
    }
    for (size_t i = 0; i < params->n; i++)
        if (param_index(m, params->keys[i]) < 0)
            m->names[m->n++] = strdup(params->keys[i]);
    m->value = calloc((size_t)m->n + 1, sizeof *m->value);
    m->priced = calloc((size_t)m->n + 1, sizeof *m->priced);
    double *own = calloc((size_t)m->n + 1, sizeof *own);
    double *c = calloc((size_t)(m->ncov * m->ncov) + 1, sizeof *c);
    if (!m->value || !m->priced || !own || !c) {
        free(own);
        free(c);
        return failf("out of memory");
    }
    /* the quantile of the 90 % band: the one the fit recorded, for its confidence of 0.90 */
    double confidence = number(mpr_json_get(settings, "confidence"), 0.90);
    m->quantile = number(mpr_json_get(quality, "t_quantile"), NAN);
    if (fabs(confidence - 0.90) > 1e-12 || !(m->quantile > 0)) {
        free(own);
        free(c);
        return failf("the model records no t quantile of a 90 %% interval (quality.t_quantile)");
    }
    double se = number(mpr_json_get(quality, "residual_se"), NAN);
    if (isnan(se)) { /* version 1 files */
        double chi = number(mpr_json_get(quality, "chi_square"), NAN);
        double dof = number(mpr_json_get(quality, "dof"), 0);
        se = dof > 0 && !isnan(chi) ? sqrt(chi / dof) : NAN;
    }
    m->se = se;
    const mpr_json *norm = mpr_json_get(settings, "normalize");
    m->normalize = norm && norm->type == MPR_JBOOL && norm->boolean;
    const mpr_json *gran = mpr_json_get(settings, "granularity");
    m->per_run = gran && gran->type == MPR_JSTR && strcmp(gran->str, "run") == 0;
    const mpr_json *measure = mpr_json_get(settings, "measure");
    m->measure = measure && measure->type == MPR_JSTR && strcmp(measure->str, "cpu") == 0
                     ? "cpu"
                     : "elapsed";
    for (int i = 0; i < m->n; i++) {
        const mpr_json *p = mpr_json_get(params, m->names[i]);
        if (!p)
            continue; /* in the covariance but without a value: never priced */
        const mpr_json *v = mpr_json_get(p, "value");
        if (!v || v->type != MPR_JNUM) {
            free(own);
            free(c);
            return failf("malformed model file: parameter %s has no value", m->names[i]);
        }
        m->value[i] = v->num;
        m->priced[i] = !in_list(ignored, m->names[i]);
        double h = number(mpr_json_get(p, "halfwidth"), NAN);
        own[i] = isnan(h) ? 0.0 : (h / m->quantile) * (h / m->quantile);
    }
    for (int i = 0; i < m->ncov; i++) {
        const mpr_json *row = &cov->items[i];
        if (row->type != MPR_JARR || (int)row->n != m->ncov) {
            free(own);
            free(c);
            return failf("malformed model file: the covariance is not %d x %d", m->ncov, m->ncov);
        }
        for (int j = 0; j < m->ncov; j++)
            c[i * m->ncov + j] = number(&row->items[j], 0.0);
    }
    m->engine = mpr_cost_model_new(m->n, m->value, m->ncov, c, own);
    free(own);
    free(c);
    if (!m->engine)
        return failf("out of memory");
    /* modules and their categories (the ones with a priced term, as Model.categories_of) */
    if (!ifaces || ifaces->type != MPR_JOBJ)
        return failf("malformed model file: no interfaces");
    m->modules = calloc(ifaces->n + 1, sizeof *m->modules);
    size_t maxcats = 0;
    for (size_t i = 0; i < ifaces->n; i++) {
        const mpr_json *cats = mpr_json_get(&ifaces->items[i], "categories");
        maxcats += cats && cats->type == MPR_JOBJ ? cats->n : 0;
    }
    m->cats = calloc(maxcats + 1, sizeof *m->cats);
    if (!m->modules || !m->cats)
        return failf("out of memory");
    for (size_t i = 0; i < ifaces->n; i++) {
        module_info *mi = &m->modules[m->nmodules++];
        mi->name = strdup(ifaces->keys[i]);
        mi->terms = strings(mpr_json_get(&ifaces->items[i], "terms"), &mi->nterms);
        mi->stats = strings(mpr_json_get(&ifaces->items[i], "statistics"), &mi->nstats);
        const mpr_json *cats = mpr_json_get(&ifaces->items[i], "categories");
        for (size_t k = 0; cats && cats->type == MPR_JOBJ && k < cats->n; k++) {
            const mpr_json *terms = &cats->items[k];
            category *cat = &m->cats[m->ncats];
            cat->params = calloc(terms->n + 1, sizeof *cat->params);
            if (!cat->params)
                return failf("out of memory");
            bool any = false;
            for (size_t t = 0; t < terms->n; t++) {
                if (terms->items[t].type != MPR_JSTR)
                    continue;
                char name[512];
                snprintf(name, sizeof name, "%s:%s", mi->name, terms->items[t].str);
                int p = param_index(m, name);
                if (p >= 0 && m->priced[p]) {
                    cat->params[cat->nparams++] = p;
                    any = true;
                }
            }
            if (!any) {
                free(cat->params);
                cat->params = NULL;
                continue;
            }
            char name[512];
            snprintf(name, sizeof name, "%s:%s", mi->name, cats->keys[k]);
            cat->name = strdup(name);
            cat->module = (int)i;
            m->ncats++;
        }
    }
    return true;
}

/* ---------------------------------------------------------------------------------- */
/* The run, as the writer of the report received it                                     */

typedef struct {
    char *name;
    int nterms;
    char **terms;
    int model_module; /* index into model.modules, or -1 */
    int *param_of;    /* per term: the model's parameter index, or -1 */
    const char *problem;
} run_module;

typedef struct {
    uint64_t id;
    int module; /* index into run.modules */
    int pe;
    double *terms; /* nterms values */
} run_record;

typedef struct {
    int pe;
    double elapsed, cpu;
} run_pe;

typedef struct {
    int npes, nmodules, nrecords;
    run_pe *pes;
    run_module *modules;
    run_record *records;
} run_data;

static void run_free(run_data *r)
{
    for (int i = 0; i < r->nmodules; i++) {
        for (int t = 0; t < r->modules[i].nterms; t++)
            free(r->modules[i].terms[t]);
        free(r->modules[i].terms);
        free(r->modules[i].name);
        free(r->modules[i].param_of);
    }
    for (int i = 0; i < r->nrecords; i++)
        free(r->records[i].terms);
    free(r->modules);
    free(r->records);
    free(r->pes);
}

static int run_module_index(const run_data *r, const char *name)
{
    for (int i = 0; i < r->nmodules; i++)
        if (strcmp(r->modules[i].name, name) == 0)
            return i;
    return -1;
}

static bool run_parse(run_data *r, char *text)
{
    memset(r, 0, sizeof *r);
    size_t lines = 1;
    for (char *p = text; *p; p++)
        lines += *p == '\n';
    r->pes = calloc(lines, sizeof *r->pes);
    r->modules = calloc(lines, sizeof *r->modules);
    r->records = calloc(lines, sizeof *r->records);
    if (!r->pes || !r->modules || !r->records)
        return failf("out of memory");
    char *save = NULL;
    int pe = -1;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *tok_save = NULL;
        char *kind = strtok_r(line, " ", &tok_save);
        if (!kind)
            continue;
        if (strcmp(kind, "P") == 0) {
            run_pe *p = &r->pes[r->npes++];
            p->pe = pe = atoi(strtok_r(NULL, " ", &tok_save));
            p->elapsed = strtod(strtok_r(NULL, " ", &tok_save), NULL);
            p->cpu = strtod(strtok_r(NULL, " ", &tok_save), NULL);
        } else if (strcmp(kind, "M") == 0) {
            char *name = strtok_r(NULL, " ", &tok_save);
            int nt = atoi(strtok_r(NULL, " ", &tok_save));
            if (run_module_index(r, name) >= 0)
                continue; /* sent by another process too */
            run_module *m = &r->modules[r->nmodules++];
            m->name = strdup(name);
            m->terms = calloc((size_t)nt + 1, sizeof *m->terms);
            if (!m->name || !m->terms)
                return failf("out of memory");
            for (int t = 0; t < nt; t++)
                m->terms[m->nterms++] = strdup(strtok_r(NULL, " ", &tok_save));
        } else if (strcmp(kind, "R") == 0) {
            run_record *rec = &r->records[r->nrecords++];
            rec->id = strtoull(strtok_r(NULL, " ", &tok_save), NULL, 10);
            rec->module = run_module_index(r, strtok_r(NULL, " ", &tok_save));
            rec->pe = pe;
            int nt = rec->module >= 0 ? r->modules[rec->module].nterms : 0;
            rec->terms = calloc((size_t)nt + 1, sizeof *rec->terms);
            if (!rec->terms)
                return failf("out of memory");
            for (int t = 0; t < nt; t++) {
                char *v = strtok_r(NULL, " ", &tok_save);
                rec->terms[t] = v ? strtod(v, NULL) : 0.0;
            }
        }
    }
    return true;
}

/* Which model module and parameters each module of the run maps to, or why it cannot be
 * priced (as the report, an object of a module the model lacks is "unmodelled"). */
static void run_bind(run_data *r, const model *m)
{
    for (int i = 0; i < r->nmodules; i++) {
        run_module *rm = &r->modules[i];
        rm->model_module = -1;
        rm->param_of = calloc((size_t)rm->nterms + 1, sizeof *rm->param_of);
        for (int k = 0; k < m->nmodules; k++)
            if (strcmp(m->modules[k].name, rm->name) == 0)
                rm->model_module = k;
        if (rm->model_module < 0) {
            rm->problem = "no model for this module";
            continue;
        }
        const module_info *mi = &m->modules[rm->model_module];
        bool same = mi->nterms == rm->nterms;
        for (int t = 0; same && t < rm->nterms; t++)
            same = strcmp(mi->terms[t], rm->terms[t]) == 0;
        if (!same || !rm->param_of) {
            rm->problem = "the model's interface of this module has other terms than the "
                          "program's";
            continue;
        }
        for (int t = 0; t < rm->nterms; t++) {
            char name[512];
            snprintf(name, sizeof name, "%s:%s", rm->name, rm->terms[t]);
            int p = param_index(m, name);
            rm->param_of[t] = p >= 0 && m->priced[p] ? p : -1;
        }
    }
}

/* Adds a record's term values to f (one slot per model parameter). */
static void add_terms(double *f, const run_data *r, const run_record *rec)
{
    const run_module *rm = &r->modules[rec->module];
    for (int t = 0; t < rm->nterms; t++)
        if (rm->param_of[t] >= 0)
            f[rm->param_of[t]] += rec->terms[t];
}

static bool priced(const run_data *r, const run_record *rec)
{
    return rec->module >= 0 && !r->modules[rec->module].problem;
}

/* The categories of one module priced for term values f: seconds and half widths. */
static void price_category(const model *m, const category *cat, const double *f, double *scratch,
                           double *seconds, double *variance)
{
    memset(scratch, 0, (size_t)m->n * sizeof *scratch);
    for (int k = 0; k < cat->nparams; k++)
        scratch[cat->params[k]] = f[cat->params[k]];
    mpr_cost_price(m->engine, scratch, seconds, variance);
}

static double residual_variance(const model *m, const double *t, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += m->normalize ? t[i] * t[i] : 1.0;
    return m->se * m->se * s;
}

static double band(const model *m, double variance, const double *t, int n)
{
    return m->quantile * sqrt(fmax(variance, 0.0) + residual_variance(m, t, n));
}

static int cmp_record(const void *a, const void *b, void *ctx)
{
    const run_record *x = a, *y = b;
    const run_data *r = ctx;
    if (x->id != y->id)
        return x->id < y->id ? -1 : 1;
    int c = strcmp(x->module >= 0 ? r->modules[x->module].name : "",
                   y->module >= 0 ? r->modules[y->module].name : "");
    return c ? c : x->pe - y->pe;
}

static void report(FILE *out, const char *path, const model *m, run_data *r)
{
    int n = m->n;
    double *f = calloc((size_t)n + 1, sizeof *f), *all = calloc((size_t)n + 1, sizeof *all);
    double *scratch = calloc((size_t)n + 1, sizeof *scratch);
    double *pe_model = calloc((size_t)r->npes + 1, sizeof *pe_model);
    if (!f || !all || !scratch || !pe_model) {
        fprintf(stderr, "mprof: MPROF_MODEL: out of memory; no Cost Profile\n");
        goto done;
    }
    bool cpu = strcmp(m->measure, "cpu") == 0;
    fprintf(out,
            "*** Cost Profile (model %s; %s seconds summed over PEs; +- 90 %% half widths) ***\n",
            path, cpu ? "CPU" : "elapsed");
    /* objects: (id, module) over PEs, sorted as the report sorts them */
    qsort_r(r->records, (size_t)r->nrecords, sizeof *r->records, cmp_record, r);
    for (int i = 0; i < r->nrecords;) {
        int j = i;
        memset(f, 0, (size_t)n * sizeof *f);
        while (j < r->nrecords && r->records[j].id == r->records[i].id &&
               r->records[j].module == r->records[i].module)
            j++;
        const run_record *rec = &r->records[i];
        if (priced(r, rec)) {
            for (int k = i; k < j; k++)
                add_terms(f, r, &r->records[k]);
            const run_module *rm = &r->modules[rec->module];
            fprintf(out, "Id %llu (%s):", (unsigned long long)rec->id, rm->name);
            for (int c = 0; c < m->ncats; c++) {
                if (m->cats[c].module != rm->model_module)
                    continue;
                double s, v;
                price_category(m, &m->cats[c], f, scratch, &s, &v);
                fprintf(out, " %s= %.12g +- %.12g", strchr(m->cats[c].name, ':') + 1, s,
                        m->quantile * sqrt(fmax(v, 0.0)));
            }
            fputc('\n', out);
        }
        i = j;
    }
    int unmodelled = 0;
    for (int i = 0; i < r->nrecords; i++) {
        const run_record *rec = &r->records[i];
        if (priced(r, rec) ||
            (i > 0 && rec->id == r->records[i - 1].id && rec->module == r->records[i - 1].module))
            continue;
        fprintf(out, "%s Id %llu (%s: %s)",
                unmodelled++ ? "," : "Unmodelled:", (unsigned long long)rec->id,
                rec->module >= 0 ? r->modules[rec->module].name : "?",
                rec->module >= 0 ? r->modules[rec->module].problem : "unknown module");
    }
    if (unmodelled)
        fputc('\n', out);
    /* PEs */
    double measured_total = 0;
    for (int p = 0; p < r->npes; p++) {
        memset(f, 0, (size_t)n * sizeof *f);
        for (int i = 0; i < r->nrecords; i++)
            if (r->records[i].pe == r->pes[p].pe && priced(r, &r->records[i]))
                add_terms(f, r, &r->records[i]);
        double s, v;
        mpr_cost_price(m->engine, f, &s, &v);
        pe_model[p] = s;
        double measured = cpu ? r->pes[p].cpu : r->pes[p].elapsed;
        measured_total += measured;
        fprintf(out, "PE %d: Model= %.12g +- %.12g, Measured= %.12g\n", r->pes[p].pe, s,
                band(m, v, &s, 1), measured);
    }
    /* where the time went: per module and category */
    memset(all, 0, (size_t)n * sizeof *all);
    for (int i = 0; i < r->nrecords; i++)
        if (priced(r, &r->records[i]))
            add_terms(all, r, &r->records[i]);
    fprintf(out, "Where:");
    for (int c = 0; c < m->ncats; c++) {
        bool seen = false;
        for (int k = 0; k < r->nmodules && !seen; k++)
            seen = !r->modules[k].problem && r->modules[k].model_module == m->cats[c].module;
        if (!seen)
            continue;
        double s, v;
        price_category(m, &m->cats[c], all, scratch, &s, &v);
        fprintf(out, " %s= %.12g +- %.12g", m->cats[c].name, s, m->quantile * sqrt(fmax(v, 0.0)));
    }
    fputc('\n', out);
    double total, variance;
    mpr_cost_price(m->engine, all, &total, &variance);
    double hw = m->per_run ? band(m, variance, &total, 1) : band(m, variance, pe_model, r->npes);
    fprintf(out, "Time: Model= %.12g +- %.12g (parameters +- %.12g), Total= %.12g\n", total, hw,
            m->quantile * sqrt(fmax(variance, 0.0)), measured_total);
done:
    free(f);
    free(all);
    free(scratch);
    free(pe_model);
}

/* A model file is a few kilobytes per module; far larger is not one (or not a file at all:
 * /dev/zero would be read until memory ran out). */
#define MODEL_MAX_BYTES ((size_t)64 << 20)

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        failf("cannot read: %s", strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        fclose(f);
        failf("not a regular file");
        return NULL;
    }
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len > MODEL_MAX_BYTES) {
            free(buf);
            fclose(f);
            failf("larger than %zu MiB: not a model file", MODEL_MAX_BYTES >> 20);
            return NULL;
        }
        if (len + 4096 + 1 > cap) {
            cap = 2 * cap + 8192;
            char *b = realloc(buf, cap);
            if (!b) {
                free(buf);
                fclose(f);
                failf("out of memory");
                return NULL;
            }
            buf = b;
        }
        size_t got = fread(buf + len, 1, 4096, f);
        len += got;
        if (got < 4096)
            break;
    }
    bool bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        failf("cannot read: %s", strerror(errno));
        return NULL;
    }
    buf[len] = '\0';
    if (strlen(buf) != len) {
        free(buf);
        failf("not a text file");
        return NULL;
    }
    return buf;
}

void mpr_self_report(void)
{
    const char *path = getenv("MPROF_MODEL");
    bool mine = path && *path;
    if (mpr_machine_max_all(mine ? 1.0 : 0.0) == 0)
        return; /* collective below: every process decides alike */
    char *local = NULL, *all = NULL;
    size_t local_len = 0, all_len = 0;
    FILE *f = open_memstream(&local, &local_len);
    if (f) {
        put_local(f);
        fclose(f);
    }
    int writer = mpr_machine_gather(local ? local : "", local ? local_len : 0, &all, &all_len);
    free(local);
    if (writer != 1) {
        free(all);
        return;
    }
    if (!mine) {
        fprintf(stderr, "mprof: MPROF_MODEL is set on other ranks but not on rank 0; no Cost "
                        "Profile\n");
        free(all);
        return;
    }
    char *text = read_file(path);
    mpr_json *doc = NULL;
    model m;
    run_data r;
    memset(&m, 0, sizeof m);
    memset(&r, 0, sizeof r);
    bool ok = text != NULL;
    if (ok) {
        char why[200];
        doc = mpr_json_parse(text, why, sizeof why);
        ok = doc || failf("not valid JSON: %s", why);
    }
    ok = ok && model_load(&m, doc);
    ok = ok && run_parse(&r, all ? all : (char *)"");
    if (!ok) {
        fprintf(stderr, "mprof: MPROF_MODEL: %s: %s; no Cost Profile\n", path, why_buf);
    } else {
        run_bind(&r, &m);
        const char *dest = getenv("MPROF_REPORT");
        FILE *out = stderr;
        if (dest && *dest && strcmp(dest, "1") != 0) {
            out = fopen(dest, "w");
            if (!out) {
                fprintf(stderr,
                        "mprof: MPROF_REPORT: cannot write %s: %s; the Cost Profile "
                        "goes to stderr\n",
                        dest, strerror(errno));
                out = stderr;
            }
        }
        report(out, path, &m, &r);
        if (out != stderr && fclose(out) != 0)
            fprintf(stderr, "mprof: MPROF_REPORT: cannot write %s: %s\n", dest, strerror(errno));
    }
    run_free(&r);
    model_free(&m);
    mpr_json_free(doc);
    free(text);
    free(all);
}
