// Built instead of mpi.cpp when schedrt is configured without MPI.

#include "backends/backends.h"

namespace schedrt {

bool have_mpi() { return false; }

std::string run_mpi(int32_t, const BackendOptions&, const std::function<void(Backend&)>&, int*, char***) {
  return "this schedrt was built without MPI (configure with -DSCHEDC_WITH_MPI=ON and OpenMPI installed)";
}

}  // namespace schedrt
