/* Named ranges and the device phase clock (engine/core/device_marks.h). */
#include "device_marks.h"
#include "base/status.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char tag[64];

/* Who listens: a backend of its own kind (NVTX) or a timeline hook. The CPU's count gate
 * counts instructions, so an unheard range must cost no formatting. */
static int heard(const mx_backend *be) { return be->range_hook || !mx_backend_host_memory(be->ops); }

void mx_range_set_tag(mx_backend *be, const char *fmt, ...)
{
    if (!heard(be)) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tag, sizeof tag, fmt, ap);
    va_end(ap);
}

void mx_range_begin(mx_backend *be, const char *fmt, ...)
{
    if (!heard(be)) return;
    char name[160];
    int at = tag[0] ? snprintf(name, sizeof name, "%s ", tag) : 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name + at, sizeof name - (size_t)at, fmt, ap);
    va_end(ap);
    be->ops->range_push(be, name);
}

void mx_range_end(mx_backend *be)
{
    if (heard(be)) be->ops->range_pop(be);
}

int mx_phase_clock_init(mx_phase_clock *c, mx_backend *be)
{
    memset(c, 0, sizeof *c);
    c->be = be;
    c->on = !mx_backend_host_memory(be->ops);
    for (int i = 0; c->on && i < MX_PHASE_MARKS; i++)
        if (!(c->ev[i] = be->ops->event_create(be))) {
            mx_phase_clock_free(c);
            return mx_backend_error(be) < 0 ? MX_ERUNTIME : mx_error(MX_ERUNTIME, "event_create failed");
        }
    return MX_OK;
}

void mx_phase_clock_mark(mx_phase_clock *c, int i)
{
    if (c->on) c->be->ops->event_record(c->be, c->ev[i]);
}

double mx_phase_clock_between(mx_phase_clock *c, int i, int j)
{
    return c->on ? c->be->ops->event_elapsed(c->be, c->ev[i], c->ev[j]) : 0;
}

void mx_phase_clock_free(mx_phase_clock *c)
{
    for (int i = 0; i < MX_PHASE_MARKS; i++)
        if (c->ev[i]) c->be->ops->event_destroy(c->be, c->ev[i]);
    memset(c->ev, 0, sizeof c->ev);
    c->on = 0;
}
