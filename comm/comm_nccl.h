/* The nccl communicator's table, in library mx_comm_nccl, which only CUDA builds make and only
 * programs that carry CUDA link; such a program registers it (mx_comm_register; mxbench:
 * harness/devices_cuda.c) so that CPU-only programs load none of NCCL. */
#ifndef MX_COMM_COMM_NCCL_H
#define MX_COMM_COMM_NCCL_H

#include "comm.h"

extern const mx_comm_ops mx_comm_nccl_ops;
/* Kind nccl_mpi's table (one member per rank of an MPI job, bootstrapped over MPI), or NULL in
 * a build without MPI. */
const mx_comm_ops *mx_comm_nccl_mpi_ops(void);

/* How long a call that waits (barrier) lets the GPUs run before it declares the
 * communicator stuck and aborts it (ncclCommAbort), in seconds; MXBENCH_NCCL_TIMEOUT, read
 * when the communicator starts, overrides it. */
#define MX_COMM_NCCL_TIMEOUT_S 300.0

#endif
