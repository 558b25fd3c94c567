/* How the results store writes (store.h): HDF5 builds the new file in memory (the core
 * driver without a backing store), and only this file's code writes it to disk, to a working
 * copy that is renamed over the old file once it is complete and durable.
 *
 * Why in memory: HDF5 1.10 cannot survive a failed write to disk. When a write or the flush
 * at close fails (a full disk), H5Fclose fails and leaves the file half-closed: closing it
 * again, or the library's own shutdown at exit, dereferences freed memory (SIGSEGV), with or
 * without H5F_CLOSE_STRONG. In memory, HDF5 has no disk to fail on; every byte that reaches
 * the disk goes through write_all, fsync, close and rename here, and every one of those
 * returns is checked. The price is memory: about twice the file's size while appending. */
#include "store.h"

#include "base/paths.h"
#include "base/status.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { CORE_INCREMENT = 1 << 20 }; /* the in-memory file grows by this much at a time */

static hid_t fapl_strong(void)
{
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    if (fapl >= 0 && H5Pset_fclose_degree(fapl, H5F_CLOSE_STRONG) < 0) {
        H5Pclose(fapl);
        return -1;
    }
    return fapl;
}

hid_t mx_fapl_read(void) { return fapl_strong(); }

hid_t mx_mem_open(const char *path, const void *image, size_t size)
{
    hid_t fapl = fapl_strong();
    int ok = fapl >= 0 && H5Pset_fapl_core(fapl, CORE_INCREMENT, 0) >= 0 &&
             (!image || H5Pset_file_image(fapl, (void *)image, size) >= 0);
    /* The name is only a label: with no backing store, the core driver neither reads nor
     * creates a file of that name. It must not exist, though: given an image, the driver
     * refuses a name that does ("file already exists"). */
    char *label = mx_path_fmt("%s.in-memory-%ld", path, (long)getpid());
    ok = ok && label;
    hid_t fid = !ok     ? -1
                : image ? H5Fopen(label, H5F_ACC_RDWR, fapl)
                        : H5Fcreate(label, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    if (fapl >= 0) H5Pclose(fapl);
    free(label);
    if (fid < 0)
        return mx_error(image ? MX_EFORMAT : MX_ENOMEM, "%s: HDF5 cannot %s it in memory%s", path,
                        image ? "open" : "create", image ? " (truncated or corrupt?)" : " (out of memory?)");
    return fid;
}

int mx_mem_close(hid_t fid, const char *path, void **image, size_t *size)
{
    *image = NULL;
    *size = 0;
    /* HDF5 1.10's H5Fget_file_image does not flush what is cached: without this flush the
     * image lacks the latest objects */
    int rc = H5Fflush(fid, H5F_SCOPE_GLOBAL) < 0 ? mx_error(MX_EIO, "%s: HDF5 cannot flush the update", path) : MX_OK;
    ssize_t n = rc == MX_OK ? H5Fget_file_image(fid, NULL, 0) : -1;
    if (rc == MX_OK && n <= 0) rc = mx_error(MX_EIO, "%s: HDF5 cannot give the updated file's size", path);
    if (rc == MX_OK && !(*image = malloc((size_t)n)))
        rc = mx_error(MX_ENOMEM, "%s: out of memory for the updated file (%zd bytes)", path, n);
    if (rc == MX_OK && H5Fget_file_image(fid, *image, (size_t)n) != n)
        rc = mx_error(MX_EIO, "%s: HDF5 cannot give the updated file's contents", path);
    /* closed exactly once, whatever happened above; with H5F_CLOSE_STRONG this also closes
     * any object an error path left open */
    if (H5Fclose(fid) < 0 && rc == MX_OK) rc = mx_error(MX_EIO, "%s: HDF5 cannot close the updated file", path);
    if (rc == MX_OK) {
        *size = (size_t)n;
    } else {
        free(*image);
        *image = NULL;
    }
    return rc;
}

int mx_file_read_all(const char *path, void **data, size_t *size)
{
    *data = NULL;
    *size = 0;
    /* O_NONBLOCK: a FIFO put in the file's place opens at once, and is refused below */
    int fd = open(path, O_RDONLY | O_NONBLOCK);
    if (fd < 0) return mx_error(MX_EIO, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    int rc = fstat(fd, &st) == 0 ? MX_OK : mx_error(MX_EIO, "%s: cannot stat: %s", path, strerror(errno));
    if (rc == MX_OK && !S_ISREG(st.st_mode))
        rc = mx_error(MX_EIO, "%s: not a regular file (it is %s)", path, mx_file_kind(st.st_mode));
    if (rc == MX_OK && (st.st_size <= 0 || (uintmax_t)st.st_size > SIZE_MAX))
        rc = mx_error(MX_EFORMAT, "%s: %lld bytes is no results file", path, (long long)st.st_size);
    char *buf = rc == MX_OK ? malloc((size_t)st.st_size) : NULL;
    if (rc == MX_OK && !buf) rc = mx_error(MX_ENOMEM, "%s: out of memory for %lld bytes", path, (long long)st.st_size);
    size_t got = 0;
    while (rc == MX_OK && got < (size_t)st.st_size) {
        ssize_t k = read(fd, buf + got, (size_t)st.st_size - got);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) rc = mx_error(MX_EIO, "%s: cannot read: %s", path, strerror(errno));
        else if (k == 0) rc = mx_error(MX_EIO, "%s: shrank while being read", path);
        else got += (size_t)k;
    }
    close(fd);
    if (rc != MX_OK) {
        free(buf);
        return rc;
    }
    *data = buf;
    *size = got;
    return MX_OK;
}

static int write_all(int fd, const char *buf, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, buf, n);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) return -1;
        if (w == 0) { /* no progress and no error: report it as the full disk it is */
            errno = ENOSPC;
            return -1;
        }
        buf += w;
        n -= (size_t)w;
    }
    return 0;
}

/* The directory entry of the rename is durable only once the directory is synced. Best
 * effort: some file systems refuse to fsync a directory, and the file itself is complete. */
static void sync_dir(const char *path)
{
    char *dir = mx_path_fmt("%s", path);
    if (!dir) return;
    char *slash = strrchr(dir, '/');
    if (slash) *(slash == dir ? slash + 1 : slash) = '\0';
    int fd = open(slash ? dir : ".", O_RDONLY);
    free(dir);
    if (fd < 0) return;
    (void)fsync(fd);
    close(fd);
}

int mx_image_commit(const char *path, const void *image, size_t size)
{
    /* the rename below would put a regular file in place of a device or a FIFO (as root, in
     * /dev): whatever is not a regular file is refused, whoever asked to replace it */
    MX_TRY(mx_path_check_output(path, "output"));
    /* the working copy's name is path and a suffix, never cut to fit: a name cut back to path
     * itself would make the cleanup below remove the file it was to replace */
    char *tmp = mx_path_fmt("%s.tmp-%ld", path, (long)getpid());
    if (!tmp) return mx_error(MX_ENOMEM, "%s: out of memory for the working copy's name", path);
    /* opened with plain open(2), whose errno says why a path is unusable; O_EXCL: the name is
     * this process's own, and nothing else's file is ever truncated through it */
    unlink(tmp); /* this pid's own leftover, from a process that had it before */
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0666);
    if (fd < 0) {
        int rc = mx_error(MX_EIO, "%s: cannot create the working copy %s: %s", path, tmp, strerror(errno));
        free(tmp);
        return rc;
    }
    int rc = MX_OK;
    /* each step reports its own errno: a full disk shows in write, or only in fsync or close
     * on file systems that allocate late (NFS, some FUSE) */
    if (write_all(fd, image, size) != 0)
        rc = mx_error(MX_EIO, "%s: cannot write the working copy %s: %s", path, tmp, strerror(errno));
    else if (fsync(fd) != 0)
        rc = mx_error(MX_EIO, "%s: cannot flush the working copy %s to disk: %s", path, tmp, strerror(errno));
    if (close(fd) != 0 && rc == MX_OK)
        rc = mx_error(MX_EIO, "%s: cannot close the working copy %s: %s", path, tmp, strerror(errno));
    /* rename() is atomic: a reader, or a crash, sees the old file or the new one, never a mix */
    if (rc == MX_OK && rename(tmp, path) != 0)
        rc = mx_error(MX_EIO, "%s: cannot replace it with the updated copy: %s", path, strerror(errno));
    if (rc != MX_OK) unlink(tmp);
    free(tmp);
    if (rc != MX_OK) return rc;
    sync_dir(path);
    return MX_OK;
}
