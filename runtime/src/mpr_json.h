/* mpr_json.h -- a small JSON reader for the runtime's own inputs (the model file of
 * MPROF_MODEL): a document becomes a tree of values; numbers are doubles (strtod). */
#ifndef MPR_JSON_H
#define MPR_JSON_H

#include <stdbool.h>
#include <stddef.h>

typedef enum { MPR_JNULL, MPR_JBOOL, MPR_JNUM, MPR_JSTR, MPR_JARR, MPR_JOBJ } mpr_jtype;

typedef struct mpr_json {
    mpr_jtype type;
    bool boolean;
    double num;
    char *str;              /* MPR_JSTR: UTF-8, NUL-terminated */
    size_t n;               /* MPR_JARR, MPR_JOBJ: number of items */
    struct mpr_json *items; /* the items (values of an object) */
    char **keys;            /* MPR_JOBJ: the keys, in document order */
} mpr_json;

/* Parses `text`; NULL on error, with a message ("line L, column C: what") in why. */
mpr_json *mpr_json_parse(const char *text, char *why, size_t why_size);
void mpr_json_free(mpr_json *v);
/* The value of `key` in an object (the last one, as Python's json does), or NULL. */
const mpr_json *mpr_json_get(const mpr_json *obj, const char *key);

/* The length (1-4) of the well-formed UTF-8 sequence at s (RFC 3629: no overlong forms, no
 * surrogates, nothing past U+10FFFF), or 0 where s starts no such sequence.  s is
 * NUL-terminated: a sequence cut short by the end is ill-formed. */
size_t mpr_utf8_seq(const unsigned char *s);
/* Is the NUL-terminated s well-formed UTF-8?  Names the run profile carries must be: JSON text
 * is UTF-8, and its readers reject anything else. */
bool mpr_utf8_valid(const char *s);

#endif
