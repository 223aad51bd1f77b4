# Every dependency comes from a Debian package (scripts/setup installs them).

find_package(nlohmann_json 3.10 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(Threads REQUIRED)

# Z3 (libz3-dev ships no CMake config).
find_path(Z3_INCLUDE_DIR z3++.h REQUIRED)
find_library(Z3_LIBRARY z3 REQUIRED)
add_library(schedc_z3 INTERFACE)
target_include_directories(schedc_z3 SYSTEM INTERFACE ${Z3_INCLUDE_DIR})
target_link_libraries(schedc_z3 INTERFACE ${Z3_LIBRARY})

# LLVM ADT (llvm-dev): headers plus LLVMSupport for SmallVector's out-of-line growth. Found by hand:
# LLVMConfig.cmake drags in checks (ffi, terminfo) that a header user does not need.
file(GLOB _schedc_llvm_roots LIST_DIRECTORIES true /usr/lib/llvm-*)
list(SORT _schedc_llvm_roots ORDER DESCENDING)
set(_schedc_llvm_inc)
set(_schedc_llvm_lib)
foreach(_root ${_schedc_llvm_roots})
  list(APPEND _schedc_llvm_inc ${_root}/include)
  list(APPEND _schedc_llvm_lib ${_root}/lib)
endforeach()
find_path(SCHEDC_LLVM_INCLUDE_DIR llvm/ADT/SmallVector.h HINTS ${_schedc_llvm_inc} REQUIRED)
get_filename_component(_schedc_llvm_root ${SCHEDC_LLVM_INCLUDE_DIR} DIRECTORY)
find_library(SCHEDC_LLVM_SUPPORT NAMES libLLVMSupport.a LLVMSupport HINTS ${_schedc_llvm_root}/lib NO_DEFAULT_PATH REQUIRED)
find_library(SCHEDC_LLVM_DEMANGLE NAMES libLLVMDemangle.a LLVMDemangle HINTS ${_schedc_llvm_root}/lib NO_DEFAULT_PATH REQUIRED)
add_library(schedc_llvm INTERFACE)
target_include_directories(schedc_llvm SYSTEM INTERFACE ${SCHEDC_LLVM_INCLUDE_DIR})
target_link_libraries(schedc_llvm INTERFACE ${SCHEDC_LLVM_SUPPORT} ${SCHEDC_LLVM_DEMANGLE} Threads::Threads ${CMAKE_DL_LIBS})
find_library(SCHEDC_TINFO NAMES tinfo ncurses)
if(SCHEDC_TINFO)
  target_link_libraries(schedc_llvm INTERFACE ${SCHEDC_TINFO})
endif()
find_package(ZLIB)
if(ZLIB_FOUND)
  target_link_libraries(schedc_llvm INTERFACE ZLIB::ZLIB)
endif()

if(SCHEDC_BUILD_TESTS)
  find_package(doctest REQUIRED)
endif()

# OpenMPI: optional; the mpi backend is built when it is found.
find_package(MPI COMPONENTS CXX QUIET)
set(_schedc_mpi_default OFF)
if(MPI_CXX_FOUND)
  set(_schedc_mpi_default ON)
endif()
option(SCHEDC_WITH_MPI "build the MPI runtime backend" ${_schedc_mpi_default})

# CUDA Toolkit + NCCL: optional; the cuda backend is built when both are found.
find_package(CUDAToolkit QUIET)
find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include)
find_library(NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} /usr/local/cuda/lib64)
set(_schedc_cuda_default OFF)
# Not in the sanitizer and fuzzing builds: ASan and the CUDA driver do not mix, and CI would
# compile the kernels twice.
if(CUDAToolkit_FOUND AND NCCL_INCLUDE_DIR AND NCCL_LIBRARY AND NOT SCHEDC_SANITIZE AND NOT SCHEDC_FUZZ)
  set(_schedc_cuda_default ON)
endif()
option(SCHEDC_WITH_CUDA "build the CUDA + NCCL runtime backend" ${_schedc_cuda_default})
