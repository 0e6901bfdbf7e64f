#include <cpuid.h>

#include <cstdlib>
#include <string>

#include "core/error.h"
#include "kernels/dot.h"

namespace nucleus {

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::Scalar: return "scalar";
    case Isa::Avx2: return "avx2";
    case Isa::Avx512: return "avx512";
  }
  return "unknown";
}

namespace {

// F16C from CPUID leaf 1 (ECX bit 29): clang's __builtin_cpu_supports does not know "f16c".
bool cpu_has_f16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) != 0;
}

}  // namespace

bool cpu_supports(Isa isa) {
  switch (isa) {
    case Isa::Scalar: return true;
    case Isa::Avx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpu_has_f16c();
    case Isa::Avx512:
      return cpu_supports(Isa::Avx2) && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
             __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vnni");
  }
  return false;
}

const DotKernels& dot_kernels_for(Isa isa) {
  if (!cpu_supports(isa)) throw Error(std::string("this CPU (or build) does not support the ") + isa_name(isa) + " kernels");
  switch (isa) {
    case Isa::Avx2: return avx2_dot_kernels();
    case Isa::Avx512: return avx512_dot_kernels();
    default: return scalar_dot_kernels();
  }
}

const DotKernels& select_dot_kernels() {
  if (const char* forced = std::getenv("NUCLEUS_ISA"); forced && *forced) {
    const std::string name = forced;
    for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512})
      if (name == isa_name(isa)) return dot_kernels_for(isa);
    throw Error("NUCLEUS_ISA=" + name + " is not one of scalar, avx2, avx512");
  }
  if (cpu_supports(Isa::Avx512)) return avx512_dot_kernels();
  if (cpu_supports(Isa::Avx2)) return avx2_dot_kernels();
  return scalar_dot_kernels();
}

}  // namespace nucleus
