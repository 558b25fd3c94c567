/* The sweep's dist_* rows as mpirun jobs (see sweep_mpi.h). */
#include "sweep_mpi.h"
#include "buildinfo.h"
#include "sweep_child.h"
#include "base/config.h"
#include "base/status.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define HOSTFILE_FORMAT                                                                                          \
    "accepted: one host per line, 'HOST [slots=N] [max_slots=N]' (Open MPI's host file; also count, cpu, "      \
    "max-slots, slots_max, user, port), '#' comments, blank lines"

static int hostfile_error(const char *cmd, const char *path, int line, const char *text, const char *why)
{
    fprintf(stderr, "%s: --hostfile %s line %d: '%s': %s; %s\n", cmd, path, line, text, why, HOSTFILE_FORMAT);
    return 2;
}

/* A whole number in [lo, 1e6], or -1. */
static long whole(const char *s, long lo)
{
    if (!*s) return -1;
    for (const char *p = s; *p; p++)
        if (!isdigit((unsigned char)*p)) return -1;
    const long v = strtol(s, NULL, 10);
    return v >= lo && v <= 1000000 && strlen(s) < 8 ? v : -1;
}

static int host_char(char c) { return isalnum((unsigned char)c) || c == '.' || c == '-' || c == '_' || c == ':'; }

/* One line, comment removed and not blank: its host into first (when empty) and its
 * attributes checked. Returns NULL or why the line is refused. */
static const char *parse_line(char *s, char *why, size_t n)
{
    char *p = s;
    char *at = strchr(p, '@'), *end = p;
    while (*end && !isspace((unsigned char)*end)) end++;
    if (at && at < end) p = at + 1; /* user@host */
    if (p == end) return snprintf(why, n, "no host name"), why;
    for (char *q = p; q < end; q++)
        if (!host_char(*q)) return snprintf(why, n, "host name '%.*s' holds '%c'", (int)(end - p), p, *q), why;
    if (*p == '=' || (end - p == 5 && strncmp(p, "slots", 5) == 0))
        return snprintf(why, n, "the line starts with an attribute, not a host"), why;
    for (p = end;;) {
        while (isspace((unsigned char)*p)) p++;
        if (!*p) return NULL;
        char key[32], val[64];
        size_t k = 0, v = 0;
        while (*p && *p != '=' && !isspace((unsigned char)*p) && k < sizeof key - 1) key[k++] = *p++;
        key[k] = 0;
        while (*p == ' ' || *p == '\t') p++;
        if (!k || *p != '=')
            return snprintf(why, n, "'%.20s' is not an attribute KEY=VALUE (a second host belongs on a line of its "
                            "own)", k ? key : p), why;
        for (p++; *p == ' ' || *p == '\t'; p++) {}
        while (*p && !isspace((unsigned char)*p) && v < sizeof val - 1) val[v++] = *p++;
        val[v] = 0;
        static const char *const counts[] = {"slots", "slot", "count", "cpu"};
        static const char *const maxes[] = {"max_slots", "max-slots", "slots_max", "slots-max"};
        static const char *const strings[] = {"user", "username", "user_name"};
        int kind = 0;
        for (size_t i = 0; i < 4; i++) kind = strcmp(key, counts[i]) == 0 ? 1 : kind;
        for (size_t i = 0; i < 4; i++) kind = strcmp(key, maxes[i]) == 0 ? 2 : kind;
        for (size_t i = 0; i < 3; i++) kind = strcmp(key, strings[i]) == 0 ? 3 : kind;
        kind = strcmp(key, "port") == 0 ? 4 : kind;
        if (!kind) return snprintf(why, n, "unknown attribute '%s'", key), why;
        if (kind == 1 && whole(val, 1) < 0) return snprintf(why, n, "%s=%s: a whole number, 1 or more", key, val), why;
        if (kind == 2 && whole(val, 0) < 0) return snprintf(why, n, "%s=%s: a whole number, 0 or more", key, val), why;
        if (kind == 3 && !v) return snprintf(why, n, "%s= needs a name", key), why;
        if (kind == 4 && whole(val, 1) < 0) return snprintf(why, n, "port=%s: a port number", val), why;
    }
}

int mx_hostfile_check(const char *cmd, const char *path, int *nhosts, char *first, size_t firstsize)
{
    *nhosts = 0;
    first[0] = 0;
    FILE *f = fopen(path, "r");
    struct stat st;
    if (!f || fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        fprintf(stderr, "%s: --hostfile %s: %s; accepted: a readable Open MPI host file\n", cmd, path,
                f ? "not a regular file" : strerror(errno));
        if (f) fclose(f);
        return 2;
    }
    char buf[1024], why[160];
    for (int line = 1; fgets(buf, sizeof buf, f); line++) {
        if (!strchr(buf, '\n') && !feof(f)) {
            fclose(f);
            return hostfile_error(cmd, path, line, "...", "a line longer than 1023 characters");
        }
        buf[strcspn(buf, "#\r\n")] = 0;
        char *s = buf;
        while (isspace((unsigned char)*s)) s++;
        if (!*s) continue;
        char copy[1024];
        snprintf(copy, sizeof copy, "%s", s);
        if (parse_line(s, why, sizeof why)) {
            fclose(f);
            return hostfile_error(cmd, path, line, copy, why);
        }
        if (!first[0]) {
            char *h =
                strchr(copy, '@') && strchr(copy, '@') < copy + strcspn(copy, " \t") ? strchr(copy, '@') + 1 : copy;
            snprintf(first, firstsize, "%.*s", (int)strcspn(h, " \t"), h);
        }
        ++*nhosts;
    }
    fclose(f);
    if (*nhosts == 0) {
        fprintf(stderr, "%s: --hostfile %s lists no host; %s\n", cmd, path, HOSTFILE_FORMAT);
        return 2;
    }
    return 0;
}

/* The first line of `prog --version` (stdout and stderr), or "" */
static void version_of(const char *prog, char *buf, size_t n)
{
    buf[0] = 0;
    int fds[2];
    if (pipe(fds) != 0) return;
    const pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], STDOUT_FILENO);
        dup2(fds[1], STDERR_FILENO);
        close(fds[0]);
        execl(prog, prog, "--version", (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    size_t have = 0;
    for (ssize_t r; pid > 0 && have < n - 1 && (r = read(fds[0], buf + have, n - 1 - have)) != 0;)
        if (r > 0) have += (size_t)r;
        else if (errno != EINTR) break;
    buf[have] = 0;
    close(fds[0]);
    if (pid > 0) waitpid(pid, NULL, 0);
    buf[strcspn(buf, "\n")] = 0;
}

/* --mpirun-args or --srun-args (flag) split on spaces into m->extra, with the words the
 * sweep sets itself refused. */
static int split_args(mx_sweep_mpi *m, const char *flag, const char *args)
{
    const char *cmd = "mxbench sweep";
    const int srun = m->launcher == &mx_launcher_srun;
    if (strlen(args) >= sizeof m->extra_store) {
        fprintf(stderr, "%s: %s: longer than %zu characters\n", cmd, flag, sizeof m->extra_store - 1);
        return 2;
    }
    snprintf(m->extra_store, sizeof m->extra_store, "%s", args);
    for (char *save = NULL, *t = strtok_r(m->extra_store, " \t", &save); t; t = strtok_r(NULL, " \t", &save)) {
        if (m->nextra == MX_SWEEP_MPI_ARGS) {
            fprintf(stderr, "%s: %s '%s': more than %d words\n", cmd, flag, args, MX_SWEEP_MPI_ARGS);
            return 2;
        }
        static const char *const np[] = {"-np", "--np", "-n", "--n", "-c"};
        static const char *const srun_np[] = {"-n", "--ntasks", "-N", "--nodes"};
        static const char *const hf[] = {"-hostfile", "--hostfile", "-machinefile", "--machinefile",
                                         "-default-hostfile", "--default-hostfile"};
        const char *const *set = srun ? srun_np : np;
        const size_t nset = srun ? sizeof srun_np / sizeof *srun_np : sizeof np / sizeof *np;
        for (size_t i = 0; i < nset; i++) {
            const size_t len = strlen(set[i]);
            /* srun's long options also come as --ntasks=N */
            if (strcmp(t, set[i]) == 0 || (srun && strncmp(t, set[i], len) == 0 && t[len] == '=')) {
                fprintf(stderr, "%s: %s '%s': %s is set by the sweep for each row (its workers and servers%s); "
                        "accepted: any other %s option\n", cmd, flag, args, t,
                        srun ? ", over the allocation's nodes" : "", m->launcher->name);
                return 2;
            }
        }
        for (size_t i = 0; i < sizeof hf / sizeof *hf && !srun; i++)
            if (strcmp(t, hf[i]) == 0) {
                fprintf(stderr, "%s: %s '%s': give the host file as the sweep's --hostfile FILE (checked before any "
                        "run), not as %s\n", cmd, flag, args, t);
                return 2;
            }
        if (strcmp(t, "--host") == 0 || strcmp(t, "-host") == 0 || strcmp(t, "-H") == 0) m->one_machine = 0;
        if (strcmp(t, "btl") == 0 || strcmp(t, "pml") == 0) m->add_btl = 0; /* --mca btl ..., --mca pml ... */
        if (strcmp(t, "--bind-to") == 0 || strcmp(t, "-bind-to") == 0) m->add_bind = 0;
        if (strncmp(t, "--mpi=", 6) == 0 || strcmp(t, "--mpi") == 0) m->add_mpi = 0;
        m->extra[m->nextra++] = t;
    }
    return 0;
}

static int hostfile_note(const char *hostfile)
{
    const char *cmd = "mxbench sweep";
    int nhosts;
    char first[256], me[256] = "";
    if (mx_hostfile_check(cmd, hostfile, &nhosts, first, sizeof first) != 0) return 2;
    gethostname(me, sizeof me - 1);
    const size_t mel = strcspn(me, ".");
    if (strcmp(first, "localhost") != 0 && strncmp(first, "127.", 4) != 0 && strcmp(first, me) != 0 &&
        !(strncmp(first, me, mel) == 0 && (first[mel] == '.' || !first[mel])))
        fprintf(stderr, "%s: note: --hostfile %s lists %s first: rank 0 (worker 0, which writes each dist_* "
                "row's record) runs there; unless the results file's directory is shared with it, list this "
                "machine (%s) first\n", cmd, hostfile, first, me);
    return 0;
}

/* --launcher: the one named, or for auto srun inside a Slurm allocation where srun is on PATH
 * and no mpirun option was given. Returns 0, or 2 after printing why the choice cannot be. */
static int choose_launcher(mx_sweep_mpi *m, const mx_sweep_mpi_opts *o)
{
    const char *cmd = "mxbench sweep", *name = o->launcher ? o->launcher : "auto";
    const char *mpirun_opt = o->hostfile ? "--hostfile" : o->mpirun_args ? "--mpirun-args" : o->mpirun ? "--mpirun"
                                                                                                          : NULL;
    char srun[4096];
    if (strcmp(name, "auto") == 0)
        m->launcher = m->slurm.inside && !mpirun_opt && mx_find_program("srun", srun, sizeof srun) == 0
                          ? &mx_launcher_srun
                          : &mx_launcher_mpirun;
    else /* the option's choices are auto|mpirun|srun, checked when parsed */
        m->launcher = strcmp(name, "srun") == 0 ? &mx_launcher_srun : &mx_launcher_mpirun;
    if (m->launcher == &mx_launcher_srun && !m->slurm.inside) {
        fprintf(stderr, "%s: --launcher srun: not inside a Slurm allocation (SLURM_JOB_ID is unset); run the sweep "
                "under salloc or in an sbatch script, or take --launcher mpirun\n", cmd);
        return 2;
    }
    if (m->launcher == &mx_launcher_srun && mpirun_opt) {
        fprintf(stderr, "%s: %s applies to --launcher mpirun, and the dist_* rows are launched by srun%s; accepted "
                "with srun: --srun-args (the ranks go on the allocation's nodes)\n", cmd, mpirun_opt,
                o->launcher ? "" : " (inside this Slurm allocation)");
        return 2;
    }
    if (m->launcher == &mx_launcher_mpirun && o->srun_args) {
        fprintf(stderr, "%s: --srun-args applies to --launcher srun, and the dist_* rows are launched by mpirun%s; "
                "accepted with mpirun: --mpirun-args\n", cmd,
                m->slurm.inside ? "" : " (not inside a Slurm allocation: SLURM_JOB_ID is unset)");
        return 2;
    }
    return 0;
}

int mx_sweep_mpi_setup(mx_sweep_mpi *m, const mx_sweep_mpi_opts *o, int need_launcher)
{
    const char *cmd = "mxbench sweep";
    memset(m, 0, sizeof *m);
    /* a Slurm variable Slurm would not write matters only to a sweep with rows to launch */
    if (mx_slurm_read(&m->slurm) < 0) {
        if (need_launcher) {
            fprintf(stderr, "%s: %s\n", cmd, mx_last_error());
            return 2;
        }
        memset(&m->slurm, 0, sizeof m->slurm);
    }
    if (choose_launcher(m, o) != 0) return 2;
    const int srun = m->launcher == &mx_launcher_srun;
    m->hostfile = o->hostfile;
    /* mpirun inside an allocation starts its ranks on the allocation's nodes too */
    m->one_machine = !o->hostfile && (!m->slurm.inside || m->slurm.nodes == 1);
    m->cores = srun && m->slurm.cpus > 0 ? m->slurm.cpus : mx_cpu_cores();
    m->bucket_mb = o->bucket_mb;
    m->add_btl = !getenv("OMPI_MCA_btl") && !getenv("OMPI_MCA_pml"); /* the user's transport, when set */
    m->add_bind = m->add_mpi = 1;
    if (o->hostfile && hostfile_note(o->hostfile) != 0) return 2;
    const char *args = srun ? o->srun_args : o->mpirun_args;
    if (args && split_args(m, srun ? "--srun-args" : "--mpirun-args", args) != 0) return 2;
    if (!m->one_machine) m->add_btl = m->add_bind = 0;
    if (!need_launcher) return 0;
    if (m->launcher->find(m, srun ? NULL : o->mpirun) != 0) return 2;
    const ssize_t len = readlink("/proc/self/exe", m->exe, sizeof m->exe - 1);
    if (len <= 0) {
        fprintf(stderr, "%s: cannot tell this program's path (/proc/self/exe): %s\n", cmd, strerror(errno));
        return 2;
    }
    m->exe[len] = 0;
    return 0;
}

static int find_mpirun(mx_sweep_mpi *m, const char *mpirun)
{
    const char *cmd = "mxbench sweep";
    if (mx_find_program(mpirun ? mpirun : "mpirun", m->prog, sizeof m->prog) != 0) {
        if (mpirun)
            fprintf(stderr, "%s: --mpirun %s: not found or not executable; accepted: the path of Open MPI's mpirun "
                    "(or a name on PATH)\n", cmd, mpirun);
        else
            fprintf(stderr, "%s: mpirun not found on PATH (needed by the dist_* rows); apt-get install openmpi-bin, "
                    "or --mpirun PATH\n", cmd);
        return 2;
    }
    char version[256];
    version_of(m->prog, version, sizeof version);
    if (!strstr(version, "Open MPI") && !strstr(version, "OpenRTE")) {
        fprintf(stderr, "%s: %s%s: '%s --version' says '%s', not Open MPI; accepted: Open MPI's mpirun (the sweep "
                "passes its options: --oversubscribe, --mca, --bind-to)\n", cmd, mpirun ? "--mpirun " : "",
                m->prog, m->prog, version);
        return 2;
    }
    return 0;
}

int mx_sweep_mpi_ranks(const mx_run_record *r) { return r->gpus + r->servers; }

void mx_sweep_mpi_role(const mx_run_record *r, int rank, char *buf, size_t n)
{
    if (rank < r->gpus) snprintf(buf, n, "worker %d", rank);
    else snprintf(buf, n, "server %d", rank - r->gpus);
}

void mx_sweep_mpi_tail(const mx_sweep_mpi *m, const mx_run_record *r, char **train_argv, char *store, size_t n,
                       size_t *used, char **argv, int k)
{
    argv[k++] = (char *)m->exe;
    for (int i = 1; train_argv[i] && k < 124; i++) argv[k++] = train_argv[i];
    /* the sweep's --bucket-mb is the dist_* rows' (device rows of one process keep each key alone) */
    if (mx_kv_name_has(r->kvstore, MX_KV_DIST | MX_KV_BUCKETS) && m->bucket_mb > 0) {
        argv[k++] = "--bucket-mb";
        argv[k++] = store + *used;
        *used += (size_t)snprintf(store + *used, n - *used, "%.17g", m->bucket_mb) + 1;
    }
    argv[k] = NULL;
}

static void mpirun_argv(const mx_sweep_mpi *m, const mx_run_record *r, char **train_argv, char *store, size_t n,
                        char **argv)
{
    int k = 0;
    size_t used = 0;
#define PUT(s) (argv[k++] = (s))
    PUT((char *)m->prog);
    if (m->one_machine) {
        /* slots are counted in cores by Open MPI: let every row start; the sweep warns of
         * the rows whose ranks and threads exceed the cores, and each records it */
        PUT("--oversubscribe");
        if (m->add_bind) PUT("--bind-to"), PUT("none"); /* threads of a rank as in one process */
        if (m->add_btl) PUT("--mca"), PUT("btl"), PUT("self,tcp"); /* through the network stack, as between hosts */
    }
    if (m->hostfile) PUT("--hostfile"), PUT((char *)m->hostfile);
    for (int i = 0; i < m->nextra; i++) PUT(m->extra[i]);
    PUT("-np"), argv[k++] = store + used;
    used += (size_t)snprintf(store + used, n - used, "%d", mx_sweep_mpi_ranks(r)) + 1;
#undef PUT
    mx_sweep_mpi_tail(m, r, train_argv, store, n, &used, argv, k);
}

const mx_sweep_launcher mx_launcher_mpirun = {"mpirun", "mpirun -np %d", find_mpirun, mpirun_argv};

void mx_sweep_mpi_argv(const mx_sweep_mpi *m, const mx_run_record *r, char **train_argv, char *store, size_t n,
                       char **argv)
{
    m->launcher->argv(m, r, train_argv, store, n, argv);
}
