/* error.c -- error codes, misuse reports and fatal errors. */
#include "mpr.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *mp_strerror(mp_err err)
{
    switch (err) {
    case MP_SUCCESS:
        return "success";
    case MP_ERR_INVALID_ARG:
        return "invalid argument";
    case MP_ERR_INVALID_PE:
        return "invalid PE number";
    case MP_ERR_TOO_LARGE:
        return "message or arguments too large";
    case MP_ERR_ALREADY_WAITING:
        return "fiber already waits on a counter";
    case MP_ERR_BAD_STATE:
        return "object in the wrong state for this call";
    case MP_ERR_NOT_IN_FIBER:
        return "call needs an executing fiber";
    case MP_ERR_IN_FIBER:
        return "blocking call made inside a fiber";
    case MP_ERR_NO_MEMORY:
        return "out of memory";
    case MP_ERR_LIMIT:
        return "runtime limit reached";
    case MP_ERR_BACKEND:
        return "machine layer failure";
    }
    return "unknown error";
}

/* Writes "mprof: KIND: PE n: message<tail>\n", naming the PE when called from one, in one
 * write: PEs on other threads report at the same time, and a line written in pieces came out
 * interleaved with theirs.  A message longer than the buffer is cut (with "...") rather than
 * split. */
static void vreport(const char *kind, const char *tail, const char *fmt, va_list ap)
{
    char line[1024];
    size_t n, cap = sizeof line - 5; /* room for "...\n" and the NUL */
    mpr_pe *pe = mpr_pe_self();
    if (pe)
        n = (size_t)snprintf(line, cap, "mprof: %s: PE %d: ", kind, pe->id);
    else
        n = (size_t)snprintf(line, cap, "mprof: %s: ", kind);
    if (n < cap)
        n += (size_t)vsnprintf(line + n, cap - n, fmt, ap);
    if (n < cap)
        n += (size_t)snprintf(line + n, cap - n, "%s", tail);
    if (n >= cap) {
        n = cap - 1;
        memcpy(line + n, "...", 3);
        n += 3;
    }
    line[n++] = '\n';
    line[n] = '\0';
    fputs(line, stderr);
}

/* Misuse is reported where it happens (with the PE) and returned to the caller, so a
 * program that ignores the code still leaves a trace on stderr. */
mp_err mpr_misuse(mp_err code, const char *fmt, ...)
{
    char tail[64];
    snprintf(tail, sizeof tail, " (%s)", mp_strerror(code));
    va_list ap;
    va_start(ap, fmt);
    vreport("error", tail, fmt, ap);
    va_end(ap);
    return code;
}

void mpr_fatal(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport("fatal", "", fmt, ap);
    va_end(ap);
    exit(3);
}

double mpr_env_number(const char *name, double dflt, double min, double max, int integer, int quiet)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return dflt;
    char *end;
    double v = strtod(s, &end);
    /* a value that converts to nothing (" ") is no number, whatever whitespace follows */
    int converted = end != s;
    while (*end == ' ' || *end == '\t' || *end == '\n')
        end++;
    /* strtod also reads "nan", "inf" and hexadecimal: only finite decimal numbers count */
    int ok = converted && !*end && isfinite(v) && v >= min && v <= max && !strpbrk(s, "xXnN") &&
             (!integer || v == floor(v));
    if (ok)
        return v;
    if (!quiet) {
        size_t n = strlen(s);
        fprintf(stderr,
                "mprof: ignoring %s=%.64s%s (expected %s in [%.15g, %.15g]), using the default "
                "%.15g\n",
                name, s, n > 64 ? "..." : "", integer ? "a whole number" : "a number", min, max,
                dflt);
    }
    return dflt;
}
