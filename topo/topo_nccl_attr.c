/* Attribute reading for the NCCL XML loader: numbers in decimal or 0x-hex with range checks, bus
 * ids as NCCL converts them, and errors that name the file, line, element and attribute. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "topo/topo_nccl.h"

char *mc_nccl_attr_str(xmlNodePtr x, const char *name)
{
    xmlChar *v = xmlGetProp(x, BAD_CAST name);
    if (!v)
        return NULL;
    char *s = mc_xstrdup((const char *)v);
    xmlFree(v);
    return s;
}

mc_status_t mc_nccl_attr_int(mc_nccl_ctx_t *c, xmlNodePtr x, const char *name, int required,
                             int64_t lo, int64_t hi, int64_t dflt, int64_t *out, mc_err_t *err)
{
    char *s = mc_nccl_attr_str(x, name);
    mc_status_t st = MC_OK;
    *out = dflt;
    if (!s) {
        if (required)
            st = mc_err_set(err, MC_ERR_INVALID, "%s:%d: <%s> needs the attribute %s", c->path,
                            (int)xmlGetLineNo(x), (const char *)x->name, name);
        return st;
    }
    int64_t v;
    if (mc_parse_i64(s, &v) != 0)
        st = mc_err_set(err, MC_ERR_INVALID, "%s:%d: <%s %s=\"%s\">: expected an integer",
                        c->path, (int)xmlGetLineNo(x), (const char *)x->name, name, s);
    else if (v < lo || v > hi)
        st = mc_err_set(err, MC_ERR_INVALID,
                        "%s:%d: <%s %s=\"%s\">: expected a value from %lld to %lld", c->path,
                        (int)xmlGetLineNo(x), (const char *)x->name, name, s, (long long)lo,
                        (long long)hi);
    else
        *out = v;
    free(s);
    return st;
}

mc_status_t mc_nccl_attr_busid(mc_nccl_ctx_t *c, xmlNodePtr x, const char *name, int64_t *out,
                               mc_err_t *err)
{
    char *s = mc_nccl_attr_str(x, name);
    mc_status_t st = MC_OK;
    int64_t v = 0;
    int digits = 0, seps = 0;
    if (!s)
        return mc_err_set(err, MC_ERR_INVALID, "%s:%d: <%s> needs the attribute %s", c->path,
                          (int)xmlGetLineNo(x), (const char *)x->name, name);
    for (const char *p = s; *p; p++) {
        if (*p == ':' || *p == '.') {
            seps++;
            continue;
        }
        if (!isxdigit((unsigned char)*p) || ++digits > 15) {
            digits = -1;
            break;
        }
        v = v * 16 + (isdigit((unsigned char)*p) ? *p - '0' : tolower((unsigned char)*p) - 'a' + 10);
    }
    if (digits <= 0 || seps != 3)
        st = mc_err_set(err, MC_ERR_INVALID,
                        "%s:%d: <%s %s=\"%s\">: expected a PCI bus id like 0000:07:00.0", c->path,
                        (int)xmlGetLineNo(x), (const char *)x->name, name, s);
    else
        *out = v;
    free(s);
    return st;
}

const char *mc_nccl_busid_str(int64_t busid, char *buf, size_t len)
{
    /* NCCL's layout: domain, bus (2 digits), device (2 digits), function (1 digit). */
    snprintf(buf, len, "%04llx:%02llx:%02llx.%llx", (unsigned long long)(busid >> 20),
             (unsigned long long)((busid >> 12) & 0xff), (unsigned long long)((busid >> 4) & 0xff),
             (unsigned long long)(busid & 0xf));
    return buf;
}
