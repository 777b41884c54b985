/*
 * profile.c -- writes the run profile (docs/run-profile.md) after the PEs have stopped.  Each
 * process renders its own PEs' sections; the backend gathers them (MPI: to rank 0, which
 * writes the one document).
 */
#define _GNU_SOURCE
#include "mpr.h"
#include "mpr_json.h"
#include "papictr.h"

#include <errno.h>
#include <math.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SCHEMA_VERSION 2

/* A JSON string of s.  Bytes that are not UTF-8 (a command-line argument or a host name in
 * another encoding; the names the program gives are checked where it gives them) are written
 * as U+FFFD each: the document stays one that readers accept. */
static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    const unsigned char *u = (const unsigned char *)s;
    while (u && *u) {
        unsigned char c = *u;
        size_t n = mpr_utf8_seq(u);
        if (n == 0) {
            fputs("\\ufffd", f);
            n = 1;
        } else if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fwrite(u, 1, n, f);
        u += n;
    }
    fputc('"', f);
}

static void cpu_model(char *buf, size_t len)
{
    snprintf(buf, len, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) == 0) {
            char *v = strchr(line, ':');
            if (v) {
                v++;
                while (*v == ' ')
                    v++;
                v[strcspn(v, "\n")] = 0;
                snprintf(buf, len, "%s", v);
            }
            break;
        }
    }
    fclose(f);
}

static uint64_t fnv1a(uint64_t h, const char *s)
{
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h;
}

typedef struct {
    FILE *f;
    int first;
} param_ctx;

static void put_param(const char *name, double value, void *p)
{
    param_ctx *c = p;
    fprintf(c->f, "%s", c->first ? "" : ", ");
    json_string(c->f, name);
    fprintf(c->f, ": %.17g", value);
    c->first = 0;
}

/* Why a statistic has no value in the profile, or NULL when it has one. */
static const char *absent_why(const mp_stat_field *field, uint64_t slot)
{
    const char *why = mpr_papi_absent(field);
    if (why || field->type != MP_STAT_F64)
        return why;
    double d;
    memcpy(&d, &slot, sizeof d);
    return isfinite(d) ? NULL : isnan(d) ? "the value was NaN" : "the value was infinite";
}

static void put_stat(FILE *f, const mp_stat_field *field, uint64_t slot)
{
    json_string(f, field->name);
    switch (field->type) {
    case MP_STAT_I64:
        fprintf(f, ": %" PRId64, (int64_t)slot);
        break;
    case MP_STAT_F64: {
        double d;
        memcpy(&d, &slot, sizeof d);
        fprintf(f, ": %.17g", d);
        break;
    }
    default:
        fprintf(f, ": %" PRIu64, slot);
    }
}

/* The PE's CPU time by access category (sample.c): the CPU time its samples charged, scaled
 * so that the rows add up to cpu_s.  A PE with no sample (sampling off, or less time than one
 * sample period) has no "categories" key: its time cannot be split. */
static void put_categories(FILE *f, const mpr_pe *pe)
{
    uint64_t total = 0, samples = 0;
    for (int i = 0; i < MPR_SAMPLE_SLOTS; i++) {
        total += pe->sample_ns[i];
        samples += pe->samples[i];
    }
    if (!samples || !total)
        return;
    double cpu_s = (double)(pe->cpu_end_ns - pe->cpu_start_ns) * 1e-9;
    fprintf(f, ",\n     \"categories\": [");
    int first = 1;
    for (int i = 0; i < MPR_SAMPLE_SLOTS; i++) {
        if (!pe->sample_ns[i])
            continue; /* a row may rest on the closing charges alone (samples 0) */
        fprintf(f, "%s\n       {\"access\": ", first ? "" : ",");
        json_string(f, i == MPR_SAMPLE_SCHED  ? "(scheduler)"
                       : i == MPR_SAMPLE_IDLE ? "(idle)"
                                              : mpr_access_name(i));
        fprintf(f, ", \"cpu_s\": %.9f, \"samples\": %" PRIu64 "}",
                cpu_s * (double)pe->sample_ns[i] / (double)total, pe->samples[i]);
        first = 0;
    }
    fprintf(f, "]");
}

static void put_pe(FILE *f, mpr_pe *pe)
{
    fprintf(f,
            "    {\"pe\": %d, \"elapsed_s\": %.9f, \"idle_s\": %.9f, \"cpu_s\": %.9f, "
            "\"idle_cpu_s\": %.9f,\n",
            pe->id, pe->t_end - pe->t_start, (double)pe->c_total * 1e-9,
            (double)(pe->cpu_end_ns - pe->cpu_start_ns) * 1e-9, (double)pe->idle_cpu_ns * 1e-9);
    fprintf(f, "     \"objects\": [");
    int first = 1;
    for (mpr_stats_rec *r = pe->records; r; r = r->next) {
        fprintf(f, "%s\n       {\"id\": %" PRIu64 ", \"module\": ", first ? "" : ",", r->object_id);
        json_string(f, r->module->module);
        fprintf(f, ", \"stats\": {");
        /* a statistic bound to a PAPI event that could not be counted is absent, not 0, and
         * so is a double that holds no number JSON can write (NaN, infinity) */
        int absent = 0, sep = 0;
        for (unsigned i = 0; i < r->module->nfields; i++) {
            if (absent_why(&r->module->fields[i], r->slots[i])) {
                absent++;
                if (!mpr_papi_absent(&r->module->fields[i]))
                    fprintf(stderr,
                            "mprof: warning: PE %d: statistic %s:%s of object %" PRIu64
                            " is not a finite number; the run profile lists it as absent\n",
                            pe->id, r->module->module, r->module->fields[i].name, r->object_id);
                continue;
            }
            fprintf(f, "%s", sep++ ? ", " : "");
            put_stat(f, &r->module->fields[i], r->slots[i]);
        }
        fprintf(f, "}");
        if (absent) {
            fprintf(f, ", \"absent\": {");
            sep = 0;
            for (unsigned i = 0; i < r->module->nfields; i++) {
                const char *why = absent_why(&r->module->fields[i], r->slots[i]);
                if (!why)
                    continue;
                fprintf(f, "%s", sep++ ? ", " : "");
                json_string(f, r->module->fields[i].name);
                fprintf(f, ": ");
                json_string(f, why);
            }
            fprintf(f, "}");
        }
        fprintf(f, "}");
        first = 0;
    }
    fprintf(f, "],\n     \"latency\": [");
    first = 1;
    int n = mpr_access_count();
    for (int a = 0; a < n; a++)
        for (int e = 0; e < n; e++) {
            mpr_latency *l = &pe->latency[e][a];
            if (!l->count)
                continue;
            fprintf(f, "%s\n       {\"access\": ", first ? "" : ",");
            json_string(f, mpr_access_name(a));
            fprintf(f, ", \"enabler\": ");
            json_string(f, mpr_access_name(e));
            fprintf(f, ", \"count\": %" PRIu64 ", \"observed_s\": %.9f, \"critical_s\": %.9f}",
                    l->count, l->observed_ns * 1e-9, l->critical_ns * 1e-9);
            first = 0;
        }
    fprintf(f, "]");
    put_categories(f, pe);
    fprintf(f, "}");
}

/* "interfaces": the modules with statistics records on this process's PEs (MPI: rank 0's, which
 * writes the document), each once with the digest its generated hooks carry. */
static void put_interfaces(FILE *f)
{
    enum { MAX_MODULES = 256 };
    const mp_stat_module *seen[MAX_MODULES];
    int n = 0;
    fprintf(f, "  \"interfaces\": [");
    for (int i = mpr_g.local_first; i < mpr_g.local_first + mpr_g.local_count; i++) {
        for (mpr_stats_rec *r = mpr_g.pes[i]->records; r; r = r->next) {
            const mp_stat_module *m = r->module;
            int known = 0;
            for (int k = 0; k < n && !known; k++)
                known = seen[k] == m || strcmp(seen[k]->module, m->module) == 0;
            if (known || !m->digest || n == MAX_MODULES)
                continue;
            seen[n] = m;
            fprintf(f, "%s{\"name\": ", n ? ", " : "");
            json_string(f, m->module);
            fprintf(f, ", \"digest\": ");
            json_string(f, m->digest);
            fputc('}', f);
            n++;
        }
    }
    fprintf(f, "],\n");
}

/* What `put` writes, in memory: the pieces of the document that each process renders and the
 * machine layer gathers (MPI: to rank 0).  NULL when memory runs out. */
static char *render(void (*put)(FILE *f), size_t *len)
{
    char *buf = NULL;
    *len = 0;
    FILE *f = open_memstream(&buf, len);
    if (!f)
        return NULL;
    put(f);
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* This process's PE sections (all PEs on shm, one on MPI), each followed by ",\n": the same
 * rendering serves both backends; the machine layer gathers the pieces in PE order. */
static void put_local_pes(FILE *f)
{
    for (int i = mpr_g.local_first; i < mpr_g.local_first + mpr_g.local_count; i++) {
        put_pe(f, mpr_g.pes[i]);
        fputs(",\n", f);
    }
}

/* This process's access categories, each a JSON string on a line of its own (json_string
 * escapes a newline, so none is inside one). */
static void put_local_accesses(FILE *f)
{
    for (int a = 0; a < mpr_access_count(); a++) {
        json_string(f, mpr_access_name(a));
        fputc('\n', f);
    }
}

/* "accesses": every category registered in any process, each once, in the order of the
 * gathered lists (on MPI, rank 0's first).  Under MPI a library may register a category on
 * the ranks that use it only; their PEs' latency and category rows name it, and the database
 * refuses rows that name a category the document does not list. */
static void put_accesses(FILE *f, const char *all, size_t len)
{
    fprintf(f, "  \"accesses\": [");
    int first = 1;
    for (size_t at = 0; at < len;) {
        const char *line = all + at, *nl = memchr(line, '\n', len - at);
        size_t n = nl ? (size_t)(nl - line) : len - at;
        at += n + 1;
        int seen = 0;
        for (size_t b = 0; b < (size_t)(line - all) && !seen;) {
            const char *prev = all + b, *pnl = memchr(prev, '\n', (size_t)(line - prev));
            size_t pn = (size_t)(pnl - prev); /* every earlier line ends in a newline */
            seen = pn == n && memcmp(prev, line, n) == 0;
            b += pn + 1;
        }
        if (seen || !n)
            continue;
        fprintf(f, "%s%.*s", first ? "" : ", ", (int)n, line);
        first = 0;
    }
    fprintf(f, "],\n");
}

/* The profile is written to a temporary file in the target's folder and renamed over the
 * target once it is complete and on disk, so a full disk or a crash leaves the previous
 * profile (or none), never a cut-off document.  A target that exists and is not a regular
 * file (/dev/stdout, a pipe) is written in place: renaming over it would replace it. */
static FILE *open_profile(const char *path, char **tmp)
{
    struct stat st;
    *tmp = NULL;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
        return fopen(path, "w");
    const char *slash = strrchr(path, '/');
    size_t dir_len = slash ? (size_t)(slash - path) + 1 : 0;
    const char *base = slash ? slash + 1 : path;
    size_t n = dir_len + strlen(base) + 16;
    char *name = malloc(n);
    if (!name) {
        errno = ENOMEM;
        return NULL;
    }
    snprintf(name, n, "%.*s.%s.XXXXXX", (int)dir_len, path, base);
    int fd = mkstemp(name);
    if (fd < 0) {
        int e = errno;
        free(name);
        errno = e;
        return NULL;
    }
    mode_t mask = umask(0);
    umask(mask);
    fchmod(fd, 0666 & ~mask);
    FILE *f = fdopen(fd, "w");
    if (!f) {
        int e = errno;
        close(fd);
        unlink(name);
        free(name);
        errno = e;
        return NULL;
    }
    *tmp = name;
    return f;
}

static int close_profile(FILE *f, const char *path, char *tmp)
{
    int err = 0;
    if (fflush(f) != 0 || ferror(f))
        err = errno ? errno : EIO;
    if (!err && tmp && fsync(fileno(f)) != 0)
        err = errno;
    if (fclose(f) != 0 && !err)
        err = errno;
    if (!err && tmp && rename(tmp, path) != 0)
        err = errno;
    if (tmp) {
        if (err)
            unlink(tmp);
        free(tmp);
    }
    if (err) {
        fprintf(stderr, "mprof: cannot write the run profile to %s: %s\n", path, strerror(err));
        return -1;
    }
    return 0;
}

int mpr_profile_write(const char *path)
{
    /* collective part first (MPI: every rank takes part, rank 0 writes the document) */
    double elapsed = 0;
    for (int i = mpr_g.local_first; i < mpr_g.local_first + mpr_g.local_count; i++)
        if (mpr_g.pes[i]->t_end - mpr_g.t_start > elapsed)
            elapsed = mpr_g.pes[i]->t_end - mpr_g.t_start;
    elapsed = mpr_machine_max_all(elapsed);
    size_t mine_len, all_len = 0, acc_len, acc_all_len = 0;
    char *mine = render(put_local_pes, &mine_len), *all = NULL;
    int writer = mpr_machine_gather(mine ? mine : "", mine ? mine_len : 0, &all, &all_len);
    char *acc = render(put_local_accesses, &acc_len), *acc_all = NULL;
    int acc_writer = mpr_machine_gather(acc ? acc : "", acc ? acc_len : 0, &acc_all, &acc_all_len);
    bool rendered = mine && acc;
    free(mine);
    free(acc);
    if (writer == 0)
        return rendered ? 0 : -1;
    if (writer < 0 || acc_writer < 0 || !rendered || all_len < 2) {
        fprintf(stderr, "mprof: cannot collect the PE sections of the run profile\n");
        free(all);
        free(acc_all);
        return -1;
    }
    all_len -= 2; /* the last section's ",\n" */

    char *tmp = NULL;
    /* a symbolic link: the file it points to is replaced, not the link */
    struct stat lst;
    char *real = lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode) ? realpath(path, NULL) : NULL;
    FILE *f = open_profile(real ? real : path, &tmp);
    if (!f) {
        fprintf(stderr, "mprof: cannot write the run profile to %s: %s\n", path, strerror(errno));
        free(all);
        free(acc_all);
        free(real);
        return -1;
    }
    char host[256] = "unknown", cpu[256];
    gethostname(host, sizeof host - 1);
    cpu_model(cpu, sizeof cpu);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    char cores_s[32];
    snprintf(cores_s, sizeof cores_s, "%ld", cores);
    uint64_t fp = fnv1a(fnv1a(fnv1a(1469598103934665603ull, host), cpu), cores_s);

    const mp_config *cfg = &mpr_g.cfg;
    fprintf(f, "{\n  \"schema\": \"mprof.run-profile\",\n  \"schema_version\": %d,\n",
            SCHEMA_VERSION);
    fprintf(f, "  \"program\": ");
    json_string(f, cfg->program);
    fprintf(f, ",\n  \"argv\": [");
    for (int i = 0; i < mpr_g.argc; i++) {
        fprintf(f, "%s", i ? ", " : "");
        json_string(f, mpr_g.argv[i]);
    }
    fprintf(f, "],\n  \"backend\": \"%s\",\n  \"npes\": %d,\n  \"started_at\": \"%s\",\n",
            mpr_m->name, mpr_g.npes, mpr_g.started_at);
    fprintf(f, "  \"elapsed_s\": %.9f,\n  \"machine\": {\"hostname\": ", elapsed);
    json_string(f, host);
    fprintf(f, ", \"cpu\": ");
    json_string(f, cpu);
    fprintf(f, ", \"cores\": %ld, \"fingerprint\": \"%016" PRIx64 "\"},\n", cores, fp);
    /* every setting that changes what a run costs, so that runs made with different ones are
     * different configurations in a database (mprof bench leaves MPROF_* to this record) */
    mpr_setting settings[MPR_NSETTINGS];
    mpr_settings(settings);
    fprintf(f, "  \"settings\": {");
    for (int i = 0; i < MPR_NSETTINGS; i++) {
        fprintf(f, "%s\"%s\": ", i ? ", " : "", settings[i].name);
        if (settings[i].is_double)
            fprintf(f, "%g", settings[i].value.d);
        else
            fprintf(f, "%" PRIu64, settings[i].value.u);
    }
    fprintf(f, "},\n");
    fprintf(f, "  \"params\": {");
    param_ctx pc = {f, 1};
    mpr_params_for_each(put_param, &pc);
    fprintf(f, "},\n");
    put_accesses(f, acc_all, acc_all_len);
    free(acc_all);
    put_interfaces(f);
    fprintf(f, "  \"pes\": [\n");
    fwrite(all, 1, all_len, f);
    free(all);
    fprintf(f, "\n  ]\n}\n");
    int rc = close_profile(f, real ? real : path, tmp);
    free(real);
    return rc;
}

/* Before the run: can the profile be written to `path` at the end?  The file must not be a
 * folder and must be writable if it exists; else its folder must exist and be writable.  On
 * failure writes "what: strerror(errno)" into `why` and returns -1. */
int mpr_profile_check(const char *path, char *why, size_t why_size)
{
    struct stat st;
    if (stat(path, &st) == 0) {
        if (S_ISDIR(st.st_mode)) {
            snprintf(why, why_size, "%s", strerror(EISDIR));
            return -1;
        }
        if (access(path, W_OK) != 0) {
            snprintf(why, why_size, "%s", strerror(errno));
            return -1;
        }
        if (!S_ISREG(st.st_mode))
            return 0; /* written in place */
    } else if (errno != ENOENT) {
        snprintf(why, why_size, "%s", strerror(errno));
        return -1;
    }
    size_t n = strlen(path);
    char *dir = malloc(n + 2);
    if (!dir) {
        snprintf(why, why_size, "%s", strerror(ENOMEM));
        return -1;
    }
    memcpy(dir, path, n + 1);
    char *slash = strrchr(dir, '/');
    if (!slash)
        strcpy(dir, ".");
    else if (slash == dir)
        dir[1] = '\0';
    else
        *slash = '\0';
    int rc = 0;
    if (stat(dir, &st) != 0) {
        snprintf(why, why_size, "folder %s: %s", dir, strerror(errno));
        rc = -1;
    } else if (!S_ISDIR(st.st_mode)) {
        snprintf(why, why_size, "%s: %s", dir, strerror(ENOTDIR));
        rc = -1;
    } else if (access(dir, W_OK | X_OK) != 0) {
        snprintf(why, why_size, "folder %s: %s", dir, strerror(errno));
        rc = -1;
    }
    free(dir);
    return rc;
}
