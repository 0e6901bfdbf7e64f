// AVX-512 F operators, 16 floats per vector with masked tails (see ops_x86.inc).
// GCC 12's AVX-512 headers initialize their "undefined" vectors from themselves, which
// -Wuninitialized reports wherever the intrinsics are inlined into target functions (GCC bug 105593).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#define NUCLEUS_OPS_TARGET_ISA "avx2,fma,f16c,avx512f"
#define NUCLEUS_OPS_WIDTH 16
#define NUCLEUS_OPS_TABLE_NAME avx512_ops_kernels
#define NUCLEUS_OPS_ISA_ID Isa::Avx512
#include "kernels/ops_x86.inc"
