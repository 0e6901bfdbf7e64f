// AVX2 + FMA operators, 8 floats per vector (see ops_x86.inc).
#define NUCLEUS_OPS_TARGET_ISA "avx2,fma"
#define NUCLEUS_OPS_WIDTH 8
#define NUCLEUS_OPS_TABLE_NAME avx2_ops_kernels
#define NUCLEUS_OPS_ISA_ID Isa::Avx2
#include "kernels/ops_x86.inc"
