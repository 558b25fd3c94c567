/* main() for a fuzz target built without libFuzzer (gcc, in the normal CTest suite): feeds
 * every file named on the command line, or found in a directory named there, to
 * LLVMFuzzerTestOneInput once. CTest runs it on tests/fuzz/regress/<target>/ (crash
 * reproducers, kept forever) and tests/fuzz/corpus/<target>/ (the seeds), so an input that
 * once crashed keeps being tried by every build, the sanitizer build included.
 * usage: <target>_replay FILE|DIR...   Exit 0 when every input ran; a crash aborts. */
#include "tests/fuzz/fuzz.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#if defined(__SANITIZE_ADDRESS__)
#define MX_REPLAY_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MX_REPLAY_ASAN 1
#endif
#endif

static int nrun;

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: cannot open %s: %s\n", path, strerror(errno));
        return -1;
    }
    size_t cap = 1 << 16, n = 0;
    uint8_t *buf = malloc(cap);
    for (size_t got; buf && (got = fread(buf + n, 1, cap - n, f)) > 0;) {
        n += got;
        if (n == cap) {
            uint8_t *grown = realloc(buf, cap * 2);
            if (!grown) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = grown;
            cap *= 2;
        }
    }
    int err = ferror(f);
    fclose(f);
    if (!buf || err) {
        fprintf(stderr, "replay: cannot read %s\n", path);
        free(buf);
        return -1;
    }
    /* named before it runs, so a crash report can be traced to its input */
    fprintf(stderr, "replay: %s (%zu bytes)\n", path, n);
    /* a copy of exactly n bytes, so that ASan sees a read past the input as libFuzzer would */
    uint8_t *exact = malloc(n ? n : 1);
    if (!exact) {
        free(buf);
        return -1;
    }
    memcpy(exact, buf, n);
    free(buf);
    LLVMFuzzerTestOneInput(exact, n);
    free(exact);
    nrun++;
    return 0;
}

static int cmp_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The files of dir in name order (a stable order makes a failure reproducible); dot files
 * and README* are not inputs. */
static int run_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "replay: cannot open directory %s: %s\n", dir, strerror(errno));
        return -1;
    }
    char **names = NULL;
    size_t n = 0;
    int rc = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.' || strncmp(e->d_name, "README", 6) == 0) continue;
        char **grown = realloc(names, (n + 1) * sizeof *names);
        if (!grown) {
            rc = -1;
            break;
        }
        names = grown;
        names[n] = malloc(strlen(dir) + strlen(e->d_name) + 2);
        if (!names[n]) {
            rc = -1;
            break;
        }
        sprintf(names[n++], "%s/%s", dir, e->d_name);
    }
    closedir(d);
    if (n) qsort(names, n, sizeof *names, cmp_names);
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        if (rc == 0 && stat(names[i], &st) == 0 && S_ISREG(st.st_mode)) rc = run_file(names[i]);
        free(names[i]);
    }
    free(names);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
        return 2;
    }
#ifndef MX_REPLAY_ASAN
    /* A reproducer of "a small file makes the reader allocate gigabytes" must not take the
     * machine's memory in a plain build: the allocation fails instead (ASan reserves far
     * more address space than this, so its build relies on max_allocation_size_mb). */
    struct rlimit lim = {(rlim_t)4 << 30, (rlim_t)4 << 30};
    setrlimit(RLIMIT_AS, &lim);
#endif
    LLVMFuzzerInitialize(&argc, &argv);
    for (int i = 1; i < argc; i++) {
        struct stat st;
        int rc;
        if (stat(argv[i], &st) != 0) {
            /* a regress/ directory holding no file yet is not in git: nothing to replay */
            fprintf(stderr, "replay: %s: absent, skipped\n", argv[i]);
            continue;
        }
        rc = S_ISDIR(st.st_mode) ? run_dir(argv[i]) : run_file(argv[i]);
        if (rc != 0) return 1;
    }
    fprintf(stderr, "replay: %d inputs ran\n", nrun);
    return 0;
}
