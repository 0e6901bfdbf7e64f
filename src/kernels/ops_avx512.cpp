// The x86 operators of ops_avx2.cpp (8 floats per vector, the same bits on every x86 machine) with
// attention's weighted value sums in 512-bit registers, which do not change a bit (see
// attention_values_avx512.h). Used where the dot-product table is AVX-512.
#define NUCLEUS_OPS_TARGET_ISA "avx2,fma,f16c"
#define NUCLEUS_OPS_WIDTH 8
#define NUCLEUS_OPS_TABLE_NAME avx512_ops_kernels
#define NUCLEUS_OPS_ISA_ID Isa::Avx512
#define NUCLEUS_OPS_AVX512_VALUES
#include "kernels/ops_x86.inc"
