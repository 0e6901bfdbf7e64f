#include <string>

#include "core/error.h"
#include "kernels/ops.h"

namespace nucleus {

const OpsKernels& ops_kernels_for(Isa isa) {
  if (!cpu_supports(isa)) throw Error(std::string("this CPU (or build) does not support the ") + isa_name(isa) + " kernels");
  switch (isa) {
    case Isa::Avx2: return avx2_ops_kernels();
    case Isa::Avx512: return avx512_ops_kernels();
    default: return scalar_ops_kernels();
  }
}

}  // namespace nucleus
