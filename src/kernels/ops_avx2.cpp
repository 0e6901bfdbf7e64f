// AVX2 + FMA (+ F16C for the f16 KV cache) operators, 8 floats per vector (see ops_x86.inc).
#define NUCLEUS_OPS_TARGET_ISA "avx2,fma,f16c"
#define NUCLEUS_OPS_WIDTH 8
#define NUCLEUS_OPS_TABLE_NAME avx2_ops_kernels
#define NUCLEUS_OPS_ISA_ID Isa::Avx2
#include "kernels/ops_x86.inc"
