/* MPI version for a build without MPI. */
#include "buildinfo.h"

void mx_mpi_version(char *buf, size_t n) { snprintf(buf, n, "not built"); }
