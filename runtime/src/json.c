/* json.c -- the small JSON reader of mpr_json.h (RFC 8259; nesting limited to 64 levels). */
#include "mpr_json.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 64

typedef struct {
    const char *start, *p;
    char *why;
    size_t why_size;
    bool failed;
} parser;

static void fail(parser *ps, const char *fmt, ...)
{
    if (ps->failed)
        return;
    ps->failed = true;
    int line = 1, col = 1;
    for (const char *q = ps->start; q < ps->p; q++) {
        if (*q == '\n') {
            line++;
            col = 1;
        } else {
            col++;
        }
    }
    char what[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    snprintf(ps->why, ps->why_size, "line %d, column %d: %s", line, col, what);
}

static void skip_ws(parser *ps)
{
    while (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r')
        ps->p++;
}

static bool parse_value(parser *ps, mpr_json *out, int depth);

static int hex4(const char *s)
{
    int v = 0;
    for (int i = 0; i < 4; i++) {
        char c = s[i];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= c - '0';
        else if (c >= 'a' && c <= 'f')
            v |= c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            v |= c - 'A' + 10;
        else
            return -1;
    }
    return v;
}

static size_t put_utf8(char *o, uint32_t cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

static char *parse_string(parser *ps)
{
    ps->p++; /* the opening quote */
    const char *end = ps->p;
    while (*end && *end != '"')
        end += *end == '\\' && end[1] ? 2 : 1;
    if (*end != '"') {
        fail(ps, "unterminated string");
        return NULL;
    }
    char *out = malloc((size_t)(end - ps->p) + 1), *o = out; /* escapes only shrink */
    if (!out) {
        fail(ps, "out of memory");
        return NULL;
    }
    while (ps->p < end) {
        unsigned char c = (unsigned char)*ps->p;
        if (c < 0x20) {
            fail(ps, "control character in a string");
            free(out);
            return NULL;
        }
        if (c != '\\') {
            *o++ = (char)c;
            ps->p++;
            continue;
        }
        char e = ps->p[1];
        ps->p += 2;
        switch (e) {
        case '"':
            *o++ = '"';
            break;
        case '\\':
            *o++ = '\\';
            break;
        case '/':
            *o++ = '/';
            break;
        case 'b':
            *o++ = '\b';
            break;
        case 'f':
            *o++ = '\f';
            break;
        case 'n':
            *o++ = '\n';
            break;
        case 'r':
            *o++ = '\r';
            break;
        case 't':
            *o++ = '\t';
            break;
        case 'u': {
            int hi = ps->p + 4 <= end ? hex4(ps->p) : -1;
            if (hi < 0) {
                fail(ps, "bad \\u escape");
                free(out);
                return NULL;
            }
            ps->p += 4;
            uint32_t cp = (uint32_t)hi;
            if (hi >= 0xD800 && hi < 0xDC00 && ps->p + 6 <= end && ps->p[0] == '\\' &&
                ps->p[1] == 'u') {
                int lo = hex4(ps->p + 2);
                if (lo >= 0xDC00 && lo < 0xE000) {
                    cp = 0x10000 + (((uint32_t)hi - 0xD800) << 10) + ((uint32_t)lo - 0xDC00);
                    ps->p += 6;
                }
            }
            o += put_utf8(o, cp);
            break;
        }
        default:
            fail(ps, "bad escape \\%c", e);
            free(out);
            return NULL;
        }
    }
    *o = '\0';
    ps->p = end + 1;
    return out;
}

static bool grow(parser *ps, mpr_json *v, size_t *cap, bool keys)
{
    if (v->n < *cap)
        return true;
    size_t ncap = *cap ? 2 * *cap : 4;
    mpr_json *items = realloc(v->items, ncap * sizeof *items);
    if (items)
        v->items = items;
    char **k = keys ? realloc(v->keys, ncap * sizeof *k) : NULL;
    if (k)
        v->keys = k;
    if (!items || (keys && !k)) {
        fail(ps, "out of memory");
        return false;
    }
    *cap = ncap;
    return true;
}

static bool parse_container(parser *ps, mpr_json *out, int depth, bool object)
{
    out->type = object ? MPR_JOBJ : MPR_JARR;
    char close = object ? '}' : ']';
    size_t cap = 0;
    ps->p++;
    skip_ws(ps);
    if (*ps->p == close) {
        ps->p++;
        return true;
    }
    for (;;) {
        skip_ws(ps);
        if (!grow(ps, out, &cap, object))
            return false;
        if (object) {
            if (*ps->p != '"') {
                fail(ps, "expected a key in quotes");
                return false;
            }
            char *key = parse_string(ps);
            if (!key)
                return false;
            out->keys[out->n] = key;
            skip_ws(ps);
            if (*ps->p != ':') {
                free(key);
                fail(ps, "expected ':'");
                return false;
            }
            ps->p++;
        }
        memset(&out->items[out->n], 0, sizeof out->items[0]);
        bool ok = parse_value(ps, &out->items[out->n], depth + 1);
        out->n++; /* freed with the rest, parsed or not */
        if (!ok)
            return false;
        skip_ws(ps);
        if (*ps->p == ',') {
            ps->p++;
            continue;
        }
        if (*ps->p == close) {
            ps->p++;
            return true;
        }
        fail(ps, "expected ',' or '%c'", close);
        return false;
    }
}

static bool parse_value(parser *ps, mpr_json *out, int depth)
{
    if (depth > MAX_DEPTH) {
        fail(ps, "nested too deeply");
        return false;
    }
    skip_ws(ps);
    char c = *ps->p;
    if (c == '{' || c == '[')
        return parse_container(ps, out, depth, c == '{');
    if (c == '"') {
        out->type = MPR_JSTR;
        out->str = parse_string(ps);
        return out->str != NULL;
    }
    if (strncmp(ps->p, "true", 4) == 0 || strncmp(ps->p, "false", 5) == 0) {
        out->type = MPR_JBOOL;
        out->boolean = c == 't';
        ps->p += c == 't' ? 4 : 5;
        return true;
    }
    if (strncmp(ps->p, "null", 4) == 0) {
        out->type = MPR_JNULL;
        ps->p += 4;
        return true;
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
        char *end;
        out->type = MPR_JNUM;
        out->num = strtod(ps->p, &end);
        if (end == ps->p) {
            fail(ps, "bad number");
            return false;
        }
        ps->p = end;
        return true;
    }
    fail(ps, c ? "unexpected character '%c'" : "unexpected end of the document", c);
    return false;
}

static void free_inner(mpr_json *v)
{
    free(v->str);
    for (size_t i = 0; i < v->n; i++) {
        free_inner(&v->items[i]);
        if (v->keys)
            free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
}

void mpr_json_free(mpr_json *v)
{
    if (!v)
        return;
    free_inner(v);
    free(v);
}

mpr_json *mpr_json_parse(const char *text, char *why, size_t why_size)
{
    parser ps = {text, text, why, why_size, false};
    mpr_json *v = calloc(1, sizeof *v);
    if (!v) {
        snprintf(why, why_size, "out of memory");
        return NULL;
    }
    if (parse_value(&ps, v, 0)) {
        skip_ws(&ps);
        if (*ps.p)
            fail(&ps, "text after the document");
    }
    if (ps.failed) {
        mpr_json_free(v);
        return NULL;
    }
    return v;
}

const mpr_json *mpr_json_get(const mpr_json *obj, const char *key)
{
    if (!obj || obj->type != MPR_JOBJ)
        return NULL;
    for (size_t i = obj->n; i-- > 0;)
        if (strcmp(obj->keys[i], key) == 0)
            return &obj->items[i];
    return NULL;
}

size_t mpr_utf8_seq(const unsigned char *s)
{
    unsigned c = s[0];
    if (c < 0x80)
        return 1;
    size_t n;
    unsigned lo = 0x80, hi = 0xBF; /* the allowed range of the second byte */
    if (c >= 0xC2 && c <= 0xDF)
        n = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0)
            lo = 0xA0; /* overlong */
        else if (c == 0xED)
            hi = 0x9F; /* surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0)
            lo = 0x90; /* overlong */
        else if (c == 0xF4)
            hi = 0x8F; /* past U+10FFFF */
    } else
        return 0;
    if (s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if (s[i] < 0x80 || s[i] > 0xBF)
            return 0;
    return n;
}

bool mpr_utf8_valid(const char *s)
{
    const unsigned char *u = (const unsigned char *)s;
    while (*u) {
        size_t n = mpr_utf8_seq(u);
        if (!n)
            return false;
        u += n;
    }
    return true;
}
