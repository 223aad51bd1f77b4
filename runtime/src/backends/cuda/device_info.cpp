// schedrt-cuda-info: what the CUDA runtime sees, as one JSON object per line on stdout, and the
// exit status says whether there is a GPU (0) or not (1). CMake runs it at configure time to decide
// whether to register the GPU tests; scripts/gpu-check uses it for the device's bf16 peak.
//
// The bf16 dense tensor-core peak is SMs x clock x FLOPs per SM per clock. Hopper (sm_90) does
// 4096 bf16 FLOPs per SM per clock (dense); NVIDIA's H100/H200 SXM datasheets quote 989 TFLOPS
// dense bf16 (1,979 with 2:4 sparsity), which is 132 SMs x 1.83 GHz x 4096, so the peak uses at
// most 1830 MHz on sm_90 even where the device reports a higher boost clock.

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>

int main() {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    std::printf("{\"devices\": 0, \"reason\": \"%s\"}\n",
                e != cudaSuccess ? cudaGetErrorString(e) : "cudaGetDeviceCount found no device");
    return 1;
  }
  for (int d = 0; d < count; ++d) {
    cudaDeviceProp p{};
    int clock_khz = 0, sms = 0;
    if (cudaGetDeviceProperties(&p, d) != cudaSuccess) continue;
    cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, d);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, d);
    double flops_per_clock = 0;
    double clock_ghz = clock_khz / 1e6;
    if (p.major == 9 && p.minor == 0) {
      flops_per_clock = 4096;
      clock_ghz = std::min(clock_ghz, 1.83);
    } else if (p.major == 8 && p.minor == 0) {
      flops_per_clock = 2048;  // A100: 312 TFLOPS dense bf16 = 108 SMs x 1.41 GHz x 2048
    }
    double peak = sms * clock_ghz * 1e9 * flops_per_clock / 1e12;
    char peak_text[32] = "null";  // an architecture whose figure is not known here
    if (peak > 0) std::snprintf(peak_text, sizeof peak_text, "%.1f", peak);
    std::printf(
        "{\"device\": %d, \"devices\": %d, \"name\": \"%s\", \"sm\": \"%d.%d\", \"sms\": %d, \"clock_mhz\": %d, "
        "\"memory_gib\": %.1f, \"bf16_dense_peak_tflops\": %s}\n",
        d, count, p.name, p.major, p.minor, sms, clock_khz / 1000,
        static_cast<double>(p.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0), peak_text);
  }
  return 0;
}
