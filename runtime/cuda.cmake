# The profiler and the cuda backend's parts of schedrt (included by runtime/CMakeLists.txt).
# The launch parsing (bootstrap.cpp) and the --check tolerances (tolerance.cpp) need no CUDA: it is built and unit tested in every build.
# With SCHEDC_WITH_CUDA the backend and the GPU mlp stage are built too: host code with the C++
# compiler against the CUDA headers, and one small kernel file with nvcc (sm_90 SASS plus
# compute_90 PTX, which newer GPUs JIT-compile). The CUDA runtime is linked statically; cuBLAS and
# NCCL are loaded with dlopen when a cuda run starts (cuda_api.h says why).
target_sources(schedrt PRIVATE src/profile.cpp src/backends/cuda/bootstrap.cpp src/backends/cuda/tolerance.cpp)
if(NOT SCHEDC_WITH_CUDA)
  target_sources(schedrt PRIVATE src/backends/cuda/no_cuda.cpp)
  return()
endif()

target_sources(schedrt PRIVATE
  src/backends/cuda/cuda_backend.cpp
  src/backends/cuda/cuda_libs.cpp
  src/backends/cuda/device.cpp
  src/backends/cuda/in_process.cpp
  src/backends/cuda/local_backend.cpp
  src/backends/cuda/nccl_backend.cpp
  src/backends/cuda/run_cuda.cpp
  src/stages/cuda/mlp_cuda.cpp)
target_include_directories(schedrt SYSTEM PRIVATE ${CUDAToolkit_INCLUDE_DIRS} ${NCCL_INCLUDE_DIR})
target_link_libraries(schedrt PUBLIC CUDA::cudart_static ${CMAKE_DL_LIBS})

get_target_property(_schedrt_cublas CUDA::cublas IMPORTED_LOCATION)
if(NOT _schedrt_cublas)
  set(_schedrt_cublas "")
endif()
set_source_files_properties(src/backends/cuda/cuda_libs.cpp PROPERTIES COMPILE_DEFINITIONS
  "SCHEDRT_CUBLAS_PATH=\"${_schedrt_cublas}\";SCHEDRT_NCCL_PATH=\"${NCCL_LIBRARY}\"")
if(SCHEDC_WITH_MPI)
  set_source_files_properties(src/backends/cuda/run_cuda.cpp PROPERTIES COMPILE_DEFINITIONS SCHEDRT_CUDA_WITH_MPI=1)
endif()

# The kernels: nvcc through a custom command rather than CMake's CUDA language, so that nothing
# else in the tree (tests, tools linking schedrt) needs a CUDA compiler or a CUDA linker.
set(SCHEDC_CUDA_ARCH "90" CACHE STRING "compute capability of the kernels' SASS (PTX for it is embedded too)")
set(_schedrt_cu ${CMAKE_CURRENT_SOURCE_DIR}/src/stages/cuda/mlp_kernels.cu)
set(_schedrt_cu_obj ${CMAKE_CURRENT_BINARY_DIR}/mlp_kernels.cu.o)
set(_schedrt_nvcc_launcher ${CMAKE_CUDA_COMPILER_LAUNCHER})
if(NOT _schedrt_nvcc_launcher)
  set(_schedrt_nvcc_launcher ${CMAKE_CXX_COMPILER_LAUNCHER})
endif()
add_custom_command(OUTPUT ${_schedrt_cu_obj}
  COMMAND ${_schedrt_nvcc_launcher} ${CUDAToolkit_NVCC_EXECUTABLE} -ccbin ${CMAKE_CXX_COMPILER} -std=c++17 -O3
          -gencode=arch=compute_${SCHEDC_CUDA_ARCH},code=sm_${SCHEDC_CUDA_ARCH}
          -gencode=arch=compute_${SCHEDC_CUDA_ARCH},code=compute_${SCHEDC_CUDA_ARCH}
          -Xcompiler=-fPIC,-Wall,-Wextra -I${CMAKE_CURRENT_SOURCE_DIR}/src -c ${_schedrt_cu} -o ${_schedrt_cu_obj}
  DEPENDS ${_schedrt_cu} ${CMAKE_CURRENT_SOURCE_DIR}/src/stages/cuda/mlp_kernels.h
          ${CMAKE_CURRENT_SOURCE_DIR}/src/stages/seed_hash.h
  COMMENT "nvcc mlp_kernels.cu (sm_${SCHEDC_CUDA_ARCH} + compute_${SCHEDC_CUDA_ARCH} PTX)"
  VERBATIM)
set_source_files_properties(${_schedrt_cu_obj} PROPERTIES EXTERNAL_OBJECT TRUE GENERATED TRUE)
target_sources(schedrt PRIVATE ${_schedrt_cu_obj})

# schedrt-cuda-info: the devices the CUDA runtime sees and their bf16 peak (scripts/gpu-check).
add_executable(schedrt_cuda_info src/backends/cuda/device_info.cpp)
set_target_properties(schedrt_cuda_info PROPERTIES OUTPUT_NAME schedrt-cuda-info)
target_link_libraries(schedrt_cuda_info PRIVATE CUDA::cudart_static)
schedc_warnings(schedrt_cuda_info)
# OPTIONAL: a build of only schedc and schedrt (scripts/demo) installs without it.
install(TARGETS schedrt_cuda_info RUNTIME DESTINATION bin OPTIONAL)
