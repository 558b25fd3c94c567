/* The variables a gnuplot script gets with -e, written as gnuplot reads them. */
#include "plot_internal.h"

#include <stdarg.h>
#include <stdio.h>

void mx_vars_add(gp_vars *v, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(v->text + v->len, sizeof v->text - v->len, fmt, ap);
    va_end(ap);
    if (w < 0 || (size_t)w >= sizeof v->text - v->len)
        v->overflow = 1;
    else
        v->len += (size_t)w;
}

/* Appends value as the inside of a gnuplot single-quoted string ('' stands for ';
 * newlines would end the -e command). */
void mx_vars_quoted(gp_vars *v, const char *value)
{
    for (const char *p = value; *p; p++) {
        if (*p == '\'')
            mx_vars_add(v, "''");
        else
            mx_vars_add(v, "%c", *p == '\n' || *p == '\r' ? ' ' : *p);
    }
}

void mx_vars_str(gp_vars *v, const char *name, const char *value)
{
    mx_vars_add(v, "%s%s='", v->len ? "; " : "", name);
    mx_vars_quoted(v, value);
    mx_vars_add(v, "'");
}

void mx_vars_int(gp_vars *v, const char *name, long value)
{
    mx_vars_add(v, "%s%s=%ld", v->len ? "; " : "", name, value);
}
