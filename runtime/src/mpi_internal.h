/* mpi_internal.h - helpers shared by the hand-written and the generated PMPI wrappers. */
#ifndef XT_MPI_INTERNAL_H
#define XT_MPI_INTERNAL_H
#include <mpi.h>

#include "xt.h"

enum { XT_REQ_SEND = 1, XT_REQ_RECV = 2, XT_REQ_COLL = 3 };
#endif
