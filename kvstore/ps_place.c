/* Key placement on parameter servers (kvstore/ps.h), as MXNet's KVStoreDist places keys. */
#include "ps.h"
#include "comm/comm.h"

#include <math.h>
#include <stdlib.h>

size_t mx_ps_bigarray_bound(void)
{
    const char *v = getenv("MXNET_KVSTORE_BIGARRAY_BOUND");
    if (v) {
        char *end;
        const long long b = strtoll(v, &end, 10);
        if (end != v && *end == '\0' && b > 0) return (size_t)b;
    }
    return MX_PS_DEFAULT_BOUND;
}

int mx_ps_place(int key, size_t count, int nservers, size_t bound, mx_ps_part *parts)
{
    if (count < bound || nservers == 1) {
        parts[0] = (mx_ps_part){(int)(((long long)key * 9973) % nservers), 0, count};
        return 1;
    }
    for (int i = 0; i < nservers; i++) {
        const size_t lo = (size_t)llround((double)count / nservers * i);
        const size_t hi = i == nservers - 1 ? count : (size_t)llround((double)count / nservers * (i + 1));
        parts[i] = (mx_ps_part){i, lo, hi};
    }
    return nservers;
}

int mx_ps_tag(int key, int part) { return MX_PS_TAG_PART0 + key * MX_COMM_MAX + part; }
