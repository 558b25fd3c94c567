/* The tables of the reports (table.h). */
#include "report/table.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void mx_table_print_text(const table *t, FILE *f)
{
    int w[MAXCOLS];
    for (int c = 0; c < t->ncols; c++) {
        w[c] = (int)strlen(t->head[c]);
        for (int r = 0; r < t->nrows; r++)
            if ((int)strlen(t->cell[r][c]) > w[c]) w[c] = (int)strlen(t->cell[r][c]);
    }
    for (int r = -1; r < t->nrows; r++) {
        char line[MAXCOLS * (CELL + 2)];
        int len = 0;
        for (int c = 0; c < t->ncols && len < (int)sizeof line; c++) {
            const char *s = r < 0 ? t->head[c] : t->cell[r][c];
            int last = c == t->ncols - 1;
            len += snprintf(line + len, sizeof line - (size_t)len, t->right[c] ? "%*s%s" : "%-*s%s",
                            last && !t->right[c] ? 0 : w[c], s, last ? "" : "  ");
        }
        if (len >= (int)sizeof line) len = (int)sizeof line - 1;
        while (len > 0 && line[len - 1] == ' ') line[--len] = '\0'; /* an empty last column */
        fprintf(f, "%s\n", line);
    }
}

static void md_cell(FILE *f, const char *s)
{
    fputc(' ', f);
    for (; *s; s++) {
        if (*s == '|') fputc('\\', f);
        fputc(*s, f);
    }
    fputs(" |", f);
}

void mx_table_print_md(const table *t, FILE *f)
{
    fputc('|', f);
    for (int c = 0; c < t->ncols; c++) md_cell(f, t->head[c]);
    fputs("\n|", f);
    for (int c = 0; c < t->ncols; c++) fputs(t->right[c] ? " ---: |" : " --- |", f);
    fputc('\n', f);
    for (int r = 0; r < t->nrows; r++) {
        fputc('|', f);
        for (int c = 0; c < t->ncols; c++) md_cell(f, t->cell[r][c]);
        fputc('\n', f);
    }
}

/* ---- human-readable cells */

void mx_fmt_num_n(char *buf, size_t n, double x, const char *fmt)
{
    if (isnan(x))
        snprintf(buf, n, "-");
    else
        snprintf(buf, n, fmt, x);
}

void mx_fmt_num(char *buf, double x, const char *fmt) { mx_fmt_num_n(buf, CELL, x, fmt); }


void mx_csv_string(const char *s)
{
    /* newlines of a failure reason become spaces: one run, one line, for simple readers */
    putchar('"');
    for (; *s; s++) {
        if (*s == '"') putchar('"');
        putchar(*s == '\n' || *s == '\r' ? ' ' : *s);
    }
    putchar('"');
}

void mx_json_string(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') printf("\\%c", ch);
        else if (ch == '\n') printf("\\n");
        else if (ch < 0x20) printf("\\u%04x", ch);
        else putchar(ch);
    }
    putchar('"');
}

/* The shortest text that reads back as the same double: 0.05, not 0.050000000000000003. */
void mx_json_number(double x)
{
    if (!isfinite(x)) {
        printf("null"); /* JSON has no NaN; undefined figures are null */
        return;
    }
    char buf[32];
    snprintf(buf, sizeof buf, "%.15g", x);
    if (strtod(buf, NULL) != x) snprintf(buf, sizeof buf, "%.17g", x);
    printf("%s", buf);
}
