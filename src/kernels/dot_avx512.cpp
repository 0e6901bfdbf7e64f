// AVX-512 (VL, BW, VNNI) dot products: the int8 products use VPDPBUSD (see dot_x86.inc).
#define NUCLEUS_TARGET_ISA "avx2,fma,f16c,avx512f,avx512vl,avx512bw,avx512vnni"
#define NUCLEUS_VNNI 1
#define NUCLEUS_TABLE_NAME avx512_dot_kernels
#define NUCLEUS_ISA_ID Isa::Avx512
#define NUCLEUS_PACKED_Q4_0 packed_q4_0_avx512
#define NUCLEUS_PACKED_Q8_0 packed_q8_0_avx512
#define NUCLEUS_PACKED_Q8_0_SPLIT packed_q8_0_avx512_split  // where cpu_splits_512bit_ops()
#define NUCLEUS_TILE_F16 tile_f16_f32_avx512
#define NUCLEUS_PACKED_F16 packed_f16_f32_avx512
#define NUCLEUS_KQUANT_VNNI512 1
#define NUCLEUS_BF16_TILES 1  // where cpu_has_avx512_bf16()
#include "kernels/dot_kquant_avx512.h"
#include "kernels/dot_x86.inc"
