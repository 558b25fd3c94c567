/* The plot driver's gnuplot side: finding and running
 * gnuplot (its exit status and output checked), and the replot.sh transcript. */
#include "plot_internal.h"

#include "base/status.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static const char no_gnuplot[] =
    "gnuplot not found: install the Debian package gnuplot-nox (apt-get install gnuplot-nox)";

int mx_plot_find_gnuplot(char *out, size_t n)
{
    const char *path = getenv("PATH");
    if (!path || !*path) path = "/usr/local/bin:/usr/bin:/bin";
    for (const char *p = path; *p;) {
        const char *colon = strchr(p, ':');
        size_t len = colon ? (size_t)(colon - p) : strlen(p);
        struct stat st;
        snprintf(out, n, "%.*s/gnuplot", (int)len, len ? p : ".");
        if (stat(out, &st) == 0 && S_ISREG(st.st_mode) && access(out, X_OK) == 0) return 0;
        p += len + (colon ? 1 : 0);
    }
    return mx_error(MX_EUNSUPPORTED, "%s", no_gnuplot);
}

/* Single-quotes s for sh, for the replot.sh transcript. */
static void put_shell_quoted(FILE *f, const char *s)
{
    fputc('\'', f);
    for (; *s; s++) {
        if (*s == '\'')
            fputs("'\\''", f);
        else
            fputc(*s, f);
    }
    fputc('\'', f);
}

/* The last ~600 bytes gnuplot wrote to the log since offset, for an error message. */
static void log_tail(const char *path, long from, char *buf, size_t n)
{
    buf[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f) return;
    fseek(f, 0, SEEK_END);
    long end = ftell(f), start = end - (long)n + 1 > from ? end - (long)n + 1 : from;
    if (start >= 0 && fseek(f, start, SEEK_SET) == 0) {
        size_t got = fread(buf, 1, n - 1, f);
        buf[got] = '\0';
    }
    fclose(f);
    for (size_t len = strlen(buf); len && (buf[len - 1] == '\n' || buf[len - 1] == ' '); len--) buf[len - 1] = '\0';
}

static long file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

static int spawn_wait(plot_ctx *c, char *const argv[], int *status)
{
    posix_spawn_file_actions_t fa;
    if (posix_spawn_file_actions_init(&fa) != 0) return mx_error(MX_ENOMEM, "cannot set up gnuplot's process");
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, c->logpath, O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    pid_t pid;
    int err = posix_spawn(&pid, c->gnuplot, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (err) return mx_error(MX_ERUNTIME, "cannot run '%s': %s", c->gnuplot, strerror(err));
    while (waitpid(pid, status, 0) < 0)
        if (errno != EINTR) return mx_error(MX_ERUNTIME, "waiting for gnuplot: %s", strerror(errno));
    return 0;
}

int mx_plot_run_gnuplot(plot_ctx *c, int plot, const char *term, const char *vars, char *outfile, size_t noutfile)
{
    return mx_plot_run_script(c, mx_plot_names[plot], mx_plot_data_file(plot), term, vars, outfile, noutfile);
}

int mx_plot_run_script(plot_ctx *c, const char *name, const char *datafile, const char *term, const char *vars,
                    char *outfile, size_t noutfile)
{
    char script[PATH_MAX + 64];
    snprintf(script, sizeof script, "%s/%s.gp", c->scripts, name);
    int w = snprintf(outfile, noutfile, "%s/%s.%s", c->outdir, name, term);
    if (w < 0 || (size_t)w >= noutfile) return mx_error(MX_EINVAL, "output path too long: '%s'", c->outdir);
    /* gnuplot writes a figure as it draws it: a script that fails half way leaves half a
     * figure. It draws under a temporary name in the same folder, renamed over the figure
     * only once gnuplot has succeeded (a rename within a folder is atomic). replot.sh, for
     * drawing by hand, names the figure itself. */
    char base[PATH_MAX + 64], tmpbase[PATH_MAX + 64], tmp[PATH_MAX + 96];
    snprintf(base, sizeof base, "%s/%s", c->outdir, name);
    snprintf(tmpbase, sizeof tmpbase, "%s/.%s.tmp-%ld", c->outdir, name, (long)getpid());
    snprintf(tmp, sizeof tmp, "%s.%s", tmpbase, term);
    gp_vars *e = malloc(2 * sizeof *e); /* e[0] runs, e[1] goes to replot.sh */
    if (!e) return mx_error(MX_ENOMEM, "out of memory running gnuplot");
    for (int k = 0; k < 2; k++) {
        e[k].len = 0, e[k].overflow = 0;
        mx_vars_add(&e[k], "set loadpath '"); /* style.gp and intaxis.gp are loaded from here */
        mx_vars_quoted(&e[k], c->scripts);
        mx_vars_add(&e[k], "'");
        char path[PATH_MAX + 64];
        snprintf(path, sizeof path, "%s/%s", c->datadir, datafile);
        mx_vars_str(&e[k], "datafile", path);
        mx_vars_str(&e[k], "outbase", k ? base : tmpbase);
        mx_vars_str(&e[k], "term", term);
        mx_vars_add(&e[k], "; %s", vars);
    }
    if (e[0].overflow || e[1].overflow) {
        free(e);
        return mx_error(MX_EINVAL, "gnuplot variables for %s too long", name);
    }

    char *argv[] = {"gnuplot", "-e", e[0].text, script, NULL};
    fprintf(c->replot, "gnuplot -e ");
    put_shell_quoted(c->replot, e[1].text);
    fputc(' ', c->replot);
    put_shell_quoted(c->replot, script);
    fputc('\n', c->replot);
    if (c->verbose) fprintf(stderr, "mxbench plot: gnuplot -e \"%s\" %s\n", e[0].text, script);

    long before = file_size(c->logpath);
    unlink(outfile); /* so a stale figure cannot pass for a fresh one */
    unlink(tmp);
    int status;
    int spawned = spawn_wait(c, argv, &status);
    free(e);
    if (spawned != 0) {
        unlink(tmp);
        return spawned;
    }
    char tail[600];
    log_tail(c->logpath, before < 0 ? 0 : before, tail, sizeof tail);
    int rc = 0;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
            rc = mx_error(MX_EUNSUPPORTED, "%s", no_gnuplot);
        else
            rc = mx_error(MX_ERUNTIME, "gnuplot failed on %s for %s (%s %d): %s", script, outfile,
                          WIFEXITED(status) ? "exit status" : "signal",
                          WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), tail[0] ? tail : "(no output)");
    } else if (file_size(tmp) <= 0) {
        rc = mx_error(MX_ERUNTIME, "gnuplot ran %s but wrote no %s (is the %s terminal built in?): %s", script,
                      outfile, strcmp(term, "png") == 0 ? "pngcairo" : term, tail[0] ? tail : "(no output)");
    } else if (rename(tmp, outfile) != 0) {
        rc = mx_error(MX_EIO, "cannot rename '%s' to '%s': %s", tmp, outfile, strerror(errno));
    }
    if (rc != 0) {
        unlink(tmp);
        return rc;
    }
    if (c->verbose && tail[0]) fprintf(stderr, "%s\n", tail);
    return 0;
}


int mx_plot_open_replot(plot_ctx *c)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/replot.sh", c->datadir);
    c->replot = fopen(path, "w");
    if (!c->replot) return mx_error(MX_EIO, "cannot write '%s': %s", path, strerror(errno));
    fprintf(c->replot, "#!/bin/sh\n# Redraws the mxbench figures from the data files in this directory "
                       "(edit the scripts or these variables, then run it).\nset -e\n");
    chmod(path, 0755);
    return 0;
}

