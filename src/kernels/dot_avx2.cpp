// AVX2 + FMA + F16C dot products (see dot_x86.inc).
#define NUCLEUS_TARGET_ISA "avx2,fma,f16c"
#define NUCLEUS_VNNI 0
#define NUCLEUS_TABLE_NAME avx2_dot_kernels
#define NUCLEUS_ISA_ID Isa::Avx2
#define NUCLEUS_PACKED_Q4_0 packed_q4_0_avx2
#define NUCLEUS_PACKED_Q8_0 packed_q8_0_avx2
#define NUCLEUS_TILE_F16 nullptr
#include "kernels/dot_x86.inc"
