/* MPI library version for a build with MPI (MPI_Get_library_version may precede MPI_Init). */
#include "buildinfo.h"

#include <mpi.h>
#include <string.h>

void mx_mpi_version(char *buf, size_t n)
{
    char v[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(v, &len);
    v[strcspn(v, ",\n")] = 0;
    snprintf(buf, n, "%s", v);
}
