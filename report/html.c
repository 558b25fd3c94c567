/* One self-contained HTML page (html.h). */
#include "report/html.h"

#include "base/paths.h"
#include "base/status.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The page's look: readable at a glance, printable, no web fonts (nothing is fetched). */
static const char style[] =
    "body{font-family:'DejaVu Sans',Verdana,sans-serif;margin:1.5em auto;max-width:1200px;padding:0 1em;"
    "color:#222;line-height:1.45}\n"
    "h1{font-size:1.5em;margin-bottom:.2em}h2{font-size:1.2em;border-bottom:1px solid #ccc;margin-top:1.8em}\n"
    "h3{font-size:1.05em}.meta{color:#555;font-size:.9em}\n"
    ".answer{background:#f3f8fc;border-left:5px solid #0072B2;padding:.6em 1.2em;margin:1em 0}\n"
    ".answer p{margin:.5em 0}.left-out{color:#555}\n"
    "figure{display:inline-block;margin:.6em;vertical-align:top}figure img{max-width:100%;"
    "border:1px solid #ddd}\nfigcaption{font-size:.85em;color:#555}\n"
    ".scroll{overflow-x:auto}\n"
    "table{border-collapse:collapse;font-size:.82em;margin:.6em 0}\n"
    "th,td{border:1px solid #ccc;padding:2px 6px;white-space:nowrap}td.r{text-align:right}\n"
    "th{background:#eef;position:sticky;top:0}table.sortable th{cursor:pointer}\n"
    "th.asc:after{content:' \\25B2'}th.desc:after{content:' \\25BC'}\n"
    "tr.bad td{color:#a00}tr.win td{background:#e9f6ec}\n";

/* Clicking a head sorts its table by that column: numbers as numbers ("-" last), text as
 * text; a second click reverses. Plain DOM, no library. */
static const char script[] =
    "document.addEventListener('DOMContentLoaded',function(){\n"
    " document.querySelectorAll('table.sortable').forEach(function(t){\n"
    "  t.querySelectorAll('th').forEach(function(th,c){th.addEventListener('click',function(){\n"
    "   var num=th.classList.contains('num'),asc=!th.classList.contains('asc');\n"
    "   t.querySelectorAll('th').forEach(function(h){h.classList.remove('asc','desc')});\n"
    "   th.classList.add(asc?'asc':'desc');\n"
    "   var b=t.tBodies[0],rows=Array.prototype.slice.call(b.rows);\n"
    "   rows.sort(function(x,y){var a=x.cells[c].textContent,z=y.cells[c].textContent,r;\n"
    "    if(num){var p=parseFloat(a.replace(/[^0-9eE.+-]/g,'')),q=parseFloat(z.replace(/[^0-9eE.+-]/g,''));\n"
    "     if(isNaN(p)&&isNaN(q))r=0;else if(isNaN(p))return 1;else if(isNaN(q))return -1;else r=p-q;}\n"
    "    else r=a.localeCompare(z);\n"
    "    return asc?r:-r;});\n"
    "   rows.forEach(function(r){b.appendChild(r)});});});});});\n";

int mx_html_open(mx_html *h, const char *path, const char *title)
{
    memset(h, 0, sizeof *h);
    MX_TRY(mx_path_check_output(path, "the page"));
    MX_TRY(mx_mkdir_parent(path));
    h->path = strdup(path);
    h->tmp = mx_path_fmt("%s.tmp-%ld", path, (long)getpid());
    if (!h->path || !h->tmp) {
        mx_html_abort(h);
        return mx_error(MX_ENOMEM, "out of memory for the page %s", path);
    }
    h->f = fopen(h->tmp, "w");
    if (!h->f) {
        const int e = errno;
        mx_html_abort(h);
        return mx_error(MX_EIO, "cannot write the page %s: %s", path, strerror(e));
    }
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>", h->f);
    mx_html_text(h->f, title);
    fprintf(h->f, "</title>\n<style>\n%s</style>\n<script>\n%s</script>\n</head>\n<body>\n", style, script);
    return MX_OK;
}

int mx_html_close(mx_html *h)
{
    fputs("</body>\n</html>\n", h->f);
    int bad = ferror(h->f) || fflush(h->f) != 0 || fsync(fileno(h->f)) != 0;
    const int e = errno;
    bad |= fclose(h->f) != 0;
    h->f = NULL;
    if (bad || rename(h->tmp, h->path) != 0) {
        const int code = mx_error(MX_EIO, "cannot write the page %s: %s (the page there before, if any, is kept)",
                                  h->path, strerror(bad ? (e ? e : EIO) : errno));
        mx_html_abort(h);
        return code;
    }
    free(h->tmp);
    free(h->path);
    h->tmp = h->path = NULL;
    return MX_OK;
}

void mx_html_abort(mx_html *h)
{
    if (h->f) fclose(h->f);
    if (h->tmp) unlink(h->tmp);
    free(h->tmp);
    free(h->path);
    memset(h, 0, sizeof *h);
}

void mx_html_text(FILE *f, const char *s)
{
    for (; *s; s++) switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        default: fputc(*s, f);
        }
}

void mx_html_textf(FILE *f, const char *fmt, ...)
{
    char buf[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    mx_html_text(f, buf);
}

int mx_html_svg(FILE *f, const char *svg_path, const char *alt)
{
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    FILE *in = fopen(svg_path, "rb");
    if (!in) return mx_error(MX_EIO, "cannot read the figure %s: %s", svg_path, strerror(errno));
    fputs("<img alt=\"", f);
    mx_html_text(f, alt);
    fputs("\" src=\"data:image/svg+xml;base64,", f);
    unsigned char in3[3];
    size_t n;
    while ((n = fread(in3, 1, 3, in)) > 0) {
        const unsigned v = (unsigned)in3[0] << 16 | (n > 1 ? (unsigned)in3[1] << 8 : 0) | (n > 2 ? in3[2] : 0);
        fputc(b64[v >> 18 & 63], f);
        fputc(b64[v >> 12 & 63], f);
        fputc(n > 1 ? b64[v >> 6 & 63] : '=', f);
        fputc(n > 2 ? b64[v & 63] : '=', f);
        if (n < 3) break;
    }
    const int bad = ferror(in);
    fclose(in);
    fputs("\">", f);
    return bad ? mx_error(MX_EIO, "cannot read the figure %s", svg_path) : MX_OK;
}

void mx_html_table_begin(FILE *f, const char *const *heads, const int *right, int ncols)
{
    fputs("<div class=\"scroll\"><table class=\"sortable\">\n<thead><tr>", f);
    for (int c = 0; c < ncols; c++) {
        fputs(right && right[c] ? "<th class=\"num\">" : "<th>", f);
        mx_html_text(f, heads[c]);
        fputs("</th>", f);
    }
    fputs("</tr></thead>\n<tbody>\n", f);
}

void mx_html_row_begin(FILE *f, const char *css_class)
{
    if (css_class && *css_class) fprintf(f, "<tr class=\"%s\">", css_class);
    else fputs("<tr>", f);
}

void mx_html_cell(FILE *f, const char *text, int right)
{
    fputs(right ? "<td class=\"r\">" : "<td>", f);
    mx_html_text(f, text && *text ? text : "-");
    fputs("</td>", f);
}

void mx_html_row_end(FILE *f) { fputs("</tr>\n", f); }

void mx_html_table_end(FILE *f) { fputs("</tbody></table></div>\n", f); }
